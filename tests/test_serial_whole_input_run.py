"""A device that works on a partial input, through a whole run (`onsite run` in-process):
its hidden audit repeats go whole input first, and the audit line that compares their
times with the first answers makes the job INVALID. An honest device passes; a go-back-N
device, which can only be sent its input in order, still runs, and the line says what
could not be checked.

The device program is tests/cheat_device.py behind the emulator (``emulate_command``),
as a vendor's binary would run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import leaderboard, read_journal
from harness.report import judge_job
from tests.helpers import REPO, run_site

pytestmark = pytest.mark.emulator

DEMO = REPO / "site_config" / "data" / "demo-command"
RULE = "first answers not suspiciously faster than whole-input repeats"
ITEMS = ("c01", "c02")  # about 15.4 kB of PCM each: about 2.7 s at 57600 baud


def _site(tmp_path: Path, device: str, work: float, *flags: str) -> Path:
    testset = tmp_path / "set"
    testset.mkdir()
    lines = dict(
        line.split(" ", 1) for line in (DEMO / "text").read_text(encoding="utf-8").splitlines()
    )
    for item in ITEMS:
        shutil.copy(DEMO / f"{item}.flac", testset / f"{item}.flac")
    shutil.copy(DEMO / "vocabulary.txt", testset / "vocabulary.txt")
    (testset / "text").write_text(
        "".join(f"{item} {lines[item]}\n" for item in ITEMS), encoding="utf-8"
    )
    command = [sys.executable, "-m", "tests.cheat_device", device, "--port", "{port}"]
    command += ["--baud", "57600", "--work", str(work), *flags]
    site = tmp_path / "site.toml"
    site.write_text(
        '[site]\nname = "whole"\nruns = "runs"\n\n'
        f'[devices.board]\ntransport = "serial"\nemulate_command = {json.dumps(command)}\n'
        'baud = 57600\nreset = "none"\nboot_timeout = 10.0\n\n'
        f'[tasks.command]\nkind = "command"\ntestset = {json.dumps(str(testset))}\n'
        "sample_rates = [8000]\n"
        "budget = { realtime_factor = 5.0, setup_seconds = 60, hang_seconds = 30 }\n"
        "audit = { repeats = 2, perturb = false }\n\n"
        '[systems.board]\ndevice = "board"\ntasks = ["command"]\n'
        f"workdir = {json.dumps(str(REPO))}\n",
        encoding="utf-8",
    )
    return site


def _run(tmp_path: Path, device: str, work: float, *flags: str) -> tuple[Any, list[Any]]:
    run_dir, _ = run_site(_site(tmp_path, device, work, *flags))
    (row,) = leaderboard(run_dir)
    completed = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    return row, completed


def _line(row: Any) -> dict[str, Any]:
    lines = {line["rule"]: line for line in row.audits}
    assert RULE in lines, row.audits
    return lines[RULE]


def test_a_device_working_on_half_its_input_is_caught_by_its_repeats(tmp_path: Path) -> None:
    work = 1.6
    row, completed = _run(tmp_path, "WorksOnPartOfTheInput", work)
    assert {r["verdict"] for r in completed} == {"ok"}, completed
    repeats = [r for r in completed if r.get("audit_of")]
    firsts = [r for r in completed if not r.get("audit_of")]
    assert len(repeats) == 2 and all(r["whole_input_first"] is True for r in repeats)
    assert all(r.get("whole_input_first") is None for r in firsts)
    # Every answer is right and agrees with its repeat: only the times tell.
    line = _line(row)
    assert not line["passed"], line
    assert line["figure"].startswith("2/2 first answers"), line
    verdict = judge_job(row)
    assert not verdict.valid
    assert [x.rule for x in verdict.lines if not x.passed] == [f"audit: {RULE}"]


def test_an_honest_device_passes_the_line(tmp_path: Path) -> None:
    row, completed = _run(tmp_path, "AgentCore", 1.0)
    assert {r["verdict"] for r in completed} == {"ok"}, completed
    line = _line(row)
    assert line["passed"] and line["figure"].startswith("0/2 first answers"), line
    assert judge_job(row).valid, judge_job(row).lines


def test_a_go_back_n_device_runs_and_the_line_says_it_was_not_checked(tmp_path: Path) -> None:
    row, completed = _run(tmp_path, "AgentCore", 0.3, "--go-back-n")
    assert {r["verdict"] for r in completed} == {"ok"}, completed
    repeats = [r for r in completed if r.get("audit_of")]
    assert len(repeats) == 2 and all(r["whole_input_first"] is False for r in repeats)
    line = _line(row)
    assert line["passed"] and line["figure"].startswith("not checked"), line
    assert judge_job(row).valid, judge_job(row).lines


def test_failing_the_out_of_order_repeats_does_not_escape_the_line(tmp_path: Path) -> None:
    row, completed = _run(tmp_path, "FailsOutOfOrder", 1.6)
    repeats = [r for r in completed if r.get("audit_of")]
    firsts = [r for r in completed if not r.get("audit_of")]
    assert {r["verdict"] for r in firsts} == {"ok"}, firsts
    assert {r["verdict"] for r in repeats} == {"error"}, repeats
    line = _line(row)
    assert not line["passed"] and "not whole input first" in line["figure"], line
    assert not judge_job(row).valid
