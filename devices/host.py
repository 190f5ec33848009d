"""Controller side of the serial protocol: handshake, transfers with retransmission, results.

:class:`DeviceLink` drives one device over an open pyserial port. It knows
nothing of items or budgets; runners.serial_runner maps its events onto the
Runner interface. Times are ``time.monotonic()`` of the moment a frame's last
byte was read.
"""

from __future__ import annotations

import contextlib
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import wire
from .wire import DeviceState, ErrorCode, FrameType

HOST_MAX_PAYLOAD = 4096
MIN_CHUNK = 32
# Unanswered retransmissions in a row after which the device is taken for lost.
MAX_STALLS = 12
_POLL_SECONDS = 0.02


# ERROR codes that refuse a transfer (sent instead of ACK to BEGIN, or during DATA).
REFUSALS = (
    ErrorCode.UNSUPPORTED_RATE,
    ErrorCode.TOO_LARGE,
    ErrorCode.NOT_SET_UP,
    ErrorCode.BAD_REQUEST,
)


def _newer_or_same(seq: int, than: int) -> bool:
    """Sequence comparison modulo 2**16."""
    return ((seq - than) & 0xFFFF) < 0x8000


class LinkLost(Exception):
    """The device stopped answering, or rebooted, in the middle of something."""


class LinkInterrupted(Exception):
    """Another thread called :meth:`DeviceLink.interrupt`."""


class DeviceRefused(Exception):
    """The device answered a transfer with ERROR."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"device error {code}: {message}")
        self.code = code
        self.message = message


@dataclass
class LinkCounters:
    """Running totals for one link; runners report the difference per item."""

    frames_sent: int = 0
    data_frames: int = 0
    retransmitted_frames: int = 0
    retransmitted_bytes: int = 0
    naks: int = 0
    timeouts: int = 0
    bad_frames: int = 0

    def copy(self) -> LinkCounters:
        return LinkCounters(**vars(self))

    def since(self, before: LinkCounters) -> LinkCounters:
        return LinkCounters(**{k: v - getattr(before, k) for k, v in vars(self).items()})


@dataclass(frozen=True)
class Transfer:
    """A finished transfer: when the first byte left and when COMPLETE arrived."""

    job: int
    started: float
    complete_at: float
    length: int


@dataclass(frozen=True)
class Answer:
    """A job's final frame: text for RESULT, or an error code and message."""

    job: int
    arrived: float
    text: str | None = None
    error_code: int | None = None
    error: str | None = None


