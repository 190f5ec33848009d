"""Dishonest devices: agent cores that try to buy time or a redo on the serial line.

Each class is a :class:`devices.AgentCore` that plays one trick against the
processing clock or the failure attribution of docs/device-protocol.md; pass it
to ``Emulator(..., core=Class)``. Answers a cheat remembers live in a class
attribute, which survives the device's reboots as a board's flash would: call
:func:`forget` before a test.
"""

from __future__ import annotations

import json
import threading
import zlib
from pathlib import Path
from typing import ClassVar

from devices import AgentCore, wire
from devices.wire import DeviceState, FrameType, JobKind

# What BEGIN says of an input, (total_length, crc32): a cheat's key to what it remembers.
_Key = tuple[int, int]


class _Remembers(AgentCore):
    """Keeps every item's answer text, keyed by what BEGIN says of the input.

    With ``memory`` set the answers are also kept in that file, so they outlive the
    device program (the emulator kills and restarts it on a hard reset).
    """

    answers: ClassVar[dict[_Key, bytes]] = {}
    memory: ClassVar[Path | None] = None

    @classmethod
    def recall(cls, memory: Path) -> None:
        """Keep answers in ``memory`` from now on, starting with those already there."""
        _Remembers.memory = memory
        if memory.is_file():
            saved = json.loads(memory.read_text(encoding="utf-8"))
            cls.answers = {(n, crc): text.encode() for n, crc, text in saved}

    def _remember(self, key: _Key, text: bytes) -> None:
        answers = type(self).answers
        answers.setdefault(key, text)
        if self.memory is not None:
            saved = [[n, crc, t.decode()] for (n, crc), t in answers.items()]
            self.memory.write_text(json.dumps(saved), encoding="utf-8")

    def _key(self) -> _Key | None:
        begin = self._begin
        if begin is None or begin.kind != JobKind.ITEM:
            return None
        return begin.total_length, begin.crc32

    def _finish(self, ftype: int, payload: bytes) -> None:
        key = self._key()
        if key is not None and ftype == FrameType.RESULT:
            self._remember(key, payload[4:])
        super()._finish(ftype, payload)


def forget() -> None:
    """Clear every cheat's remembered answers (in memory; a memory file stays)."""
    _Remembers.memory = None
    for cls in (_Remembers, *_Remembers.__subclasses__()):
        cls.answers = {}


class MutesAfterOverrun(_Remembers):
    """Attack 1: works past its budget, then goes silent (not even PONG) to have the
    link declared lost; after the reset it answers the re-sent item from memory."""

    MUTE_SECONDS = 4.5

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._mute_until = 0.0

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if self.clock() < self._mute_until:
            return
        super()._send(ftype, payload, flush)

    def _finish(self, ftype: int, payload: bytes) -> None:
        key = self._key()
        if key is not None and ftype == FrameType.RESULT and key not in self.answers:
            self._remember(key, payload[4:])
            self._mute_until = self.clock() + self.MUTE_SECONDS
            self._state = DeviceState.IDLE
            return
        super()._finish(ftype, payload)

    def _complete(self) -> None:
        key = self._key()
        if key is None or key not in self.answers:
            super()._complete()
            return
        assert self._begin is not None
        self._state = DeviceState.PROCESSING
        self._send(FrameType.COMPLETE, wire.pack_job_offset(self._job, self._begin.total_length))
        self._finish(FrameType.RESULT, wire.pack_job(self._job) + b"\x00\x00" + self.answers[key])


