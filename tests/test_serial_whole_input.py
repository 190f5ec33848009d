"""The whole input first: a hidden audit repeat's DATA go to a serial device in an order
from which no first part of the input can be rebuilt before the last frame, so that a
device that works on a partial input shows its real time (docs/device-protocol.md,
section 6, "The whole input first, for audit repeats").

The runner's part is checked here on the pty emulator; the audit that compares the
times is tests/test_whole_input_audit.py, a whole run tests/test_serial_whole_input_run.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from devices import AgentCore, AgentSettings, Emulator, wire
from devices.host import scattered_order
from devices.wire import JobKind
from examples.devices.checksum import ChecksumRecognizer, expected_text
from runners import ItemAttempt, ItemRequest
from tests import device_cheats
from tests.device_cheats import SilentOnTheJob, WorksOnPartOfTheInput
from tests.test_serial_runner import noise_wav, request, runner_on

pytestmark = pytest.mark.emulator


class Watches(AgentCore):
    """An honest device that notes every DATA frame of an item as it reads it: (job,
    offset, length, how far from the start it then holds the input without a gap)."""

    seen: ClassVar[list[tuple[int, int, int, int]]] = []

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        super()._on_data(frame, job, offset, chunk)
        begin = self._begin
        if begin is None or begin.kind != JobKind.ITEM or job != self._job:
            return
        receiving = self._state == wire.DeviceState.RECEIVING
        held = self._received if receiving else begin.total_length
        Watches.seen.append((job, offset, len(chunk), held))


class KeepsFewFrames(AgentCore):
    """A device that says it keeps DATA beyond a gap (READY flag bit 1) but has room to
    note only four such frames; it drops the others after answering them with NAK."""

    def _on_data(self, frame: wire.Frame, job: int, offset: int, chunk: bytes) -> None:
        if job == self._job and offset > self._received and len(self._ahead) >= 4:
            self._send(wire.FrameType.NAK, wire.pack_job_offset(job, self._received))
            return
        super()._on_data(frame, job, offset, chunk)


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    Watches.seen = []
    device_cheats.forget()
    yield
    Watches.seen = []


def emulator(
    work: float, baud: int, core: type[AgentCore] = AgentCore, selective: bool = True, **kw: Any
) -> Emulator:
    return Emulator(
        lambda: ChecksumRecognizer(sleep=work),
        baud=baud,
        boot_seconds=0.2,
        seed=21,
        core=core,
        settings=AgentSettings(baud=baud, selective=selective),
        **kw,
    )


def whole_first(wav: Path, anon: str, hang: float = 60.0) -> ItemRequest:
    return dataclasses.replace(request(wav, anon, hang), whole_input_first=True)


def run(
    emu: Emulator, tmp_path: Path, requests: list[ItemRequest], **opts: Any
) -> list[ItemAttempt]:
    runner = runner_on(emu, tmp_path, **opts)
    runner.start()
    try:
        return [runner.run_item(r) for r in requests]
    finally:
        runner.stop()


def frames_of(job_index: int) -> list[tuple[int, int, int]]:
    """(offset, length, prefix held after it) of the n-th item's DATA frames, in order."""
    jobs = sorted({job for job, *_ in Watches.seen})
    job = jobs[job_index]
    return [(o, n, held) for j, o, n, held in Watches.seen if j == job]


@pytest.mark.parametrize("count", [2, 3, 16, 17, 100, 317])
def test_the_order_leaves_the_missing_pieces_spread(count: int) -> None:
    order = scattered_order(count)
    assert sorted(order) == list(range(count)) and order[-1] == 0
    held = [False] * count
    for sent, piece in enumerate(order[:-1], 1):
        held[piece] = True
        runs = "".join("x" if h else " " for h in held).split()
        longest = max(len(run) for run in runs)
        # docs/device-protocol.md: no two adjacent in the first half; under 2 / (1 - p).
        assert longest == 1 or sent > count // 2, (count, sent)
        assert longest < 2 / (1 - sent / count), (count, sent, longest)


