"""Paired resampling tests between systems over per-item statistics, as sacrebleu does them.

Written once for every metric: a system is its per-item statistics (one per item,
the same items in the same order for every system) and the metric is an
``aggregate`` of any sequence of them (BLEU from summed n-gram counts, WER from
summed errors and words, MAP from per-topic AP). Two tests, with sacrebleu 2.x's
conventions (``sacrebleu/significance.py``), so that the same seed and the same
number of samples give sacrebleu's p-values:

* paired bootstrap resampling (Koehn 2004, sacrebleu ``--paired-bs``): one
  matrix of resampled item indices, ``numpy.random.default_rng(seed).choice(n,
  size=(samples, n))``, shared by every system; the p-value of a pair is
  ``(c + 1) / (samples + 1)`` where ``c`` counts the resamples whose centred
  absolute difference ``|b* - a*| - mean|b* - a*|`` reaches the observed
  ``|b - a|`` (sacrebleu: exceeds it; ``strict=True``);
* paired approximate randomization (Riezler and Maxwell 2005, sacrebleu
  ``--paired-ar``): ``default_rng(seed).integers(2, size=(samples, n))`` says, per
  trial and item, whether the two systems' statistics of that item are swapped;
  ``p = (c + 1) / (samples + 1)`` with ``c`` the trials whose ``|a' - b'|``
  reaches the observed ``|a - b|`` (sacrebleu: exceeds it; ``strict=True``).

Counting ties is Noreen's definition and the correct one: two identical systems
then get p = 1, where sacrebleu's strict count gives p = 1 / (samples + 1). The two
differ only where a resampled difference equals the observed one to the last bit.

The 95% interval of a system is sacrebleu's percentile interval of its bootstrap
scores: the sorted scores' entries ``samples // 40`` and ``samples - samples // 40
- 1`` (sacrebleu prints it as the bootstrap mean plus or minus half its width).

A metric that is a function of summed numeric statistics (BLEU, WER, F) may be
given as an :class:`Additive` (rows of numbers and a score of their column sums);
it is resampled with matrix products instead of one aggregate call per sample, to
the same values. The rows may be a scipy sparse matrix when each item fills few of
many columns (OCR's samples and hits per character); the products are taken a block
of resamples at a time so that memory stays bounded whatever the number of items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_SAMPLES",
    "DEFAULT_SEED",
    "TESTS",
    "Additive",
    "Comparison",
    "PairResult",
    "SystemResult",
    "ToolValue",
    "bootstrap_indices",
    "compare",
    "full_score",
    "percentile_interval",
    "rank_ranges",
    "resampled_scores",
    "weighted_sums",
    "swap_masks",
]

DEFAULT_SEED = 12345
"""sacrebleu's default seed (its ``SACREBLEU_SEED`` environment variable's default)."""

DEFAULT_SAMPLES: Mapping[str, int] = {"bootstrap": 1000, "ar": 10000}
"""sacrebleu's defaults: 1,000 bootstrap resamples, 10,000 randomization trials."""

TESTS = ("bootstrap", "ar")

Aggregate = Callable[[Sequence[Any]], "float | None"]


@dataclass(frozen=True)
class Additive:
    """A metric of summed statistics: one row of numbers per item and the score of a sum.

    ``score(rows.sum(axis=0))`` must equal the aggregate of those items; any
    resample is then a matrix product (counts of each item times rows).
    """

    rows: Any  # (items, fields) numbers that add up: a numpy array or a scipy sparse matrix
    score: Callable[[np.ndarray], float]


System = Sequence[Any] | Additive


@dataclass(frozen=True)
class SystemResult:
    """One system's score on the compared items, its 95% interval and its rank range."""

    system: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    rank_low: int
    rank_high: int


@dataclass(frozen=True)
class ToolValue:
    """What the reference tool (``tool``: "sacrebleu", "sc_stats") would give a pair
    where onsite's correct value differs: its p-value, its verdict at alpha (the better
    system) and whether it calls the difference significant (sacrebleu does so for two
    systems of equal scores, naming neither better)."""

    tool: str
    p: float
    better: str | None
    significant: bool


