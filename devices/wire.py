"""The serial wire format: COBS-delimited frames with a CRC-32, and the message payloads.

docs/device-protocol.md is the normative description; this module is its
reference implementation. Everything is little-endian.

Frame before COBS encoding::

    type u8 | flags u8 | seq u16 | ack u16 | length u16 | payload[length] | crc32 u32

The CRC is zlib's CRC-32 (IEEE 802.3, reflected, init 0xFFFFFFFF, final XOR
0xFFFFFFFF) over header and payload. The encoded frame is followed by one 0x00.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

PROTOCOL_VERSION = 1
HEADER = struct.Struct("<BBHHH")
HEADER_SIZE = HEADER.size  # 8
DATA_HEADER_SIZE = 8  # job, reserved, offset: counted in max_payload
MIN_MAX_PAYLOAD = 16
CRC_SIZE = 4
FRAME_OVERHEAD = HEADER_SIZE + CRC_SIZE
MAX_PAYLOAD = 0xFFFF
NO_ACK = 0xFFFF  # in the ack field: this frame answers nothing in particular
NO_JOB = 0xFFFF
DELIMITER = b"\x00"


class FrameType(IntEnum):
    """Message types; the high nibble groups them (handshake, transfer, result, link)."""

    HELLO = 0x01
    READY = 0x02
    BEGIN = 0x10
    DATA = 0x11
    ACK = 0x12
    NAK = 0x13
    COMPLETE = 0x14
    RESULT = 0x15
    ERROR = 0x16
    RESULT_ACK = 0x17
    PING = 0x20
    PONG = 0x21
    RESET = 0x30


class JobKind(IntEnum):
    """What a transfer carries."""

    SETUP = 1  # the task's vocabulary, UTF-8 lines; the device loads its model with it
    ITEM = 2  # one recording, PCM signed 16-bit little-endian mono


class DeviceState(IntEnum):
    """The device's state as PONG reports it."""

    IDLE = 0
    RECEIVING = 1
    PROCESSING = 2
    DONE = 3  # a RESULT or ERROR was sent and is not yet acknowledged


class ErrorCode(IntEnum):
    """Codes in ERROR frames."""

    UNSUPPORTED_RATE = 1
    TOO_LARGE = 2
    NOT_SET_UP = 3
    RECOGNIZER_FAILED = 4
    BAD_REQUEST = 5
    RESULT_TOO_LARGE = 6


# An unacknowledged RESULT or ERROR is sent this many times in all (section 5.5).
RESULT_SENDINGS = 30

READY_FLAG_PING_WHILE_BUSY = 0x01
# The device keeps DATA that arrives beyond a gap and acknowledges past it once the gap is
# filled, so the host resends only the frames that were lost (selective retransmission).
READY_FLAG_SELECTIVE = 0x02
# Revision 4: COMPLETE and RESULT name, in their field at offset 2, the seq of the frame that
# completed the input, so the host starts the processing clock at that copy (section 7).
READY_FLAG_NAMES_COPY = 0x04


class WireError(ValueError):
    """A frame or payload that does not follow the protocol."""


# --- COBS -----------------------------------------------------------------------------------


def cobs_encode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing: the result contains no 0x00 byte."""
    out = bytearray()
    start = 0
    n = len(data)
    while True:
        # Each block is at most 254 data bytes followed by an implicit zero (or block end).
        zero = data.find(0, start, min(n, start + 254))
        if zero < 0:
            end = min(n, start + 254)
            out.append(end - start + 1)
            out += data[start:end]
            if end == n:
                # A full 254-byte block at the very end needs no trailing empty block.
                if end - start == 254:
                    out.append(1)
                break
            start = end
            continue
        out.append(zero - start + 1)
        out += data[start:zero]
        start = zero + 1
        if start == n:
            out.append(1)
            break
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Inverse of cobs_encode; WireError if the block structure is broken."""
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        code = data[i]
        if code == 0:
            raise WireError("zero byte inside a COBS frame")
        end = i + code
        if end > n:
            raise WireError("COBS block runs past the end of the frame")
        block = data[i + 1 : end]
        if 0 in block:
            raise WireError("zero byte inside a COBS block")
        out += block
        i = end
        if code < 255 and i < n:
            out.append(0)
    return bytes(out)


