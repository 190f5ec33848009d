"""Test helpers: tiny test sets, site files, the scripted fake systems, and the CLI.

Tests import these from here; tests/conftest.py holds only fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from harness import Controller, RunStore, load_site

REPO = Path(__file__).resolve().parent.parent
FAKE_SERVE = [sys.executable, str(REPO / "tests" / "systems" / "fake_system.py")]
FAKE_EXEC = [
    sys.executable,
    str(REPO / "tests" / "systems" / "fake_exec.py"),
    "{input}",
    "{output}",
]
RATE = 16000


def make_testset(
    root: Path, items: Iterable[tuple[str, int, str]], conditions: bool = False, rate: int = RATE
) -> Path:
    """Write WAV files of silence (the frame count identifies the item to the fakes) and `text`."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    labels = []
    for utt_id, frames, ref in items:
        soundfile.write(root / f"{utt_id}.wav", np.zeros(frames, dtype=np.int16), rate, "PCM_16")
        lines.append(f"{utt_id} {ref}")
        labels.append(f"{utt_id}\tclean")
    (root / "text").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if conditions:
        (root / "conditions.tsv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    return root


def toml_value(value: Any) -> str:
    """A Python value as TOML (enough for site files in tests)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | list | int | float):
        return json.dumps(value)
    raise TypeError(value)


def write_site(
    path: Path,
    testset: Path,
    systems: dict[str, dict[str, Any]],
    budget: dict[str, Any] | None = None,
    name: str = "t",
    task: str = "asr",
    device: dict[str, Any] | None = None,
    task_keys: dict[str, Any] | None = None,
) -> Path:
    """A site file with one ASR task, one local device and the given systems."""
    lines = [
        "[site]",
        f'name = "{name}"',
        'runs = "runs"',
        "",
        "[devices.local]",
        *(f"{k} = {toml_value(v)}" for k, v in (device or {"transport": "local"}).items()),
        "",
        f"[tasks.{task}]",
        *(f"{k} = {toml_value(v)}" for k, v in ({"kind": "asr"} | (task_keys or {})).items()),
        f"testset = {json.dumps(str(testset))}",
        f"budget = {toml_value(budget or {'seconds': 5.0, 'hang_seconds': 5.0})}",
        "",
    ]
    for system, cfg in systems.items():
        cfg = {"device": "local", "tasks": [task], **cfg}
        lines.append(f"[systems.{system}]")
        lines.extend(f"{k} = {toml_value(v)}" for k, v in cfg.items())
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def read_outputs(run_dir: Path, task: str, system: str) -> list[dict[str, Any]]:
    """The lines of outputs/<task>/<system>.jsonl."""
    path = run_dir / "outputs" / task / f"{system}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def onsite(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`onsite ARGS` as a user runs it (plain output, as under CI)."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


def run_site(site_path: Path, limit: int | None = None) -> tuple[Path, list[Any]]:
    """Run a site in-process to the end; the run directory and the job results."""
    site = load_site(site_path)
    store = RunStore(site.run_dir, "test", fsync_seconds=0)
    try:
        store.keep_site_copy(site.path, site.root)
        results = Controller(site, store, limit=limit).run()
    finally:
        store.close()
    return site.run_dir, results


def three_asr_systems_run(tmp: Path) -> Path:
    """A finished run of three ASR systems on six utterances: one right, one with errors
    (two utterances), one that crashes on one utterance (the tests of onsite compare,
    onsite meta and the report's intervals share it)."""
    tmp.chmod(0o755)  # a sealed system reads its test set as another user
    items = [(f"u{i}", 1600 * i, "one two three four") for i in range(1, 7)]
    root = make_testset(tmp / "set", items)
    right = {1600 * i: {"text": "one two three four"} for i in range(1, 7)}
    wrong = {**right, 1600: {"text": "one too three"}, 3200: {"text": "won two"}}
    crashing = {**right, 4800: {"do": "crash"}}

    def system(plan: dict[int, Any]) -> dict[str, Any]:
        return {
            "command": FAKE_SERVE,
            "env": {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})},
        }

    site = write_site(
        tmp / "site.toml",
        root,
        {"right": system(right), "wrong": system(wrong), "crashing": system(crashing)},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None, None, None], results
    return run_dir
