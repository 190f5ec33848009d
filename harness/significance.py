"""Which differences between a run's systems are real: intervals and tied ranks.

A task's systems are compared on their per-item statistics (each kind's
``statistics``; harness/kinds/base.py), read from the run as the leaderboard reads
it: the completed items, a failed item counting with no output. The resampling is
scoring/resampling.py's (paired bootstrap, approximate randomization, sacrebleu's
seed). `onsite compare RUN --task T` prints one task's comparison
(:func:`run_systems`); `onsite report` and the HTML report give every row its 95%
interval and its rank range (:func:`with_intervals`), with the settings that
reproduce them (:class:`IntervalSettings`). Where a reference tool (sacrebleu,
sc_stats) would print another p-value or verdict than onsite's correct one, the pair
carries the tool's value and :func:`tool_notes` says so, naming the flag that
reproduces the tool. Nothing here names a kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.kinds.base import AdditiveStatistics, TaskConfig
    from harness.leaderboard import LeaderboardRow
    from harness.site import Site
    from harness.store.directory import RunState
    from harness.store.run_model import RunModel
    from harness.testsets import TestSet
    from scoring.resampling import Additive, PairResult, System, ToolValue
    from scoring.sctk_stats import PairTest


@dataclass(frozen=True)
class Compared:
    """What is compared: the task (or family), its metric and each system's statistics."""

    task: str
    metric: str
    higher_is_better: bool
    systems: Mapping[str, System]
    aggregate: Callable[[Sequence[Any]], float | None]
    notes: tuple[str, ...] = ()
    # Each system's sclite alignments (scoring.sctk_stats.UnitErrors) for the error-rate
    # tests, read when one is asked; None where there are none (not an alignment metric).
    units: Callable[[], Mapping[str, Sequence[Any]]] | None = None


@dataclass(frozen=True)
class IntervalSettings:
    """How a report's intervals and ranks were made, enough to reproduce them with
    `onsite compare RUN --task T --test TEST --samples N --seed S --alpha A`."""

    test: str = "bootstrap"
    samples: int = 1000
    seed: int = 12345
    alpha: float = 0.05

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the interval's definition."""
        return {
            "interval": "95% paired-bootstrap percentile interval",
            "bootstrap_samples": self.samples,
            "rank_test": self.test,
            "rank_samples": self.samples,
            "seed": self.seed,
            "alpha": self.alpha,
            "reproduce": f"onsite compare RUN --task TASK --test {self.test} "
            f"--samples {self.samples} --seed {self.seed} --alpha {self.alpha}",
        }


def _problem(where: Path | str, key: str, message: str, fix: str) -> Exception:
    from harness.errors import InputError, Problem

    return InputError([Problem(Path(str(where)), key, message, fix)])