# --- frames ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One decoded frame."""

    type: int
    seq: int
    ack: int
    payload: bytes
    flags: int = 0


def encode_frame(
    ftype: int, seq: int, payload: bytes = b"", ack: int = NO_ACK, flags: int = 0
) -> bytes:
    """Header + payload + CRC, COBS-encoded and terminated by 0x00."""
    if len(payload) > MAX_PAYLOAD:
        raise WireError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = HEADER.pack(ftype, flags, seq & 0xFFFF, ack & 0xFFFF, len(payload)) + payload
    body += struct.pack("<I", zlib.crc32(body))
    return cobs_encode(body) + DELIMITER


def decode_frame(encoded: bytes) -> Frame:
    """Decode one frame without its delimiter; WireError on any inconsistency."""
    body = cobs_decode(encoded)
    if len(body) < FRAME_OVERHEAD:
        raise WireError(f"frame of {len(body)} bytes is shorter than header and CRC")
    (crc,) = struct.unpack_from("<I", body, len(body) - CRC_SIZE)
    if zlib.crc32(body[:-CRC_SIZE]) != crc:
        raise WireError("CRC mismatch")
    ftype, flags, seq, ack, length = HEADER.unpack_from(body)
    if length != len(body) - FRAME_OVERHEAD:
        raise WireError(f"length field {length} disagrees with {len(body) - FRAME_OVERHEAD}")
    return Frame(ftype, seq, ack, bytes(body[HEADER_SIZE:-CRC_SIZE]), flags)


def encoded_size(payload_len: int) -> int:
    """Bytes on the wire for a frame with this payload length (worst case, with delimiter)."""
    body = payload_len + FRAME_OVERHEAD
    return body + body // 254 + 2


class FrameDecoder:
    """Splits a byte stream at 0x00 and decodes frames; garbage costs one bad frame at most.

    ``bad`` counts delimited chunks that failed to decode (CRC, COBS, length).
    A partial frame is dropped when its length exceeds ``max_encoded``, so a
    line that never sends 0x00 cannot grow the buffer without bound.
    """

    def __init__(self, max_encoded: int = encoded_size(MAX_PAYLOAD)) -> None:
        self._buf = bytearray()
        self.max_encoded = max_encoded
        self.bad = 0
        self.overflow = False

    @property
    def partial(self) -> bool:
        """Bytes of a frame whose 0x00 has not come yet are held."""
        return bool(self._buf) or self.overflow

    def discard_partial(self) -> None:
        """Drop the bytes held (a frame whose 0x00 was lost), counting them as a bad frame;
        the next frame's start is then not glued to them."""
        if self._buf or self.overflow:
            self._buf.clear()
            self.overflow = False
            self.bad += 1

    def feed(self, data: bytes) -> Iterator[Frame]:
        """Frames completed by ``data``, in order; corrupt ones are counted and skipped."""
        start = 0
        while True:
            zero = data.find(0, start)
            if zero < 0:
                self._buf += data[start:]
                if len(self._buf) > self.max_encoded:
                    self._buf.clear()
                    self.overflow = True
                return
            chunk = bytes(self._buf) + data[start:zero] if self._buf else data[start:zero]
            self._buf.clear()
            start = zero + 1
            if self.overflow:
                # The tail of an over-long frame: it ends here, and is not a frame.
                self.overflow = False
                self.bad += 1
                continue
            if not chunk:
                continue  # empty frames are how senders flush a receiver's garbage
            try:
                yield decode_frame(chunk)
            except WireError:
                self.bad += 1


# --- payloads -------------------------------------------------------------------------------

_HELLO = struct.Struct("<BBH")
_READY_HEAD = struct.Struct("<BBHBBHII")
_BEGIN = struct.Struct("<HBBIII")
_JOB_OFFSET = struct.Struct("<HHI")
_JOB_CODE = struct.Struct("<HH")
_PONG = struct.Struct("<BBH")


