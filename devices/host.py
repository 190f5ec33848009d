"""Controller side of the serial protocol: handshake, transfers with retransmission, results.

:class:`DeviceLink` drives one device over an open pyserial port. It knows
nothing of items or budgets; runners.serial_runner maps its events onto the
Runner interface. Times are ``time.monotonic()`` of the moment a frame's last
byte was read.
"""

from __future__ import annotations

import contextlib
import math
import select
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import wire
from .wire import DeviceState, ErrorCode, FrameType

HOST_MAX_PAYLOAD = 4096
# Chunks never shrink below this many bytes, unless the device's max_payload is smaller.
MIN_CHUNK = 24
# The chunk size of a new link, before the line has shown its error rate.
FIRST_CHUNK = 1016
# Unanswered retransmissions in a row after which the device is taken for lost.
MAX_STALLS = 12
# DATA frames in flight with a device that keeps out-of-order frames.
MAX_SELECTIVE_WINDOW = 255
# Line time the host keeps queued ahead of the line (a resent frame waits behind it).
QUEUE_SECONDS = 0.03
# Least scheduling slack in the retransmission timeout (device, host and the OS between).
RTO_SLACK_SECONDS = 0.05
_POLL_SECONDS = 0.02
# How often a device that is silent on its job is asked (PING) whether it is alive.
PING_SECONDS = 0.5
# Least time between PINGs that ask again for an answer that came corrupt.
RESOLICIT_SECONDS = 0.01
# Times at most that the host asks again for one answer (then the device's own repeats).
MAX_SOLICITS = 8
# PINGs sent each time: a lost one (a few % on a noisy line) then costs nothing.
SOLICIT_COPIES = 2
# A partial frame with no byte after it for this long lost its 0x00 on the line (longer
# than a USB adapter's latency timer, 16 ms by default, and a loaded machine's stalls).
STALE_PARTIAL_SECONDS = 0.03
# Host frames after which a device's ``ack`` can no longer be compared with a seq (mod 2**16).
_SEQ_HORIZON = 0x8000
# What a DATA frame costs beyond its chunk on the wire: header, CRC, DATA fields, COBS, 0x00.
_DATA_WIRE_OVERHEAD = wire.FRAME_OVERHEAD + wire.DATA_HEADER_SIZE + 2
# The whole input first: at least this many pieces when the input is long enough, so the
# last frame, whose bytes a device can read as they cross, carries little of the input.
WHOLE_FIRST_PIECES = 16


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


class JobTimeout(TimeoutError):
    """The device was alive (it answered PING) but silent on its job past the deadline.

    ``since`` is where the item's clock ran from: the input's last byte could have
    reached the device then, or (input not all sent) the item's first byte went out.
    """

    def __init__(self, message: str, since: float) -> None:
        super().__init__(message)
        self.since = since


class ProtocolViolation(Exception):
    """The device broke a rule that a device holding what it claims could not break.

    It said COMPLETE, acknowledged the last byte or answered a job before it held the
    whole input (docs/device-protocol.md section 6): the participant's failure.
    """


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
    """A finished transfer.

    ``started`` is when BEGIN left, ``complete_at`` when the confirming frame
    arrived, ``clock_start`` when the DATA frame that completed the input had
    crossed the line (the processing clock's start, never later than
    ``complete_at``), and ``clock_event`` which frame confirmed it: "complete",
    "ack" (the device acknowledged the last byte but sent no COMPLETE),
    "answer" (RESULT or ERROR came first) or "first_byte" (the confirming frame
    began to cross before the input could have reached the device, so the clock
    starts at ``first_byte``; ``note`` says why). ``first_byte`` is when the
    item's first byte (BEGIN's) could start to cross the line, and
    ``input_crossed`` the earliest moment the whole input could have reached the
    device at the line rate. ``whole_input_first`` is True when the DATA went in an
    order from which no first part of the input could be rebuilt before the last
    frame (asked for, and the device keeps DATA beyond a gap, and kept every frame it
    answered).
    """

    job: int
    started: float
    complete_at: float
    length: int
    clock_start: float
    clock_event: str
    first_byte: float = 0.0
    input_crossed: float = 0.0
    note: str = ""
    whole_input_first: bool = False

    def clock_for(self, began: float) -> tuple[float, str, str]:
        """(clock start, event, note) for an answer that began to cross the line at ``began``.

        An answer cannot begin before the input could have reached the device; one
        that did was worked out during the transfer, so its clock runs from the
        item's first byte (docs/device-protocol.md section 7).
        """
        if self.clock_event == "first_byte" or began >= self.input_crossed:
            return self.clock_start, self.clock_event, self.note
        return min(self.first_byte, began), "first_byte", _early_note("answer", self, began)


def _outstanding(flights: dict[int, _Flight], scattered: bool) -> int:
    """DATA frames that count against the device's window: those it has not answered
    (whole input first), else every frame beyond its offset, as always."""
    if scattered:
        return sum(1 for f in flights.values() if not f.held)
    return len(flights)


def _oldest_arrival(flights: dict[int, _Flight], scattered: bool, default: float) -> float:
    """When the frame whose answer is awaited longest had crossed the line.

    In order, the first frame beyond the device's offset. Whole input first, the
    oldest frame the device has not answered; once it has answered every one, the
    newest, after which the COMPLETE is awaited.
    """
    if not flights:
        return default
    if not scattered:
        return flights[min(flights)].arrival
    waiting = [f.arrival for f in flights.values() if not f.held]
    return min(waiting) if waiting else max(f.arrival for f in flights.values())


def _early_note(what: str, transfer: Transfer | _Cover, began: float) -> str:
    return (
        f"the device's {what} began to cross the line "
        f"{transfer.input_crossed - began:.3f} s before the input could have reached it: "
        "processing timed from the item's first byte (if the line is faster than the "
        "site file's baud, correct it)"
    )


@dataclass
class _Cover:
    """When the whole input had first been written, and could first have crossed the line."""

    first_byte: float = 0.0
    written_at: float | None = None  # just before the write of its last new bytes
    input_crossed: float = math.inf  # when those bytes could have reached the device
    last_seq: int | None = None  # the seq of the frame that carried them
    frames_before: int = 0  # the link's frame count when it was sent


@dataclass
class _Flight:
    """One unacknowledged DATA frame: its byte range and the seq of its latest copy."""

    offset: int
    end: int
    seq: int
    resent: bool = False
    arrival: float = 0.0  # when its latest copy will have crossed the line
    held: bool = False  # the device answered its latest copy: it keeps it beyond a gap


