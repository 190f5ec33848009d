"""Shared helpers: tiny test sets, site files, and the scripted fake systems."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

from tests.pg import Postgres, PostgresMissing, start_postgres
from tests.sshd import Sshd, SshdMissing, start_sshd

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
        *(f"{k} = {toml_value(v)}" for k, v in (device or {"kind": "local"}).items()),
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


@pytest.fixture(autouse=True)
def _readable_tmp_path(tmp_path: Path) -> None:
    """pytest makes tmp_path 0700; sandboxed systems run as nobody and read their workdir."""
    tmp_path.chmod(0o755)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A real OpenSSH server on 127.0.0.1 with generated host and user keys."""
    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except SshdMissing as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Postgres]:
    """A real PostgreSQL server on 127.0.0.1 (tests/pg.py), shared by the session."""
    try:
        server = start_postgres()
    except PostgresMissing as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg(pg_server: Postgres) -> Postgres:
    """The PostgreSQL server, running (a test before may have stopped it)."""
    if pg_server.process is None or pg_server.process.poll() is not None:
        pg_server.start()
    return pg_server


@pytest.fixture
def plan_env() -> Any:
    """Build the env table for a fake system from a {frames: behaviour} plan."""

    def build(plan: dict[int, dict[str, Any]], **extra: str) -> dict[str, str]:
        return {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()}), **extra}

    return build
