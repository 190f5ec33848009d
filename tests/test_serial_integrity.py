"""Dishonest devices against the serial runner: none buys time or a free redo, and an
honest device (or a line that really fails) is charged nothing it did not cause.

Each cheat is in tests/device_cheats.py. The controller adds the span of every lost
attempt to the item's clock (docs/device-protocol.md section 7); here the runner's
part is checked: that span is reported whole, from the item's first byte on the line.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devices import AgentCore, AgentSettings, Emulator
from examples.devices.checksum import ChecksumRecognizer, expected_text
from runners import ItemAttempt
from tests import device_cheats
from tests.device_cheats import (
    AcksThenAnswersFromBegin,
    AnswersBeforeTheLastFrame,
    AnswersBeforeTheLastFrameFakesAck,
    AnswersFromBegin,
    Babbles,
    MutesAfterOverrun,
    SilentOnTheJob,
)
from tests.device_faults import NoBootReady, NoPingWhileBusy
from tests.test_serial_runner import noise_wav, request, runner_on

pytestmark = pytest.mark.emulator


@pytest.fixture(autouse=True)
def _no_memories() -> Iterator[None]:
    device_cheats.forget()
    yield
    device_cheats.forget()


def emulator(work: float, baud: int, core: type[AgentCore] = AgentCore, **kw: Any) -> Emulator:
    return Emulator(
        lambda: ChecksumRecognizer(sleep=work),
        baud=baud,
        boot_seconds=0.2,
        seed=9,
        core=core,
        settings=AgentSettings(baud=baud),
        **kw,
    )


def line_seconds(nbytes: int, baud: int) -> float:
    return nbytes * 10 / baud


def span(attempt: ItemAttempt) -> float:
    return attempt.done - attempt.sent


def runs(emu: Emulator, tmp_path: Path, items: list[tuple[Path, float]], **opts: Any) -> list[Any]:
    """Run ``items`` (wav, hang_seconds) one after the other; a lost one restarts the runner."""
    runner = runner_on(emu, tmp_path, **opts)
    runner.start()
    got = []
    try:
        for n, (wav, hang) in enumerate(items):
            attempt = runner.run_item(request(wav, f"a{n}", hang=hang))
            got.append(attempt)
            if attempt.system_lost or attempt.link_lost:
                runner.restart()
    finally:
        runner.stop()
    return got


# --- attack 1: silence to buy time -----------------------------------------------------------


def test_going_silent_after_an_overrun_is_charged_from_the_first_byte(tmp_path: Path) -> None:
    baud, work = 115200, 1.0
    wav = tmp_path / "long.wav"
    pcm = noise_wav(wav, 24000, 1)  # 48 000 bytes: about 4.2 s on the line
    with emulator(work, baud, MutesAfterOverrun) as emu:
        lost, again = runs(emu, tmp_path, [(wav, 30.0), (wav, 30.0)])
    # It answered nothing, not even PING: that is a lost link (the venue cannot show
    # otherwise). The lost attempt's span runs from the item's first byte on the line
    # to the detection: the transfer, the work and the silence are all in it, so the
    # controller can charge them to the item.
    assert lost.link_lost and lost.outcome == "crashed", lost.message
    assert span(lost) >= line_seconds(len(pcm), baud) + work
    # The message says what was checked.
    assert "PING" in lost.message
    # The redo, answered from memory, is quick; the two together still cost what the
    # work cost an honest device.
    assert again.outcome == "result" and again.output == {"text": expected_text(pcm)}
    assert span(lost) + again.seconds >= work


def test_silent_on_the_job_while_answering_ping_times_out_as_its_own_failure(
    tmp_path: Path,
) -> None:
    wav = tmp_path / "i.wav"
    noise_wav(wav, 4000, 2)
    hang = 4.0
    with emulator(8.0, 115200, SilentOnTheJob) as emu:
        (got,) = runs(emu, tmp_path, [(wav, hang)])
    assert got.outcome == "timeout" and not got.link_lost and got.system_lost, got.message
    assert "PING" in got.message
    assert span(got) >= hang


def test_silent_on_the_job_then_answering_is_timed_from_the_input(tmp_path: Path) -> None:
    wav = tmp_path / "i.wav"
    pcm = noise_wav(wav, 4000, 3)
    work = 4.0
    with emulator(work, 115200, SilentOnTheJob) as emu:
        (got,) = runs(emu, tmp_path, [(wav, 30.0)])
    assert got.outcome == "result" and not got.link_lost, got.message
    assert got.output == {"text": expected_text(pcm)}
    assert got.seconds >= work


# --- attack 2: an answer before the input ----------------------------------------------------


# The proof: the host had not written the input's end when the answer came (many frames),
# or the answer's own ack says the device had not read it (one frame, written at once).
UNSENT = "before the host had sent all"
UNREAD = "says it had not read frame"


@pytest.mark.parametrize(
    ("core", "samples", "proof"),
    [
        (AnswersFromBegin, 4000, UNSENT),
        (AcksThenAnswersFromBegin, 4000, UNSENT),
        (AcksThenAnswersFromBegin, 200, UNREAD),
    ],
)
def test_an_answer_before_the_input_is_a_protocol_violation(
    tmp_path: Path, core: type[AgentCore], samples: int, proof: str
) -> None:
    wav = tmp_path / "r.wav"
    pcm = noise_wav(wav, samples, 4)
    with emulator(0.3, 115200, core) as emu:
        first, repeat = runs(emu, tmp_path, [(wav, 30.0), (wav, 30.0)])
    assert first.outcome == "result" and first.output == {"text": expected_text(pcm)}
    # The repeat is recognised from BEGIN and answered before its input reached the device.
    assert repeat.outcome == "invalid_output", (repeat.outcome, repeat.seconds, repeat.message)
    assert "before it held the whole input" in repeat.message and proof in repeat.message
    assert not repeat.link_lost


# --- attack 3: work on a partial input -------------------------------------------------------


def test_an_answer_before_the_last_frame_is_a_protocol_violation(tmp_path: Path) -> None:
    wav = tmp_path / "p.wav"
    noise_wav(wav, 4000, 5)  # 8000 bytes: about 2.1 s at 38400 baud
    with emulator(0.5, 38400, AnswersBeforeTheLastFrame) as emu:
        (got,) = runs(emu, tmp_path, [(wav, 30.0)])
    assert got.outcome == "invalid_output", (got.outcome, got.seconds, got.message)
    assert "before it held the whole input" in got.message and UNREAD in got.message


def test_an_answer_before_the_input_could_cross_is_timed_from_the_first_byte(
    tmp_path: Path,
) -> None:
    baud, work = 38400, 0.5
    wav = tmp_path / "p.wav"
    noise_wav(wav, 4000, 5)
    with emulator(work, baud, AnswersBeforeTheLastFrameFakesAck) as emu:
        (cheat,) = runs(emu, tmp_path, [(wav, 30.0)])
    with emulator(work, baud) as emu:
        (honest,) = runs(emu, tmp_path, [(wav, 30.0)])
    assert honest.outcome == "result" and honest.clock_start == "complete"
    assert cheat.outcome == "result", cheat.message
    # It worked during the transfer and answered before its input could have crossed
    # the line: all of its time since the first byte counts, so it gains nothing.
    assert cheat.clock_start == "first_byte", cheat.message
    assert "before the input" in cheat.message
    assert cheat.seconds >= work
    assert cheat.seconds >= honest.seconds


# --- honest devices and lines that really fail -----------------------------------------------


def test_an_honest_device_is_timed_as_before(tmp_path: Path) -> None:
    baud, work = 38400, 0.5
    wav = tmp_path / "h.wav"
    pcm = noise_wav(wav, 4000, 6)
    with emulator(work, baud) as emu:
        (got,) = runs(emu, tmp_path, [(wav, 30.0)])
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
    assert got.clock_start == "complete" and not got.link_lost
    assert work <= got.seconds < work + 0.25 * line_seconds(len(pcm), baud)
    assert "before the input" not in got.message


def test_a_line_cut_while_the_device_works_is_a_lost_link(tmp_path: Path) -> None:
    baud, work = 115200, 3.0
    wav = tmp_path / "c.wav"
    pcm = noise_wav(wav, 8000, 7)  # 16 000 bytes: about 1.4 s
    with emulator(work, baud) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            cut = threading.Timer(line_seconds(len(pcm), baud) + 1.0, emu.unplug)
            cut.start()
            got = runner.run_item(request(wav, hang=30.0))
            cut.join()
            emu.plug()
            runner.restart()
            again = runner.run_item(request(wav, "a2", hang=30.0))
        finally:
            runner.stop()
    assert got.link_lost and got.outcome == "crashed", got.message
    assert "PING" in got.message
    # From the first byte: the transfer and the time the device had the item.
    assert span(got) >= line_seconds(len(pcm), baud) + 1.0
    assert again.outcome == "result" and again.output == {"text": expected_text(pcm)}


def test_a_line_cut_during_the_transfer_is_a_lost_link_with_its_span(tmp_path: Path) -> None:
    baud = 115200
    wav = tmp_path / "t.wav"
    pcm = noise_wav(wav, 24000, 8)  # 48 000 bytes: about 4.2 s
    with emulator(0.2, baud) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            cut = threading.Timer(2.0, emu.unplug)
            cut.start()
            got = runner.run_item(request(wav, hang=30.0))
            cut.join()
            emu.plug()
            runner.restart()
            again = runner.run_item(request(wav, "a2", hang=30.0))
        finally:
            runner.stop()
    assert got.link_lost and got.outcome == "crashed", got.message
    assert "PING" in got.message
    # Not a zero span: the line carried the item for about 2 s before it was cut.
    assert span(got) >= 2.0
    assert again.outcome == "result" and again.output == {"text": expected_text(pcm)}


def test_a_runner_facing_a_cheat_and_then_an_honest_item_recovers(tmp_path: Path) -> None:
    wav = tmp_path / "r.wav"
    pcm = noise_wav(wav, 1000, 9)
    other = tmp_path / "o.wav"
    pcm2 = noise_wav(other, 1000, 10)
    with emulator(0.1, 115200, AnswersFromBegin) as emu:
        first, repeat, fresh = runs(emu, tmp_path, [(wav, 30.0), (wav, 30.0), (other, 30.0)])
    assert first.output == {"text": expected_text(pcm)}
    assert repeat.outcome == "invalid_output"
    # The violation leaves the session usable: the next item is received and answered.
    assert fresh.outcome == "result" and fresh.output == {"text": expected_text(pcm2)}


def test_a_reboot_whose_ready_is_lost_mid_transfer_is_a_lost_link(tmp_path: Path) -> None:
    baud = 115200
    wav = tmp_path / "b.wav"
    pcm = noise_wav(wav, 24000, 11)  # about 4.2 s on the line
    with emulator(0.1, baud, NoBootReady) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            boot = threading.Timer(1.5, emu.reboot)
            boot.start()
            got = runner.run_item(request(wav, hang=30.0))
            boot.join()
            runner.restart()
            again = runner.run_item(request(wav, "a2", hang=30.0))
        finally:
            runner.stop()
    # It ignores DATA of a job it never heard of; its PONG says it is idle: the job is
    # lost, the venue's failure, found out without waiting for a silence.
    assert got.link_lost and "lost job" in got.message, got.message
    assert span(got) >= 1.5
    assert again.outcome == "result" and again.output == {"text": expected_text(pcm)}


def test_a_device_without_ping_while_busy_is_waited_for_and_times_out_unchecked(
    tmp_path: Path,
) -> None:
    wav = tmp_path / "n.wav"
    pcm = noise_wav(wav, 4000, 12)
    with emulator(3.0, 115200, NoPingWhileBusy) as emu:
        slow, hung = runs(emu, tmp_path, [(wav, 30.0), (wav, 1.0)])
    # Silent while it works is how it said it would be: no lost link for that.
    assert slow.outcome == "result" and slow.output == {"text": expected_text(pcm)}
    assert slow.seconds >= 3.0
    assert hung.outcome == "timeout" and not hung.link_lost, hung.message
    assert "not checked" in hung.message


def test_a_device_that_babbles_never_holds_the_runner(tmp_path: Path) -> None:
    wav = tmp_path / "b.wav"
    noise_wav(wav, 4000, 13)
    with emulator(0.1, 115200, Babbles) as emu:
        (got,) = runs(emu, tmp_path, [(wav, 3.0)])
    # Frames keep coming, none of them on the job: the line works, the device does not.
    assert got.outcome == "timeout" and not got.link_lost, got.message