class SilentOnTheJob(AgentCore):
    """Attack 1 in the transfer: holds the whole input but says nothing of it (no
    COMPLETE, no answer to a resent DATA) while it works, and answers PING all along,
    hoping the host takes the silence for a dead line."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        begin = self._begin
        if begin is not None and begin.kind == JobKind.ITEM:
            if ftype == FrameType.COMPLETE:
                return
            if ftype == FrameType.ACK and wire.unpack_job_offset(payload)[1] >= begin.total_length:
                return
        super()._send(ftype, payload, flush)


class AnswersFromBegin(_Remembers):
    """Attack 2: recognises a recording it has answered before from BEGIN alone (its
    length and CRC-32) and sends the RESULT at once, instead of ACK(j, 0)."""

    def _on_begin(self, frame: wire.Frame, begin: wire.Begin) -> None:
        answer = self.answers.get((begin.total_length, begin.crc32))
        if answer is None or begin.kind != JobKind.ITEM:
            super()._on_begin(frame, begin)
            return
        self._job = begin.job
        self._begin = begin
        self._finish(FrameType.RESULT, wire.pack_job(begin.job) + b"\x00\x00" + answer)


class AcksThenAnswersFromBegin(_Remembers):
    """Attack 2, quieter: acknowledges BEGIN as usual, then sends the remembered RESULT
    right behind the ACK, before any DATA has reached it."""

    def _on_begin(self, frame: wire.Frame, begin: wire.Begin) -> None:
        super()._on_begin(frame, begin)
        answer = self.answers.get((begin.total_length, begin.crc32))
        if answer is not None and begin.kind == JobKind.ITEM:
            self._finish(FrameType.RESULT, wire.pack_job(begin.job) + b"\x00\x00" + answer)


class AnswersBeforeTheLastFrame(AgentCore):
    """Attack 3: starts work at half the input, and answers as soon as its work is done
    and only the last DATA frame is still on its way (it guesses the end of the
    recording). Its RESULT's ``ack`` honestly names the last frame it had read."""

    # The host's chunk on a clean line: the last frame is at most this long.
    CHUNK = 1016

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._early: dict[int, threading.Thread] = {}
        self._done: dict[int, str] = {}

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        super()._on_data(frame, job, offset, chunk)
        begin = self._begin
        if begin is None or begin.kind != JobKind.ITEM or self._state != DeviceState.RECEIVING:
            return
        total = begin.total_length
        if self._received * 2 >= total and job not in self._early:
            part = bytes(self._buf[: self._received])
            worker = threading.Thread(
                target=self._work_early, args=(job, part, begin.sample_rate), daemon=True
            )
            self._early[job] = worker
            worker.start()
        self._answer_if_ready(job)

    def _work_early(self, job: int, part: bytes, rate: int) -> None:
        text = self.recognizer.recognize(part, rate)
        with self._lock:
            self._done[job] = text
            self._answer_if_ready(job)

    def _answer_if_ready(self, job: int) -> None:
        begin = self._begin
        if job != self._job or job not in self._done or begin is None:
            return
        waiting = self._state == DeviceState.RECEIVING
        if waiting and begin.total_length - self._received > self.CHUNK:
            return
        if waiting or self._state == DeviceState.PROCESSING:
            self._finish(FrameType.RESULT, wire.pack_result(job, self._done.pop(job)))

    def _complete(self) -> None:
        # The input came whole before the early work was done: it answers when that is.
        if self._job in self._early:
            assert self._begin is not None
            self._state = DeviceState.PROCESSING
            total = self._begin.total_length
            self._send(FrameType.COMPLETE, wire.pack_job_offset(self._job, total))
            return
        super()._complete()


class AnswersBeforeTheLastFrameFakesAck(AnswersBeforeTheLastFrame):
    """Attack 3 with a lie: its early RESULT's ``ack`` names the DATA frame it expects
    next (the host numbers its frames one by one), as if it had read the last frame."""

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        if ftype != FrameType.RESULT:
            super()._send(ftype, payload, flush)
            return
        real = self._last_seq
        self._last_seq = (real + 1) & 0xFFFF
        try:
            super()._send(ftype, payload, flush)
        finally:
            self._last_seq = real


