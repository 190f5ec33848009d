"""The serial runner end to end: the agent on the pty emulator, opened as a real tty."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

from devices import Emulator, Recognizer
from examples.devices.checksum import ChecksumRecognizer, expected_text
from runners import ItemRequest, SerialRunner, SystemSpec, open_runner

RATE = 8000


def spec_for(root: Path, vocabulary: Path | None = None) -> SystemSpec:
    return SystemSpec(
        name="dev",
        task="command",
        kind="command",
        mode="serve",
        command=(),
        workdir=Path(__file__).resolve().parents[1],
        log_path=root / "logs" / "dev.log",
        stage_dir=root / "stage",
        setup_seconds=60.0,
        setup_files={"vocabulary": vocabulary} if vocabulary else {},
    )


def noise_wav(path: Path, samples: int, seed: int) -> bytes:
    pcm = np.random.default_rng(seed).integers(-3000, 3000, samples, dtype=np.int16)
    soundfile.write(path, pcm, RATE, "PCM_16")
    return pcm.astype("<i2").tobytes()


def request(path: Path, anon: str = "a1", hang: float = 60.0) -> ItemRequest:
    return ItemRequest(anon, {"audio": path}, {"sample_rate": RATE}, hang)


def runner_on(emu: Emulator, tmp_path: Path, **options: Any) -> SerialRunner:
    opts = {"port": emu.path, "baud": emu.baud, "reset": "none", "boot_timeout": 5.0}
    opts.update(options)
    runner = open_runner("serial", opts, spec_for(tmp_path))
    assert isinstance(runner, SerialRunner)
    return runner


def emulator(factory: Callable[[], Recognizer], baud: int = 921600, **kw: Any) -> Emulator:
    return Emulator(factory, baud=baud, boot_seconds=0.2, seed=5, **kw)


def test_results_equal_the_local_recognizer(tmp_path: Path) -> None:
    with emulator(ChecksumRecognizer) as emu:
        runner = runner_on(emu, tmp_path)
        info = runner.start()
        assert info.name == "checksum"
        try:
            for n, samples in enumerate((1, 4000, 30000)):
                wav = tmp_path / f"i{n}.wav"
                pcm = noise_wav(wav, samples, n)
                got = runner.run_item(request(wav, f"a{n}"))
                assert got.outcome == "result", got.message
                assert got.output == {"text": ChecksumRecognizer().recognize(pcm, RATE)}
                assert got.round_trip_seconds is not None
        finally:
            runner.stop()


def test_unsupported_rate_is_an_error_without_sending(tmp_path: Path) -> None:
    with emulator(ChecksumRecognizer) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            wav = tmp_path / "x.wav"
            soundfile.write(wav, np.zeros(100, dtype=np.int16), 11025, "PCM_16")
            got = runner.run_item(request(wav))
            assert got.outcome == "error" and "11025" in got.message
        finally:
            runner.stop()


@pytest.mark.parametrize("rate", [1e-4, 1e-3])
def test_bit_errors_results_correct_and_counted(tmp_path: Path, rate: float) -> None:
    with emulator(ChecksumRecognizer, bit_error_rate=rate) as emu:
        runner = runner_on(emu, tmp_path, silence_seconds=5.0)
        runner.start()
        try:
            for n in range(3):
                wav = tmp_path / f"e{n}.wav"
                pcm = noise_wav(wav, 6000, 10 + n)
                got = runner.run_item(request(wav, f"e{n}"))
                if got.outcome == "result":
                    assert got.output == {"text": expected_text(pcm)}
                else:  # a lost link is allowed, a wrong answer never
                    assert got.link_lost
                    runner.restart()
            assert runner.counters.retransmitted_frames > 0
        finally:
            runner.stop()


def test_reboot_mid_item_is_link_lost_then_recovered(tmp_path: Path) -> None:
    with emulator(lambda: ChecksumRecognizer(sleep=2.0)) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            wav = tmp_path / "r.wav"
            pcm = noise_wav(wav, 2000, 1)
            threading.Timer(0.8, emu.reboot).start()
            first = runner.run_item(request(wav))
            assert first.link_lost and first.outcome == "crashed"
            runner.restart()
            second = runner.run_item(request(wav))
            assert second.outcome == "result"
            assert second.output == {"text": expected_text(pcm)}
        finally:
            runner.stop()


def test_hang_is_a_timeout_and_the_device_is_reset(tmp_path: Path) -> None:
    with emulator(lambda: ChecksumRecognizer(sleep=3.0)) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            wav = tmp_path / "h.wav"
            noise_wav(wav, 100, 2)
            got = runner.run_item(request(wav, hang=0.5))
            assert got.outcome == "timeout" and got.system_lost and not got.link_lost
            runner.restart()
        finally:
            runner.stop()


def test_transfer_time_is_line_time_and_not_processing_time(tmp_path: Path) -> None:
    baud = 115200
    sleep = 0.5
    with emulator(lambda: ChecksumRecognizer(sleep=sleep), baud=baud) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            wav = tmp_path / "big.wav"
            pcm = noise_wav(wav, 24000, 3)  # 48 000 bytes: about 4.2 s on the line
            got = runner.run_item(request(wav))
            assert got.outcome == "result"
            line_seconds = len(pcm) / (baud / 10)
            assert abs(got.stage_seconds / line_seconds - 1.0) < 0.2
            # Processing covers the recognizer's sleep, and none of the transfer.
            assert sleep <= got.seconds < sleep + 0.25 * line_seconds
        finally:
            runner.stop()


def test_emulate_option_starts_its_own_emulator(tmp_path: Path) -> None:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("yes\nno\n", encoding="utf-8")
    opts = {"emulate": "examples.devices.checksum", "baud": 921600, "boot_timeout": 10.0}
    runner = SerialRunner(spec_for(tmp_path, vocab), opts)
    runner.start()
    try:
        wav = tmp_path / "e.wav"
        pcm = noise_wav(wav, 1000, 4)
        got = runner.run_item(request(wav))
        assert got.output == {"text": expected_text(pcm)}
    finally:
        runner.stop()


def test_bad_options_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="port"):
        SerialRunner(spec_for(tmp_path), {})
    with pytest.raises(ValueError, match="reset"):
        SerialRunner(spec_for(tmp_path), {"port": "/dev/null", "reset": "dsr"})
    with pytest.raises(ValueError, match="unknown"):
        SerialRunner(spec_for(tmp_path), {"port": "/dev/null", "bogus": 1})


COMMANDS = ["turn left", "turn right", "go forward", "go back", "open the door", "close the door"]


def test_sphinx_command_agent_matches_local(tmp_path: Path) -> None:
    from examples.devices.sphinx_command import SphinxCommandRecognizer

    # The committed demo recordings (datagen/make_demo_command.py): deterministic audio,
    # so the expected answers are too.
    demo = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-command"
    wavs = [demo / "c01.flac", demo / "c02.flac", demo / "c03.flac"]
    local = SphinxCommandRecognizer()
    local.load(COMMANDS)
    expected = [local.recognize(soundfile.read(w, dtype="<i2")[0].tobytes(), RATE) for w in wavs]
    assert expected == ["turn left", "go forward", "open the door"]
    vocab = tmp_path / "commands.txt"
    vocab.write_text("\n".join(COMMANDS) + "\n", encoding="utf-8")
    with Emulator("examples.devices.sphinx_command", baud=115200) as emu:
        runner = SerialRunner(
            spec_for(tmp_path, vocab), {"port": emu.path, "reset": "none", "boot_timeout": 10.0}
        )
        runner.start()
        try:
            got = [runner.run_item(request(w, f"s{n}")).output for n, w in enumerate(wavs)]
        finally:
            runner.stop()
    assert got == [{"text": t} for t in expected]
