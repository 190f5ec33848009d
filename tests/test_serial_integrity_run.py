"""Dishonest devices through a whole run (`onsite run` in-process): what the journal and
the outputs record for them.

The device program is tests/cheat_device.py behind the emulator (``emulate_command``),
as a vendor's binary would run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, read_outputs, run_site

pytestmark = pytest.mark.emulator

DEMO = REPO / "site_config" / "data" / "demo-command"


def _site(tmp_path: Path, cheat: str, work: float, audit: str = "") -> Path:
    testset = tmp_path / "set"
    testset.mkdir()
    shutil.copy(DEMO / "c01.flac", testset / "c01.flac")
    shutil.copy(DEMO / "vocabulary.txt", testset / "vocabulary.txt")
    (testset / "text").write_text("c01 turn left\n", encoding="utf-8")
    command = [sys.executable, "-m", "tests.cheat_device", cheat, "--port", "{port}"]
    command += ["--baud", "115200", "--work", str(work), "--memory", str(tmp_path / "mem.json")]
    site = tmp_path / "site.toml"
    site.write_text(
        '[site]\nname = "cheat"\nruns = "runs"\n\n'
        f'[devices.board]\ntransport = "serial"\nemulate_command = {json.dumps(command)}\n'
        'baud = 115200\nreset = "none"\nboot_timeout = 10.0\n\n'
        f'[tasks.command]\nkind = "command"\ntestset = {json.dumps(str(testset))}\n'
        "sample_rates = [8000]\n"
        "budget = { realtime_factor = 1.0, setup_seconds = 60, hang_seconds = 30 }\n"
        f"{audit}\n"
        '[systems.board]\ndevice = "board"\ntasks = ["command"]\n'
        f"workdir = {json.dumps(str(REPO))}\n",
        encoding="utf-8",
    )
    return site


def test_a_redo_bought_by_silence_keeps_the_lost_attempts_time(tmp_path: Path) -> None:
    """Depends on the controller charging every lost attempt's span to the item's clock
    (issue 26, item 1, harness/engine/controller.py): until then the item is recorded with the
    redo's time alone and this test fails."""
    work = 2.5  # c01 is about 1 s of audio: the budget is about 1 s
    run_dir, _ = run_site(_site(tmp_path, "MutesAfterOverrun", work))
    (row,) = read_outputs(run_dir, "command", "board")
    # The first attempt was lost (the device went silent after its work); the redo was
    # answered from memory at once. The item's time is still at least the work.
    assert row["attempt"] >= 2
    assert row["seconds"] >= work, row
    assert row["verdict"] != "ok", row


def test_an_answer_from_begin_on_a_hidden_repeat_is_invalid_output(tmp_path: Path) -> None:
    """The device's part alone: no controller change needed."""
    site = _site(tmp_path, "AnswersFromBegin", 0.3, "audit = { repeats = 1, perturb = false }\n")
    run_dir, _ = run_site(site)
    rows = {r["id"]: r for r in read_outputs(run_dir, "command", "board")}
    (repeat,) = [r for i, r in rows.items() if "#audit" in i]
    assert rows["c01"]["verdict"] in ("ok", "over_budget")
    assert repeat["verdict"] == "invalid_output", repeat
