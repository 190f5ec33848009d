"""Device side of the serial protocol. Participants do not edit this module.

:class:`AgentCore` speaks docs/device-protocol.md over any byte port (a
pyserial port on a real device, the emulator's line in tests) and calls the
participant's :class:`~devices.hooks.Recognizer`. Recognition runs on a worker
thread so PING and RESET are answered while an item is being processed; a C
port may instead be single-threaded and clear the READY flag that says so.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from . import wire
from .hooks import Recognizer
from .wire import DeviceState, ErrorCode, FrameType, JobKind

DEFAULT_MAX_PAYLOAD = 1024
DEFAULT_WINDOW = 64
DEFAULT_MAX_INPUT = 16 * 1024 * 1024
RESULT_RETRIES = wire.RESULT_SENDINGS


class BytePort(Protocol):
    """A serial line as the agent sees it."""

    def read(self, timeout: float) -> bytes:
        """Bytes received so far, waiting up to ``timeout`` seconds for the first; b"" if none."""
        ...

    def write(self, data: bytes) -> None:
        """Queue ``data`` for sending."""
        ...


class SerialBytePort:
    """A pyserial port as a :class:`BytePort` (for the agent on a real device)."""

    def __init__(self, serial_port: object) -> None:
        self._port = serial_port

    def read(self, timeout: float) -> bytes:
        port = self._port
        port.timeout = timeout  # type: ignore[attr-defined]
        waiting = port.in_waiting  # type: ignore[attr-defined]
        return bytes(port.read(max(1, waiting)))  # type: ignore[attr-defined]

    def write(self, data: bytes) -> None:
        self._port.write(data)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AgentSettings:
    """Capabilities the agent announces in READY."""

    baud: int = 115200
    max_payload: int = DEFAULT_MAX_PAYLOAD
    window: int = DEFAULT_WINDOW
    max_input: int = DEFAULT_MAX_INPUT
    # Keep DATA beyond a gap (READY flag bit 1); False behaves as a go-back-N device.
    selective: bool = True
    # Name the DATA copy that completed the input in COMPLETE and RESULT (READY flag bit 2,
    # revision 4); False behaves as a revision-3 device.
    names_completing_copy: bool = True


class AgentCore:
    """The protocol state machine of one boot of the device."""

    def __init__(
        self,
        port: BytePort,
        recognizer: Recognizer,
        settings: AgentSettings = AgentSettings(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.port = port
        self.recognizer = recognizer
        self.settings = settings
        self.clock = clock
        self.boot_id = secrets.randbits(32)
        self._decoder = wire.FrameDecoder(wire.encoded_size(settings.max_payload + 64))
        self._lock = threading.RLock()
        self._seq = 0
        self._last_seq = wire.NO_ACK  # seq of the last valid host frame: every reply's ack
        # Seqs of the last two DATA frames of the current job read in RECEIVING (section 6,
        # `previous`): with selective retransmission an ACK or NAK also names the one read
        # before the frame in its `ack`, so the host learns of it even if its answer is lost.
        self._data_seqs = (wire.NO_ACK, wire.NO_ACK)
        self._last_was_data = False  # the frame named in `ack` is the newest of _data_seqs
        # The DATA copy (or, for an empty input, BEGIN) that completed the input (READY flag
        # bit 2: COMPLETE and RESULT name it, so the clock starts at that copy, section 7).
        self._completed_by = wire.NO_ACK
        self._acked_job = wire.NO_JOB  # the last job whose answer was acknowledged (PONG)
        self._host_max_payload = 256
        self._set_up = False
        self._generation = 0  # bumped by HELLO/RESET so late worker results are dropped
        self._state = DeviceState.IDLE
        self._job = wire.NO_JOB
        self._begin: wire.Begin | None = None
        self._buf = bytearray()  # the input, total_length bytes; valid up to _received
        self._received = 0
        self._ahead: list[tuple[int, int]] = []  # byte ranges kept beyond a gap
        self._refused = False  # the current job was answered with a refusal ERROR
        self._final: tuple[int, bytes] | None = None  # RESULT or ERROR awaiting RESULT_ACK
        self._final_due = 0.0
        self._final_tries = 0
        self._work: queue.Queue[tuple[int, int, wire.Begin, bytes] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work_loop, daemon=True, name="agent-worker")
        self.bad_frames = 0

    # --- main loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Announce READY, then serve frames until ``stop`` is set."""
        self._worker.start()
        try:
            self.boot()
            while not stop.is_set():
                timeout = 0.05
                with self._lock:
                    if self._final is not None:
                        timeout = max(0.0, min(timeout, self._final_due - self.clock()))
                data = self.port.read(timeout)
                with self._lock:
                    if data:
                        self._receive(data)
                    self._retransmit_final()
        finally:
            self._work.put(None)

    def boot(self) -> None:
        """Say READY unasked (ack 0xFFFF), after a 0x00 that ends any garbage (section 5.1)."""
        with self._lock:
            self._send(FrameType.READY, self._ready_payload(), flush=True)

    def receive(self, data: bytes) -> None:
        """Handle bytes read from the line (run() calls it; so do the section 9 examples)."""
        with self._lock:
            self._receive(data)

    def _receive(self, data: bytes) -> None:
        bad_before = self._decoder.bad
        for frame in self._decoder.feed(data):
            if len(frame.payload) > self.settings.max_payload:
                # Longer than READY allowed: a real device's buffer could not hold it.
                self._decoder.bad += 1
                continue
            self._handle(frame)
        if self._decoder.bad > bad_before:
            self.bad_frames += self._decoder.bad - bad_before
            # A corrupt frame during a transfer is most likely DATA: ask for it again now.
            if self._state == DeviceState.RECEIVING:
                self._send(FrameType.NAK, wire.pack_job_offset(self._job, self._received))

    def _handle(self, frame: wire.Frame) -> None:
        self._last_seq = frame.seq
        self._last_was_data = False
        try:
            kind = FrameType(frame.type)
        except ValueError:
            return  # unknown types are ignored so that later versions can add some
        try:
            if kind in (FrameType.HELLO, FrameType.RESET):
                if kind == FrameType.HELLO:
                    hello = wire.Hello.unpack(frame.payload)
                    self._host_max_payload = max(16, hello.host_max_payload)
                self._drop_session()
                self._send(FrameType.READY, self._ready_payload())
            elif kind == FrameType.BEGIN:
                self._on_begin(frame, wire.Begin.unpack(frame.payload))
            elif kind == FrameType.DATA:
                job, offset, chunk = wire.unpack_data(frame.payload)
                if job == self._job and self._state == DeviceState.RECEIVING:
                    # Only the current job's DATA read while receiving counts (section 6).
                    self._data_seqs = (self._data_seqs[1], frame.seq)
                    self._last_was_data = True
                self._on_data(frame, job, offset, chunk)
            elif kind == FrameType.RESULT_ACK:
                if wire.unpack_job(frame.payload) == self._job and self._final is not None:
                    self._final = None
                    self._state = DeviceState.IDLE
                    self._acked_job = self._job
            elif kind == FrameType.PING:
                echo = frame.payload[:16]
                self._send(FrameType.PONG, wire.pack_pong(self._state, self._pong_job(), echo))
                if self._final is not None:
                    self._final_due = self.clock()  # the host may be waiting for a lost answer
        except wire.WireError:
            self.bad_frames += 1

    # --- transfers ---------------------------------------------------------------------------

    def _on_begin(self, frame: wire.Frame, begin: wire.Begin) -> None:
        repeat = self._begin is not None and self._begin == begin
        if repeat and self._state != DeviceState.IDLE:
            # A repeated BEGIN (all 16 bytes equal): our answer was lost. Say where we are;
            # a refused job gets its ERROR again.
            if self._refused:
                self._final_due = self.clock()
                self._retransmit_final()
            else:
                self._repeat_progress()
            return
        self._job = begin.job
        self._begin = begin
        self._buf = bytearray()
        self._received = 0
        self._ahead = []
        self._final = None
        self._data_seqs = (wire.NO_ACK, wire.NO_ACK)
        self._completed_by = wire.NO_ACK
        if begin.kind == JobKind.SETUP:
            self._set_up = False  # a new SETUP, refused or not, replaces the old (section 4)
        refusal = self._refusal(begin)
        self._refused = refusal is not None
        if refusal is not None:
            self._finish(wire.FrameType.ERROR, wire.pack_error(begin.job, *refusal))
            return
        self._state = DeviceState.RECEIVING
        self._buf = bytearray(begin.total_length)
        if begin.total_length == 0:
            self._completed_by = frame.seq
            self._complete()
        else:
            self._send(FrameType.ACK, wire.pack_job_offset(begin.job, 0))

    def _refusal(self, begin: wire.Begin) -> tuple[int, str] | None:
        if begin.kind == JobKind.ITEM:
            if not self._set_up:
                return ErrorCode.NOT_SET_UP, "no SETUP transfer completed since HELLO"
            rates = tuple(self.recognizer.sample_rates)
            if begin.sample_rate not in rates:
                return (
                    ErrorCode.UNSUPPORTED_RATE,
                    f"sample rate {begin.sample_rate} Hz; this device accepts {rates}",
                )
            if begin.total_length % 2:
                return ErrorCode.BAD_REQUEST, "16-bit PCM needs an even number of bytes"
        elif begin.kind != JobKind.SETUP:
            return ErrorCode.BAD_REQUEST, f"unknown transfer kind {begin.kind}"
        if begin.total_length == 0 and begin.crc32 != 0:
            return ErrorCode.BAD_REQUEST, "an empty input has CRC-32 0"
        if begin.total_length > self.settings.max_input:
            return (
                ErrorCode.TOO_LARGE,
                f"{begin.total_length} bytes; this device takes {self.settings.max_input}",
            )
        return None

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job != self._job:
            return
        if self._state != DeviceState.RECEIVING:
            if self._state == DeviceState.DONE and self._refused:
                # A refused job's DATA gets the ERROR again, never COMPLETE (section 5.5).
                self._final_due = self.clock()
                self._retransmit_final()
            elif self._state in (DeviceState.PROCESSING, DeviceState.DONE):
                self._repeat_progress()
            return
        assert self._begin is not None
        total = self._begin.total_length
        if offset + len(chunk) > total:
            # Checked at any offset, before anything is kept: a refusal like BEGIN's.
            self._refused = True
            self._finish(
                FrameType.ERROR,
                wire.pack_error(job, ErrorCode.BAD_REQUEST, "DATA beyond total_length"),
            )
            return
        received = self._received
        if not chunk or offset + len(chunk) <= received:
            # A duplicate: say again how far we are.
            self._send(FrameType.ACK, wire.pack_job_offset(job, received))
            return
        if offset > received:
            # A gap: a frame before this one was lost. Keep this one (selective
            # retransmission) and ask for the missing bytes.
            if self.settings.selective:
                self._buf[offset : offset + len(chunk)] = chunk
                self._ahead.append((offset, offset + len(chunk)))
            self._send(FrameType.NAK, wire.pack_job_offset(job, received))
            return
        self._buf[offset : offset + len(chunk)] = chunk
        received = offset + len(chunk)
        # Frames kept beyond the gap may now join up: one pass over them in order of
        # their start (a transfer sent out of order may leave hundreds kept).
        self._ahead.sort()
        kept = []
        for start, end in self._ahead:
            if start <= received:
                received = max(received, end)
            else:
                kept.append((start, end))
        self._ahead = [(a, b) for a, b in kept if b > received]
        self._received = received
        if received < total:
            self._send(FrameType.ACK, wire.pack_job_offset(job, received))
            return
        self._completed_by = frame.seq
        if zlib.crc32(self._buf) != self._begin.crc32:
            # Every frame passed its CRC but the whole does not: start the input again.
            self._received = 0
            self._ahead = []
            self._send(FrameType.NAK, wire.pack_job_offset(job, 0))
        else:
            self._complete()

    def _repeat_progress(self) -> None:
        """Answer a repeated BEGIN or DATA: the host missed our last answer."""
        assert self._begin is not None
        if self._state == DeviceState.RECEIVING:
            self._send(FrameType.ACK, wire.pack_job_offset(self._job, self._received))
        elif self._state in (DeviceState.PROCESSING, DeviceState.DONE):
            self._send(FrameType.COMPLETE, self._complete_payload())

    def _complete_payload(self) -> bytes:
        """COMPLETE(j, T); with flag bit 2 it names the copy that completed the input."""
        assert self._begin is not None
        named = self._completed_by if self.settings.names_completing_copy else 0
        return wire.pack_job_offset(self._job, self._begin.total_length, previous=named)

    def _complete(self) -> None:
        assert self._begin is not None
        self._state = DeviceState.PROCESSING
        self._send(FrameType.COMPLETE, self._complete_payload())
        data = bytes(self._buf)
        self._buf = bytearray()
        self._work.put((self._generation, self._job, self._begin, data))

    # --- results -----------------------------------------------------------------------------

    def _work_loop(self) -> None:
        while True:
            task = self._work.get()
            if task is None:
                return
            self.work(task)

    def work_queued(self) -> None:
        """Do the queued work on this thread (devices.protocol_examples: no worker runs)."""
        while not self._work.empty():
            task = self._work.get_nowait()
            if task is not None:
                self.work(task)

    def work(self, task: tuple[int, int, wire.Begin, bytes]) -> None:
        """Run the recognizer on one completed input and send its answer (the worker's job)."""
        generation, job, begin, data = task
        try:
            if begin.kind == JobKind.SETUP:
                self.recognizer.load(wire.vocabulary_from_bytes(data))
                text = ""
            else:
                text = self.recognizer.recognize(data, begin.sample_rate)
            answer = (FrameType.RESULT, wire.pack_result(job, text))
        except Exception as exc:  # the participant's code: any failure becomes ERROR
            message = f"{type(exc).__name__}: {exc}"[:200]
            answer = (
                FrameType.ERROR,
                wire.pack_error(job, ErrorCode.RECOGNIZER_FAILED, message),
            )
        with self._lock:
            if generation != self._generation or job != self._job:
                return  # abandoned by RESET, HELLO or a newer BEGIN
            if self._state != DeviceState.PROCESSING:
                return
            ftype, payload = answer
            if len(payload) > self._host_max_payload:
                ftype = FrameType.ERROR
                payload = wire.pack_error(
                    job, ErrorCode.RESULT_TOO_LARGE, "result longer than the host accepts"
                )
            if begin.kind == JobKind.SETUP and ftype == FrameType.RESULT:
                self._set_up = True
            if ftype == FrameType.RESULT and self.settings.names_completing_copy:
                payload = wire.pack_result(job, "", self._completed_by) + payload[4:]
            self._finish(ftype, payload)

    def _finish(self, ftype: int, payload: bytes) -> None:
        """Send the job's final answer; it is repeated until RESULT_ACK."""
        self._state = DeviceState.DONE
        self._final = (ftype, payload)
        self._final_tries = 0
        self._final_due = self.clock()
        self._retransmit_final()

    def _retransmit_final(self) -> None:
        if self._final is None or self.clock() < self._final_due:
            return
        if self._final_tries >= RESULT_RETRIES:
            # One interval after the 30th sending: given up. The job was not acknowledged,
            # so PONG goes on naming the last one that was (section 4).
            self._final = None
            self._state = DeviceState.IDLE
            return
        ftype, payload = self._final
        self._final_tries += 1
        self._send(ftype, payload)
        self._final_due = self.clock() + self.retransmit_seconds(len(payload))

    def retransmit_seconds(self, payload_len: int) -> float:
        """How long to wait for RESULT_ACK: the round trip on the line plus 100 ms."""
        line = (wire.encoded_size(payload_len) + wire.encoded_size(2)) * 10 / self.settings.baud
        return 0.1 + 2 * line

    # --- helpers -----------------------------------------------------------------------------

    def _pong_job(self) -> int:
        """PONG's job: the current one, or when idle the last whose answer was acknowledged."""
        return self._acked_job if self._state == DeviceState.IDLE else self._job

    def _drop_session(self) -> None:
        self._generation += 1
        self._acked_job = wire.NO_JOB
        self._set_up = False
        self._state = DeviceState.IDLE
        self._job = wire.NO_JOB
        self._begin = None
        self._buf = bytearray()
        self._received = 0
        self._ahead = []
        self._final = None

    def _ready_payload(self) -> bytes:
        rec = self.recognizer
        return wire.Ready(
            version=wire.PROTOCOL_VERSION,
            flags=wire.READY_FLAG_PING_WHILE_BUSY
            | (wire.READY_FLAG_SELECTIVE if self.settings.selective else 0)
            | (wire.READY_FLAG_NAMES_COPY if self.settings.names_completing_copy else 0),
            max_payload=self.settings.max_payload,
            window=self.settings.window,
            boot_id=self.boot_id,
            max_input=self.settings.max_input,
            sample_rates=tuple(rec.sample_rates),
            name=rec.name,
            software=rec.version,
        ).pack()

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype in (FrameType.ACK, FrameType.NAK) and self.settings.selective:
            job, offset = wire.unpack_job_offset(payload)
            # The DATA read before the frame named in `ack` (section 6).
            previous = self._data_seqs[0] if self._last_was_data else self._data_seqs[1]
            payload = wire.pack_job_offset(job, offset, previous=previous)
        frame = wire.encode_frame(ftype, self._seq, payload, ack=self._last_seq)
        self._seq = (self._seq + 1) & 0xFFFF
        with contextlib.suppress(OSError):
            self.port.write(wire.DELIMITER + frame if flush else frame)
