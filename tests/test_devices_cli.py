"""`onsite devices`: probing a (pty-emulated) serial device with HELLO, and the demo's PDA."""

from __future__ import annotations

import json
from pathlib import Path

from devices import Emulator
from tests.helpers import REPO, onsite


def test_devices_probes_an_emulated_device() -> None:
    with Emulator("examples.devices.checksum", baud=115200) as emulator:
        proc = onsite("devices", "--port", emulator.path, "--timeout", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert emulator.path in proc.stdout and "checksum" in proc.stdout


def test_devices_reports_a_silent_port(tmp_path: Path) -> None:
    proc = onsite("devices", "--port", str(tmp_path / "nothing"), "--timeout", "0.5")
    assert proc.returncode == 1 and "no answer" in proc.stdout


def test_demo_command_task_on_the_emulated_pda(tmp_path: Path) -> None:
    site = REPO / "site_config" / "demo.toml"
    text = site.read_text(encoding="utf-8")
    # Only the PDA task, at the demo's settings.
    start = text.index("[tasks.command]")
    own = tmp_path / "pda.toml"
    own.write_text(
        '[site]\nname = "pda"\n\n'
        + text[text.index("[devices.pda]") : text.index("[tasks.asr-2x]")]
        + text[start : text.index("# Character recognition")]
        .replace('"data/demo-command"', json.dumps(str(REPO / "site_config/data/demo-command")))
        .replace('workdir = ".."', f"workdir = {json.dumps(str(REPO))}"),
        encoding="utf-8",
    )
    run = onsite("run", str(own), "--runs", str(tmp_path / "runs"))
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [
        json.loads(line)
        for line in (tmp_path / "runs/pda/outputs/command/pda-sphinx.jsonl")
        .read_text()
        .splitlines()
    ]
    assert len(rows) == 6 and all(r["verdict"] == "ok" for r in rows)
    assert all(r["stage_seconds"] > 0 for r in rows), "transfer time is recorded apart"
    vocabulary = (REPO / "site_config/data/demo-command/vocabulary.txt").read_text().split("\n")
    assert all(r["output"]["text"] in vocabulary for r in rows if r["output"]["text"])


def test_devices_listing_with_a_silent_builtin_uart_exits_0() -> None:
    # Every PC lists a built-in UART (here /dev/ttyS0 when the machine has one) with
    # nothing attached: listing it is no failure.
    proc = onsite("devices", "--timeout", "0.3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Serial devices" in proc.stdout or "no serial ports found" in proc.stdout


def test_devices_fails_only_for_the_named_port_that_is_silent(tmp_path: Path) -> None:
    with Emulator("examples.devices.checksum", baud=115200) as emulator:
        both = onsite(
            "devices", "--port", emulator.path, "--port", str(tmp_path / "none"), "--timeout", "2"
        )
    assert both.returncode == 1, both.stdout + both.stderr
    assert "checksum" in both.stdout and "no answer" in both.stdout