class DeviceLink:
    """One session with a device on ``port`` (a pyserial Serial or serial_for_url object)."""

    def __init__(
        self,
        port: Any,
        baud: int,
        silence_seconds: float = 3.0,
        max_window: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.port = port
        self.baud = baud
        self.silence_seconds = silence_seconds
        self.max_window = max_window
        self.clock = clock
        port.timeout = _POLL_SECONDS
        self._decoder = wire.FrameDecoder()
        self._seq = 0
        self._job = 0
        self.ready: wire.Ready | None = None
        self.counters = LinkCounters()
        self.round_trip_seconds: float | None = None
        self._interrupted = threading.Event()
        self._last_heard = clock()
        self._pending: list[wire.Frame] = []

    # --- frames ------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Make the call in progress (on another thread) raise LinkInterrupted."""
        self._interrupted.set()

    def line_seconds(self, nbytes: int) -> float:
        return nbytes * 10 / self.baud

    def send(self, ftype: int, payload: bytes = b"", flush: bool = False) -> int:
        """Send one frame; return its seq."""
        seq = self._seq
        self._seq = (self._seq + 1) & 0xFFFF
        frame = wire.encode_frame(ftype, seq, payload)
        self.port.write(wire.DELIMITER + frame if flush else frame)
        self.counters.frames_sent += 1
        return seq

    def receive(self, deadline: float) -> wire.Frame | None:
        """The next valid frame, or None at ``deadline``."""
        pending = self._pending
        while True:
            if pending:
                self._last_heard = self.clock()
                return pending.pop(0)
            if self._interrupted.is_set():
                self._interrupted.clear()
                raise LinkInterrupted("interrupted")
            now = self.clock()
            if now >= deadline:
                return None
            try:
                waiting = self.port.in_waiting
                data = self.port.read(max(1, waiting))
            except Exception as exc:  # pyserial raises SerialException, OSError or ValueError
                raise LinkLost(f"serial port error: {exc}") from exc
            if data:
                bad = self._decoder.bad
                pending.extend(self._decoder.feed(bytes(data)))
                self.counters.bad_frames += self._decoder.bad - bad

    def _silent_for(self) -> float:
        return self.clock() - self._last_heard

    # --- handshake ---------------------------------------------------------------------------

    def hello(self, deadline: float, reset: bool = False) -> wire.Ready:
        """HELLO (or RESET) until READY; any READY from a fresh boot also counts."""
        with contextlib.suppress(Exception):
            self.port.reset_input_buffer()
        self._pending.clear()
        ftype = FrameType.RESET if reset else FrameType.HELLO
        payload = b"" if reset else wire.Hello(wire.PROTOCOL_VERSION, HOST_MAX_PAYLOAD).pack()
        sent: set[int] = set()
        interval = 0.25 + 2 * self.line_seconds(300)
        while self.clock() < deadline:
            sent.add(self.send(ftype, payload, flush=True))
            until = min(deadline, self.clock() + interval)
            while True:
                frame = self.receive(until)
                if frame is None:
                    break
                if frame.type != FrameType.READY:
                    continue
                if frame.ack in sent:
                    self.ready = wire.Ready.unpack(frame.payload)
                    return self.ready
                if frame.ack == wire.NO_ACK:
                    # A boot announcement: our earlier request was lost while it booted.
                    sent.add(self.send(ftype, payload, flush=True))
        raise LinkLost("no READY")

    def ping(self, timeout: float = 1.0) -> float | None:
        """Round-trip time of one PING, or None if no PONG came within ``timeout``."""
        start = self.clock()
        seq = self.send(FrameType.PING, b"onsite")
        while True:
            frame = self.receive(start + timeout)
            if frame is None:
                return None
            if frame.type == FrameType.PONG and frame.ack == seq:
                self.round_trip_seconds = self.clock() - start
                return self.round_trip_seconds
            self._check_reboot(frame)

    # --- transfers ---------------------------------------------------------------------------

    def next_job(self) -> int:
        self._job = (self._job + 1) % wire.NO_JOB
        return self._job

    def _check_reboot(self, frame: wire.Frame) -> None:
        if frame.type == FrameType.READY:
            ready = wire.Ready.unpack(frame.payload)
            if (
                self.ready is None
                or ready.boot_id != self.ready.boot_id
                or frame.ack == wire.NO_ACK
            ):
                raise LinkLost("the device rebooted (unsolicited READY)")

    def _rto(self, frame_bytes: int) -> float:
        """Retransmission timeout: twice the window's line time plus scheduling slack."""
        return 0.15 + 2 * self.line_seconds(frame_bytes)

    def transfer(self, job: int, kind: int, data: bytes, sample_rate: int = 0) -> Transfer:
        """Send ``data`` as ``job``; return when the device has said COMPLETE.

        Go-back-N over a window of ``ready.window`` DATA frames: an ACK moves
        the window, a NAK or a timeout rewinds to the device's offset. The chunk
        size halves on every loss and doubles back after a run of clean frames.
        """
        ready = self.ready
        if ready is None:
            raise RuntimeError("transfer before hello")
        total = len(data)
        begin = wire.Begin(job, kind, sample_rate, total, zlib.crc32(data)).pack()
        started = self.clock()
        self._last_heard = started
        max_chunk = max(MIN_CHUNK, ready.max_payload - 8)
        # Frames beyond the few that cover the ACK delay only sit in OS buffers, where a
        # rewind cannot recall them: they would cross the line for nothing after a loss.
        window = max(1, min(ready.window, self.max_window))
        chunk = max_chunk
        clean = 0
        # BEGIN until the device answers ACK (offset 0), COMPLETE (empty input) or ERROR.
        stalls = 0
        while True:
            self.send(FrameType.BEGIN, begin)
            got = self._await_job_frame(job, self.clock() + self._rto(64))
            if got is not None:
                break
            stalls += 1
            self.counters.timeouts += 1
            self.counters.retransmitted_frames += 1
            if stalls > MAX_STALLS or self._silent_for() > self.silence_seconds:
                raise LinkLost("no answer to BEGIN")
        base = 0
        sent_to = 0  # bytes sent in the current pass (go-back-N send pointer)
        high = 0  # highest byte ever sent, to count retransmitted bytes
        inflight: list[tuple[int, int]] = []  # (offset, end) of unacknowledged frames
        rewind_seq = self._seq  # the first frame sent in the current pass
        stalls = 0
        due = 0.0
        while True:
            frame = got
            got = None
            if frame is not None:
                kind_ = frame.type
                if kind_ == FrameType.COMPLETE:
                    return Transfer(job, started, self.clock(), total)
                _, offset = wire.unpack_job_offset(frame.payload)
                if kind_ == FrameType.ACK:
                    if offset > base:
                        base = offset
                        inflight = [f for f in inflight if f[1] > base]
                        stalls = 0
                        clean += 1
                        if clean >= 8 and chunk < max_chunk:
                            chunk = min(max_chunk, chunk * 2)
                            clean = 0
                        due = self.clock() + self._rto(window * (chunk + 24))
                elif kind_ == FrameType.NAK and _newer_or_same(frame.ack, rewind_seq):
                    # A NAK caused by a frame sent before our last rewind is old news.
                    self.counters.naks += 1
                    base = offset
                    sent_to = base
                    rewind_seq = self._seq
                    inflight = []
                    chunk = max(MIN_CHUNK, chunk // 2)
                    clean = 0
            now = self.clock()
            if inflight and now >= due:
                # Nothing moved for a whole RTO: the frame or its ACK was lost.
                self.counters.timeouts += 1
                stalls += 1
                if stalls > MAX_STALLS or self._silent_for() > self.silence_seconds:
                    raise LinkLost(f"no ACK after {stalls} retransmissions")
                # Resend from the device's offset; at the end, the last byte asks again
                # for the COMPLETE that was lost.
                sent_to = min(base, total - 1)
                rewind_seq = self._seq
                inflight = []
                chunk = max(MIN_CHUNK, chunk // 2)
                clean = 0
            while len(inflight) < window and sent_to < total:
                end = min(total, sent_to + chunk)
                payload = wire.pack_data(job, sent_to, data[sent_to:end])
                self.send(FrameType.DATA, payload)
                self.counters.data_frames += 1
                if sent_to < high:
                    self.counters.retransmitted_frames += 1
                    self.counters.retransmitted_bytes += min(end, high) - sent_to
                high = max(high, end)
                if not inflight:
                    due = self.clock() + self._rto(window * (chunk + 24))
                inflight.append((sent_to, end))
                sent_to = end
            if not inflight:
                # Everything acknowledged but no COMPLETE yet (a device that ACKed the end).
                inflight.append((total, total))
                due = self.clock() + self._rto(window * (chunk + 24))
            got = self._await_job_frame(job, due)

    def _await_job_frame(self, job: int, deadline: float) -> wire.Frame | None:
        """The next ACK/NAK/COMPLETE for ``job``; ERROR raises DeviceRefused."""
        while True:
            frame = self.receive(deadline)
            if frame is None:
                return None
            self._check_reboot(frame)
            if frame.type in (FrameType.ACK, FrameType.NAK, FrameType.COMPLETE):
                got_job, _ = wire.unpack_job_offset(frame.payload)
                if got_job == job:
                    return frame
            elif frame.type in (FrameType.RESULT, FrameType.ERROR):
                got_job, code = wire.unpack_job_code(frame.payload)
                if got_job != job:
                    continue
                if frame.type == FrameType.ERROR and code in REFUSALS:
                    _, code, message = wire.unpack_error(frame.payload)
                    self.send(FrameType.RESULT_ACK, wire.pack_job(job))
                    raise DeviceRefused(code, message)
                # An answer means the input was complete; that COMPLETE was lost.
                self._pending.insert(0, frame)
                return wire.Frame(
                    FrameType.COMPLETE, frame.seq, frame.ack, wire.pack_job_offset(job, 0)
                )

    def wait_answer(self, job: int, deadline: float, ping_every: float | None = 0.5) -> Answer:
        """Wait for the job's RESULT or ERROR until ``deadline`` (TimeoutError after it).

        With ``ping_every`` the device is pinged while it works; a device that
        answers nothing for ``silence_seconds`` raises LinkLost.
        """
        next_ping = self.clock() + (ping_every or 0.0)
        ping_seq: int | None = None
        ping_at = 0.0
        self._last_heard = self.clock()
        while True:
            now = self.clock()
            if now >= deadline:
                raise TimeoutError("no RESULT before the deadline")
            if ping_every is not None:
                if self._silent_for() > self.silence_seconds:
                    raise LinkLost(f"the device was silent for {self.silence_seconds:g} s")
                if now >= next_ping:
                    ping_seq = self.send(FrameType.PING, b"")
                    ping_at = now
                    next_ping = now + ping_every
            until = min(deadline, next_ping) if ping_every is not None else deadline
            frame = self.receive(until)
            if frame is None:
                continue
            self._check_reboot(frame)
            if frame.type == FrameType.RESULT:
                got_job, text = wire.unpack_result(frame.payload)
                self.send(FrameType.RESULT_ACK, wire.pack_job(got_job))
                if got_job == job:
                    return Answer(job, self.clock(), text=text)
            elif frame.type == FrameType.ERROR:
                got_job, code, message = wire.unpack_error(frame.payload)
                self.send(FrameType.RESULT_ACK, wire.pack_job(got_job))
                if got_job == job:
                    return Answer(job, self.clock(), error_code=code, error=message)
            elif frame.type == FrameType.PONG:
                if frame.ack == ping_seq:
                    self.round_trip_seconds = self.clock() - ping_at
                state, got_job, _ = wire.unpack_pong(frame.payload)
                if got_job != job or state == DeviceState.IDLE:
                    # The device forgot the job (a reset we did not see): it will never answer.
                    raise LinkLost(f"the device is in state {state} for job {got_job}")

    def run_job(self, kind: int, data: bytes, sample_rate: int, deadline: float) -> Answer:
        """Transfer and wait for the answer in one call (setup, probes)."""
        job = self.next_job()
        try:
            self.transfer(job, kind, data, sample_rate)
        except DeviceRefused as exc:
            return Answer(job, self.clock(), error_code=exc.code, error=exc.message)
        ping = 0.5 if self.ready is not None and self.ready.ping_while_busy else None
        return self.wait_answer(job, deadline, ping)