class Babbles(AgentCore):
    """Keeps the line busy: from an item's BEGIN on it sends PONGs for no PING, back to
    back at the line rate, and never says anything of the job, hoping the host keeps
    reading and never reaches its deadline."""

    def _on_begin(self, frame: wire.Frame, begin: wire.Begin) -> None:
        repeat = self._begin == begin
        super()._on_begin(frame, begin)
        if begin.kind != JobKind.ITEM or repeat:
            return
        generation = self._generation
        threading.Thread(target=self._babble, args=(generation,), daemon=True).start()

    def _babble(self, generation: int) -> None:
        payload = wire.pack_pong(DeviceState.PROCESSING, 0x1234, b"x" * 16)
        pause = wire.encoded_size(len(payload)) * 10 / self.settings.baud
        stop = threading.Event()
        # As fast as the line takes them (a real UART cannot send faster).
        while not stop.wait(pause):
            with self._lock:
                if self._generation != generation:
                    return
                super()._send(FrameType.PONG, payload)

    def _send(self, ftype: int, payload: bytes, flush: bool = False) -> None:
        begin = self._begin
        job_frames = (FrameType.ACK, FrameType.NAK, FrameType.COMPLETE, FrameType.RESULT)
        if begin is not None and begin.kind == JobKind.ITEM and ftype in job_frames:
            return
        super()._send(ftype, payload, flush)


class WorksOnPartOfTheInput(AgentCore):
    """Attack 4, which no clock can see: starts its work once it holds the first half of
    the input (as a streaming recogniser would), and holds its answer until it has the
    whole input and its work is done, so that the answer comes a plausible time after
    the last byte. Its work is the recognizer's (``sleep`` for the checksum recognizer);
    the answer, of the whole input, then takes no time. Given its input in an order from
    which no first half can be rebuilt before the end, it can only work as an honest
    device does."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._early: dict[int, threading.Thread] = {}

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        super()._on_data(frame, job, offset, chunk)
        begin = self._begin
        if begin is None or begin.kind != JobKind.ITEM or self._state != DeviceState.RECEIVING:
            return
        if self._received * 2 >= begin.total_length and job not in self._early:
            part = bytes(self._buf[: self._received])
            worker = threading.Thread(
                target=self.recognizer.recognize, args=(part, begin.sample_rate), daemon=True
            )
            self._early[job] = worker
            worker.start()

    def _complete(self) -> None:
        worker = self._early.pop(self._job, None)
        begin = self._begin
        if worker is None or begin is None:
            super()._complete()
            return
        self._state = DeviceState.PROCESSING
        self._send(FrameType.COMPLETE, wire.pack_job_offset(self._job, begin.total_length))
        data = bytes(self._buf)
        threading.Thread(
            target=self._answer_after,
            args=(worker, self._generation, self._job, data),
            daemon=True,
        ).start()

    def _answer_after(
        self, worker: threading.Thread, generation: int, job: int, data: bytes
    ) -> None:
        worker.join()
        with self._lock:
            if generation != self._generation or job != self._job:
                return
            if self._state != DeviceState.PROCESSING:
                return
            self._finish(FrameType.RESULT, wire.pack_result(job, _checksum(data)))


def _checksum(data: bytes) -> str:
    # The checksum recognizer's answer (examples/devices/checksum.py), without its work.
    return f"{len(data)} {zlib.crc32(data):08x}"


class FailsOutOfOrder(WorksOnPartOfTheInput):
    """Attack 4, escaping its audit: tells a hidden repeat by its DATA coming out of
    order, and answers it with ERROR (the recognizer failed) instead of showing its
    real time; repeats are neither scored nor counted in the verdict's limits."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._scrambled: set[int] = set()

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job == self._job and self._state == DeviceState.RECEIVING and offset > self._received:
            self._scrambled.add(job)
        super()._on_data(frame, job, offset, chunk)

    def _complete(self) -> None:
        if self._job not in self._scrambled or self._begin is None:
            super()._complete()
            return
        self._state = DeviceState.PROCESSING
        self._send(FrameType.COMPLETE, wire.pack_job_offset(self._job, self._begin.total_length))
        failed = wire.pack_error(self._job, wire.ErrorCode.RECOGNIZER_FAILED, "out of memory")
        self._finish(FrameType.ERROR, failed)