def test_no_first_part_of_the_input_is_held_before_the_last_frame(tmp_path: Path) -> None:
    wav = tmp_path / "w.wav"
    pcm = noise_wav(wav, 8000, 1)  # 16 000 bytes
    with emulator(0.0, 921600, Watches) as emu:
        plain, whole = run(emu, tmp_path, [request(wav, "a1"), whole_first(wav, "a2")])
    for got in (plain, whole):
        assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}, got.message
    assert plain.whole_input_first is None, "not asked: nothing to say"
    assert whole.whole_input_first is True
    # In order, the device holds a growing first part while the rest crosses.
    in_order = frames_of(0)
    assert [o for o, _, _ in in_order] == sorted(o for o, _, _ in in_order)
    # The whole input first: until its last frame, the device holds no first part at all
    # (the frame at offset 0 comes last)...
    frames = frames_of(1)
    assert len(frames) >= 16
    assert all(held == 0 for _, _, held in frames[:-1]), frames
    assert frames[-1][0] == 0 and frames[-1][2] == len(pcm)
    # ... every byte comes once on a clean line ...
    assert sum(n for _, n, _ in frames) == len(pcm)
    # ... and the pieces it holds stay apart: in the first half of the frames, no two
    # that it holds are next to each other.
    first_half = sorted((o, o + n) for o, n, _ in frames[: len(frames) // 2])
    pairs = zip(first_half, first_half[1:], strict=False)
    assert all(end < nxt for (_, end), (nxt, _) in pairs), first_half


def test_a_device_working_on_half_its_input_shows_its_whole_work(tmp_path: Path) -> None:
    baud, work = 57600, 1.6
    wav = tmp_path / "h.wav"
    pcm = noise_wav(wav, 8000, 2)  # 16 000 bytes: about 2.8 s on the line
    with emulator(work, baud, WorksOnPartOfTheInput) as emu:
        cheat, whole = run(emu, tmp_path, [request(wav, "a1"), whole_first(wav, "a2")])
    for got in (cheat, whole):
        assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}, got.message
        assert got.clock_start == "complete", got.message
    # In order it began at half the input and held its answer past the last byte: the
    # clock, which starts at the last byte, saw only the end of its work.
    assert cheat.seconds < 0.6 * work, cheat.seconds
    # Sent whole first, it had no half to begin on: its time is its work.
    assert whole.whole_input_first is True
    assert whole.seconds >= work, whole.seconds


def test_a_go_back_n_device_gets_its_input_in_order_and_the_attempt_says_so(
    tmp_path: Path,
) -> None:
    wav = tmp_path / "g.wav"
    pcm = noise_wav(wav, 8000, 3)
    with emulator(0.0, 921600, Watches, selective=False) as emu:
        (got,) = run(emu, tmp_path, [whole_first(wav, "a1")])
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}, got.message
    # It keeps no DATA beyond a gap: an order it cannot take would only cost retransmissions,
    # so its input goes in order, and the attempt says it could not go whole first.
    assert got.whole_input_first is False
    frames = frames_of(0)
    assert [o for o, _, _ in frames] == sorted(o for o, _, _ in frames)
    assert [held for _, _, held in frames] == [o + n for o, n, _ in frames]


@pytest.mark.parametrize("rate", [1e-4, 1e-3])
def test_a_whole_input_first_transfer_survives_a_noisy_line(tmp_path: Path, rate: float) -> None:
    items = []
    for n in range(3):
        wav = tmp_path / f"n{n}.wav"
        items.append((wav, noise_wav(wav, 6000, 10 + n)))
    with emulator(0.0, 921600, bit_error_rate=rate) as emu:
        got = run(
            emu,
            tmp_path,
            [whole_first(wav, f"a{n}") for n, (wav, _) in enumerate(items)],
            silence_seconds=5.0,
        )
    for attempt, (_, pcm) in zip(got, items, strict=True):
        if attempt.outcome == "result":
            assert attempt.output == {"text": expected_text(pcm)}
            assert attempt.whole_input_first is True
        else:  # a lost link is allowed, a wrong answer never
            assert attempt.link_lost, attempt.message
    assert any(a.outcome == "result" for a in got)


def test_a_device_that_keeps_few_frames_beyond_a_gap_still_gets_its_input(tmp_path: Path) -> None:
    wav = tmp_path / "f.wav"
    pcm = noise_wav(wav, 8000, 4)
    with emulator(0.0, 921600, KeepsFewFrames) as emu:
        (got,) = run(emu, tmp_path, [whole_first(wav, "a1", hang=20.0)])
    # The frames it dropped are sent again as its ACKs show them missing: slower, never
    # wrong, and never its failure.
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}, got.message
    # But they went in order, one after the other, as its offset reached them: it held a
    # growing first part while they crossed, so the item does not count as sent whole
    # input first, and a device cannot escape the comparison by dropping frames.
    assert got.whole_input_first is False


def test_a_repeat_that_fails_in_its_transfer_still_says_how_it_was_sent(tmp_path: Path) -> None:
    # The audit fails a whole-input repeat that failed where its first answer did not;
    # a device that fails in the transfer itself must not slip out of that by it.
    wav = tmp_path / "s.wav"
    noise_wav(wav, 4000, 5)
    with emulator(8.0, 115200, SilentOnTheJob) as emu:
        (got,) = run(emu, tmp_path, [whole_first(wav, "a1", hang=3.0)])
    assert got.outcome == "timeout", got.message
    assert got.whole_input_first is True
