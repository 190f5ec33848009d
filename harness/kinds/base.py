"""What a task kind is: the record each kind module registers, and the values it returns.

A kind module (harness/kinds/<family>.py) builds one `TaskKind` per kind it
owns and lists them in a module-level ``KINDS``; harness/kinds/registry.py
finds them. Nothing here imports the site file's models: a kind sees its task
configuration as the site's task model, which is the common task keys plus
the kind's own ``options`` model (so ``unit`` exists only on the kinds that
define it).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..collector import cycle_collector_held

if TYPE_CHECKING:
    # Only for annotations: runners (and paramiko) load only where systems run.
    from runners import OutputFile
    from scoring.plots import PlotFiles

    from ..testsets import TestItem, TestSet

# The site's task model for one kind: the common keys (testset, budget, rules ...)
# plus the kind's options. Kinds read their own options from it.
TaskConfig = Any
Outputs = Mapping[str, Mapping[str, Any] | None]
# A report figure: its title and what draws it (scoring.plots style: a file stem in,
# the PNG and SVG written there out).
Plot = tuple[str, "Callable[[Path], PlotFiles]"]
# (task name, headline metric name, scores by system) -> the kind's report figures.
Plots = Callable[[str, str, Mapping[str, Mapping[str, Any]]], "list[Plot]"]


class KindOptions(BaseModel):
    """Base of a kind's own site-file keys; a kind with none uses it as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class SpeedUnit:
    """How a kind's per-item speed is named, shown and summed up over a job.

    ``pooled``: the job's speed is items answered over their total seconds (as
    OLCCR defines V), not the mean of the per-item figures.
    """

    name: str  # the name in the journal, leaderboard JSON and report ("rtf")
    short: str  # terminal label ("rtf", "char/s")
    label: str  # report label ("real-time factor")
    fmt: str = "{:.1f}"  # report format of one figure
    pooled: bool = False

    def mean(self, speeds: Sequence[float], answered_seconds: Sequence[float]) -> float | None:
        """The job's speed from its answered items' speeds (and their seconds, if pooled)."""
        if self.pooled:
            total = sum(answered_seconds)
            return len(answered_seconds) / total if total > 0 else None
        return sum(speeds) / len(speeds) if speeds else None


RTF = SpeedUnit("rtf", "rtf", "real-time factor", "{:.3f}")
CHARS_PER_SECOND = SpeedUnit("chars_per_second", "char/s", "characters / s", pooled=True)
MS_PER_FRAME = SpeedUnit("ms_per_frame", "ms/frame", "ms / frame")


@dataclass(frozen=True)
class Headline:
    """A job's headline figure: its JSON name, the name people read, and the value."""

    name: str  # "cer"
    label: str  # "CER"
    value: float | None


@dataclass(frozen=True)
class Scored:
    """A kind's scores of one job: every figure, the headline and the secondary line."""

    figures: dict[str, Any]
    headline: Headline
    detail: str


@dataclass(frozen=True)
class ScoreFamily:
    """One `onsite score` family a kind brings: its scorer, help and own arguments.

    ``args`` are ``add_argument`` calls as (flags, options); ``--json`` is added
    by the CLI. The scorer gets the parsed arguments and returns the figures.
    """

    scorer: Callable[[argparse.Namespace], dict[str, Any]]
    help: str
    args: tuple[tuple[tuple[str, ...], dict[str, Any]], ...]
    # List-valued result keys shown as tables without --json.
    tables: tuple[str, ...] = ()


def _find(scores: Mapping[str, Any], key: str) -> float | None:
    """A figure found in scores["overall"] or at the top of scores."""
    for place in (scores.get("overall"), scores):
        if isinstance(place, Mapping) and isinstance(place.get(key), int | float):
            return float(place[key])
    return None


def score_problem(value: Any, where: str, hint: str = "") -> str | None:
    """Why a system's ``score`` at ``where`` is not one (a finite JSON number), or None."""
    # bool is an int in Python; a true/false score is a mistake, not a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f'{where} needs a number "score"{hint}'
    if not math.isfinite(value):
        return f"{where}.score is {value}: scores must be finite"
    return None