@dataclass(frozen=True)
class Hello:
    """Host -> device: start of a session."""

    version: int
    host_max_payload: int

    def pack(self) -> bytes:
        return _HELLO.pack(self.version, 0, self.host_max_payload)

    @classmethod
    def unpack(cls, payload: bytes) -> Hello:
        _need(payload, _HELLO.size, "HELLO")
        version, _, host_max = _HELLO.unpack_from(payload)
        return cls(version, host_max)


@dataclass(frozen=True)
class Ready:
    """Device -> host: identity and capabilities, after HELLO, RESET or boot."""

    version: int
    flags: int
    max_payload: int
    window: int
    boot_id: int
    max_input: int
    sample_rates: tuple[int, ...]
    name: str
    software: str

    @property
    def ping_while_busy(self) -> bool:
        return bool(self.flags & READY_FLAG_PING_WHILE_BUSY)

    @property
    def selective(self) -> bool:
        return bool(self.flags & READY_FLAG_SELECTIVE)

    @property
    def names_copy(self) -> bool:
        """COMPLETE and RESULT name the copy that completed the input (revision 4)."""
        return bool(self.flags & READY_FLAG_NAMES_COPY)

    def pack(self) -> bytes:
        name = self.name.encode()[:255]
        software = self.software.encode()[:255]
        rates = self.sample_rates[:255]
        head = _READY_HEAD.pack(
            self.version,
            self.flags,
            self.max_payload,
            self.window,
            len(rates),
            0,
            self.boot_id,
            self.max_input,
        )
        body = b"".join(struct.pack("<I", r) for r in rates)
        return head + body + bytes([len(name)]) + name + bytes([len(software)]) + software

    @classmethod
    def unpack(cls, payload: bytes) -> Ready:
        _need(payload, _READY_HEAD.size, "READY")
        head = _READY_HEAD.unpack_from(payload)
        version, flags, max_payload, window, n_rates, _, boot_id, max_input = head
        pos = _READY_HEAD.size
        _need(payload, pos + 4 * n_rates + 1, "READY")
        rates = struct.unpack_from(f"<{n_rates}I", payload, pos)
        pos += 4 * n_rates
        name, pos = _short_string(payload, pos, "READY name")
        software, pos = _short_string(payload, pos, "READY version")
        if max_payload < MIN_MAX_PAYLOAD or window < 1:
            raise WireError(f"READY with max_payload={max_payload}, window={window}")
        return cls(version, flags, max_payload, window, boot_id, max_input, rates, name, software)


@dataclass(frozen=True)
class Begin:
    """Host -> device: a transfer of ``total_length`` bytes follows for ``job``."""

    job: int
    kind: int
    sample_rate: int
    total_length: int
    crc32: int

    def pack(self) -> bytes:
        return _BEGIN.pack(self.job, self.kind, 0, self.sample_rate, self.total_length, self.crc32)

    @classmethod
    def unpack(cls, payload: bytes) -> Begin:
        _need(payload, _BEGIN.size, "BEGIN")
        job, kind, _, rate, total, crc = _BEGIN.unpack_from(payload)
        return cls(job, kind, rate, total, crc)


def pack_data(job: int, offset: int, chunk: bytes) -> bytes:
    """DATA payload: job, offset of the chunk's first byte, the bytes."""
    return _JOB_OFFSET.pack(job, 0, offset) + chunk


def unpack_data(payload: bytes) -> tuple[int, int, bytes]:
    _need(payload, _JOB_OFFSET.size, "DATA")
    job, _, offset = _JOB_OFFSET.unpack_from(payload)
    return job, offset, payload[_JOB_OFFSET.size :]


def pack_job_offset(job: int, offset: int, previous: int = 0) -> bytes:
    """ACK, NAK and COMPLETE payload: job and a byte offset (or the total length).

    ``previous`` fills the reserved field: 0, except in ACK and NAK from a device
    with READY flag bit 1, where it is the seq of the DATA frame read before the
    one named in the frame's ``ack`` (0xFFFF if none since BEGIN).
    """
    return _JOB_OFFSET.pack(job, previous, offset)


