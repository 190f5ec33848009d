"""The processing clock on the pty emulator: a device can neither hide its work in the
transfer nor gain from a lost frame, and the emulator keeps time whatever the recognizer does.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devices import AgentSettings, Emulator, Recognizer
from examples.devices.checksum import ChecksumRecognizer, expected_text
from harness.site import SiteError, load_site
from runners import SerialRunner, SystemSpec
from tests.device_faults import (
    AckInsteadOfComplete,
    GilHolder,
    IgnoresHostMax,
    LosesFirstComplete,
    NoBootReady,
    NotUtf8,
)
from tests.test_serial_runner import noise_wav, request, runner_on, spec_for


def emulator(factory: Callable[[], Recognizer], baud: int = 115200, **kw: Any) -> Emulator:
    return Emulator(factory, baud=baud, boot_seconds=0.2, seed=7, **kw)


def one_item(emu: Emulator, tmp_path: Path, samples: int = 4000, **options: Any) -> Any:
    runner = runner_on(emu, tmp_path, **options)
    runner.start()
    try:
        wav = tmp_path / "i.wav"
        pcm = noise_wav(wav, samples, 1)
        return runner.run_item(request(wav)), pcm
    finally:
        runner.stop()


def test_an_honest_device_starts_the_clock_with_complete(tmp_path: Path) -> None:
    with emulator(lambda: ChecksumRecognizer(sleep=0.2)) as emu:
        got, pcm = one_item(emu, tmp_path)
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
    assert got.clock_start == "complete"
    assert 0.2 <= got.seconds < 0.3
    # The transfer is recorded apart: 8000 bytes at 11520 bytes/s.
    assert got.stage_seconds >= 8000 / 11520


def test_a_device_that_never_says_complete_is_charged_its_processing(tmp_path: Path) -> None:
    with emulator(lambda: ChecksumRecognizer(sleep=3.0), core=AckInsteadOfComplete) as emu:
        got, pcm = one_item(emu, tmp_path)
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
    assert got.clock_start == "ack"
    assert got.seconds >= 3.0
    assert got.stage_seconds < 2.0, "the recognizer's time must not be called transfer"


def test_a_lost_complete_costs_the_device_not_the_venue(tmp_path: Path) -> None:
    with emulator(lambda: ChecksumRecognizer(sleep=0.5), core=LosesFirstComplete) as emu:
        got, pcm = one_item(emu, tmp_path)
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
    # The COMPLETE repeated for the host's resent DATA confirmed the clock; the clock
    # still started when the input had arrived.
    assert got.seconds >= 0.5
    assert got.seconds < 0.6


def test_a_recognizer_holding_the_gil_is_timed_in_full(tmp_path: Path) -> None:
    with emulator(lambda: GilHolder(0.7)) as emu:
        got, pcm = one_item(emu, tmp_path)
    assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
    assert got.clock_start == "complete"
    assert 0.7 <= got.seconds < 0.8


def test_a_lost_boot_ready_between_items_leaves_no_error(tmp_path: Path) -> None:
    with emulator(ChecksumRecognizer, core=NoBootReady) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            wav = tmp_path / "b.wav"
            pcm = noise_wav(wav, 500, 2)
            assert runner.run_item(request(wav)).outcome == "result"
            emu.reboot()  # its READY is lost: the host cannot know
            threading.Event().wait(0.5)
            lost = runner.run_item(request(wav))
            assert lost.outcome != "error" and lost.link_lost and not lost.system_lost
            assert "setup" in lost.message
            again = runner.run_item(request(wav))
            assert again.outcome == "result" and again.output == {"text": expected_text(pcm)}
        finally:
            runner.stop()


@pytest.mark.parametrize("max_payload", [16, 17, 40])
def test_small_max_payload_is_honoured(tmp_path: Path, max_payload: int) -> None:
    settings = AgentSettings(baud=921600, max_payload=max_payload, window=4)
    with emulator(ChecksumRecognizer, baud=921600, settings=settings) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            for n in range(2):
                wav = tmp_path / f"m{n}.wav"
                pcm = noise_wav(wav, 600 + 7 * n, n)
                got = runner.run_item(request(wav, f"m{n}"))
                assert got.outcome == "result", got.message
                assert got.output == {"text": expected_text(pcm)}
        finally:
            runner.stop()


def test_round_trip_is_measured_per_item(tmp_path: Path) -> None:
    with emulator(ChecksumRecognizer) as emu:
        runner = runner_on(emu, tmp_path)
        runner.start()
        try:
            trips = []
            for n in range(3):
                wav = tmp_path / f"r{n}.wav"
                noise_wav(wav, 100, n)
                got = runner.run_item(request(wav, f"r{n}"))
                assert got.round_trip_seconds is not None and got.round_trip_seconds > 0
                trips.append(got.round_trip_seconds)
            assert len(set(trips)) == 3
        finally:
            runner.stop()


def test_result_not_utf8_is_invalid_output(tmp_path: Path) -> None:
    with emulator(ChecksumRecognizer, core=NotUtf8) as emu:
        got, _ = one_item(emu, tmp_path, samples=100)
    assert got.outcome == "invalid_output" and "UTF-8" in got.message


class Verbose(ChecksumRecognizer):
    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        return " ".join([expected_text(pcm)] * 5)


def test_result_longer_than_announced_is_invalid_output(tmp_path: Path) -> None:
    spec = spec_for(tmp_path)
    small = SystemSpec(**{**vars(spec), "max_output_bytes": 20})
    with emulator(Verbose, core=IgnoresHostMax) as emu:
        runner = SerialRunner(small, {"port": emu.path, "baud": emu.baud, "reset": "none"})
        runner.start()
        try:
            wav = tmp_path / "o.wav"
            noise_wav(wav, 100, 3)
            got = runner.run_item(request(wav))
        finally:
            runner.stop()
    assert got.outcome == "invalid_output" and "allowed 24" in got.message
    # An honest device answers ERROR 6 instead, which is the device's error.
    with emulator(Verbose) as emu:
        runner = SerialRunner(small, {"port": emu.path, "baud": emu.baud, "reset": "none"})
        runner.start()
        try:
            got = runner.run_item(request(tmp_path / "o.wav"))
        finally:
            runner.stop()
    assert got.outcome == "error" and "error 6" in got.message


def test_a_device_program_runs_behind_the_emulated_line(tmp_path: Path) -> None:
    # The reference agent as a separate program on its own tty stands for a vendor's binary.
    command = [sys.executable, "-m", "devices.agent", "--agent", "examples.devices.checksum"]
    command += ["--port", "{port}", "--baud", "115200"]
    opts = {"emulate_command": command, "baud": 115200, "boot_timeout": 10.0}
    runner = SerialRunner(spec_for(tmp_path), opts)
    runner.start()
    try:
        wav = tmp_path / "c.wav"
        pcm = noise_wav(wav, 3000, 5)
        got = runner.run_item(request(wav))
        assert got.outcome == "result" and got.output == {"text": expected_text(pcm)}
        assert abs(got.stage_seconds / (len(pcm) / 11520) - 1) < 0.25, "paced at 115200"
    finally:
        runner.stop()


def test_emulate_command_must_name_the_port(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="port"):
        SerialRunner(spec_for(tmp_path), {"emulate_command": ["./mydevice"]})


def _site(tmp_path: Path, device: str) -> Path:
    site = tmp_path / "site.toml"
    testset = json.dumps(str(Path(__file__).resolve().parents[1] / "site_config/data/demo-command"))
    site.write_text(
        f'[site]\nname = "s"\n\n[devices.pda]\ntransport = "serial"\n{device}\n\n'
        f'[tasks.command]\nkind = "command"\ntestset = {testset}\nsample_rates = [8000]\n'
        "budget = { realtime_factor = 1.0 }\n\n"
        '[systems.pda]\ndevice = "pda"\ntasks = ["command"]\n',
        encoding="utf-8",
    )
    return site


def test_the_site_file_takes_emulate_command_and_needs_no_command(tmp_path: Path) -> None:
    site = load_site(_site(tmp_path, 'emulate_command = ["./mydevice", "{port}"]'))
    options = site.device_options("pda")
    assert options["emulate_command"] == ["./mydevice", "{port}"]
    both = 'emulate = "examples.devices.checksum"\nemulate_command = ["./d", "{port}"]'
    with pytest.raises(SiteError, match="not both"):
        load_site(_site(tmp_path, both))
    with pytest.raises(SiteError, match="emulate_command"):
        load_site(_site(tmp_path, "baud = 9600"))


@pytest.mark.parametrize("ber", [1e-4, 1e-3])
def test_bit_errors_never_shorten_the_recorded_processing(tmp_path: Path, ber: float) -> None:
    sleep = 0.2
    with emulator(lambda: ChecksumRecognizer(sleep=sleep), baud=921600, bit_error_rate=ber) as emu:
        runner = runner_on(emu, tmp_path, silence_seconds=5.0)
        runner.start()
        try:
            for n in range(4):
                wav = tmp_path / f"b{n}.wav"
                pcm = noise_wav(wav, 3000, 20 + n)
                got = runner.run_item(request(wav, f"b{n}"))
                if got.link_lost:
                    runner.restart()
                    continue
                assert got.output == {"text": expected_text(pcm)}
                assert got.seconds >= sleep, (got.seconds, got.clock_start, got.message)
        finally:
            runner.stop()