@dataclass(frozen=True)
class PairResult:
    """One test of one pair: the observed difference ``a - b``, the p-value, and the
    significantly better system at alpha (None when the test does not separate them).

    ``tool``: the reference tool's value where it differs from this one (sacrebleu's
    strict count where resampled differences equal to the observed one were counted),
    None where the tool agrees.
    """

    a: str
    b: str
    test: str
    statistic: float
    p: float
    better: str | None
    tool: ToolValue | None = None


@dataclass(frozen=True)
class Comparison:
    """Every system's interval and rank range and every pair's tests."""

    seed: int
    samples: Mapping[str, int]
    items: int
    systems: tuple[SystemResult, ...]
    pairs: tuple[PairResult, ...]


def bootstrap_indices(n_items: int, samples: int, seed: int) -> np.ndarray:
    """The resampled item indices, (samples, n_items): sacrebleu's draw for its seed."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_items, size=(samples, n_items), replace=True)


def swap_masks(n_items: int, samples: int, seed: int) -> np.ndarray:
    """Per trial and item, True where the first system keeps its own statistic
    (sacrebleu's ``pos_sel``); False swaps the two systems' statistics of that item."""
    rng = np.random.default_rng(seed)
    return rng.integers(2, size=(samples, n_items), dtype=bool)


def _number(value: float | None) -> float:
    # An aggregate may have no value for a resample (an EER without both classes).
    return math.nan if value is None else float(value)


# Resamples per block of the matrix products: about 2**22 weights (32 MB) at a time.
_BLOCK_WEIGHTS = 1 << 22


def _blocks(samples: int, n_items: int) -> range:
    # The first resample of each block; a block is max(1, 2**22 // items) resamples.
    return range(0, samples, max(1, _BLOCK_WEIGHTS // max(n_items, 1)))


def _float_rows(rows: Any) -> Any:
    if isinstance(rows, np.ndarray):
        return rows.astype(np.float64)
    return rows.astype(np.float64).tocsc()  # scipy sparse: columns for rows.T @ weights


def weighted_sums(weights: np.ndarray, rows: Any) -> np.ndarray:
    """weights (resamples, items) @ an Additive system's rows, dense or scipy sparse, in
    float64 (a subset is a row of 0/1 weights, a bootstrap resample a row of counts)."""
    return _sums(weights, _float_rows(rows))


def _sums(weights: np.ndarray, rows: Any) -> np.ndarray:
    """weights (resamples, items) @ rows (items, fields), rows dense or scipy sparse.
    Integer counts sum exactly in float64 (up to 2**53), in any order."""
    if isinstance(rows, np.ndarray):
        return weights @ rows
    return np.asarray((rows.T @ weights.T).T)


def resampled_scores(system: System, aggregate: Aggregate, indices: np.ndarray) -> np.ndarray:
    """The metric of each resample: row k of ``indices`` lists the items of resample k."""
    if isinstance(system, Additive):
        samples, n = indices.shape
        rows = _float_rows(system.rows)
        out = np.empty(samples)
        step = max(1, _BLOCK_WEIGHTS // max(n, 1))
        for start in _blocks(samples, n):
            block = indices[start : start + step]
            k = len(block)
            # How often each item is drawn in each resample; times the rows gives the sums.
            offsets = (block + (np.arange(k) * n)[:, None]).ravel()
            counts = np.bincount(offsets, minlength=k * n).reshape(k, n)
            sums = _sums(counts.astype(np.float64), rows)
            out[start : start + k] = np.array([_number(system.score(row)) for row in sums])
        return out
    stats = np.empty(len(system), dtype=object)
    stats[:] = list(system)
    return np.array([_number(aggregate(list(stats[row]))) for row in indices])


def full_score(system: System, aggregate: Aggregate) -> float | None:
    """The metric on every item once: the scorer's (and the leaderboard's) figure."""
    value: float | None
    if isinstance(system, Additive):
        n = system.rows.shape[0]
        value = _number(system.score(_sums(np.ones((1, n)), _float_rows(system.rows))[0]))
        return None if math.isnan(value) else value
    value = aggregate(list(system))
    return None if value is None else float(value)


def _swapped_scores(
    a: System, b: System, aggregate: Aggregate, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The two pseudo-systems' scores of every randomization trial."""
    if isinstance(a, Additive) and isinstance(b, Additive):
        rows_a, rows_b = _float_rows(a.rows), _float_rows(b.rows)
        samples, n = keep.shape
        first_s, second_s = np.empty(samples), np.empty(samples)
        step = max(1, _BLOCK_WEIGHTS // max(n, 1))
        for start in _blocks(samples, n):
            kept = keep[start : start + step]
            keep_f, swap_f = kept.astype(np.float64), (~kept).astype(np.float64)
            # Exact for integer counts: a + b of two exact sums is the sum of the union.
            first = _sums(keep_f, rows_a) + _sums(swap_f, rows_b)
            second = _sums(swap_f, rows_a) + _sums(keep_f, rows_b)
            first_s[start : start + len(kept)] = np.array([_number(a.score(r)) for r in first])
            second_s[start : start + len(kept)] = np.array([_number(a.score(r)) for r in second])
        return first_s, second_s
    if isinstance(a, Additive) or isinstance(b, Additive):
        raise TypeError("compare two Additive systems or two sequences, not one of each")
    objs_a = np.empty(len(a), dtype=object)
    objs_a[:] = list(a)
    objs_b = np.empty(len(b), dtype=object)
    objs_b[:] = list(b)
    first_g = [_number(aggregate(list(np.where(row, objs_a, objs_b)))) for row in keep]
    second_g = [_number(aggregate(list(np.where(row, objs_b, objs_a)))) for row in keep]
    return np.array(first_g), np.array(second_g)


def _p_value(null: np.ndarray, observed: float, strict: bool = False) -> float:
    # +1 on both sides (Noreen; multeval; sacrebleu) so that the chance of a false
    # rejection is at most alpha even with few samples. A resampled difference equal
    # to the observed one is as extreme as it, so it counts (Noreen's ">="); sacrebleu
    # counts only strictly greater ones (``strict``), which gives two identical systems
    # p = 1 / (samples + 1), "significant", instead of 1.
    extreme = null > observed if strict else null >= observed
    return (int(np.sum(extreme)) + 1) / (len(null) + 1)


def bootstrap_p(
    score_a: float,
    score_b: float,
    boot_a: np.ndarray,
    boot_b: np.ndarray,
    strict: bool = False,
) -> float:
    """The paired bootstrap p-value of ``|a - b|`` from the two systems' scores on the
    same resamples: the centred resampled differences at least as large (``strict``:
    larger, as sacrebleu counts them)."""
    diffs = np.abs(boot_b - boot_a)
    return _p_value(diffs - np.nanmean(diffs), abs(score_a - score_b), strict)


def ar_p(
    score_a: float, score_b: float, first: np.ndarray, second: np.ndarray, strict: bool = False
) -> float:
    """The approximate randomization p-value of ``|a - b|`` from the trials'
    pseudo-system scores (``strict``: only larger differences count, as sacrebleu's)."""
    return _p_value(np.abs(first - second), abs(score_a - score_b), strict)


def percentile_interval(scores: np.ndarray) -> tuple[float, float] | None:
    """sacrebleu's 95% percentile interval of bootstrap scores (entries n//40 and
    n - n//40 - 1 of the sorted scores); resamples with no value are left out."""
    kept = np.sort(scores[~np.isnan(scores)])
    if not len(kept):
        return None
    low = len(kept) // 40
    return float(kept[low]), float(kept[len(kept) - low - 1])


def _better(
    a: str,
    b: str,
    score_a: float | None,
    score_b: float | None,
    p: float,
    alpha: float,
    higher_is_better: bool,
) -> str | None:
    if score_a is None or score_b is None or p >= alpha or score_a == score_b:
        return None
    return a if (score_a > score_b) == higher_is_better else b


def rank_ranges(names: Sequence[str], pairs: Sequence[PairResult]) -> dict[str, tuple[int, int]]:
    """Each system's rank range from the pairs' verdicts (WMT's ranking by clusters).

    A system ranks from 1 + the systems significantly better than it to N - the
    systems significantly worse: "1-2" for two systems no test separates, "1-1"
    for one better than every other. A pair counts as separated when any of the
    given tests separates it.
    """
    beaten_by: dict[str, set[str]] = {n: set() for n in names}
    beats: dict[str, set[str]] = {n: set() for n in names}
    for pair in pairs:
        if pair.better is None:
            continue
        loser = pair.b if pair.better == pair.a else pair.a
        beaten_by[loser].add(pair.better)
        beats[pair.better].add(loser)
    n = len(names)
    return {s: (1 + len(beaten_by[s]), n - len(beats[s])) for s in names}


def compare(
    systems: Mapping[str, System],
    aggregate: Aggregate,
    tests: Sequence[str] = ("bootstrap",),
    samples: Mapping[str, int] | None = None,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
    higher_is_better: bool = True,
    strict: bool = False,
) -> Comparison:
    """Every system's interval and every pair's tests, all on the same items.

    ``systems`` maps a name to its per-item statistics (or an :class:`Additive`),
    item i of every system being the same item. The intervals come from the
    bootstrap resamples (drawn whichever tests are asked, with
    ``samples["bootstrap"]``); each test of ``tests`` is run on every pair in the
    order given, the first system being the first of each pair as sacrebleu's
    baseline is. Ranks come from the pairs' verdicts (:func:`rank_ranges`).
    ``strict`` counts only resampled differences larger than the observed one, as
    sacrebleu does (its p-values exactly); by default equal ones count too, and a
    pair where that changed its p-value carries sacrebleu's in ``tool``.
    """
    names = list(systems)
    if len(names) < 2:
        raise ValueError(f"compare needs two or more systems, got {len(names)}")
    unknown = [t for t in tests if t not in TESTS]
    if unknown:
        raise ValueError(f"unknown test(s) {unknown}; choose from {list(TESTS)}")
    counts = {_n_items(s) for s in systems.values()}
    if len(counts) != 1:
        raise ValueError(f"systems have different numbers of items: {sorted(counts)}")
    n = counts.pop()
    if n == 0:
        raise ValueError("no item to compare the systems on")
    sizes = {**DEFAULT_SAMPLES, **(samples or {})}
    used = {"bootstrap": sizes["bootstrap"], **{t: sizes[t] for t in tests}}
    for test, size in used.items():
        if size < 1:
            raise ValueError(f"{test} needs at least one sample, got {size}")

    full = {s: full_score(systems[s], aggregate) for s in names}
    indices = bootstrap_indices(n, used["bootstrap"], seed)
    boot = {s: resampled_scores(systems[s], aggregate, indices) for s in names}
    keep = swap_masks(n, used["ar"], seed) if "ar" in tests else None

    pairs: list[PairResult] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            score_a, score_b = full[a], full[b]
            for test in tests:
                # sacrebleu's strict count beside the default one: they differ only where
                # a resampled difference equals the observed one (a tie).
                p = p_strict = 1.0
                if score_a is None or score_b is None:
                    pass
                elif test == "bootstrap":
                    p = bootstrap_p(score_a, score_b, boot[a], boot[b], strict)
                    p_strict = bootstrap_p(score_a, score_b, boot[a], boot[b], True)
                else:
                    assert keep is not None
                    first, second = _swapped_scores(systems[a], systems[b], aggregate, keep)
                    p = ar_p(score_a, score_b, first, second, strict)
                    p_strict = ar_p(score_a, score_b, first, second, True)
                statistic = (
                    (score_a - score_b) if score_a is not None and score_b is not None else math.nan
                )
                better = _better(a, b, score_a, score_b, p, alpha, higher_is_better)
                tool = None
                if p_strict != p:
                    verdict = _better(a, b, score_a, score_b, p_strict, alpha, higher_is_better)
                    tool = ToolValue("sacrebleu", p_strict, verdict, p_strict < alpha)
                pairs.append(PairResult(a, b, test, statistic, p, better, tool))

    ranks = rank_ranges(names, pairs)
    results = []
    for s in names:
        interval = percentile_interval(boot[s])
        low, high = interval if interval is not None else (None, None)
        results.append(SystemResult(s, full[s], low, high, *ranks[s]))
    return Comparison(seed, used, n, tuple(results), tuple(pairs))


def interval(
    system: System,
    aggregate: Aggregate,
    samples: int = DEFAULT_SAMPLES["bootstrap"],
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """One system's 95% percentile interval from ``samples`` bootstrap resamples of its
    items: the interval :func:`compare` gives it among systems on the same items (the
    resampled indices depend only on the item count, the samples and the seed)."""
    n = _n_items(system)
    if n == 0 or samples < 1:
        return None
    return percentile_interval(
        resampled_scores(system, aggregate, bootstrap_indices(n, samples, seed))
    )


def _n_items(system: System) -> int:
    return int(system.rows.shape[0]) if isinstance(system, Additive) else len(system)
