"""Agent cores with one injected defect each, for the clock, recovery and conformance tests.

Each class is a :class:`devices.AgentCore` that breaks exactly one rule of
docs/device-protocol.md; pass it to ``Emulator(..., core=Class)``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import threading

from devices import AgentCore, wire
from devices.wire import DeviceState, FrameType
from examples.devices.checksum import ChecksumRecognizer


class AckInsteadOfComplete(AgentCore):
    """Acknowledges the last DATA with ACK(j, T) and never says COMPLETE (hides its work)."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype == FrameType.COMPLETE:
            ftype = FrameType.ACK
        super()._send(ftype, payload, flush)


class LosesFirstComplete(AgentCore):
    """Its first COMPLETE of every job never reaches the line (as if a bit error hit it)."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._lost_for: set[int] = set()

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype == FrameType.COMPLETE and self._job not in self._lost_for:
            self._lost_for.add(self._job)
            self._seq = (self._seq + 1) & 0xFFFF  # sent, then lost on the line
            return
        super()._send(ftype, payload, flush)


class NoBootReady(AgentCore):
    """Its unsolicited READY after boot is lost; it still answers HELLO."""

    def run(self, stop: threading.Event) -> None:
        real = self._send
        dropped = []

        def first_lost(ftype: int, payload: bytes, flush: bool = False) -> None:
            if ftype == FrameType.READY and not dropped:
                dropped.append(ftype)
                return
            real(ftype, payload, flush)

        self._send = first_lost  # type: ignore[method-assign]
        super().run(stop)


class IgnoresHostMax(AgentCore):
    """Sends results longer than HELLO's host_max_payload allows."""

    def _handle(self, frame: wire.Frame) -> None:
        super()._handle(frame)
        self._host_max_payload = wire.MAX_PAYLOAD


class NotUtf8(AgentCore):
    """Sends RESULT text that is not valid UTF-8."""

    def _finish(self, ftype: int, payload: bytes) -> None:
        if ftype == FrameType.RESULT and len(payload) > 4:
            payload = payload[:4] + b"\xff\xfe" + payload[4:]
        super()._finish(ftype, payload)


class GilHolder(ChecksumRecognizer):
    """Holds the interpreter lock while it 'decodes' (as a C decoder called from Python does)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        # PyDLL keeps the GIL held for the whole C call; usleep stands for the decoder.
        ctypes.PyDLL(None).usleep(int(self.seconds * 1e6))
        return super().recognize(pcm, sample_rate)


class AcksGaps(AgentCore):
    """Answers a DATA beyond a gap with ACK instead of NAK (and drops it)."""

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job == self._job and offset > self._received:
            self._send(FrameType.ACK, wire.pack_job_offset(job, self._received))
            return
        super()._on_data(frame, job, offset, chunk)


class SilentOnCorruptFrames(AgentCore):
    """Drops corrupt frames without the NAK that asks for them again."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype == FrameType.NAK and self._decoder.bad > getattr(self, "_seen_bad", 0):
            self._seen_bad = self._decoder.bad
            return
        super()._send(ftype, payload, flush)


class RestartsOnRepeatedBegin(AgentCore):
    """Treats a repeated BEGIN as a new transfer and starts the input again."""

    def _on_begin(self, frame: wire.Frame, begin: wire.Begin) -> None:
        self._begin = None
        super()._on_begin(frame, begin)


class WrongIdleJob(AgentCore):
    """Reports job 0 instead of 0xFFFF in PONG when it has no job."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype == FrameType.PONG and self._job == wire.NO_JOB:
            state, job, echo = wire.unpack_pong(payload)
            payload = wire.pack_pong(state, 0, echo)
        super()._send(ftype, payload, flush)


class NeverRepeats(AgentCore):
    """Sends its answer once and never again."""

    def _retransmit_final(self) -> None:
        if self._final is not None and self._final_tries >= 1:
            return
        super()._retransmit_final()


class KeepsSetupOnReset(AgentCore):
    """RESET does not make it forget its setup."""

    def _drop_session(self) -> None:
        set_up = self._set_up
        super()._drop_session()
        self._set_up = set_up


class NoPingWhileBusy(AgentCore):
    """A single-threaded device: clears READY flag bit 0 and answers nothing (not even
    PING) while its recognizer runs."""

    def _ready_payload(self) -> bytes:
        ready = wire.Ready.unpack(super()._ready_payload())
        flags = ready.flags & ~wire.READY_FLAG_PING_WHILE_BUSY
        return dataclasses.replace(ready, flags=flags).pack()

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        busy = self._state == DeviceState.PROCESSING
        if busy and ftype not in (FrameType.COMPLETE, FrameType.RESULT, FrameType.ERROR):
            return
        super()._send(ftype, payload, flush)
