"""Only the device's time is the device's: copies lost or corrupted on the line are not
charged as processing (docs/device-protocol.md section 7, revision 4), and a corrupt
answer is asked for again at once instead of waiting for the device's repeat (5.5).
"""

from __future__ import annotations

import os
import time

import pytest
import serial

from devices import Emulator, wire
from devices.agent_core import AgentSettings
from devices.host import DeviceLink, _ClockStart
from devices.wire import FrameType, JobKind
from examples.devices.checksum import ChecksumRecognizer, expected_text
from tests.device_faults import CorruptsCompletingCopies, CorruptsFirstAnswer

BAUD = 115200


def _frame(ftype: int, ack: int, payload: bytes) -> wire.Frame:
    return wire.Frame(ftype, 0, ack, payload)


def test_the_named_copy_starts_the_clock() -> None:
    clock = _ClockStart(names_copy=True)
    for seq, arrival in ((10, 1.0), (11, 1.1), (12, 1.2)):
        clock.sent(seq, arrival)
    # Two corrupt copies: each NAK names the last valid frame, 9, which says nothing of them.
    nak = _frame(FrameType.NAK, 9, wire.pack_job_offset(1, 100))
    assert clock.confirmed(nak, 200, 1.05) is None
    complete = _frame(FrameType.COMPLETE, 12, wire.pack_job_offset(1, 200, previous=12))
    assert clock.confirmed(complete, 200, 1.3) == (1.2, "complete")


def test_without_the_flag_the_earliest_copy_left_is_charged() -> None:
    clock = _ClockStart(names_copy=False)
    for seq, arrival in ((10, 1.0), (11, 1.1), (12, 1.2)):
        clock.sent(seq, arrival)
    complete = _frame(FrameType.COMPLETE, 12, wire.pack_job_offset(1, 200, previous=12))
    assert clock.confirmed(complete, 200, 1.3) == (1.0, "complete")


def test_a_name_newer_than_ack_is_not_believed() -> None:
    clock = _ClockStart(names_copy=True)
    for seq, arrival in ((10, 1.0), (11, 1.1), (12, 1.2)):
        clock.sent(seq, arrival)
    # The device cannot have read frame 12 when its last valid frame was 11.
    complete = _frame(FrameType.COMPLETE, 11, wire.pack_job_offset(1, 200, previous=12))
    assert clock.confirmed(complete, 200, 1.3) == (1.0, "complete")


class _NotingLink(DeviceLink):
    """A DeviceLink that notes when each frame's last byte reaches the device (its model)."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.arrivals: dict[int, float] = {}

    def send(self, ftype: int, payload: bytes = b"", flush: bool = False) -> int:
        seq = super().send(ftype, payload, flush)
        self.arrivals[seq] = self._line_free
        return seq


def _transfer(names_copy: bool, selective: bool) -> tuple[float, float, float]:
    """(clock start, BEGIN's arrival, the accepted copy's arrival) of one item whose
    completing frame's first two copies arrive corrupt."""
    settings = AgentSettings(baud=BAUD, selective=selective, names_completing_copy=names_copy)
    CorruptsCompletingCopies.accepted.clear()
    with Emulator(
        ChecksumRecognizer, baud=BAUD, core=CorruptsCompletingCopies, settings=settings
    ) as emu:
        port = serial.serial_for_url(emu.path, baudrate=BAUD, timeout=0.02)
        try:
            link = _NotingLink(port, BAUD)
            link.hello(time.monotonic() + 5)
            link.run_job(JobKind.SETUP, b"yes\n", 0, time.monotonic() + 5)
            data = os.urandom(3000)
            job = link.next_job()
            before = set(link.arrivals)
            done = link.transfer(job, JobKind.ITEM, data, 8000)
            answer = link.wait_answer(job, time.monotonic() + 10)
        finally:
            port.close()
    assert answer.text == expected_text(data)
    accepted = CorruptsCompletingCopies.accepted[job]
    first = min(s for s in link.arrivals if s not in before)  # the job's BEGIN
    return done.clock_start, link.arrivals[first], link.arrivals[accepted]


@pytest.mark.emulator
@pytest.mark.parametrize("selective", [True, False])
def test_corrupt_copies_of_the_last_frame_are_not_charged(selective: bool) -> None:
    start, _, accepted = _transfer(names_copy=True, selective=selective)
    assert start == pytest.approx(accepted)


@pytest.mark.emulator
def test_a_revision_3_device_is_charged_from_the_earliest_copy() -> None:
    start, begin, accepted = _transfer(names_copy=False, selective=True)
    # Charged from the first copy, two retransmissions before the copy that got through.
    assert begin < start < accepted


@pytest.mark.emulator
def test_a_corrupt_answer_is_asked_for_again_at_once() -> None:
    CorruptsFirstAnswer.triggers.clear()
    with Emulator(ChecksumRecognizer, baud=BAUD, core=CorruptsFirstAnswer) as emu:
        port = serial.serial_for_url(emu.path, baudrate=BAUD, timeout=0.02)
        try:
            link = DeviceLink(port, BAUD)
            link.hello(time.monotonic() + 5)
            data = os.urandom(2000)
            answers = [
                link.run_job(JobKind.SETUP, b"yes\n", 0, time.monotonic() + 5),
                link.run_job(JobKind.ITEM, data, 8000, time.monotonic() + 5),
            ]
        finally:
            port.close()
    assert answers[1].text == expected_text(data)
    # The copies the host got were sent because it pinged, not by the device's timer.
    assert CorruptsFirstAnswer.triggers[:1] == [FrameType.PING]
    assert FrameType.PING in CorruptsFirstAnswer.triggers[1:]
