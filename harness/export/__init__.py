"""`onsite export`: a run's outputs (and, for organizers, references) in the fields' own formats.

Items a system never answered (crash, timeout, rejected output) are written as
empty hypotheses, as the live scoring counts them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from ..testsets import TestSet

# Verdicts whose output the live scoring uses; every other item scores as empty.
_ANSWERED = frozenset({"ok", "late"})


@dataclass(frozen=True)
class RunOutputs:
    """One job of a run: its kind, the task's test set and the job's output lines by item."""

    kind: str
    testset: TestSet
    lines: Mapping[str, Mapping[str, Any]]

    def text(self, item: str) -> str:
        """The item's hypothesis text, empty when the item was not answered."""
        line = self.lines.get(item)
        if not line or line.get("verdict") not in _ANSWERED or not line.get("output"):
            return ""
        text = line["output"].get("text")
        return text if isinstance(text, str) else ""


def read_run(run_dir: Path, task: str, system: str) -> RunOutputs:
    """Read one job from a run directory (the one place export reads runs)."""
    from ..kinds.registry import task_kind
    from ..run_site import site_of_run

    site = site_of_run(run_dir)
    if task not in site.config.tasks:
        raise InputError(
            [
                Problem(
                    run_dir,
                    "--task",
                    f"no task {task!r}",
                    f"use one of: {', '.join(site.config.tasks)}",
                )
            ]
        )
    if system not in site.config.systems:
        raise InputError(
            [
                Problem(
                    run_dir,
                    "--system",
                    f"no system {system!r}",
                    f"use one of: {', '.join(site.config.systems)}",
                )
            ]
        )
    cfg = site.config.tasks[task]
    testset = task_kind(cfg.kind).load(site.testset_path(task), cfg)
    path = run_dir / "outputs" / task / f"{system}.jsonl"
    lines: dict[str, Mapping[str, Any]] = {}
    if path.exists():
        for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if raw.strip():
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise InputError([Problem(path, "", f"not JSON ({exc.msg})", line=n)]) from exc
                lines[line["id"]] = line
    return RunOutputs(cfg.kind, testset, lines)


def _clean(text: str) -> str:
    # One item per line: a newline inside a hypothesis would split it.
    return " ".join(text.split())


def write_trn(run: RunOutputs, references: bool) -> str:
    """sclite `trn`: the words, then the utterance id in parentheses."""
    out = []
    for item in run.testset.items:
        text = str(item.reference) if references else run.text(item.id)
        out.append(f"{_clean(text)} ({item.id})\n")
    return "".join(out)


def write_kaldi(run: RunOutputs, references: bool) -> str:
    """Kaldi `text`: the utterance id, then the words."""
    out = []
    for item in run.testset.items:
        text = _clean(str(item.reference) if references else run.text(item.id))
        out.append(f"{item.id} {text}".rstrip() + "\n")
    return "".join(out)


def write_jsonl(run: RunOutputs, references: bool) -> str:
    """The outputs with their verdicts, one JSON line per test item (unanswered ones too)."""
    out = []
    for item in run.testset.items:
        if references:
            line: Mapping[str, Any] = {"id": item.id, "reference": item.reference}
        else:
            line = run.lines.get(item.id) or {"id": item.id, "output": None, "verdict": None}
        out.append(json.dumps(line, ensure_ascii=False, default=str) + "\n")
    return "".join(out)


Writer = Callable[[RunOutputs, bool], str]
WRITERS: dict[str, Writer] = {"trn": write_trn, "kaldi": write_kaldi, "jsonl": write_jsonl}
# Which formats fit each kind; jsonl fits every kind.
_TEXT_FORMATS = ("trn", "kaldi", "jsonl")
KIND_FORMATS: dict[str, tuple[str, ...]] = {"asr": _TEXT_FORMATS, "command": _TEXT_FORMATS}


def formats_of(kind: str) -> tuple[str, ...]:
    """The export formats a kind supports."""
    return KIND_FORMATS.get(kind, ("jsonl",))


def export(run_dir: Path, task: str, system: str, fmt: str, references: bool = False) -> str:
    """The job's outputs (or the task's references) as the text of a `fmt` file."""
    run = read_run(run_dir, task, system)
    allowed = formats_of(run.kind)
    if fmt not in allowed:
        raise InputError(
            [
                Problem(
                    run_dir,
                    "--format",
                    f"format {fmt!r} does not fit task {task!r} (kind {run.kind})",
                    f"use one of: {', '.join(allowed)}",
                )
            ]
        )
    return WRITERS[fmt](run, references)
