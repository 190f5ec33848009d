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


class PreviousAlwaysZero(AgentCore):
    """Advertises READY flag bit 1 but always names 0 in `previous`."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype in (FrameType.ACK, FrameType.NAK):
            self._data_seqs = (0, 0)
        super()._send(ftype, payload, flush)


class PreviousCountsEveryData(AgentCore):
    """Counts every DATA frame read for `previous`, other jobs' too, and names the DATA
    before the last even when `ack` names no DATA (revision 3's agent did both)."""

    def _handle(self, frame: wire.Frame) -> None:
        super()._handle(frame)
        if frame.type == FrameType.DATA and self._data_seqs[1] != frame.seq:
            self._data_seqs = (self._data_seqs[1], frame.seq)

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        self._last_was_data = True
        super()._send(ftype, payload, flush)


class DropsDataBeyondGap(AgentCore):
    """Advertises READY flag bit 1 but drops DATA beyond a gap."""

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job == self._job and self._state == DeviceState.RECEIVING and offset > self._received:
            self._send(FrameType.NAK, wire.pack_job_offset(job, self._received))
            return
        super()._on_data(frame, job, offset, chunk)


class RepeatsForever(AgentCore):
    """Never gives up an unacknowledged answer."""

    def _retransmit_final(self) -> None:
        self._final_tries = min(self._final_tries, 1)
        super()._retransmit_final()


class GivesUpAfterTen(AgentCore):
    """Gives up an unacknowledged answer after 10 sendings."""

    def _retransmit_final(self) -> None:
        if self._final is not None and self._final_tries >= 10:
            self._final_tries = wire.RESULT_SENDINGS
        super()._retransmit_final()


class PongNamesAbandonedJob(AgentCore):
    """Idle after 30 sendings, PONG names the abandoned job (revision 3's agent did)."""

    def _pong_job(self) -> int:
        if self._state == DeviceState.IDLE and self._acked_job != wire.NO_JOB:
            return self._job
        return super()._pong_job()


class CompletesRefusedData(AgentCore):
    """Answers DATA of a refused job with COMPLETE, not the ERROR again (revision 3's
    agent did)."""

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job == self._job and self._state == DeviceState.DONE and self._refused:
            self._refused = False
            super()._on_data(frame, job, offset, chunk)
            self._refused = True
            return
        super()._on_data(frame, job, offset, chunk)


class NamesLatestCopy(AgentCore):
    """Advertises READY flag bit 2 but names the latest DATA copy read, not the one that
    completed the input."""

    def _complete_payload(self) -> bytes:
        self._completed_by = self._last_seq
        return super()._complete_payload()


class CorruptsCompletingCopies(AgentCore):
    """The first two copies of the DATA frame that would complete each input arrive
    corrupt (as a bit error would leave them): discarded as bad frames, with the NAK a
    bad frame gets in RECEIVING. ``accepted`` notes the seq of the copy that got through."""

    accepted: dict[int, int] = {}

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._spoiled: dict[int, int] = {}

    def _handle(self, frame: wire.Frame) -> None:
        if frame.type == FrameType.DATA and self._state == DeviceState.RECEIVING:
            job, offset, chunk = wire.unpack_data(frame.payload)
            assert self._begin is not None
            if job == self._job and offset <= self._received < offset + len(chunk):
                if offset + len(chunk) >= self._begin.total_length:
                    if self._spoiled.get(job, 0) < 2:
                        self._spoiled[job] = self._spoiled.get(job, 0) + 1
                        self.bad_frames += 1
                        self._send(FrameType.NAK, wire.pack_job_offset(job, self._received))
                        return
                    CorruptsCompletingCopies.accepted[job] = frame.seq
        super()._handle(frame)


class CorruptsFirstAnswer(AgentCore):
    """The first sending of each answer arrives corrupt at the host (a bit error);
    ``triggers`` notes, per sending after it, the type of the frame read last."""

    triggers: list[int] = []

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._last_type = 0

    def _handle(self, frame: wire.Frame) -> None:
        self._last_type = frame.type
        super()._handle(frame)

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype in (FrameType.RESULT, FrameType.ERROR) and self._final_tries == 1:
            good = wire.encode_frame(ftype, self._seq, payload, ack=self._last_seq)
            self._seq = (self._seq + 1) & 0xFFFF
            self.port.write(good[:5] + bytes([good[5] ^ 0x10]) + good[6:])
            return
        if ftype in (FrameType.RESULT, FrameType.ERROR):
            CorruptsFirstAnswer.triggers.append(self._last_type)
        super()._send(ftype, payload, flush)
