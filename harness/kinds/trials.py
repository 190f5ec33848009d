"""Verification trials: what the kinds share whose items are trials scored by a detection
threshold (face-verify, spkv). Not a kind module: it lists no ``KINDS``.

A trial is two inputs and whether they are one target (one face, one speaker). A trial
kind's item reference is ``((first, second), target)``, the two files as the test set
names them; the system answers ``{"score": <number>}``, higher meaning more likely a
target, and a trial is accepted where its score reaches the threshold. So the headline
is the equal error rate over the trials, with a trial never scored rejected at every
threshold (-inf), and a trial's per-item statistic is its (score, target).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.kinds.base import ItemStatistics, Outputs, Plot, TaskConfig, Writer
from harness.kinds.formats import score_jsonl

if TYPE_CHECKING:
    from harness.testsets import TestItem, TestSet
    from scoring.plots import PlotFiles

# (first input, second input): the files as the test set names them.
Trial = tuple[str, str]
# (scores of the answered trials, every trial's target) -> the kind's figures.
TrialsScorer = Callable[[dict[Trial, float], dict[Trial, bool]], dict[str, Any]]


def trial_id(first: str, second: str) -> str:
    """A trial's item id: the stems of its two files, ``first~second``."""
    return f"{Path(first).stem}~{Path(second).stem}"


def trial_scores(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], dict[Trial, float]]:
    """The references by item id, and the score of each answered trial."""
    refs = testset.references()
    scores = {
        refs[k][0]: float(v["score"]) for k, v in outputs.items() if k in refs and v is not None
    }
    return refs, scores


def scored_trials(
    scorer: TrialsScorer,
) -> Callable[[TestSet, TaskConfig, Outputs, Mapping[str, float]], dict[str, Any]]:
    """A trial kind's ``score``: its trials' scores and targets handed to ``scorer``."""

    def score(
        testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
    ) -> dict[str, Any]:
        refs, scores = trial_scores(testset, outputs)
        targets = {trial: target for trial, target in refs.values()}
        genuine = sum(targets.values())
        if genuine == 0 or genuine == len(targets):
            # A job stopped after trials of one class (or a set with one): no EER yet. The
            # leaderboard shows none and says why, as trials_eer gives None for a resample.
            return {
                "eer": None,
                "trials": len(targets),
                "target_trials": genuine,
                "note": f"no EER: {genuine} target and {len(targets) - genuine} non-target "
                "trials completed; it needs both",
            }
        return scorer(scores, targets)

    return score


def _trial_items(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, tuple[float, bool]]:
    """Each trial's (score, target), -inf for a trial never scored: the EER is the trials'."""
    refs, scores = trial_scores(testset, outputs)
    return {k: (scores.get(trial, -math.inf), target) for k, (trial, target) in refs.items()}


def trials_eer(task: TaskConfig, trials: Sequence[tuple[float, bool]]) -> float | None:
    """The EER of (score, target) trials, -inf for a trial never scored (scoring.det): the
    aggregate of a trial kind's per-trial statistics."""
    from scoring.det import trials_eer as eer

    return eer([s for s, _ in trials], [t for _, t in trials])


# A trial kind's headline, as `TaskKind` fields: the EER of its trials, lower is better.
EER_HEADLINE: Mapping[str, Any] = MappingProxyType(
    {
        "metric": lambda task: "eer",
        "metric_labels": {"eer": "EER"},
        "statistics": ItemStatistics(_trial_items, trials_eer),
        "higher_is_better": False,
    }
)


def trials_jsonl(first: str, second: str, target: str) -> Writer:
    """A trial kind's `score-jsonl` writer: ``{first, second, target}`` lines with
    --references, else ``{first, second, "score"}`` lines, as its `onsite score` family
    reads them."""

    def row(item: TestItem, key: str, value: Any) -> dict[str, Any]:
        (a, b), _ = item.reference
        return {first: a, second: b, key: value}

    return score_jsonl(
        lambda item: row(item, target, item.reference[1]),
        lambda job, item, answer: row(item, "score", answer["score"]),
    )


def system_curves(
    scores: Mapping[str, Mapping[str, Any]], key: str, x: str, y: str
) -> dict[str, tuple[Any, Any]]:
    """Each system's curve ``(figures[key][x], figures[key][y])``; a system whose figures
    have no ``key`` is left out."""
    return {
        system: (figures[key][x], figures[key][y])
        for system, figures in scores.items()
        if isinstance(figures.get(key), Mapping)
    }


def det_plot(task: str, curves: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> Plot:
    """The report's DET figure: each system's curve as (P_fa, P_miss)."""

    def draw(stem: Path) -> PlotFiles:
        from scoring.plots import plot_det

        return plot_det(curves, stem, title=f"{task}: DET")

    return ("DET", draw)
