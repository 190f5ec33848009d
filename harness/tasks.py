"""Task kinds: how each kind loads its test set, checks outputs and scores them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring import score_asr

from .site import Task
from .testsets import TestItem, TestSet, load_asr_testset


@dataclass(frozen=True)
class TaskKind:
    """What the controller and the report need to know about one kind of task."""

    name: str
    load: Callable[[Path, Task], TestSet]
    check_output: Callable[[Mapping[str, Any]], str | None]
    score: Callable[[TestSet, Task, Mapping[str, Mapping[str, Any] | None]], dict[str, Any]]
    primary_metric: Callable[[Task], str]
    # The speed figure per item, e.g. the real-time factor for audio.
    speed: Callable[[TestItem, float], float | None]


def _check_text(output: Mapping[str, Any]) -> str | None:
    text = output.get("text")
    if not isinstance(text, str):
        return 'output needs a "text" string, e.g. {"text": "hello world"}'
    return None


def _score_asr(
    testset: TestSet, task: Task, outputs: Mapping[str, Mapping[str, Any] | None]
) -> dict[str, Any]:
    hyps = {
        item_id: (out.get("text") if out is not None else None)
        for item_id, out in outputs.items()
        if item_id in testset.references()
    }
    labelled = testset.conditions()
    conditions = (
        {item.id: labelled.get(item.id, "unlabelled") for item in testset.items}
        if labelled
        else None
    )
    report = score_asr(
        testset.references(),
        hyps,
        unit=task.unit,
        case_sensitive=task.case_sensitive,
        conditions=conditions,
    )
    return report.to_dict()


def _rtf(item: TestItem, seconds: float) -> float | None:
    return seconds / item.duration if item.duration else None


TASK_KINDS: dict[str, TaskKind] = {
    "asr": TaskKind(
        name="asr",
        load=lambda root, task: load_asr_testset(root, task.sample_rates),
        check_output=_check_text,
        score=_score_asr,
        primary_metric=lambda task: "cer" if task.unit == "char" else "wer",
        speed=_rtf,
    ),
}


def task_kind(name: str) -> TaskKind:
    """The TaskKind registered under a site file's `kind`."""
    return TASK_KINDS[name]