def item_statistics(model: RunModel, task: str, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each system's statistic of every item it completed, as the leaderboard scores it
    (a failed item with no output); an empty mapping for a system with no item."""
    return state_statistics(model.site, model.state, model.testset(task), task, names)


def state_statistics(
    site: Site, state: RunState, testset: TestSet, task: str, names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """:func:`item_statistics` from a replayed state (the console's live one too)."""
    from harness.disputes import effective_completions
    from harness.kinds.registry import task_kind
    from harness.leaderboard import scoring_inputs

    cfg = site.config.tasks[task]
    kind = task_kind(cfg.kind)
    known = {item.id for item in testset.items}
    stats: dict[str, dict[str, Any]] = {}
    for name in names:
        # As the leaderboard: each item as a dispute's decision made it count.
        done = effective_completions(state, task, name)
        records = [r for r in done.values() if r.item in known]
        attempted, outputs, seconds = scoring_inputs(testset, records)
        found = kind.item_statistics(attempted, cfg, outputs, seconds) if records else {}
        stats[name] = dict(found)
    return stats


def _as_systems(cfg: TaskConfig, chosen: Mapping[str, Sequence[Any]]) -> Mapping[str, System]:
    from harness.kinds.registry import task_kind

    additive = task_kind(cfg.kind).statistics.additive
    return additive_systems(additive, cfg, chosen) if additive is not None else chosen


def run_systems(model: RunModel, task: str, systems: Sequence[str] | None = None) -> Compared:
    """The chosen systems of a run's task (default: all on it) on the items every one of
    them completed, each with its item statistics; errors name the key and the fix."""
    from harness.kinds.registry import task_kind

    where = model.where
    tasks = list(model.site.config.tasks)
    if task not in tasks:
        raise _problem(where, "--task", f"no task {task!r}", f"use one of: {', '.join(tasks)}")
    cfg = model.site.config.tasks[task]
    on_task = [s for s, c in model.site.config.systems.items() if task in c.tasks]
    names = on_task
    if systems:
        names = list(dict.fromkeys(systems))
        unknown = [n for n in names if n not in on_task]
        if unknown:
            raise _problem(
                where,
                "--systems",
                f"no system {unknown[0]!r} on task {task!r}",
                f"use some of: {', '.join(on_task)}",
            )
    if len(names) < 2:
        raise _problem(
            where,
            "--systems",
            f"task {task!r}: only {', '.join(names) or 'no system'} to compare",
            "compare two or more systems"
            + (f" (the task has: {', '.join(on_task)})" if len(on_task) > len(names) else ""),
        )
    kind = task_kind(cfg.kind)
    stats = item_statistics(model, task, names)
    testset = model.testset(task)
    common = [i.id for i in testset.items if all(i.id in stats[n] for n in names)]
    if not common:
        raise _problem(
            where,
            "--task",
            f"task {task!r}: no item completed by every one of {', '.join(names)}",
            "compare systems that ran the task (--systems)",
        )
    notes = tuple(
        f"{n}: {len(stats[n]) - len(common)} completed items left out (not completed by "
        f"every compared system)"
        for n in names
        if len(stats[n]) > len(common)
    )

    def aggregate(items: Sequence[Any]) -> float | None:
        return kind.aggregate(cfg, items)

    def units() -> Mapping[str, Sequence[Any]]:
        return _run_units(model, task, names, set(common))

    chosen = {n: [stats[n][i] for i in common] for n in names}
    return Compared(
        task=task,
        metric=kind.metric(cfg),
        higher_is_better=kind.higher_is_better,
        systems=_as_systems(cfg, chosen),
        aggregate=aggregate,
        notes=notes,
        # The error-rate tests read sclite's alignments of the files the asr family reads.
        units=units if "asr" in kind.from_run else None,
    )


def with_intervals(
    model: RunModel, rows: Sequence[LeaderboardRow], settings: IntervalSettings | None = None
) -> list[LeaderboardRow]:
    """The rows with their 95% intervals and rank ranges (``ci_low``, ``ci_high``,
    ``rank_low``, ``rank_high``), task by task.

    A row's interval is the bootstrap's on the items its system completed, around its
    headline. Its rank range comes from ``settings.test`` between every pair of the
    task's systems on the items both completed... all of them completed: 1 + the
    systems significantly better, to N - the systems significantly worse, N being the
    systems with a score. A row with no score has neither.
    """
    from harness.kinds.registry import task_kind
    from scoring.resampling import compare, interval

    settings = settings or IntervalSettings()
    out = list(rows)
    for task in dict.fromkeys(r.task for r in rows):
        at = [k for k, r in enumerate(out) if r.task == task and r.score is not None]
        if not at:
            continue
        names = [out[k].system for k in at]
        cfg = model.site.config.tasks[task]
        kind = task_kind(cfg.kind)

        def aggregate(items: Sequence[Any], cfg: Any = cfg, kind: Any = kind) -> float | None:
            return kind.aggregate(cfg, items)

        stats = item_statistics(model, task, names)
        order = [i.id for i in model.testset(task).items]
        common = [i for i in order if all(i in stats[n] for n in names)]
        ranks = {n: (1, 1) for n in names}
        intervals: dict[str, tuple[float, float] | None] = {}
        if len(names) > 1 and common:
            chosen = {n: [stats[n][i] for i in common] for n in names}
            result = compare(
                _as_systems(cfg, chosen),
                aggregate,
                tests=[settings.test],
                samples={settings.test: settings.samples, "bootstrap": settings.samples},
                seed=settings.seed,
                alpha=settings.alpha,
                higher_is_better=kind.higher_is_better,
            )
            for s in result.systems:
                ranks[s.system] = (s.rank_low, s.rank_high)
                if len(stats[s.system]) == len(common) and s.ci_low is not None:
                    assert s.ci_high is not None
                    intervals[s.system] = (s.ci_low, s.ci_high)
        elif len(names) > 1:
            ranks = {n: (1, len(names)) for n in names}  # no common item: nothing separates
        for name in names:
            if name in intervals:
                continue
            mine = {name: [stats[name][i] for i in order if i in stats[name]]}
            intervals[name] = interval(
                _as_systems(cfg, mine)[name], aggregate, settings.samples, settings.seed
            )
        for k in at:
            row = out[k]
            low, high = intervals.get(row.system) or (None, None)
            rank_low, rank_high = ranks[row.system]
            out[k] = replace(
                row,
                ci_low=_finite(low),
                ci_high=_finite(high),
                rank_low=rank_low,
                rank_high=rank_high,
            )
    return out


@dataclass(frozen=True)
class Interval:
    """One system's headline and its 95% bootstrap percentile interval."""

    metric: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    items: int
    samples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (`onsite score --ci`'s "interval")."""
        return {
            "metric": self.metric,
            "score": self.score,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "items": self.items,
            "interval": "95% bootstrap percentile interval",
            "samples": self.samples,
            "seed": self.seed,
        }


def system_interval(
    compared: Compared, system: str, samples: int = 1000, seed: int = 12345
) -> Interval:
    """One compared system's interval: its items resampled ``samples`` times."""
    from scoring.resampling import Additive, full_score, interval

    chosen = compared.systems[system]
    found = interval(chosen, compared.aggregate, samples, seed)
    low, high = found if found is not None else (None, None)
    n = int(chosen.rows.shape[0]) if isinstance(chosen, Additive) else len(chosen)
    score = full_score(chosen, compared.aggregate)
    return Interval(compared.metric, score, _finite(low), _finite(high), n, samples, seed)


def job_interval(
    model: RunModel, task: str, system: str, samples: int = 1000, seed: int = 12345
) -> Interval:
    """A run's job's headline and interval over the items it completed (the
    leaderboard's figure, resampled by the kind's item statistics)."""
    return state_interval(model.site, model.state, model.testset(task), task, system, samples, seed)


def state_interval(
    site: Site,
    state: RunState,
    testset: TestSet,
    task: str,
    system: str,
    samples: int = 1000,
    seed: int = 12345,
) -> Interval:
    """:func:`job_interval` from a replayed state (the console's live one too)."""
    from harness.kinds.registry import task_kind

    cfg = site.config.tasks[task]
    kind = task_kind(cfg.kind)
    stats = state_statistics(site, state, testset, task, [system])[system]
    order = [i.id for i in testset.items if i.id in stats]

    def aggregate(items: Sequence[Any]) -> float | None:
        return kind.aggregate(cfg, items)

    compared = Compared(
        task=task,
        metric=kind.metric(cfg),
        higher_is_better=kind.higher_is_better,
        systems=_as_systems(cfg, {system: [stats[i] for i in order]}),
        aggregate=aggregate,
    )
    return system_interval(compared, system, samples, seed)


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


# Above this many columns an additive form's rows are a sparse matrix (OCR: two per
# character of the test set, most of them 0 in any one item's row).
_DENSE_COLUMNS = 64


def additive_systems(
    additive: AdditiveStatistics, task: TaskConfig, systems: Mapping[str, Sequence[Any]]
) -> dict[str, Additive]:
    """Each system's item statistics as rows of the kind's summed numbers, one column per
    name any item of any system has (the same columns for all, so that approximate
    randomization may swap rows), scored by the kind's ``headline`` of the sums."""
    import numpy as np

    from scoring.resampling import Additive

    vectors = {n: [additive.vector(task, stat) for stat in stats] for n, stats in systems.items()}
    columns: dict[Any, int] = {}
    for rows in vectors.values():
        for row in rows:
            for key in row:
                columns.setdefault(key, len(columns))
    keys = list(columns)

    def matrix(rows: Sequence[Mapping[Any, float]]) -> Any:
        if len(keys) <= _DENSE_COLUMNS:
            dense = np.zeros((len(rows), len(keys)))
            for i, row in enumerate(rows):
                for key, value in row.items():
                    dense[i, columns[key]] = value
            return dense
        from scipy.sparse import csr_matrix

        data = [float(v) for row in rows for v in row.values()]
        cols = [columns[k] for row in rows for k in row]
        starts = np.cumsum([0, *(len(row) for row in rows)])
        return csr_matrix((data, cols, starts), shape=(len(rows), len(keys)))

    def score(sums: np.ndarray) -> float:
        value = additive.headline(task, dict(zip(keys, sums.tolist(), strict=True)))
        return math.nan if value is None else value  # no value: left out of the interval

    return {n: Additive(matrix(rows), score) for n, rows in vectors.items()}


def _run_units(
    model: RunModel, task: str, names: Sequence[str], common: set[str]
) -> dict[str, list[Any]]:
    """Each system's sclite alignments of the compared utterances, from the trn files
    `onsite score asr --run` scores (words, case folded, as sclite and sc_stats)."""
    import tempfile

    from harness.export import read_run
    from scoring.sctk_stats import unit_errors_from_trn

    out: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="onsite-compare-") as tmp:
        for name in names:
            job = read_run(model, task, name)
            directory = Path(tmp) / f"system{len(out)}"
            directory.mkdir()
            values = job.kind.from_run["asr"].args(job, directory)
            if values.get("unit", "word") != "word" or values.get("case_sensitive"):
                raise _problem(
                    model.where,
                    f"tasks.{task}",
                    "SCTK's tests here compare word error rates with case folded "
                    "(sclite's defaults); this task scores characters or keeps case",
                    "use --test bootstrap or ar for it",
                )
            units = unit_errors_from_trn(values["ref"], values["hyp"])
            out[name] = [u for u in units if u.id in common]
    return out


# --------------------------------------------------------------------------- the tools' values

# Above this many pairs with another value from the tool, a test's notes are one line.
_NOTE_PAIRS = 3
_FLAGS = {"sacrebleu": "--sacrebleu", "sc_stats": "--sc-stats"}
# Why the tool's value differs, by test (docs/significance.md).
_WHY = {
    "bootstrap": "onsite counts resampled differences equal to the observed one (>=, "
    "Noreen), sacrebleu only larger ones (>)",
    "sign": "past 20 speakers sc_stats's normal approximation takes R * 0.5 where R + 0.5 "
    "is meant (SCTK statdist.c)",
    "mapsswe": "sc_stats reads p from a normal table, z rounded down to 0.01",
}
_WHY["ar"] = _WHY["bootstrap"]
_WHY["mcnemar"] = _WHY["sign"].replace("speakers", "discordant utterances")
_WHY["wilcoxon"] = _WHY["mapsswe"]
_SIGN_NAME = (
    "sc_stats names the system with the lower summed per-speaker rate, onsite the one "
    "better on more speakers (what the test counts)"
)


def sc_stats_value(exact: PairTest, tool: PairTest) -> ToolValue | None:
    """sc_stats's value of a pair (a ``scoring.resampling.ToolValue``) where a user
    comparing with its report would see another p-value (at its printed precision,
    ``%.3f`` or ``<0.001``) or another verdict than onsite's exact one; None where it
    agrees. ``exact`` and ``tool``: the pair's ``scoring.sctk_stats.PairTest`` in the
    two modes."""
    from scoring.resampling import ToolValue
    from scoring.sctk_stats import p_text

    if p_text(exact.p) == p_text(tool.p) and exact.better == tool.better:
        return None
    return ToolValue("sc_stats", tool.p, tool.better, tool.better is not None)


def _verdict(better: str | None, significant: bool = False) -> str:
    if better is not None:
        return f"{better} better"
    return "significant, of equal scores" if significant else "no significant difference"


def _shown(tool: str, p: float) -> str:
    from scoring.sctk_stats import p_text

    # sc_stats prints "%.3f" or "<0.001"; sacrebleu's p is a count over samples + 1.
    shown = p_text(p) if tool == "sc_stats" else f"{p:.4f}"
    return f"p {shown[0]} {shown[1:]}" if shown.startswith("<") else f"p = {shown}"


def _renames(pair: PairResult) -> bool:
    """A sign test where both name a better system, not the same one."""
    tool = pair.tool
    return (
        pair.test == "sign"
        and tool is not None
        and pair.better is not None
        and tool.better is not None
        and tool.better != pair.better
    )


def _pair_note(pair: PairResult) -> str:
    tool = pair.tool
    assert tool is not None
    why = _WHY[pair.test]
    if _renames(pair):
        from scoring.sctk_stats import p_text

        why = _SIGN_NAME if p_text(pair.p) == p_text(tool.p) else f"{_SIGN_NAME}; {why}"
    theirs = f"{_shown(tool.tool, tool.p)} ({_verdict(tool.better, tool.significant)})"
    return (
        f"{pair.test}, {pair.a} vs {pair.b}: p = {pair.p:.4f} ({_verdict(pair.better)}); "
        f"{tool.tool} would give {theirs}: {why}; {_FLAGS[tool.tool]} reproduces {tool.tool}"
    )


def _test_note(test: str, pairs: Sequence[PairResult], of: int) -> str:
    values = {id(p): p.tool for p in pairs if p.tool is not None}
    tool = next(iter(values.values())).tool
    # The example: the pair whose p-value moves most.
    worst = max(pairs, key=lambda p: abs(p.p - values[id(p)].p))
    changed = sum(1 for p in pairs if p.better != values[id(p)].better)
    verdicts = f"{changed} verdict{' changes' if changed == 1 else 's change'}"
    renamed = sum(1 for p in pairs if _renames(p))
    also = f"; on {renamed} it names the other system ({_SIGN_NAME})" if renamed else ""
    return (
        f"{test}: on {len(pairs)} of {of} pairs {tool} would give another p-value or "
        f"verdict ({verdicts}): {_WHY[test]}{also}; e.g. {worst.a} vs "
        f"{worst.b}: p = {worst.p:.4f} here, {_shown(tool, values[id(worst)].p)} in {tool}; "
        f"{_FLAGS[tool]} reproduces {tool}"
    )


def tool_notes(pairs: Sequence[PairResult]) -> list[str]:
    """One line per pair whose reference tool (sacrebleu, sc_stats) would give another
    p-value or verdict than onsite's (a ``scoring.resampling.PairResult`` with a
    ``tool``), naming the tool's value, why, and the flag that reproduces it; one line
    per test when more than a few of its pairs differ."""
    out: list[str] = []
    for test in dict.fromkeys(p.test for p in pairs):
        of_test = [p for p in pairs if p.test == test]
        differ = [p for p in of_test if p.tool is not None]
        if len(differ) > _NOTE_PAIRS:
            out.append(_test_note(test, differ, len(of_test)))
        else:
            out.extend(_pair_note(p) for p in differ)
    return out
