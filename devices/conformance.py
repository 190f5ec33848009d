"""A conformance kit for device vendors: the host side of every clause of the protocol.

:func:`run_conformance` opens a port, plays each clause of docs/device-protocol.md
against the device with hand-made frames (good, corrupt, duplicated, out of
order) and reports pass or fail per clause with its section number. Each
clause starts from a fresh HELLO, so one failure does not hide the others.
``onsite devices conformance PORT`` prints the table.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import serial

from . import wire
from .host import DeviceLink
from .wire import DeviceState, ErrorCode, FrameType, JobKind

_ANSWER_SECONDS = 1.0  # how long a device may take to answer a frame, beyond line time
_QUIET_SECONDS = 0.5  # how long to listen for frames that must not come


class ClauseFailed(Exception):
    """The device broke the clause; the message says how, ``section`` which rule (when it
    is not the clause's own: a clause that checks PONG on the way names section 4)."""

    def __init__(self, message: str, section: str | None = None) -> None:
        super().__init__(message)
        self.section = section


@dataclass(frozen=True)
class ClauseResult:
    """One clause of the protocol and whether the device kept it."""

    section: str
    clause: str
    passed: bool
    detail: str = ""


class _Peer:
    """Raw frames to and from the device under test."""

    def __init__(self, port: Any, baud: int, item_seconds: float) -> None:
        self.port = port
        self.baud = baud
        self.item_seconds = item_seconds
        port.timeout = 0.02
        self.seq = 0x1000  # not 0: a device must not assume the host starts anywhere
        self.decoder = wire.FrameDecoder()
        self.pending: list[wire.Frame] = []
        self.ready: wire.Ready | None = None
        self.job = 0x7000

    def line(self, nbytes: int) -> float:
        return nbytes * 10 / self.baud

    def send(
        self, ftype: int, payload: bytes = b"", flush: bool = False, corrupt: bool = False
    ) -> int:
        seq = self.seq
        self.seq = (self.seq + 1) % wire.NO_ACK  # never 0xFFFF, as the host (section 3)
        body = wire.HEADER.pack(ftype, 0, seq, wire.NO_ACK, len(payload)) + payload
        crc = zlib.crc32(body) ^ (0x00010000 if corrupt else 0)
        frame = wire.cobs_encode(body + struct.pack("<I", crc)) + wire.DELIMITER
        self.port.write(wire.DELIMITER + frame if flush else frame)
        return seq

    def frames(self, seconds: float) -> Iterator[wire.Frame]:
        deadline = time.monotonic() + seconds
        while True:
            while self.pending:
                yield self.pending.pop(0)
            if time.monotonic() >= deadline:
                return
            data = self.port.read(max(1, self.port.in_waiting))
            if data:
                self.pending.extend(self.decoder.feed(bytes(data)))

    def drain(self) -> None:
        """Forget every frame received so far: decoded, or still waiting in the port.

        The bytes are decoded, not thrown away: a frame the read cut in two keeps its
        first part in the decoder, so its rest, read later, still makes one frame (and a
        part read earlier is not glued to the next frame).
        """
        waiting = self.port.in_waiting
        if waiting:
            for _ in self.decoder.feed(bytes(self.port.read(waiting))):
                pass
        self.pending.clear()

    def expect(
        self, what: str, test: Callable[[wire.Frame], bool], seconds: float | None = None
    ) -> wire.Frame:
        """The first frame passing ``test``; ClauseFailed naming ``what`` if none comes."""
        wait = seconds if seconds is not None else _ANSWER_SECONDS + self.line(600)
        seen = []
        for frame in self.frames(wait):
            if test(frame):
                return frame
            seen.append(_name(frame))
        got = ", ".join(seen[-4:]) or "nothing"
        raise ClauseFailed(f"expected {what}; got {got}")

    def quiet(self, test: Callable[[wire.Frame], bool], what: str) -> None:
        for frame in self.frames(_QUIET_SECONDS):
            if test(frame):
                raise ClauseFailed(f"{what}: got {_name(frame)}")

    def hello(self, version: int = wire.PROTOCOL_VERSION) -> wire.Ready:
        with contextlib.suppress(Exception):
            self.port.reset_input_buffer()
        # What the decoder held was cut off by the reset: a new decoder, so that it is not
        # glued to READY (the rest of a frame cut by the reset ends at its own 0x00).
        self.decoder = wire.FrameDecoder()
        self.pending.clear()
        for _ in range(3):
            seq = self.send(FrameType.HELLO, wire.Hello(version, 4096).pack(), flush=True)

            def answers(f: wire.Frame, s: int = seq) -> bool:
                return f.type == FrameType.READY and f.ack == s

            with contextlib.suppress(ClauseFailed):
                frame = self.expect("READY", answers)
                self.ready = wire.Ready.unpack(frame.payload)
                return self.ready
        raise ClauseFailed("no READY answered HELLO")

    def next_job(self) -> int:
        self.job = self.job % 0xFFFE + 1
        return self.job

    def begin(self, kind: int, data: bytes, rate: int = 0, total: int | None = None) -> int:
        job = self.next_job()
        length = len(data) if total is None else total
        self.send(FrameType.BEGIN, wire.Begin(job, kind, rate, length, zlib.crc32(data)).pack())
        return job

    def job_frame(self, ftype: int, job: int, offset: int | None = None) -> Callable[..., bool]:
        def test(frame: wire.Frame) -> bool:
            if frame.type != ftype or len(frame.payload) < 8:
                return False
            got_job, got = wire.unpack_job_offset(frame.payload)
            return got_job == job and (offset is None or got == offset)

        return test

    def answer_of(self, job: int) -> Callable[[wire.Frame], bool]:
        def test(frame: wire.Frame) -> bool:
            return (
                frame.type in (FrameType.RESULT, FrameType.ERROR)
                and len(frame.payload) >= 4
                and wire.unpack_job_code(frame.payload)[0] == job
            )

        return test

    def error(self, job: int, code: int) -> wire.Frame:
        frame = self.expect(f"ERROR {code} for job {job}", self.answer_of(job))
        if frame.type != FrameType.ERROR or wire.unpack_job_code(frame.payload)[1] != code:
            raise ClauseFailed(f"expected ERROR {code}; got {_name(frame)}")
        self.send(FrameType.RESULT_ACK, wire.pack_job(job))
        return frame

    def setup(self) -> None:
        data = wire.vocabulary_bytes(["yes", "no"])
        job = self.begin(JobKind.SETUP, data)
        self.expect("ACK(j, 0) to BEGIN", self.job_frame(FrameType.ACK, job, 0))
        self.data(job, 0, data)
        self.expect("COMPLETE of the SETUP", self.job_frame(FrameType.COMPLETE, job))
        frame = self.expect("the SETUP's answer", self.answer_of(job), self.item_seconds)
        self.send(FrameType.RESULT_ACK, wire.pack_job(job))
        if frame.type != FrameType.RESULT:
            raise ClauseFailed(f"SETUP answered {_name(frame)}")

    def data(self, job: int, offset: int, chunk: bytes, corrupt: bool = False) -> int:
        return self.send(FrameType.DATA, wire.pack_data(job, offset, chunk), corrupt=corrupt)

    @property
    def chunk(self) -> int:
        assert self.ready is not None
        return min(64, self.ready.max_payload - wire.DATA_HEADER_SIZE)

    @property
    def rate(self) -> int:
        assert self.ready is not None
        return self.ready.sample_rates[0] if self.ready.sample_rates else 16000


def _name(frame: wire.Frame) -> str:
    try:
        name = FrameType(frame.type).name
    except ValueError:
        name = f"type 0x{frame.type:02x}"
    if frame.type in (FrameType.ACK, FrameType.NAK, FrameType.COMPLETE) and len(frame.payload) >= 8:
        job, offset = wire.unpack_job_offset(frame.payload)
        return f"{name}({job}, {offset})"
    if frame.type == FrameType.ERROR and len(frame.payload) >= 4:
        job, code = wire.unpack_job_code(frame.payload)
        return f"ERROR({job}, code {code})"
    return name


# --- clauses --------------------------------------------------------------------------------
# Each takes a peer that has just had READY for a fresh HELLO and returns a detail line.


def _c_ready(p: _Peer) -> str:
    r = p.ready
    assert r is not None
    if r.version != wire.PROTOCOL_VERSION:
        raise ClauseFailed(f"READY version {r.version}, expected {wire.PROTOCOL_VERSION}")
    if not r.sample_rates:
        raise ClauseFailed("READY lists no sample rate")
    return (
        f"{r.name} {r.software}: max_payload {r.max_payload}, window {r.window}, "
        f"flags 0x{r.flags:02x}, rates {list(r.sample_rates)}"
    )


def _c_bad_crc(p: _Peer) -> str:
    p.send(FrameType.HELLO, wire.Hello(1, 4096).pack(), corrupt=True)
    p.quiet(lambda f: f.type == FrameType.READY, "a HELLO with a bad CRC was answered")
    p.hello()
    return "ignored; the next good frame answered"


def _c_garbage(p: _Peer) -> str:
    p.port.write(b"\x55\xaa" * 150)  # no 0x00: a frame that never ends
    p.hello()
    p.port.write(os.urandom(40).replace(b"\x00", b"\x01") + b"\x00")
    seq = p.send(FrameType.PING, b"x")
    p.expect("PONG after garbage", lambda f: f.type == FrameType.PONG and f.ack == seq)
    return "resynchronised at the next 0x00"


def _c_unknown_type(p: _Peer) -> str:
    p.send(0x7E, b"future")
    seq = p.send(FrameType.PING, b"y")
    p.expect("PONG", lambda f: f.type == FrameType.PONG and f.ack == seq)
    return "ignored"


def _c_reset(p: _Peer) -> str:
    assert p.ready is not None
    boot = p.ready.boot_id
    seq = p.send(FrameType.RESET, flush=True)
    frame = p.expect("READY to RESET", lambda f: f.type == FrameType.READY and f.ack == seq)
    if wire.Ready.unpack(frame.payload).boot_id != boot:
        raise ClauseFailed("RESET changed boot_id (that says: I rebooted)")
    return "READY, same boot_id"


def _c_other_version(p: _Peer) -> str:
    ready = p.hello(version=2)
    if ready.version != wire.PROTOCOL_VERSION:
        raise ClauseFailed(f"READY version {ready.version} to HELLO version 2")
    return "READY with its own version 1"


def _ping(
    p: _Peer, state: int | tuple[int, ...], job: int, payload: bytes = b"onsite!"
) -> wire.Frame:
    seq = p.send(FrameType.PING, payload)
    frame = p.expect("PONG", lambda f: f.type == FrameType.PONG and f.ack == seq)
    got_state, got_job, echo = wire.unpack_pong(frame.payload)
    states = state if isinstance(state, tuple) else (state,)
    if got_state not in states or got_job != job:
        expected = " or ".join(str(int(s)) for s in states)
        raise ClauseFailed(
            f"PONG state {got_state} job {got_job:#06x}; expected state {expected}, job {job:#06x}",
            section="4",
        )
    if echo != payload:
        raise ClauseFailed(f"PONG echoed {echo!r}, not {payload!r}")
    return frame


def _c_ping_idle(p: _Peer) -> str:
    _ping(p, DeviceState.IDLE, wire.NO_JOB)
    return "PONG(0, 0xFFFF), payload echoed, ack = PING's seq"


def _c_not_set_up(p: _Peer) -> str:
    job = p.begin(JobKind.ITEM, b"\x00\x00", p.rate)
    p.error(job, ErrorCode.NOT_SET_UP)
    return "ERROR 3"


def _c_setup(p: _Peer) -> str:
    p.setup()
    return "empty RESULT"


def _receiving(p: _Peer, size: int) -> tuple[int, bytes]:
    """A set-up device receiving a fresh ITEM of ``size`` bytes (BEGIN acknowledged)."""
    p.setup()
    data = os.urandom(size)
    job = p.begin(JobKind.ITEM, data, p.rate)
    p.expect("ACK(j, 0) to BEGIN", p.job_frame(FrameType.ACK, job, 0))
    return job, data


def _finish(p: _Peer, job: int, data: bytes, start: int) -> wire.Frame:
    """Send the rest of the input in order; COMPLETE(j, T) must follow the last byte."""
    c = p.chunk
    for off in range(start, len(data), c):
        p.data(job, off, data[off : off + c])
        end = min(len(data), off + c)
        if end < len(data):
            p.expect(f"ACK(j, {end})", p.job_frame(FrameType.ACK, job, end))
    return p.expect(f"COMPLETE(j, {len(data)})", p.job_frame(FrameType.COMPLETE, job, len(data)))


def _c_transfer(p: _Peer) -> str:
    job, data = _receiving(p, 6 * p.chunk)
    _ping(p, DeviceState.RECEIVING, job)
    _finish(p, job, data, 0)
    assert p.ready is not None
    busy = ""
    if p.ready.ping_while_busy:
        # Processing, or already done if the recognizer was quick.
        _ping(p, (DeviceState.PROCESSING, DeviceState.DONE), job)
        busy = ", PONG while processing"
    frame = p.expect("the item's answer", p.answer_of(job), p.item_seconds)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    return f"ACK per DATA, COMPLETE{busy}, then {_name(frame)}"


def _c_duplicate(p: _Peer) -> str:
    job, data = _receiving(p, 4 * p.chunk)
    c = p.chunk
    p.data(job, 0, data[:c])
    p.expect(f"ACK(j, {c})", p.job_frame(FrameType.ACK, job, c))
    p.data(job, 0, data[:c])
    p.expect(f"ACK(j, {c}) to the duplicate", p.job_frame(FrameType.ACK, job, c))
    _finish(p, job, data, c)
    return "ACK with the current offset"


def _c_repeated_begin(p: _Peer) -> str:
    job, data = _receiving(p, 4 * p.chunk)
    c = p.chunk
    p.data(job, 0, data[:c])
    p.expect(f"ACK(j, {c})", p.job_frame(FrameType.ACK, job, c))
    p.send(
        FrameType.BEGIN, wire.Begin(job, JobKind.ITEM, p.rate, len(data), zlib.crc32(data)).pack()
    )
    p.expect(f"ACK(j, {c}) to the repeated BEGIN", p.job_frame(FrameType.ACK, job, c))
    _finish(p, job, data, c)
    return "progress reported, nothing restarted"


def _c_gap(p: _Peer) -> str:
    job, data = _receiving(p, 4 * p.chunk)
    c = p.chunk
    p.data(job, c, data[c : 2 * c])
    p.expect("NAK(j, 0) for the gap", p.job_frame(FrameType.NAK, job, 0))
    p.data(job, 0, data[:c])
    assert p.ready is not None
    if p.ready.selective:
        # The frame beyond the gap was kept: one ACK covers both.
        p.expect(f"ACK(j, {2 * c}) (flag bit 1: kept)", p.job_frame(FrameType.ACK, job, 2 * c))
        _finish(p, job, data, 2 * c)
        return "NAK(j, received); the frame beyond the gap kept"
    p.expect(f"ACK(j, {c})", p.job_frame(FrameType.ACK, job, c))
    _finish(p, job, data, c)
    return "NAK(j, received)"


def _c_corrupt_data(p: _Peer) -> str:
    job, data = _receiving(p, 3 * p.chunk)
    p.data(job, 0, data[: p.chunk], corrupt=True)
    p.expect("NAK(j, 0) for the corrupt DATA", p.job_frame(FrameType.NAK, job, 0))
    _finish(p, job, data, 0)
    return "NAK(j, received)"


def _c_max_payload(p: _Peer) -> str:
    assert p.ready is not None
    c = p.ready.max_payload - wire.DATA_HEADER_SIZE
    job, data = _receiving(p, 2 * c)
    p.data(job, 0, data[:c])
    p.expect(f"ACK(j, {c}) to a DATA of max_payload", p.job_frame(FrameType.ACK, job, c))
    p.data(job, c, data[c:])
    p.expect("COMPLETE", p.job_frame(FrameType.COMPLETE, job, len(data)))
    return f"{p.ready.max_payload}-byte DATA payloads accepted"


def _c_bad_input_crc(p: _Peer) -> str:
    p.setup()
    data = os.urandom(2 * p.chunk)
    job = p.next_job()
    wrong = zlib.crc32(data) ^ 1
    p.send(FrameType.BEGIN, wire.Begin(job, JobKind.ITEM, p.rate, len(data), wrong).pack())
    p.expect("ACK(j, 0)", p.job_frame(FrameType.ACK, job, 0))
    p.data(job, 0, data[: p.chunk])
    p.expect(f"ACK(j, {p.chunk})", p.job_frame(FrameType.ACK, job, p.chunk))
    p.data(job, p.chunk, data[p.chunk :])
    p.expect("NAK(j, 0): the whole input's CRC-32 is wrong", p.job_frame(FrameType.NAK, job, 0))
    return "NAK(j, 0)"


def _c_complete_again(p: _Peer) -> str:
    job, data = _receiving(p, 2 * p.chunk)
    _finish(p, job, data, 0)
    p.data(job, p.chunk, data[p.chunk :])
    p.expect("COMPLETE again for DATA after COMPLETE", p.job_frame(FrameType.COMPLETE, job))
    p.expect("the answer", p.answer_of(job), p.item_seconds)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    return "COMPLETE repeated"


def _c_answer_repeated(p: _Peer) -> str:
    job, data = _receiving(p, 2 * p.chunk)
    _finish(p, job, data, 0)
    first = p.expect("the answer", p.answer_of(job), p.item_seconds)
    p.expect("the answer repeated without RESULT_ACK", lambda f: f.payload == first.payload)
    _ping(p, DeviceState.DONE, job)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    interval = 0.1 + 2 * p.line(wire.encoded_size(len(first.payload)) + 14)
    time.sleep(interval)
    # A repeat sent before RESULT_ACK arrived may still be in the port (the PING above
    # asked for one): only what comes after the interval counts.
    p.drain()
    p.quiet(p.answer_of(job), "the answer was repeated after RESULT_ACK")
    _ping(p, DeviceState.IDLE, job)
    return "repeated until RESULT_ACK; PONG state 3 in DONE"


def _c_empty_item(p: _Peer) -> str:
    p.setup()
    job = p.begin(JobKind.ITEM, b"", p.rate)
    p.expect("COMPLETE(j, 0) for T = 0", p.job_frame(FrameType.COMPLETE, job, 0))
    p.expect("the answer", p.answer_of(job), p.item_seconds)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    return "COMPLETE at once"


def _c_refusals(p: _Peer) -> str:
    assert p.ready is not None
    p.setup()
    p.error(p.begin(JobKind.ITEM, b"\x00\x00\x00", p.rate), ErrorCode.BAD_REQUEST)
    bad_rate = 12345 if 12345 not in p.ready.sample_rates else 12346
    p.error(p.begin(JobKind.ITEM, b"\x00\x00", bad_rate), ErrorCode.UNSUPPORTED_RATE)
    p.error(p.begin(9, b"\x00\x00", p.rate), ErrorCode.BAD_REQUEST)
    if p.ready.max_input < 0xFFFFFFFE:
        big = p.ready.max_input + 2
        p.error(p.begin(JobKind.ITEM, b"", p.rate, total=big), ErrorCode.TOO_LARGE)
    return "ERROR 5 (odd length, unknown kind), 1 (rate), 2 (too large)"


def _c_reset_abandons(p: _Peer) -> str:
    job, data = _receiving(p, 4 * p.chunk)
    p.data(job, 0, data[: p.chunk])
    p.expect("ACK", p.job_frame(FrameType.ACK, job, p.chunk))
    seq = p.send(FrameType.RESET, flush=True)
    p.expect("READY to RESET", lambda f: f.type == FrameType.READY and f.ack == seq)
    _ping(p, DeviceState.IDLE, wire.NO_JOB)
    p.error(p.begin(JobKind.ITEM, b"\x00\x00", p.rate), ErrorCode.NOT_SET_UP)
    return "job and setup forgotten"


def _c_sizes(p: _Peer) -> str:
    assert p.ready is not None
    link = DeviceLink(p.port, p.baud)
    link.hello(time.monotonic() + 5)
    answer = link.run_job(JobKind.SETUP, wire.vocabulary_bytes(["yes"]), 0, _deadline(p))
    if answer.error is not None:
        raise ClauseFailed(f"SETUP: error {answer.error_code}")
    max_chunk = p.ready.max_payload - wire.DATA_HEADER_SIZE
    # One byte pair, one whole frame, and several frames (past a window of 2).
    sizes = [2, max_chunk - max_chunk % 2, 5 * max_chunk + 2 - max_chunk % 2]
    sizes = [min(s, p.ready.max_input - p.ready.max_input % 2) for s in sizes]
    for size in sizes:
        answer = link.run_job(JobKind.ITEM, os.urandom(size), p.rate, _deadline(p))
        if answer.text is None and answer.error_code not in (4, 6):
            raise ClauseFailed(f"{size}-byte item: {answer.error or answer.invalid}")
    return f"items of {', '.join(str(s) for s in sizes)} bytes answered"


def _ack_fields(p: _Peer, what: str, frame_test: Callable[..., bool]) -> tuple[int, int]:
    """The `ack` and `previous` of the next frame passing ``frame_test``."""
    frame = p.expect(what, frame_test)
    return frame.ack, wire.unpack_second_field(frame.payload)


def _check_previous(got: tuple[int, int], ack: int, previous: int, what: str) -> None:
    if got != (ack, previous):
        raise ClauseFailed(
            f"{what}: ack {got[0]:#06x}, previous {got[1]:#06x}; expected ack {ack:#06x}, "
            f"previous {previous:#06x}"
        )


def _c_previous(p: _Peer) -> str:
    assert p.ready is not None
    p.setup()
    c = p.chunk
    data = os.urandom(6 * c)
    job = p.next_job()
    begin = wire.Begin(job, JobKind.ITEM, p.rate, len(data), zlib.crc32(data)).pack()
    sel = p.ready.selective
    none = wire.NO_ACK if sel else 0

    def want(prev: int) -> int:
        return prev if sel else 0

    seq = p.send(FrameType.BEGIN, begin)
    got = _ack_fields(p, "ACK(j, 0) to BEGIN", p.job_frame(FrameType.ACK, job, 0))
    _check_previous(got, seq, none, "ACK to BEGIN (no DATA since BEGIN)")
    a = p.data(job, 0, data[:c])
    got = _ack_fields(p, f"ACK(j, {c})", p.job_frame(FrameType.ACK, job, c))
    _check_previous(got, a, none, "ACK to the first DATA")
    b = p.data(job, c, data[c : 2 * c])
    got = _ack_fields(p, f"ACK(j, {2 * c})", p.job_frame(FrameType.ACK, job, 2 * c))
    _check_previous(got, b, want(a), "ACK to the second DATA")
    # Another job's DATA is ignored and does not count; a repeated BEGIN restarts nothing.
    p.data(job ^ 0x0100 or 1, 0, data[:c])
    r = p.send(FrameType.BEGIN, begin)
    got = _ack_fields(p, "ACK to the repeated BEGIN", p.job_frame(FrameType.ACK, job, 2 * c))
    _check_previous(got, r, want(b), "ACK to a repeated BEGIN (ack names no DATA)")
    d = p.data(job, 3 * c, data[3 * c : 4 * c])
    got = _ack_fields(p, f"NAK(j, {2 * c}) for the gap", p.job_frame(FrameType.NAK, job, 2 * c))
    _check_previous(got, d, want(b), "NAK to a DATA beyond a gap")
    p.data(job, 2 * c, data[2 * c : 3 * c], corrupt=True)
    got = _ack_fields(p, "NAK for a corrupt DATA", p.job_frame(FrameType.NAK, job, 2 * c))
    _check_previous(got, d, want(b), "NAK to a corrupt DATA (ack: the last valid frame)")
    e = p.data(job, 2 * c, data[2 * c : 3 * c])
    end = 4 * c if sel else 3 * c
    got = _ack_fields(p, f"ACK(j, {end})", p.job_frame(FrameType.ACK, job, end))
    _check_previous(got, e, want(d), "ACK to the gap's filling")
    _finish(p, job, data, end)
    if not sel:
        return "previous = 0 in every ACK and NAK (no READY flag bit 1)"
    return "previous names the DATA read before the frame in ack; 0xFFFF since BEGIN"


def _c_keeps_out_of_order(p: _Peer) -> str:
    assert p.ready is not None
    if not p.ready.selective:
        return "not advertised (READY flag bit 1 clear): DATA only in order"
    job, data = _receiving(p, 5 * p.chunk)
    c = p.chunk
    for k in (4, 2, 3, 1):
        p.data(job, k * c, data[k * c : (k + 1) * c])
        p.expect(f"NAK(j, 0) to piece {k}", p.job_frame(FrameType.NAK, job, 0))
    p.data(job, 0, data[:c])
    p.expect(
        f"COMPLETE(j, {len(data)}) once the first piece joins the kept ones",
        p.job_frame(FrameType.COMPLETE, job, len(data)),
    )
    p.expect("the answer", p.answer_of(job), p.item_seconds)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    return "pieces 4, 2, 3, 1 kept; piece 0 completed the input"


def _c_thirty_sendings(p: _Peer) -> str:
    job, data = _receiving(p, 2 * p.chunk)
    acked = (job - 2) % 0xFFFE + 1  # the SETUP's, acknowledged just before
    _finish(p, job, data, 0)
    first = p.expect("the answer", p.answer_of(job), p.item_seconds)
    interval = 0.1 + 2 * p.line(wire.encoded_size(len(first.payload)) + 16)
    count = 1
    # Until the repeats stop: three intervals (and the answer delay) without one.
    while count <= wire.RESULT_SENDINGS and any(
        p.answer_of(job)(f) for f in p.frames(3 * interval + 0.2)
    ):
        count += 1
    if count != wire.RESULT_SENDINGS:
        sent = f"more than {count - 1}" if count > wire.RESULT_SENDINGS else str(count)
        raise ClauseFailed(
            f"the unacknowledged answer was sent {sent} times, not {wire.RESULT_SENDINGS}"
        )
    _ping(p, DeviceState.IDLE, acked)
    return f"{count} sendings, then idle; PONG names the last acknowledged job"


def _c_pong_jobs(p: _Peer) -> str:
    p.setup()
    setup_job = p.job
    _ping(p, DeviceState.IDLE, setup_job)
    first = p.begin(JobKind.ITEM, os.urandom(2 * p.chunk), p.rate)
    p.expect("ACK(j, 0)", p.job_frame(FrameType.ACK, first, 0))
    _ping(p, DeviceState.RECEIVING, first)
    second = p.begin(JobKind.ITEM, os.urandom(2 * p.chunk), p.rate)
    p.expect("ACK(j, 0) to a new BEGIN", p.job_frame(FrameType.ACK, second, 0))
    _ping(p, DeviceState.RECEIVING, second)
    assert p.ready is not None
    bad_rate = 12345 if 12345 not in p.ready.sample_rates else 12346
    refused = p.begin(JobKind.ITEM, b"\x00\x00", bad_rate)
    p.expect("ERROR 1", p.answer_of(refused))
    _ping(p, DeviceState.DONE, refused)
    p.send(FrameType.RESULT_ACK, wire.pack_job(refused))
    _ping(p, DeviceState.IDLE, refused)
    return "idle: the last acknowledged job; receiving and done: the current job"


def _error_again(p: _Peer, job: int, code: int, after: str) -> None:
    frame = p.expect(f"ERROR {code} again after {after}", _not_ack_of(p, job))
    if frame.type != FrameType.ERROR or wire.unpack_job_code(frame.payload) != (job, code):
        raise ClauseFailed(f"{after} of a refused job answered with {_name(frame)}")


def _not_ack_of(p: _Peer, job: int) -> Callable[[wire.Frame], bool]:
    """A frame of ``job`` other than a repeat the device sends on its own (any answer,
    ACK, NAK or COMPLETE): what a request to a refused job is answered with."""
    answer = p.answer_of(job)

    def test(frame: wire.Frame) -> bool:
        kinds = (FrameType.ACK, FrameType.NAK, FrameType.COMPLETE)
        return answer(frame) or (
            frame.type in kinds
            and len(frame.payload) >= 8
            and (wire.unpack_job_offset(frame.payload)[0] == job)
        )

    return test


def _c_refused_repeats(p: _Peer) -> str:
    assert p.ready is not None
    p.setup()
    bad_rate = 12345 if 12345 not in p.ready.sample_rates else 12346
    data = b"\x00\x00" * 8
    job = p.next_job()
    begin = wire.Begin(job, JobKind.ITEM, bad_rate, len(data), zlib.crc32(data)).pack()
    p.send(FrameType.BEGIN, begin)
    p.expect("ERROR 1", p.answer_of(job))
    p.data(job, 0, data)
    _error_again(p, job, ErrorCode.UNSUPPORTED_RATE, "DATA")
    p.send(FrameType.BEGIN, begin)
    _error_again(p, job, ErrorCode.UNSUPPORTED_RATE, "a repeated BEGIN")
    p.expect("the ERROR repeated unasked", p.answer_of(job))
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    # Refused by DATA: bytes past total_length.
    job = p.begin(JobKind.ITEM, data, p.rate)
    p.expect("ACK(j, 0)", p.job_frame(FrameType.ACK, job, 0))
    p.data(job, 4, data)
    p.expect("ERROR 5 for DATA past total_length", p.answer_of(job))
    p.data(job, 0, data)
    _error_again(p, job, ErrorCode.BAD_REQUEST, "DATA")
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    return "the ERROR again for DATA and a repeated BEGIN, and unasked, until RESULT_ACK"


def _c_names_copy(p: _Peer) -> str:
    assert p.ready is not None
    if not p.ready.names_copy:
        return "not advertised (READY flag bit 2 clear): timed from the earliest copy left"
    job, data = _receiving(p, 2 * p.chunk)
    c = p.chunk
    p.data(job, 0, data[:c])
    p.expect(f"ACK(j, {c})", p.job_frame(FrameType.ACK, job, c))
    p.data(job, c, data[c:], corrupt=True)
    p.expect(f"NAK(j, {c}) for the corrupt copy", p.job_frame(FrameType.NAK, job, c))
    good = p.data(job, c, data[c:])
    frame = p.expect("COMPLETE", p.job_frame(FrameType.COMPLETE, job, len(data)))
    if wire.unpack_second_field(frame.payload) != good:
        raise ClauseFailed(
            f"COMPLETE names copy {wire.unpack_second_field(frame.payload):#06x}; the copy "
            f"that completed the input was {good:#06x}"
        )
    again = p.data(job, c, data[c:])
    frame = p.expect("COMPLETE again", p.job_frame(FrameType.COMPLETE, job, len(data)))
    if wire.unpack_second_field(frame.payload) != good:
        raise ClauseFailed(
            f"the repeated COMPLETE (ack {again:#06x}) names copy "
            f"{wire.unpack_second_field(frame.payload):#06x}, not the completing {good:#06x}"
        )
    answer = p.expect("the answer", p.answer_of(job), p.item_seconds)
    p.send(FrameType.RESULT_ACK, wire.pack_job(job))
    if answer.type == FrameType.RESULT and wire.unpack_second_field(answer.payload) != good:
        raise ClauseFailed(
            f"RESULT names copy {wire.unpack_second_field(answer.payload):#06x}, not {good:#06x}"
        )
    return "COMPLETE, its repeat and RESULT name the copy that completed the input"


def _deadline(p: _Peer) -> float:
    return time.monotonic() + p.item_seconds


CLAUSES: tuple[tuple[str, str, Callable[[_Peer], str]], ...] = (
    ("5.2", "HELLO is answered by READY (version 1, ack = HELLO's seq)", _c_ready),
    ("2", "a frame with a bad CRC is dropped", _c_bad_crc),
    ("2", "garbage and an unterminated frame are survived", _c_garbage),
    ("2", "an unknown frame type is ignored", _c_unknown_type),
    ("5.2", "RESET is answered by READY with the same boot_id", _c_reset),
    ("5.2", "HELLO of another version is answered by READY version 1", _c_other_version),
    ("5.6", "PING while idle: PONG state 0, job 0xFFFF, payload echoed", _c_ping_idle),
    ("4", "ITEM before SETUP is refused with ERROR 3", _c_not_set_up),
    ("5.3", "SETUP is answered by an empty RESULT", _c_setup),
    ("6", "ACK per DATA, COMPLETE(j, T), PONG while receiving and processing", _c_transfer),
    ("6", "a duplicate DATA is answered with ACK(j, received)", _c_duplicate),
    ("6", "a repeated BEGIN reports progress and restarts nothing", _c_repeated_begin),
    ("6", "a gap is answered with NAK(j, received)", _c_gap),
    ("6", "a corrupt DATA while receiving is answered with NAK", _c_corrupt_data),
    ("6", "DATA of max_payload bytes is accepted", _c_max_payload),
    ("6", "an input whose CRC-32 is wrong is answered with NAK(j, 0)", _c_bad_input_crc),
    ("6", "DATA after COMPLETE is answered with COMPLETE", _c_complete_again),
    ("5.5", "the answer is repeated until RESULT_ACK; PING in DONE", _c_answer_repeated),
    ("6", "an empty input (T = 0) is answered with COMPLETE at once", _c_empty_item),
    ("4", "bad requests are refused with ERROR 5, 1 and 2", _c_refusals),
    ("5.2", "RESET abandons the job and the setup", _c_reset_abandons),
    ("6", "items of each size class are answered", _c_sizes),
    ("6", "previous names the DATA read before the frame in ack (flag bit 1)", _c_previous),
    ("6", "DATA beyond a gap is kept and joins up (flag bit 1)", _c_keeps_out_of_order),
    ("5.5", "an unacknowledged answer is sent 30 times, then idle", _c_thirty_sendings),
    ("4", "PONG names the right job in each state", _c_pong_jobs),
    ("5.5", "a refused job's ERROR is repeated, for DATA and BEGIN too", _c_refused_repeats),
    ("7", "COMPLETE and RESULT name the completing copy (flag bit 2)", _c_names_copy),
)


def run_conformance(
    port: str, baud: int = 115200, item_seconds: float = 30.0
) -> list[ClauseResult]:
    """Every clause against the device on ``port`` (a path or pyserial URL).

    ``item_seconds`` bounds the device's time for one answer. The device's
    session is ended (HELLO) before each clause; do not run this on a port
    an evaluation is using.
    """
    try:
        handle = serial.serial_for_url(port, baudrate=baud, timeout=0.02, write_timeout=10)
    except (serial.SerialException, ValueError, OSError) as exc:
        return [ClauseResult("1", f"open {port}", False, str(exc))]
    results = []
    try:
        peer = _Peer(handle, baud, item_seconds)
        for section, clause, check in CLAUSES:
            try:
                peer.hello()
                detail = check(peer)
                results.append(ClauseResult(section, clause, True, detail))
            except ClauseFailed as exc:
                results.append(ClauseResult(exc.section or section, clause, False, str(exc)))
            except (wire.WireError, OSError, serial.SerialException) as exc:
                results.append(ClauseResult(section, clause, False, f"{type(exc).__name__}: {exc}"))
            except Exception as exc:  # the host side's own checks (DeviceLink) raise others
                results.append(ClauseResult(section, clause, False, f"{type(exc).__name__}: {exc}"))
            if not results[0].passed:
                break  # no handshake: nothing else can be tried
    finally:
        with contextlib.suppress(Exception):
            handle.close()
    return results