def _no_detail(scores: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class TaskKind:
    """Everything about one kind of task: options, test set, checks, scores, speed, report."""

    name: str
    load: Callable[[Path, TaskConfig], TestSet]
    check_output: Callable[[Mapping[str, Any]], str | None]
    # (test set, task, outputs of answered items, seconds per completed item) -> scores
    score: Callable[[TestSet, TaskConfig, Outputs, Mapping[str, float]], dict[str, Any]]
    # The headline metric's JSON name for this task (asr: "wer", or "cer" for unit = "char").
    metric: Callable[[TaskConfig], str]
    unit: SpeedUnit
    # Per-item speed in `unit` from the item and its processing seconds.
    speed: Callable[[TestItem, float], float | None]
    # The kind's own site-file keys.
    options: type[KindOptions] = KindOptions
    # Names people read for the headline metric names this kind uses ("cer" -> "CER").
    metric_labels: Mapping[str, str] = field(default_factory=dict)
    # Where the headline sits in the scores when not under its own name
    # (scoring's ASR report names a character error rate "wer").
    score_key: Callable[[TaskConfig], str] | None = None
    # Higher is better for the headline metric (False for error rates).
    higher_is_better: bool = True
    # The secondary figures a leaderboard line shows beside the headline, from the scores.
    detail: Callable[[Mapping[str, Any]], str] = _no_detail
    # Checks an output needs its item for (e.g. one NER tag per token sent).
    check_item: Callable[[TestItem, Mapping[str, Any]], str | None] | None = None
    # The largest answer a system may send for one item (the task's max_output_bytes
    # overrides it); larger is invalid_output, so no system can flood the controller.
    max_output_bytes: int = 1 << 20
    # Files the system writes per item: input key -> suffix (tts: {"audio_out": ".wav"}).
    # The item input carries a path for each; the system answers with it.
    output_files: Mapping[str, str] = field(default_factory=dict)
    # Checks such a file and keeps it in the run directory:
    # (item, output, the file, media dir, anonymous id) -> (output to record, problem).
    keep_output: (
        Callable[
            [TestItem, Mapping[str, Any], OutputFile, Path, str], tuple[dict[str, Any], str | None]
        ]
        | None
    ) = None
    # The kind's own report figures beside the speed distribution every kind gets.
    plots: Plots | None = None
    # The `onsite score` families this kind brings (name -> family).
    score_families: Mapping[str, ScoreFamily] = field(default_factory=dict)
    # One line for the docs and the CLI: what the kind evaluates.
    summary: str = ""
    # The `onsite export --format` names this kind's outputs can be written in
    # (harness/export: the writers; docs/formats.md: the files). Every kind has jsonl.
    formats: tuple[str, ...] = ("jsonl",)

    def load_testset(self, root: Path, cfg: TaskConfig) -> TestSet:
        """The task's test set (``load``), read with the cycle collector held off: a set
        of 100,000 items is that many objects that never form a cycle."""
        with cycle_collector_held():
            return self.load(root, cfg)

    @property
    def speed_unit(self) -> str:
        """The speed unit's name, as the journal and the leaderboard JSON carry it."""
        return self.unit.name

    def metric_label(self, metric: str) -> str:
        """The name people read for one of this kind's headline metrics."""
        return self.metric_labels.get(metric, metric)

    def headline(self, task: TaskConfig, scores: Mapping[str, Any]) -> Headline:
        """The headline figure of a job's scores."""
        name = self.metric(task)
        key = self.score_key(task) if self.score_key is not None else name
        return Headline(name, self.metric_label(name), _find(scores, key))

    def evaluate(
        self, testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
    ) -> Scored:
        """Score a job: every figure, its headline and the secondary line."""
        figures = self.score(testset, task, outputs, seconds)
        return Scored(figures, self.headline(task, figures), self.detail(figures))


def pct(value: Any) -> str:
    """A fraction as a percentage with one decimal, "-" when there is none."""
    return f"{100 * value:.1f}%" if isinstance(value, int | float) else "-"


def overall(scores: Mapping[str, Any]) -> Mapping[str, Any]:
    """scores["overall"] when the scorer nests its totals there, else scores."""
    inner = scores.get("overall")
    return inner if isinstance(inner, Mapping) else scores


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm", ".webp")


def real_time_factor(item: TestItem, seconds: float) -> float | None:
    """Seconds of processing per second of audio."""
    return seconds / item.duration if item.duration else None


def units_per_second(item: TestItem, seconds: float) -> float | None:
    """The item's units (characters, samples) per second of processing."""
    return (item.units or 1.0) / seconds if seconds > 0 else None