def unpack_previous(payload: bytes) -> int:
    """The reserved field of ACK and NAK (see :func:`pack_job_offset`)."""
    _need(payload, _JOB_OFFSET.size, "ACK/NAK")
    return int(_JOB_OFFSET.unpack_from(payload)[1])


def unpack_job_offset(payload: bytes) -> tuple[int, int]:
    _need(payload, _JOB_OFFSET.size, "ACK/NAK/COMPLETE")
    job, _, offset = _JOB_OFFSET.unpack_from(payload)
    return job, offset


def pack_result(job: int, text: str, completed_by: int = 0) -> bytes:
    """RESULT payload; ``completed_by`` fills the field at offset 2 (READY flag bit 2)."""
    return _JOB_CODE.pack(job, completed_by) + text.encode()


def unpack_second_field(payload: bytes) -> int:
    """The u16 at offset 2 of ACK, NAK, COMPLETE and RESULT (``previous``, the copy named)."""
    _need(payload, _JOB_CODE.size, "ACK/NAK/COMPLETE/RESULT")
    return int(_JOB_CODE.unpack_from(payload)[1])


def unpack_result(payload: bytes) -> tuple[int, str]:
    _need(payload, _JOB_CODE.size, "RESULT")
    (job, _) = _JOB_CODE.unpack_from(payload)
    return job, payload[_JOB_CODE.size :].decode("utf-8", errors="replace")


def unpack_job_code(payload: bytes) -> tuple[int, int]:
    """The first two fields of RESULT and ERROR: job and (for ERROR) code."""
    _need(payload, _JOB_CODE.size, "RESULT/ERROR")
    job, code = _JOB_CODE.unpack_from(payload)
    return int(job), int(code)


def unpack_result_strict(payload: bytes) -> str:
    """RESULT text; UnicodeDecodeError if it is not valid UTF-8."""
    _need(payload, _JOB_CODE.size, "RESULT")
    return payload[_JOB_CODE.size :].decode("utf-8")


def pack_error(job: int, code: int, message: str) -> bytes:
    return _JOB_CODE.pack(job, code) + message.encode()


def unpack_error(payload: bytes) -> tuple[int, int, str]:
    _need(payload, _JOB_CODE.size, "ERROR")
    job, code = _JOB_CODE.unpack_from(payload)
    return job, code, payload[_JOB_CODE.size :].decode("utf-8", errors="replace")


def pack_job(job: int) -> bytes:
    """RESULT_ACK payload."""
    return struct.pack("<H", job)


def unpack_job(payload: bytes) -> int:
    _need(payload, 2, "RESULT_ACK")
    return int(struct.unpack_from("<H", payload)[0])


def pack_pong(state: int, job: int, echo: bytes) -> bytes:
    return _PONG.pack(state, 0, job) + echo


def unpack_pong(payload: bytes) -> tuple[int, int, bytes]:
    _need(payload, _PONG.size, "PONG")
    state, _, job = _PONG.unpack_from(payload)
    return state, job, payload[_PONG.size :]


def vocabulary_bytes(vocabulary: Sequence[str]) -> bytes:
    """A SETUP transfer's content: one entry per line, UTF-8, each line ending in \\n."""
    return "".join(f"{entry.strip()}\n" for entry in vocabulary if entry.strip()).encode()


def vocabulary_from_bytes(data: bytes) -> list[str]:
    return [line.strip() for line in data.decode("utf-8").split("\n") if line.strip()]


def _need(payload: bytes, size: int, what: str) -> None:
    if len(payload) < size:
        raise WireError(f"{what} payload of {len(payload)} bytes, expected at least {size}")


def _short_string(payload: bytes, pos: int, what: str) -> tuple[str, int]:
    _need(payload, pos + 1, what)
    length = payload[pos]
    _need(payload, pos + 1 + length, what)
    text = payload[pos + 1 : pos + 1 + length].decode("utf-8", errors="replace")
    return text, pos + 1 + length
