"""The examples of docs/device-protocol.md section 9, made by the code they describe.

The host's frames are built with :mod:`devices.wire`; the device's are what
the reference agent core (:class:`devices.agent_core.AgentCore`) writes when
it is fed them, so the examples cannot drift from the implementation.
tests/test_devices_wire.py checks that the doc shows exactly :func:`render`.

    python -m devices.protocol_examples   # prints section 9's body
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from . import wire
from .agent_core import AgentCore, AgentSettings
from .wire import FrameType, JobKind

BOOT_ID = 0x11223344


@dataclass(frozen=True)
class Example:
    """One frame as it crosses the wire, with the sentence that introduces it."""

    caption: str
    wire_bytes: bytes  # the COBS-encoded frame and its 0x00

    @property
    def raw(self) -> bytes:
        """The frame before COBS: header, payload, CRC."""
        return wire.cobs_decode(self.wire_bytes[:-1])

    @property
    def frame(self) -> wire.Frame:
        return wire.decode_frame(self.wire_bytes[:-1])


class _StopRecognizer:
    """A device that knows one word: every item is "stop"."""

    name = "dev"
    version = "1"
    sample_rates: tuple[int, ...] = (8000,)

    def load(self, vocabulary: Sequence[str]) -> None:
        """Nothing to load."""

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        """Always "stop"."""
        return "stop"


class _Wire:
    """The device's side of the line: what it writes, frame by frame."""

    def __init__(self) -> None:
        self.written = bytearray()

    def read(self, timeout: float) -> bytes:
        return b""

    def write(self, data: bytes) -> None:
        self.written += data

    def frames(self) -> list[bytes]:
        out = [bytes(f) + wire.DELIMITER for f in bytes(self.written).split(wire.DELIMITER) if f]
        self.written.clear()
        return out


def examples() -> list[Example]:
    """A whole session: boot, HELLO, SETUP ("stop"), one ITEM of 4 bytes, as in section 9."""
    line = _Wire()
    core = AgentCore(
        line, _StopRecognizer(), AgentSettings(max_payload=1024, window=8), clock=lambda: 0.0
    )
    core.boot_id = BOOT_ID
    out: list[Example] = []
    host_seq = 0

    def host(caption: str, ftype: int, payload: bytes) -> None:
        nonlocal host_seq
        frame = wire.encode_frame(ftype, host_seq, payload)
        out.append(Example(caption.replace("{seq}", str(host_seq)), frame))
        host_seq += 1
        core.receive(frame)

    def device(*captions: str) -> None:
        for caption, frame in zip(captions, line.frames(), strict=True):
            decoded = wire.decode_frame(frame[:-1])
            ack = f"0x{decoded.ack:04X}" if decoded.ack == wire.NO_ACK else str(decoded.ack)
            text = caption.replace("{seq}", str(decoded.seq)).replace("{ack}", ack)
            out.append(Example(text, frame))

    def work() -> None:
        core.work_queued()

    core.boot()
    ready = wire.Ready.unpack(wire.decode_frame(bytes(line.written[1:-1])).payload)
    device(
        "The device boots: `00`, then READY (device seq {seq}, ack {ack}: unsolicited), "
        f"flags {ready.flags} (PING while busy, keeps out-of-order DATA, names the copy that "
        f"completed the input), max_payload {ready.max_payload}, window {ready.window}, boot_id "
        f"0x{ready.boot_id:08x}, max_input {ready.max_input >> 20} MiB, rates "
        f'{{{", ".join(str(r) for r in ready.sample_rates)}}}, name "{ready.name}", version '
        f'"{ready.software}":'
    )
    host(
        "HELLO (host seq {seq}, version 1, host_max_payload 4096); the host sends `00` before it:",
        FrameType.HELLO,
        wire.Hello(1, 4096).pack(),
    )
    device("READY answering it (device seq {seq}, ack {ack} = HELLO's seq), same body as in 1:")
    vocabulary = b"stop\n"
    crc = zlib.crc32(vocabulary)
    host(
        "SETUP: BEGIN (host seq {seq}) job 1, kind 1, sample_rate 0, total 5, CRC-32 of "
        f'`{vocabulary.hex(" ")}` ("stop\\n") = 0x{crc:08X}:',
        FrameType.BEGIN,
        wire.Begin(1, JobKind.SETUP, 0, len(vocabulary), crc).pack(),
    )
    device(
        "ACK(1, 0) (device seq {seq}, ack {ack}); `previous` 0xFFFF: no DATA read since "
        "BEGIN (READY flag bit 1):"
    )
    host(
        "DATA (host seq {seq}) job 1, offset 0, the 5 bytes:",
        FrameType.DATA,
        wire.pack_data(1, 0, vocabulary),
    )
    device(
        "COMPLETE(1, 5) (device seq {seq}, ack {ack}), naming at offset 2 the DATA copy that "
        "completed the input, seq 2 (READY flag bit 2):"
    )
    work()
    device(
        'RESULT(1, "") (device seq {seq}, ack {ack}), naming the same copy: the setup is loaded:'
    )
    host("RESULT_ACK(1) (host seq {seq}):", FrameType.RESULT_ACK, wire.pack_job(1))
    pcm = b"\x10\x00\xf0\xff"
    crc = zlib.crc32(pcm)
    host(
        "An ITEM of 4 bytes (samples 16, -16) at 8000 Hz: BEGIN (host seq {seq}) job 2, kind "
        f"2, CRC-32 of `{pcm.hex(' ')}` = 0x{crc:08X}:",
        FrameType.BEGIN,
        wire.Begin(2, JobKind.ITEM, 8000, len(pcm), crc).pack(),
    )
    device("ACK(2, 0) (device seq {seq}, ack {ack}), `previous` 0xFFFF:")
    host(
        "DATA (host seq {seq}) job 2, offset 0, the 4 bytes. The processing clock starts "
        "when this frame's last byte has crossed the line:",
        FrameType.DATA,
        wire.pack_data(2, 0, pcm),
    )
    device(
        "COMPLETE(2, 4) (device seq {seq}, ack {ack}), naming copy 5: confirms the clock's start:"
    )
    work()
    device(
        'RESULT(2, "stop") (device seq {seq}, ack {ack}), naming copy 5: the clock stops at '
        "its arrival:"
    )
    host("RESULT_ACK(2) (host seq {seq}):", FrameType.RESULT_ACK, wire.pack_job(2))
    return out


def _hex(data: bytes, label: str) -> list[str]:
    lines = []
    for at in range(0, len(data), 24):
        lead = f"{label}: " if at == 0 else " " * (len(label) + 2)
        lines.append(lead + data[at : at + 24].hex(" "))
    return lines


def render() -> str:
    """Section 9's numbered examples, as the doc shows them (markdown)."""
    parts = []
    for n, ex in enumerate(examples(), 1):
        block = _hex(ex.raw, "raw ") + _hex(ex.wire_bytes, "wire")
        parts.append(f"{n}. {ex.caption}\n\n```\n" + "\n".join(block) + "\n```\n")
    return "\n".join(parts)


def main() -> int:
    """Print section 9's examples."""
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