def scattered_order(count: int) -> list[int]:
    """The order to send ``count`` pieces of an input whole input first: piece 0 last.

    The reverse of the bit-reversed order: the odd pieces first, then those that join
    them in threes, and so on, so that at any moment the pieces still missing are spread
    evenly over the input. Before the last frame the device holds no first part at
    all, and while a fraction p of the pieces has come, no run of 2 / (1 - p) pieces
    or more without a gap (none of two in the first half).
    """
    bits = max(1, (count - 1).bit_length())

    def reversed_bits(n: int) -> int:
        return int(format(n, f"0{bits}b")[::-1], 2)

    return sorted(range(count), key=reversed_bits, reverse=True)


def _scattered(total: int, chunk: int, min_chunk: int) -> list[tuple[int, int]]:
    """The byte ranges of a whole-input-first transfer, in the order they are sent."""
    piece = max(min_chunk, min(chunk, FIRST_CHUNK, -(-total // WHOLE_FIRST_PIECES)))
    pieces = [(o, min(total, o + piece)) for o in range(0, total, piece)]
    return [pieces[i] for i in scattered_order(len(pieces))]


class _ClockStart:
    """Finds when the input was complete at the device, from what the device said.

    Every DATA copy is noted with its seq and the moment its last byte crossed
    the line (the host's own line model). A device frame saying "not complete
    yet" (ACK or NAK below the total) carries in ``ack`` the seq of the last
    frame it had read, so no copy up to that seq completed the input. The
    confirming frame's ``ack`` bounds the completing copy from above. The
    clock starts at the earliest copy left: a device cannot move it later by
    keeping quiet, by acknowledging instead of saying COMPLETE, or by losing
    its COMPLETE on the line; nor start it later than the confirming frame
    began to cross (the host's line model is an estimate; that bound is not).
    """

    def __init__(self, names_copy: bool = False) -> None:
        self._copies: list[tuple[int, float]] = []
        # READY flag bit 2 (revision 4): COMPLETE and RESULT name the completing copy.
        self.names_copy = names_copy

    def sent(self, seq: int, arrival: float) -> None:
        self._copies.append((seq, arrival))

    def _not_complete(self, ack: int) -> None:
        if ack == wire.NO_ACK:
            return
        self._copies = [(s, t) for s, t in self._copies if not _newer_or_same(ack, s)]

    def confirmed(self, frame: wire.Frame, total: int, latest: float) -> tuple[float, str] | None:
        """(clock start, event) if ``frame`` says the device has the whole input.

        ``latest`` is when ``frame`` began to cross the line: the device had the
        input by then, so the clock never starts later, whatever the line model
        says (a model that ran ahead of the line must not credit the device).
        """
        if frame.type == FrameType.COMPLETE:
            event = "complete"
        elif frame.type in (FrameType.RESULT, FrameType.ERROR):
            event = "answer"
        elif frame.type == FrameType.ACK and wire.unpack_job_offset(frame.payload)[1] >= total:
            event = "ack"
        else:
            self._not_complete(frame.ack)
            return None
        copies = self._copies
        if self.names_copy and event in ("complete", "answer") and frame.type != FrameType.ERROR:
            # The device names the copy that completed its input: copies before it that
            # were lost or corrupt on the line are not its time (section 7, revision 4).
            # A name it could not have read yet (newer than `ack`) is not believed.
            named = wire.unpack_second_field(frame.payload)
            if frame.ack != wire.NO_ACK and _newer_or_same(frame.ack, named):
                at = [t for s, t in copies if s == named]
                if at:
                    return min(at[-1], latest), event
        upto = [t for s, t in copies if frame.ack != wire.NO_ACK and _newer_or_same(frame.ack, s)]
        if upto:
            return min(min(upto), latest), event
        if copies:
            return min(min(t for _, t in copies), latest), event
        # No copy left to blame (a device that misreports ack): the confirmation itself.
        return latest, event


class _Watch:
    """Tells a device that is silent on its job from a dead line, by PING.

    Once no frame of the job has come for PING_SECONDS, the host pings every
    PING_SECONDS. A device that answers nothing at all (no PONG, no frame) for
    ``silence_seconds`` after the first unanswered PING could have reached it has
    lost the link; so has one whose PONG says it is idle or on another job (a
    reset or reboot whose READY was lost), once it had taken the job up (before
    that, a PONG on no job says only that BEGIN has not reached it yet). A PONG
    for the job says the device and the line work: its silence on the job is its
    own.
    """

    def __init__(self, link: DeviceLink, job: int) -> None:
        self.link = link
        self.job = job
        now = link.clock()
        self.job_heard = now  # the last frame of the job
        self.taken = False  # the device has answered on the job
        self.pongs = 0
        self._seqs: set[int] = set()
        self._unanswered = 0
        self._first_unanswered: tuple[float, float] | None = None  # (sent, reaches the device)
        self._next_ping = now
        self._solicits = 0
        self._solicited_at = -math.inf

    def job_frame(self) -> None:
        self.job_heard = self.link.clock()
        self.taken = True

    def solicit(self) -> None:
        """PING now, for an answer that came corrupt (a few times per job at most)."""
        now = self.link.clock()
        if self._solicits < MAX_SOLICITS and now - self._solicited_at >= RESOLICIT_SECONDS:
            self._solicits += 1
            self._solicited_at = now
            for _ in range(SOLICIT_COPIES):
                self._seqs.add(self.link.send(FrameType.PING, b""))

    def pong(self, frame: wire.Frame) -> None:
        """A PONG: LinkLost if it says the device lost the job."""
        if frame.ack not in self._seqs:
            return  # an answer to a PING of an earlier job
        state, got_job, _ = wire.unpack_pong(frame.payload)
        if self.taken and (got_job != self.job or state == DeviceState.IDLE):
            raise LinkLost(_lost_job(self.job, state, got_job))
        self.pongs += 1

    def tick(self, quiet_ok: bool) -> float:
        """PING if the job has been silent long enough; LinkLost if the device answers nothing.

        ``quiet_ok``: the device may be processing and does not answer PING then
        (READY flag bit 0 clear), so its silence proves nothing. Returns when to
        call again.
        """
        link = self.link
        now = link.clock()
        if self._first_unanswered is not None and link._last_heard >= self._first_unanswered[0]:
            self._first_unanswered = None
            self._unanswered = 0
        if now - self.job_heard >= PING_SECONDS and now >= self._next_ping:
            self._seqs.add(link.send(FrameType.PING, b""))
            if self._first_unanswered is None:
                self._first_unanswered = (now, link._line_free)
            self._unanswered += 1
            self._next_ping = now + PING_SECONDS
        if self._first_unanswered is not None and not quiet_ok:
            sent, arrival = self._first_unanswered
            if now > arrival + link.silence_seconds:
                raise LinkLost(
                    f"no answer on job {self.job} and no PONG to {self._unanswered} "
                    f"PINGs over {now - sent:.1f} s"
                )
        return max(self.job_heard + PING_SECONDS, self._next_ping)


def _lost_job(job: int, state: int, got_job: int) -> str:
    return (
        f"PONG says state {state} on job {got_job}: the device lost job {job} "
        "(a reset or reboot whose READY was lost)"
    )


def _name(frame: wire.Frame) -> str:
    try:
        return FrameType(frame.type).name
    except ValueError:
        return f"frame type {frame.type:#04x}"


class ChunkSizer:
    """The DATA chunk size for the error rate this link has shown.

    Each frame of ``L`` bytes on the wire gets through with probability
    ``exp(-q L)``; ``q`` (errors per byte) is estimated from the frames
    delivered first time and those lost, with old observations fading, and
    the chunk is the one that maximises payload per byte on the wire:
    ``c / (c + o) * exp(-q (c + o))``, o the frame overhead.
    """

    _FADE = 0.995

    def __init__(self, max_chunk: int) -> None:
        self.max_chunk = max(1, max_chunk)
        self.min_chunk = min(MIN_CHUNK, self.max_chunk)
        self._ok = 4.0  # a prior of a few clean frames, so one loss does not cut deep
        self._lost = 0.0
        self._ok_bytes = 4.0 * (self.max_chunk + _DATA_WIRE_OVERHEAD)
        self._lost_bytes = 0.0
        # The device's answers received whole and corrupt: a frame resent because its
        # answer was lost was not lost itself, so that share is taken out of the estimate.
        self._replies_ok = 4.0
        self._replies_bad = 0.0
        # Until a frame has got through, no more than about 1 KiB: a line too noisy for the
        # device's largest frames would otherwise lose whole seconds before it learns.
        self.chunk = min(self.max_chunk, FIRST_CHUNK)

    @property
    def errors_per_byte(self) -> float:
        frames = self._ok + self._lost
        if self._lost <= 0 or frames <= 0:
            return 0.0
        mean = (self._ok_bytes + self._lost_bytes) / frames
        reply_loss = min(0.9, self._replies_bad / (self._replies_ok + self._replies_bad))
        seen = min(0.95, self._lost / frames)
        loss = max(0.0, 1.0 - (1.0 - seen) / (1.0 - reply_loss))
        return -math.log1p(-loss) / max(1.0, mean)

    def replies(self, ok: int, bad: int) -> None:
        """The device's frames that arrived whole (``ok``) and corrupt (``bad``)."""
        fade = self._FADE ** (ok + bad)
        self._replies_ok = self._replies_ok * fade + ok
        self._replies_bad = self._replies_bad * fade + bad

    def delivered(self, chunk: int) -> None:
        """A frame with ``chunk`` bytes of data got through the first time."""
        self._note(chunk, ok=True)

    def lost(self, chunk: int) -> None:
        """A frame with ``chunk`` bytes of data was lost (or its answer was)."""
        self._note(chunk, ok=False)

    def _note(self, chunk: int, ok: bool) -> None:
        size = chunk + _DATA_WIRE_OVERHEAD
        self._ok *= self._FADE
        self._lost *= self._FADE
        self._ok_bytes *= self._FADE
        self._lost_bytes *= self._FADE
        if ok:
            self._ok += 1
            self._ok_bytes += size
        else:
            self._lost += 1
            self._lost_bytes += size
        q = self.errors_per_byte
        o = _DATA_WIRE_OVERHEAD
        best = self.max_chunk if q <= 0 else int((-o + math.sqrt(o * o + 4 * o / q)) / 2)
        self.chunk = max(self.min_chunk, min(self.max_chunk, best))


@dataclass(frozen=True)
class Answer:
    """A job's final frame: text for RESULT, or an error code and message.

    ``arrived`` is when the frame began to cross the line (its arrival less its
    own line time): where the processing clock stops.
    """

    job: int
    arrived: float
    text: str | None = None
    error_code: int | None = None
    error: str | None = None
    # Why a RESULT was not accepted (too long, not UTF-8); text is then None.
    invalid: str | None = None


class DeviceLink:
    """One session with a device on ``port`` (a pyserial Serial or serial_for_url object)."""

    def __init__(
        self,
        port: Any,
        baud: int,
        silence_seconds: float = 3.0,
        max_window: int = 3,
        clock: Callable[[], float] = time.monotonic,
        host_max_payload: int = HOST_MAX_PAYLOAD,
    ) -> None:
        self.port = port
        self.baud = baud
        self.silence_seconds = silence_seconds
        self.max_window = max_window
        self.clock = clock
        port.timeout = _POLL_SECONDS
        # A descriptor to wait on up to a deadline finer than the port's timeout, if it has one.
        self._fileno: int | None = None
        with contextlib.suppress(Exception):
            self._fileno = int(port.fileno())
        self._decoder = wire.FrameDecoder()
        self._seq = 0
        self._job = 0
        self.ready: wire.Ready | None = None
        self.counters = LinkCounters()
        self._bad_before_read = 0  # bad frames counted before the last read of the port
        self._bad_at_confirm = 0  # ... before the read that brought a transfer's confirmation
        self._last_byte_at = 0.0
        self.round_trip_seconds: float | None = None
        # The longest RESULT/ERROR payload we accept; HELLO tells the device.
        self.host_max_payload = max(16, min(wire.MAX_PAYLOAD, host_max_payload))
        self._line_free = 0.0  # when the bytes we wrote will have crossed the line
        # How late the device's answers come after our line model says the frame arrived.
        self._late_mean = 0.0
        self._late_dev = 0.0
        self._sizer: ChunkSizer | None = None
        self._interrupted = threading.Event()
        self._last_heard = clock()
        # Frames decoded but not yet handed out, each with when its bytes were read.
        self._pending: list[tuple[wire.Frame, float]] = []
        self._drained_for = -math.inf  # the past deadline whose waiting bytes were read
        # When the bytes of the frame receive() returned last were read: it had arrived by then.
        self.read_at = clock()
        self._last_write_at = 0.0  # just before the last frame's write
        self._last_start = 0.0  # when the last frame's first byte could start to cross
        self._frames_written = 0
        # When the first byte of the current job (its BEGIN) could start to cross the line:
        # what a runner reports as the start of an attempt that ends without a clock.
        self.job_first_byte: float | None = None

    # --- frames ------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Make the call in progress (on another thread) raise LinkInterrupted."""
        self._interrupted.set()

    def line_seconds(self, nbytes: int) -> float:
        return nbytes * 10 / self.baud

    def send(self, ftype: int, payload: bytes = b"", flush: bool = False) -> int:
        """Send one frame; return its seq."""
        seq = self._seq
        # 0..0xFFFE: a device's `ack` of 0xFFFF then always means "no frame read yet".
        self._seq = (self._seq + 1) % wire.NO_ACK
        frame = wire.encode_frame(ftype, seq, payload)
        if flush:
            frame = wire.DELIMITER + frame
        # Taken before the write: the bytes cannot start crossing before this moment.
        now = self.clock()
        self.port.write(frame)
        self._last_write_at = now
        self._last_start = max(now, self._line_free)
        self._line_free = self._last_start + self.line_seconds(len(frame))
        self._frames_written += 1
        self.counters.frames_sent += 1
        return seq

    def receive(self, deadline: float, stop_on_bad: bool = False) -> wire.Frame | None:
        """The next valid frame, or None at ``deadline`` (or, with ``stop_on_bad``, as
        soon as a bad frame has come, or part of a frame whose end does not come: the
        caller may ask again at once).

        Bytes already waiting in the port when the deadline has passed are read,
        once for that deadline: an answer that has arrived is never taken for a
        lost one, and a device that keeps sending cannot hold the host past its
        deadline (a caller that loops on frames it does not want gets None once
        they are read). No read on a port with a file descriptor blocks beyond
        the deadline (the port's coarse poll would let a timer fire late).
        """
        pending = self._pending
        while True:
            if pending:
                self._last_heard = self.clock()
                frame, self.read_at = pending.pop(0)
                return frame
            if self._interrupted.is_set():
                self._interrupted.clear()
                raise LinkInterrupted("interrupted")
            if stop_on_bad and self._stale_partial():
                # Counted as the bad frame it is; the next frame is not glued to it.
                self._decoder.discard_partial()
                self.counters.bad_frames += 1
                return None
            left = deadline - self.clock()
            try:
                waiting = self.port.in_waiting
                if left <= 0:
                    if not waiting or self._drained_for == deadline:
                        return None
                    self._drained_for = deadline
                elif not waiting:
                    if left < _POLL_SECONDS and self._fileno is not None:
                        # The port's own timeout is the coarse poll; wait exactly to the deadline.
                        if not select.select([self._fileno], [], [], left)[0]:
                            continue
                        waiting = self.port.in_waiting
                data = self.port.read(max(1, waiting))
            except Exception as exc:  # pyserial raises SerialException, OSError or ValueError
                raise LinkLost(f"serial port error: {exc}") from exc
            if data:
                read_at = self._last_byte_at = self.clock()
                self._bad_before_read = self.counters.bad_frames
                bad = self._decoder.bad
                pending.extend((f, read_at) for f in self._decoder.feed(bytes(data)))
                self.counters.bad_frames += self._decoder.bad - bad
                if stop_on_bad and self._decoder.bad > bad and not pending:
                    return None

    def _stale_partial(self) -> bool:
        """Part of a frame is held and nothing has followed it for a while: its 0x00 was
        lost on the line."""
        return self._decoder.partial and self.clock() - self._last_byte_at > STALE_PARTIAL_SECONDS

    def _silent_for(self) -> float:
        return self.clock() - self._last_heard

    # --- handshake ---------------------------------------------------------------------------

    def hello(self, deadline: float, reset: bool = False) -> wire.Ready:
        """HELLO (or RESET) until READY; any READY from a fresh boot also counts."""
        with contextlib.suppress(Exception):
            self.port.reset_input_buffer()
        self._pending.clear()
        ftype = FrameType.RESET if reset else FrameType.HELLO
        payload = b"" if reset else wire.Hello(wire.PROTOCOL_VERSION, self.host_max_payload).pack()
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
                    ready = wire.Ready.unpack(frame.payload)
                    if ready.version != wire.PROTOCOL_VERSION:
                        raise LinkLost(
                            f"the device speaks protocol version {ready.version}; "
                            f"this host speaks {wire.PROTOCOL_VERSION}"
                        )
                    self.ready = ready
                    return ready
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
        # 1, 2, ..., 0xFFFE, then 1 again: 0 and 0xFFFF ("no job") are never used.
        self._job = self._job % (wire.NO_JOB - 1) + 1
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

    def _rto(self, queued_bytes: int) -> float:
        """Retransmission timeout: the bytes queued ahead, an ACK's way back, and slack.

        The slack follows how late answers have come (beyond the line model) on
        this link, as TCP's timeout follows the round trip: mean + 4 deviations,
        at least RTO_SLACK_SECONDS, so that a loaded machine does not cause
        timeouts and a quiet one does not wait for nothing.
        """
        slack = max(RTO_SLACK_SECONDS, self._late_mean + 4 * self._late_dev)
        return slack + self.line_seconds(queued_bytes + 2 * wire.encoded_size(8))

    def _answer_due(self, arrival: float) -> float:
        """When the answer to a frame that reaches the device at ``arrival`` is overdue."""
        return arrival + self._rto(0)

    def _answer_lateness(self, seconds: float) -> None:
        """One answer came ``seconds`` after the frame it answers had crossed the line."""
        if self._late_mean == 0.0 and self._late_dev == 0.0:
            self._late_mean, self._late_dev = seconds, seconds / 2
            return
        self._late_dev += 0.25 * (abs(seconds - self._late_mean) - self._late_dev)
        self._late_mean += 0.125 * (seconds - self._late_mean)

    def sizer_for(self, ready: wire.Ready) -> ChunkSizer:
        """The link's chunk sizer: kept across items, so one item's errors teach the next."""
        max_chunk = ready.max_payload - wire.DATA_HEADER_SIZE
        if self._sizer is None or self._sizer.max_chunk != max_chunk:
            self._sizer = ChunkSizer(max_chunk)
        return self._sizer

    def transfer(
        self,
        job: int,
        kind: int,
        data: bytes,
        sample_rate: int = 0,
        hang_seconds: float = 60.0,
        whole_input_first: bool = False,
    ) -> Transfer:
        """Send ``data`` as ``job``; return when the host knows the device has all of it.

        A device that keeps out-of-order DATA (READY flag bit 1) gets a lost frame
        resent alone (selective retransmission); any other device gets go-back-N
        from its offset. The chunk size follows the error rate the link has seen,
        across items (:class:`ChunkSizer`). With ``whole_input_first`` a device that
        keeps out-of-order DATA gets the input in pieces in :func:`scattered_order`,
        so that it can rebuild no first part of it before the last frame; any other
        device takes DATA only in order and gets it so, and one that drops frames it
        answered gets those again in order (``Transfer.whole_input_first`` says
        which). The returned :class:`Transfer` carries the processing clock's start:
        when the DATA frame that completed the input had crossed the line, whichever
        frame (COMPLETE, an ACK of the last byte, the answer) then confirmed it; or
        the item's first byte if that frame began to cross before the input could
        have reached the device.

        A device silent on the job is pinged: LinkLost if it answers nothing,
        :class:`JobTimeout` if it answers PING but is still silent on the job
        ``hang_seconds`` after the input could have reached it (or, input not all
        sent, after the first byte). :class:`ProtocolViolation` if it claims the
        whole input, or answers, before it could hold it.
        """
        ready = self.ready
        if ready is None:
            raise RuntimeError("transfer before hello")
        total = len(data)
        begin = wire.Begin(job, kind, sample_rate, total, zlib.crc32(data)).pack()
        started = self.clock()
        self._last_heard = started
        self.job_first_byte = None
        cover = _Cover()
        watch = _Watch(self, job)

        def quiet_ok() -> bool:
            # All sent, and a device that does not answer PING while it processes: its
            # silence may be work, so it is waited for until the deadline.
            return cover.written_at is not None and not ready.ping_while_busy

        def stalled(stalls: int, what: str) -> None:
            """The device has been silent on the job a while: past the deadline, a timeout."""
            now = self.clock()
            if stalls <= MAX_STALLS and now - watch.job_heard <= self.silence_seconds:
                return
            since = cover.input_crossed if cover.written_at is not None else cover.first_byte
            if now < since + hang_seconds:
                return
            silent = f"silent on job {job} ({what}) for {now - watch.job_heard:.1f} s"
            if quiet_ok():
                raise JobTimeout(
                    f"{silent}; the device does not answer PING while it processes (READY "
                    "flag bit 0), so the line was not checked",
                    since,
                )
            evidence = self._check_alive(job)
            raise JobTimeout(
                f"{silent} while answering PING ({watch.pongs} PONGs; {evidence}): "
                "the device's failure, not the line's",
                since,
            )

        sizer = self.sizer_for(ready)
        selective = ready.selective
        if selective:
            window = max(1, min(ready.window, MAX_SELECTIVE_WINDOW))
        else:
            # Frames beyond the few that cover the ACK delay only sit in OS buffers, where a
            # rewind cannot recall them: they would cross the line for nothing after a loss.
            window = max(1, min(ready.window, self.max_window))
        # The whole input first (docs/device-protocol.md section 6): only a device that
        # keeps DATA beyond a gap can take the input out of order. Its window then bounds
        # the frames it has not answered yet: a frame it answered and kept is no longer
        # in its receive path, and the frame at offset 0, which comes last, would
        # otherwise hold every other one back.
        scattered = whole_input_first and selective
        order = deque(_scattered(total, sizer.chunk, sizer.min_chunk) if scattered else ())
        # A device that dropped frames it answered gets them again in order, as its offset
        # reaches them: it could then rebuild a first part while they cross.
        dropped_any = False
        clock = _ClockStart(ready.names_copy)
        # BEGIN until the device answers ACK (offset 0), COMPLETE (empty input) or ERROR.
        stalls = 0
        begin_sent: dict[int, float] = {}
        while True:
            seq = self.send(FrameType.BEGIN, begin)
            if not begin_sent:
                cover.first_byte = self.job_first_byte = self._last_start
            begin_sent[seq] = self.clock()
            begin_arrival = self._line_free
            if total == 0:
                clock.sent(seq, self._line_free)
                if cover.written_at is None:
                    self._covered(cover, seq)
            got = self._await_job_frame(
                job, min(self.clock() + self._rto(64), watch.tick(quiet_ok())), watch
            )
            if got is not None:
                watch.job_frame()
                if got.ack in begin_sent:
                    self.round_trip_seconds = self.clock() - begin_sent[got.ack]
                    if got.ack == seq:
                        self._answer_lateness(self.clock() - begin_arrival)
                break
            stalls += 1
            self.counters.timeouts += 1
            self.counters.retransmitted_frames += 1
            watch.tick(quiet_ok())
            stalled(stalls, "no answer to BEGIN")
        base = 0  # the device has every byte before this (its last ACK)
        next_new = 0  # go-back-N: the next byte to send; selective: the first never sent
        high = 0  # the highest byte ever sent, to count retransmitted bytes
        flights: dict[int, _Flight] = {}  # unacknowledged DATA frames by offset
        by_seq: dict[int, int] = {}  # seq of a DATA copy -> its frame's offset
        rewind_seq = self._seq  # go-back-N: the first frame sent in the current pass
        stalls = 0
        last_arrival = self._line_free
        progress_at = started
        bad_seen = self.counters.bad_frames
        while True:
            frame = got
            got = None
            sizer.replies(frame is not None, self.counters.bad_frames - bad_seen)
            bad_seen = self.counters.bad_frames
            if frame is not None:
                read_at = self.read_at
                began = self._sent_at(frame, read_at)
                confirmed = clock.confirmed(frame, total, began)
                if confirmed is not None:
                    try:
                        self._judge(job, frame, cover, total, read_at, began)
                    except ProtocolViolation:
                        # An early answer waits for wait_answer no more.
                        self._pending = [p for p in self._pending if p[0] is not frame]
                        raise
                    start, event = confirmed
                    self._bad_at_confirm = self._bad_before_read
                    note = ""
                    if began < cover.input_crossed:
                        start, event = min(cover.first_byte, began), "first_byte"
                        note = _early_note(_name(frame), cover, began)
                    return Transfer(
                        job,
                        started,
                        read_at,
                        total,
                        start,
                        event,
                        cover.first_byte,
                        cover.input_crossed,
                        note,
                        scattered and not dropped_any,
                    )
                _, offset = wire.unpack_job_offset(frame.payload)
                named = flights.get(by_seq.get(frame.ack, -1))
                if named is not None and named.seq == frame.ack:
                    self._answer_lateness(self.clock() - named.arrival)
                if offset > base:
                    for off in [o for o, f in flights.items() if f.end <= offset]:
                        done = flights.pop(off)
                        if not done.resent and not (scattered and done.held):
                            sizer.delivered(done.end - done.offset)
                    base = offset
                    stalls = 0
                    progress_at = self.clock()
                if selective:
                    # Every DATA gets exactly one ACK or NAK carrying its seq in `ack`: that
                    # frame is held by the device. Frames we sent before it that are neither
                    # held nor acknowledged were lost (or their answer was): send them again.
                    for seq in (frame.ack, wire.unpack_previous(frame.payload)):
                        held = flights.get(by_seq.get(seq, -1))
                        if held is not None and held.seq == seq and not held.held:
                            held.held = True
                            stalls = 0  # the device is receiving: the line is bad, not dead
                            if scattered:
                                # Out of order, a frame the device keeps is its progress.
                                progress_at = self.clock()
                                if not held.resent:
                                    sizer.delivered(held.end - held.offset)
                    dropped: set[int] = set()
                    if scattered:
                        # The device says it lacks the byte at `offset`: a frame it was
                        # said to keep that holds that byte was not kept after all (a
                        # device with room for fewer frames than the input has). Again,
                        # and the line is not to blame.
                        for f in flights.values():
                            if f.held and f.offset <= offset < f.end:
                                f.held = False
                                dropped.add(f.offset)
                                dropped_any = True
                    lost = [
                        f
                        for f in flights.values()
                        if not f.held and f.seq != frame.ack and _newer_or_same(frame.ack, f.seq)
                    ]
                    for flight in sorted(lost, key=lambda f: f.offset):
                        self.counters.naks += frame.type == FrameType.NAK
                        if flight.offset not in dropped:
                            sizer.lost(flight.end - flight.offset)
                        self._send_data(
                            job, data, flight, clock, (flights, base, sizer.chunk), by_seq
                        )
                elif frame.type == FrameType.NAK:
                    if _newer_or_same(frame.ack, rewind_seq):
                        # A NAK caused by a frame sent before our last rewind is old news.
                        self.counters.naks += 1
                        sizer.lost(sizer.chunk)
                        flights.clear()
                        base = next_new = offset
                        rewind_seq = self._seq
            # Overdue: no answer to the oldest frame in flight, or (all of them answered)
            # no COMPLETE after the last one.
            last_arrival = _oldest_arrival(flights, scattered, last_arrival)
            # While ACKs keep coming the line is only slower than our model of it.
            due = self._answer_due(max(last_arrival, progress_at))
            # Only when nothing came: answers already waiting are read before any timeout.
            now = self.clock()
            if now >= due and (frame is None or now >= due + self._rto(0)):
                # Nothing moved for a whole RTO: a frame, or its answer, was lost.
                self.counters.timeouts += 1
                stalls += 1
                stalled(stalls, f"no ACK after {stalls} retransmissions")
                oldest = flights.get(min(flights)) if flights else None
                # Every frame still unanswered is taken for lost, so that a chunk far too
                # long for the line shrinks in one step, not one timeout at a time.
                unanswered = [f for f in flights.values() if not f.held]
                for f in unanswered or [_Flight(0, sizer.chunk, 0)]:
                    sizer.lost(f.end - f.offset)
                if total == 0:
                    clock.sent(self.send(FrameType.BEGIN, begin), self._line_free)
                elif scattered:
                    # The frame unanswered longest; with every frame answered and sent,
                    # the last byte again, which asks for the COMPLETE that was lost.
                    waiting = [f for f in flights.values() if not f.held]
                    again: _Flight | None = None
                    if waiting:
                        again = min(waiting, key=lambda f: f.arrival)
                    elif not order:
                        again = flights[total - 1] = _Flight(total - 1, total, 0)
                    if again is not None:
                        self._send_data(
                            job, data, again, clock, (flights, base, sizer.chunk), by_seq
                        )
                elif selective and (flights or next_new >= total):
                    # The oldest frame the device lacks; at the end, the last byte again,
                    # which asks for the COMPLETE that was lost.
                    if oldest is None:
                        oldest = _Flight(total - 1, total, 0)
                        flights[oldest.offset] = oldest
                    self._send_data(job, data, oldest, clock, (flights, base, sizer.chunk), by_seq)
                else:
                    flights.clear()
                    next_new = min(base, total - 1)
                    rewind_seq = self._seq
                last_arrival = self._line_free
            while _outstanding(flights, scattered) < window and (
                order if scattered else next_new < total
            ):
                if (
                    _outstanding(flights, scattered) >= 2
                    and self._line_free - self.clock() > QUEUE_SECONDS
                ):
                    break  # enough queued ahead of the line; a resend would wait behind it
                if scattered:
                    flight = _Flight(*order.popleft(), 0)
                    last_new = not order
                else:
                    flight = _Flight(next_new, min(total, next_new + sizer.chunk), 0)
                    flight.resent = next_new < high
                    last_new = flight.end >= total
                end = flight.end
                self._send_data(job, data, flight, clock, by_seq=by_seq)
                if last_new and cover.written_at is None:
                    self._covered(cover, flight.seq)
                if flight.resent:
                    self.counters.retransmitted_frames += 1
                    self.counters.retransmitted_bytes += min(end, high) - next_new
                high = max(high, end)
                flights[flight.offset] = flight
                last_arrival = flight.arrival
                if not scattered:
                    next_new = end
            last_arrival = _oldest_arrival(flights, scattered, last_arrival)
            due = self._answer_due(max(last_arrival, progress_at))
            more = order if scattered else next_new < total
            if more and _outstanding(flights, scattered) < window:
                # Come back when the line has room for the next frame.
                due = min(due, max(self.clock(), self._line_free - QUEUE_SECONDS) + 0.001)
            got = self._await_job_frame(
                job,
                min(due, watch.tick(quiet_ok())),
                watch,
                ask_on_bad=cover.written_at is not None and ready.ping_while_busy,
            )
            if got is not None:
                watch.job_frame()

    def _covered(self, cover: _Cover, seq: int) -> None:
        """The frame just sent (``seq``) carried the input's last bytes for the first time."""
        cover.written_at = self._last_write_at
        cover.input_crossed = self._line_free
        cover.last_seq = seq
        cover.frames_before = self._frames_written

    def _judge(
        self, job: int, frame: wire.Frame, cover: _Cover, total: int, read_at: float, began: float
    ) -> None:
        """ProtocolViolation if ``frame`` (COMPLETE, ACK of the last byte or the answer)
        came before the device could hold the whole input.

        Two proofs, neither resting on the line model alone: the frame was read
        before the host had written the input's last bytes; or its ``ack`` says the
        device had not read the frame that carried them, and the line model agrees
        (it began to cross before they could have arrived).
        """
        what = _name(frame)
        if cover.written_at is None or read_at < cover.written_at:
            raise ProtocolViolation(
                f"the device sent {what} on job {job} before it held the whole input: it "
                f"arrived before the host had sent all {total} bytes (a device says "
                "COMPLETE, acknowledges the last byte or answers only once it holds the "
                "whole input: docs/device-protocol.md section 6)"
            )
        if began >= cover.input_crossed or cover.last_seq is None:
            return
        if self._frames_written - cover.frames_before >= _SEQ_HORIZON:
            return  # the seqs have wrapped since: ack can no longer be compared
        if frame.ack == wire.NO_ACK or not _newer_or_same(frame.ack, cover.last_seq):
            raise ProtocolViolation(
                f"the device sent {what} on job {job} before it held the whole input: its "
                f"ack {frame.ack} says it had not read frame {cover.last_seq}, which "
                "carried the input's last bytes, and it began to cross the line "
                f"{cover.input_crossed - began:.3f} s before those could have reached it "
                "(docs/device-protocol.md section 6)"
            )

    def _send_data(
        self,
        job: int,
        data: bytes,
        flight: _Flight,
        clock: _ClockStart,
        resend: tuple[dict[int, _Flight], int, int] | None = None,
        by_seq: dict[int, int] | None = None,
    ) -> None:
        """Send one DATA frame and note its copy.

        ``resend`` = (frames in flight, the device's offset, the current chunk
        size) sends a lost frame again: from the device's offset if that lies
        inside it, in pieces no longer than the chunk the error rate allows now.
        """
        start = flight.offset
        if resend is not None:
            flights, base, chunk = resend
            start = max(flight.offset, min(base, flight.end - 1))
            del flights[flight.offset]
            # A frame longer than the error rate now allows goes again in pieces, all at
            # once: they were all lost with it.
            # Equal pieces, as many as the chunk size calls for (rounded: a frame a little
            # longer than the chunk goes whole rather than as a full piece and a crumb).
            count = max(1, round((flight.end - start) / chunk))
            step = -(-(flight.end - start) // count)
            pieces = [
                _Flight(o, min(flight.end, o + step), 0, resent=True)
                for o in range(start, flight.end, step)
            ]
            for piece in pieces:
                flights[piece.offset] = piece
                self.counters.retransmitted_frames += 1
                self.counters.retransmitted_bytes += piece.end - piece.offset
                self._send_data(job, data, piece, clock, by_seq=by_seq)
            return
        payload = wire.pack_data(job, start, data[start : flight.end])
        flight.seq = self.send(FrameType.DATA, payload)
        flight.arrival = self._line_free
        if by_seq is not None:
            by_seq[flight.seq] = flight.offset
        self.counters.data_frames += 1
        clock.sent(flight.seq, self._line_free)

    def _await_job_frame(
        self, job: int, deadline: float, watch: _Watch | None = None, ask_on_bad: bool = False
    ) -> wire.Frame | None:
        """The next ACK/NAK/COMPLETE for ``job``; ERROR raises DeviceRefused.

        PONGs go to ``watch``, which raises LinkLost if one says the job is lost.
        With ``ask_on_bad`` (the whole input sent, to a device that answers PING
        while it works) a corrupt frame is answered with PING at once: it was most
        likely COMPLETE or the answer, and a device in DONE sends the answer again
        on PING (section 5.5), which also confirms the input (section 6).
        """
        while True:
            bad = self.counters.bad_frames
            frame = self.receive(deadline, stop_on_bad=ask_on_bad and watch is not None)
            if self.counters.bad_frames > bad and ask_on_bad and watch is not None:
                watch.solicit()
            if frame is None:
                if self.clock() < deadline:
                    continue
                return None
            self._check_reboot(frame)
            if frame.type == FrameType.PONG and watch is not None:
                watch.pong(frame)
            elif frame.type in (FrameType.ACK, FrameType.NAK, FrameType.COMPLETE):
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
                # An answer means the input was complete (its COMPLETE was lost); the
                # answer itself stays for wait_answer.
                self._pending.insert(0, (frame, self.read_at))
                return frame

    def wait_answer(self, job: int, deadline: float, ping_every: float | None = 0.5) -> Answer:
        """Wait for the job's RESULT or ERROR until ``deadline`` (TimeoutError after it).

        With ``ping_every`` the device is pinged while it works: one that answers
        nothing for ``silence_seconds``, or whose PONG says it lost the job, raises
        LinkLost. At the deadline such a device is pinged once more: if it answers,
        the line works and TimeoutError says so; if not, LinkLost. Without
        ``ping_every`` (a device that does not answer PING while it processes) the
        deadline is a TimeoutError unchecked.
        """
        next_ping = self.clock() + (ping_every or 0.0)
        pings: dict[int, float] = {}  # seq -> when sent
        pongs = 0
        unanswered = 0
        self._last_heard = self.clock()
        # Bad frames read with the transfer's confirming frame may be the answer already.
        bad_seen = min(self.counters.bad_frames, self._bad_at_confirm)
        self._bad_at_confirm = self.counters.bad_frames
        # When to ask (PING) for an answer that may have come corrupt, or been cut short;
        # a device in DONE sends it again at once on PING (section 5.5), so a line error
        # costs the device a round trip of recorded time, not its repeat interval.
        solicit_due = math.inf
        solicits = 0
        # PING, then PONG and an answer of up to 128 bytes, and how late answers come here.
        reply_wait = (
            RESOLICIT_SECONDS
            + self._late_mean
            + 4 * self._late_dev
            + self.line_seconds(wire.encoded_size(128) + 2 * wire.encoded_size(16))
        )
        while True:
            now = self.clock()
            if now >= deadline:
                if ping_every is None:
                    raise TimeoutError(
                        f"no answer on job {job} by its deadline; the device does not answer "
                        "PING while it processes (READY flag bit 0), so the line was not checked"
                    )
                evidence = self._check_alive(job)
                raise TimeoutError(
                    f"no answer on job {job} by its deadline while the device answered "
                    f"{pongs} PINGs ({evidence}): the device's failure, not the line's"
                )
            if ping_every is not None:
                if self._silent_for() > self.silence_seconds:
                    raise LinkLost(
                        f"no answer on job {job} and no PONG to {unanswered} PINGs over "
                        f"{self._silent_for():.1f} s"
                    )
                if now >= next_ping:
                    pings[self.send(FrameType.PING, b"")] = now
                    unanswered += 1
                    next_ping = now + ping_every
                if now >= solicit_due and solicits < MAX_SOLICITS:
                    for _ in range(SOLICIT_COPIES):
                        pings[self.send(FrameType.PING, b"")] = now
                    solicits += 1
                    solicit_due = now + reply_wait  # again, if nothing good comes
            until = deadline
            if ping_every is not None:
                until = min(deadline, next_ping, solicit_due)
                if self._decoder.partial:
                    until = min(until, self._last_byte_at + STALE_PARTIAL_SECONDS + 0.001)
            frame = self.receive(until, stop_on_bad=ping_every is not None)
            now = self.clock()
            if self.counters.bad_frames > bad_seen:
                # A corrupt frame, or the start of one whose 0x00 was lost: most likely
                # the answer.
                bad_seen = self.counters.bad_frames
                solicit_due = min(solicit_due, now)
            if frame is None:
                continue
            unanswered = 0
            self._check_reboot(frame)
            if frame.type == FrameType.RESULT:
                got_job, _ = wire.unpack_job_code(frame.payload)
                self.send(FrameType.RESULT_ACK, wire.pack_job(got_job))
                if got_job == job:
                    return self._result_answer(job, frame)
            elif frame.type == FrameType.ERROR:
                got_job, code, message = wire.unpack_error(frame.payload)
                self.send(FrameType.RESULT_ACK, wire.pack_job(got_job))
                if got_job == job:
                    return Answer(job, self._sent_at(frame), error_code=code, error=message)
            elif frame.type == FrameType.PONG and frame.ack in pings:
                pongs += 1
                self.round_trip_seconds = self.read_at - pings[frame.ack]
                state, got_job, _ = wire.unpack_pong(frame.payload)
                if got_job != job or state == DeviceState.IDLE:
                    # The device forgot the job (a reset we did not see): it will never answer.
                    raise LinkLost(_lost_job(job, state, got_job))
                if state != DeviceState.DONE:
                    solicit_due = math.inf  # still at work: nothing was lost

    def _check_alive(self, job: int) -> str:
        """After a job's deadline: PING until the device answers anything (LinkLost if not).

        Returns the evidence that the device and the line work, for the timeout's
        message. A PONG saying the device lost the job is a LinkLost.
        """
        start = self.clock()
        seqs: set[int] = set()
        first_arrival: float | None = None
        next_ping = start
        while True:
            now = self.clock()
            if now >= next_ping:
                seqs.add(self.send(FrameType.PING, b"onsite"))
                first_arrival = self._line_free if first_arrival is None else first_arrival
                next_ping = now + PING_SECONDS
            assert first_arrival is not None
            give_up = first_arrival + self.silence_seconds
            if now > give_up:
                raise LinkLost(
                    f"no answer on job {job} by its deadline and no PONG to {len(seqs)} "
                    f"PINGs over {now - start:.1f} s"
                )
            frame = self.receive(min(next_ping, give_up))
            if frame is None:
                continue
            self._check_reboot(frame)
            if frame.type == FrameType.PONG and frame.ack in seqs:
                state, got_job, _ = wire.unpack_pong(frame.payload)
                if got_job != job or state == DeviceState.IDLE:
                    raise LinkLost(_lost_job(job, state, got_job))
                return f"PONG in state {state} {self.read_at - start:.3f} s after the deadline"
            if frame.type in (FrameType.RESULT, FrameType.ERROR):
                late_job, _ = wire.unpack_job_code(frame.payload)
                self.send(FrameType.RESULT_ACK, wire.pack_job(late_job))
            if frame.type != FrameType.PONG:
                return f"{_name(frame)} {self.read_at - start:.3f} s after the deadline"

    def _sent_at(self, frame: wire.Frame, read_at: float | None = None) -> float:
        """When ``frame`` began to cross the line: when it was read less its own line time.

        The processing clock stops there, as it started when the input's last byte
        had crossed: the line time of the answer itself is not the device's work.
        ``read_at`` defaults to when the frame receive() returned last was read.
        """
        size = len(wire.encode_frame(frame.type, frame.seq, frame.payload, frame.ack, frame.flags))
        return (self.read_at if read_at is None else read_at) - self.line_seconds(size)

    def _result_answer(self, job: int, frame: wire.Frame) -> Answer:
        """A RESULT as an Answer; one too long or not UTF-8 comes back with ``invalid`` set."""
        payload = frame.payload
        arrived = self._sent_at(frame)
        if len(payload) > self.host_max_payload:
            return Answer(
                job,
                arrived,
                invalid=f"RESULT payload of {len(payload)} bytes; HELLO allowed "
                f"{self.host_max_payload}",
            )
        try:
            text = wire.unpack_result_strict(payload)
        except UnicodeDecodeError as exc:
            return Answer(job, arrived, invalid=f"RESULT text is not valid UTF-8: {exc}")
        return Answer(job, arrived, text=text)

    def run_job(self, kind: int, data: bytes, sample_rate: int, deadline: float) -> Answer:
        """Transfer and wait for the answer in one call (setup, probes)."""
        job = self.next_job()
        try:
            self.transfer(job, kind, data, sample_rate, max(0.0, deadline - self.clock()))
        except DeviceRefused as exc:
            return Answer(job, self.clock(), error_code=exc.code, error=exc.message)
        ping = 0.5 if self.ready is not None and self.ready.ping_while_busy else None
        return self.wait_answer(job, deadline, ping)
