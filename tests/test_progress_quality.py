"""The progress bars' quality so far: rescored from the job's outputs file, so the display
keeps no answer in memory, and equal to the leaderboard's figure at the job's end."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
from rich.console import Console

from harness import read_events
from harness.cli.render import ProgressListener
from harness.leaderboard import leaderboard
from harness.store.directory import read_outputs_file
from harness.store.events import Completed, JobFinished, JobStarted
from harness.store.run_model import RunModel
from tests.helpers import FAKE_SERVE, make_testset, run_site, write_site


def _finished_run(tmp_path: Path, plan_env) -> Path:
    rows = [(f"u{i}", 1600 + 160 * i, "the quick brown fox") for i in range(4)]
    testset = make_testset(tmp_path / "set", rows)
    plan = {1600: {"text": "the quick brown fox"}, 1760: {"text": "the quick fox"}}
    plan[1920] = {"text": "a quick brown fox jumps"}
    plan[2080] = {"do": "error"}
    site = write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}}
    )
    run_dir, _ = run_site(site)
    return run_dir


def _bar_quality(run_dir: Path, outputs_dir: Path) -> tuple[str, ProgressListener]:
    """Replay the run's events into a terminal display reading outputs from ``outputs_dir``."""
    model = RunModel.open(run_dir)
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    listener = ProgressListener(
        console,
        testsets=model.testsets,
        site=model.site,
        outputs=lambda task, system: outputs_dir / task / f"{system}.jsonl",
    )
    with listener:
        listener(JobStarted("asr", "fake", 4, 0))
        for event in read_events(run_dir / "journal.jsonl"):
            if isinstance(event, Completed | JobFinished):
                listener(event)
        assert listener._progress is not None
        quality = listener._progress.tasks[0].fields["quality"]
    return quality, listener


def test_the_bar_shows_the_leaderboards_quality(tmp_path: Path, plan_env) -> None:
    run_dir = _finished_run(tmp_path, plan_env)
    quality, _ = _bar_quality(run_dir, run_dir / "outputs")
    row = leaderboard(run_dir)[0]
    assert row.score is not None and 0 < row.score < 1
    assert quality == f"WER {100 * row.score:.1f}%"


def test_the_answers_rescored_are_the_files_not_kept_in_memory(tmp_path: Path, plan_env) -> None:
    run_dir = _finished_run(tmp_path, plan_env)
    # A copy of the outputs where every answer is perfect, plus a torn last line: the
    # bar's figure follows the file it was given, whatever the events carried.
    copy = tmp_path / "copy" / "asr"
    copy.mkdir(parents=True)
    lines = []
    for row in read_outputs_file(run_dir / "outputs" / "asr" / "fake.jsonl"):
        row.pop("item")
        row.update(verdict="ok", output={"text": "the quick brown fox"})
        lines.append(orjson.dumps(row))
    (copy / "fake.jsonl").write_bytes(b"\n".join(lines) + b'\n{"id": "u9", "verdi')
    quality, listener = _bar_quality(run_dir, tmp_path / "copy")
    assert quality == "WER 0.0%"
    # Nothing of the answers stays with the display (the site it was given holds the fake's
    # planned answers; its own state and the bars' fields must not).
    own = {k: v for k, v in vars(listener).items() if k not in ("site", "testsets", "console")}
    assert listener._progress is not None
    held = repr(own) + repr([t.fields for t in listener._progress.tasks])
    assert "jumps" not in held  # a word of one answer, in no reference


def test_reading_an_outputs_file_being_written(tmp_path: Path) -> None:
    path = tmp_path / "fake.jsonl"
    assert read_outputs_file(path) == []  # not written yet
    path.write_bytes(b'{"id": "a", "verdict": "ok"}\n[1, 2]\n\xff\n{"id": "b", "verd')
    assert read_outputs_file(path) == [{"id": "a", "item": "a", "verdict": "ok"}]
