"""Meta-evaluation: how far metrics and test sets can be trusted.

What the HTRDP machine translation evaluations (survey Tables 35-39), the
CESTA campaign and Yao et al. ("Performance Analysis and Visualization of
Machine Translation Evaluation", 2006) computed:

* Pearson and Spearman correlation between automatic metrics and human
  judgements, at system level (one score per system) or segment level (one
  per system and sentence), and between metrics (Tables 36-38);
* correlation of each metric with sentence length (Table 35);
* correlation of character-based and word-based scores (Table 39);
* a test set's difficulty (X_mean - L) / (H - L), read from the best end for an
  error rate ((H - X_mean) / (H - L)), and discriminability
  (X_best - X_worst) / (H - L), H and L the highest and lowest possible scores;
* how a score settles as the test set grows (seeded random subsets), the
  corpus metric pooled from per-item statistics where they are given (BLEU
  from a subset's summed n-gram counts, through scoring/resampling.py);
* the proportion of system pairs a metric's paired test (bootstrap or
  approximate randomization, scoring/resampling.py) separates at alpha;
* agglomerative clustering of systems on normalised multi-metric vectors,
  drawn as a dendrogram.

Everything is computed here with numpy (no scipy); the tests cross-check
against scipy.stats and scipy.cluster.hierarchy. Scores are keyed (by system
name, or by (system, segment) pairs) and two score sets must have the same
keys, so a misaligned pair of files is an error rather than a silent shift.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from .resampling import (
    DEFAULT_SEED,
    TESTS,
    Additive,
    Aggregate,
    Comparison,
    System,
    compare,
    full_score,
    resampled_scores,
    weighted_sums,
)

if TYPE_CHECKING:
    from .plots import PlotFiles

__all__ = [
    "Correlation",
    "CorrelationMatrix",
    "Dendrogram",
    "Separation",
    "SubsampleCurve",
    "TestSetProfile",
    "cluster_systems",
    "correlate",
    "correlate_keyed",
    "correlation_matrix",
    "difficulty",
    "discriminability",
    "full_score",
    "length_correlations",
    "linkage",
    "mean_of_scores",
    "n_items",
    "metric_human_correlations",
    "normalize_metrics",
    "pair_separation",
    "pearson",
    "plot_dendrogram",
    "plot_subsample_curves",
    "pooled_subsample_curve",
    "rankdata",
    "spearman",
    "subsample_curve",
    "subset_indices",
    "subset_scores",
    "test_set_profile",
    "unit_correlation",
]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
Linkage = Literal["average", "single", "complete"]


def _json_float(x: float) -> float | None:
    # NaN (an undefined correlation) is not valid JSON; report it as null.
    return None if math.isnan(x) else x


# --- correlation ----------------------------------------------------------------


def _vector(values: Iterable[float], what: str) -> np.ndarray:
    arr = np.asarray(list(values), dtype=float)
    if not np.isfinite(arr).all():
        raise ValueError(f"{what}: values must be finite")
    return arr


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r (survey eq. 21); NaN if either side is constant."""
    a, b = _vector(x, "x"), _vector(y, "y")
    if a.size != b.size:
        raise ValueError(f"{a.size} x values but {b.size} y values")
    if a.size < 2:
        raise ValueError("need at least two pairs to correlate")
    da, db = a - a.mean(), b - b.mean()
    den = math.sqrt(float(da @ da) * float(db @ db))
    if den == 0.0:
        return math.nan
    # Clip: rounding can push a perfect correlation a hair past 1.
    return max(-1.0, min(1.0, float(da @ db) / den))


def rankdata(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their ranks (as scipy's 'average')."""
    a = _vector(values, "values")
    order = np.argsort(a, kind="stable")
    ranks = np.empty(a.size, dtype=float)
    sorted_a = a[order]
    i = 0
    while i < a.size:
        j = i
        while j + 1 < a.size and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the tie-averaged ranks; NaN if a side is constant.

    With ties this differs from the textbook 1 - 6 sum D^2 / (n (n^2 - 1)),
    which is exact only without ties; scipy.stats.spearmanr does the same.
    """
    return pearson(rankdata(x), rankdata(y))


@dataclass(frozen=True)
class Correlation:
    """Pearson and Spearman correlation of two aligned score lists."""

    a: str
    b: str
    level: str
    n: int
    pearson: float
    spearman: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (an undefined coefficient is null)."""
        return {
            "a": self.a,
            "b": self.b,
            "level": self.level,
            "n": self.n,
            "pearson": _json_float(self.pearson),
            "spearman": _json_float(self.spearman),
        }


def correlate(
    x: Sequence[float], y: Sequence[float], a: str = "x", b: str = "y", level: str = ""
) -> Correlation:
    """Both coefficients of two equally long score lists."""
    return Correlation(a, b, level, len(x), pearson(x, y), spearman(x, y))


def _align(a: Mapping[K, float], b: Mapping[K, float], na: str, nb: str) -> list[K]:
    only_a = [k for k in a if k not in b]
    only_b = [k for k in b if k not in a]
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} keys only in {na} (e.g. {only_a[0]!r})")
        if only_b:
            parts.append(f"{len(only_b)} keys only in {nb} (e.g. {only_b[0]!r})")
        raise ValueError("scores do not line up: " + "; ".join(parts))
    return list(a)


def correlate_keyed(
    a: Mapping[K, float], b: Mapping[K, float], name_a: str, name_b: str, level: str = ""
) -> Correlation:
    """Correlate two score sets keyed alike (system, or (system, segment)).

    `level` is a label ("system", "segment") carried into the result.
    """
    keys = _align(a, b, name_a, name_b)
    return correlate([a[k] for k in keys], [b[k] for k in keys], name_a, name_b, level)


def metric_human_correlations(
    metrics: Mapping[str, Mapping[K, float]],
    human: Mapping[str, Mapping[K, float]],
    level: str = "system",
) -> list[Correlation]:
    """Every automatic metric against every human judgement (survey Table 37)."""
    return [
        correlate_keyed(ms, hs, m, h, level) for h, hs in human.items() for m, ms in metrics.items()
    ]


@dataclass(frozen=True)
class CorrelationMatrix:
    """Pairwise correlations of several metrics (survey Table 36)."""

    names: tuple[str, ...]
    level: str
    n: int
    pearson: np.ndarray
    spearman: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested lists (row/column order = `names`, NaN as null)."""

        def rows(m: np.ndarray) -> list[list[float | None]]:
            return [[_json_float(float(v)) for v in row] for row in m]

        return {
            "names": list(self.names),
            "level": self.level,
            "n": self.n,
            "pearson": rows(self.pearson),
            "spearman": rows(self.spearman),
        }


def correlation_matrix(
    metrics: Mapping[str, Mapping[K, float]], level: str = "system"
) -> CorrelationMatrix:
    """Pearson and Spearman matrices of all metric pairs, keys aligned."""
    names = list(metrics)
    if len(names) < 2:
        raise ValueError("need at least two metrics")
    first = metrics[names[0]]
    for name in names[1:]:
        _align(first, metrics[name], names[0], name)
    keys = list(first)
    k = len(names)
    p = np.eye(k)
    s = np.eye(k)
    cols = [[metrics[m][key] for key in keys] for m in names]
    for i in range(k):
        for j in range(i + 1, k):
            p[i, j] = p[j, i] = pearson(cols[i], cols[j])
            s[i, j] = s[j, i] = spearman(cols[i], cols[j])
    return CorrelationMatrix(tuple(names), level, len(keys), p, s)


def length_correlations(
    metrics: Mapping[str, Mapping[K, float]], lengths: Mapping[K, float]
) -> dict[str, Correlation]:
    """Each metric's segment scores against segment length (survey Table 35).

    `lengths` is keyed like the scores (e.g. (system, segment) -> source
    length in characters or words).
    """
    return {
        m: correlate_keyed(scores, lengths, m, "length", "segment") for m, scores in metrics.items()
    }


def unit_correlation(
    char_scores: Mapping[K, float], word_scores: Mapping[K, float], metric: str = "metric"
) -> Correlation:
    """Character-based against word-based scores of one metric (survey Table 39)."""
    return correlate_keyed(
        char_scores, word_scores, f"{metric} (characters)", f"{metric} (words)", "system"
    )


# --- difficulty and discriminability -----------------------------------------


def _bounds(high: float, low: float) -> float:
    if not (math.isfinite(high) and math.isfinite(low)) or high <= low:
        raise ValueError(f"highest possible score {high!r} must exceed the lowest {low!r}")
    return high - low


def difficulty(
    scores: Iterable[float], high: float, low: float, higher_is_better: bool = True
) -> float:
    """(X_mean - L) / (H - L): the systems' mean score on the 0..1 span of the scale.

    Despite the name, higher means easier; about 0.5 discriminates best. For an error
    rate (``higher_is_better=False``) the scale is read from its best end, (H - X_mean) /
    (H - L), so that the figure means the same: mWER 0.70 on 0..1 is 0.30, a hard set.
    """
    x = _vector(scores, "scores")
    if x.size == 0:
        raise ValueError("no scores")
    span = _bounds(high, low)
    mean = float(x.mean())
    return (mean - low) / span if higher_is_better else (high - mean) / span


def discriminability(scores: Iterable[float], high: float, low: float) -> float:
    """(X_best - X_worst) / (H - L): the spread of system scores on the scale's span."""
    x = _vector(scores, "scores")
    if x.size == 0:
        raise ValueError("no scores")
    # max - min: the same for "higher is better" and for error rates.
    return (float(x.max()) - float(x.min())) / _bounds(high, low)


@dataclass(frozen=True)
class TestSetProfile:
    """Difficulty and discriminability of a test set from its system scores."""

    __test__ = False  # not a pytest test class despite the name

    systems: int
    mean: float
    best: float
    worst: float
    high: float
    low: float
    difficulty: float
    discriminability: float
    higher_is_better: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready profile (difficulty and discriminability as fractions)."""
        return {
            "systems": self.systems,
            "mean": self.mean,
            "best": self.best,
            "worst": self.worst,
            "high": self.high,
            "low": self.low,
            "difficulty": self.difficulty,
            "discriminability": self.discriminability,
            "higher_is_better": self.higher_is_better,
        }


def test_set_profile(
    scores: Mapping[str, float], high: float, low: float, higher_is_better: bool = True
) -> TestSetProfile:
    """Difficulty and discriminability of one metric's system scores (an error rate:
    ``higher_is_better=False``, so the difficulty is read from the scale's best end)."""
    values = list(scores.values())
    x = _vector(values, "scores")
    best, worst = (x.max(), x.min()) if higher_is_better else (x.min(), x.max())
    return TestSetProfile(
        systems=len(values),
        mean=float(x.mean()),
        best=float(best),
        worst=float(worst),
        high=high,
        low=low,
        difficulty=difficulty(values, high, low, higher_is_better),
        discriminability=discriminability(values, high, low),
        higher_is_better=higher_is_better,
    )


test_set_profile.__test__ = False  # type: ignore[attr-defined]


# --- test-set size ---------------------------------------------------------------


@dataclass(frozen=True)
class SubsampleCurve:
    """A metric on random subsets of growing size: mean and spread per size."""

    sizes: tuple[int, ...]
    mean: tuple[float, ...]
    sd: tuple[float, ...]
    low: tuple[float, ...]
    """5th percentile of the subset values."""
    high: tuple[float, ...]
    """95th percentile of the subset values."""
    full: float
    """The metric on the whole test set."""
    repeats: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready curve."""
        return {
            "sizes": list(self.sizes),
            "mean": list(self.mean),
            "sd": list(self.sd),
            "low": list(self.low),
            "high": list(self.high),
            "full": self.full,
            "repeats": self.repeats,
            "seed": self.seed,
        }


def _mean_statistic(items: Sequence[Any]) -> float:
    return float(np.mean(np.asarray(items, dtype=float)))


def _check_sizes(n: int, sizes: Iterable[int], repeats: int) -> list[int]:
    if n == 0:
        raise ValueError("no items")
    if repeats < 2:
        raise ValueError("need at least 2 repeats to measure a spread")
    wanted = sorted(set(sizes))
    if not wanted or wanted[0] < 1 or wanted[-1] > n:
        raise ValueError(f"sizes must lie in 1..{n}")
    return wanted


def subset_indices(n: int, sizes: Sequence[int], repeats: int, seed: int) -> list[np.ndarray]:
    """The random subsets of each size, one (repeats, size) array of item indices per size.

    Drawn without replacement, ``numpy.random.default_rng(seed).choice(n, size,
    replace=False)`` once per subset, sizes in the order given: the draws of
    :func:`subsample_curve` and :func:`pooled_subsample_curve`, so that anyone can
    redo them by hand.
    """
    rng = np.random.default_rng(seed)
    return [
        np.array([rng.choice(n, size=size, replace=False) for _ in range(repeats)])
        for size in sizes
    ]


def _curve(
    sizes: Sequence[int], values: Sequence[np.ndarray], full: float, repeats: int, seed: int
) -> SubsampleCurve:
    # A subset whose metric is undefined (NaN) is left out of its size's figures.
    with np.errstate(all="ignore"):
        rows = [v[~np.isnan(v)] for v in values]
        return SubsampleCurve(
            tuple(sizes),
            tuple(float(v.mean()) if v.size else math.nan for v in rows),
            tuple(float(v.std(ddof=1)) if v.size > 1 else math.nan for v in rows),
            tuple(float(np.percentile(v, 5)) if v.size else math.nan for v in rows),
            tuple(float(np.percentile(v, 95)) if v.size else math.nan for v in rows),
            full,
            repeats,
            seed,
        )


def subsample_curve(
    items: Sequence[T],
    sizes: Iterable[int],
    statistic: Callable[[Sequence[T]], float] | None = None,
    repeats: int = 50,
    seed: int = 0,
) -> SubsampleCurve:
    """Evaluate `statistic` on `repeats` random subsets (without replacement) per size.

    `items` are per-segment scores (the default statistic is their mean) or
    anything `statistic` can pool, e.g. per-segment n-gram counts for a
    corpus-level BLEU. The same `seed` gives the same subsets
    (:func:`subset_indices`).
    """
    n = len(items)
    wanted = _check_sizes(n, sizes, repeats)
    stat = statistic or _mean_statistic
    values = [
        np.array([stat([items[i] for i in row]) for row in draw], dtype=float)
        for draw in subset_indices(n, wanted, repeats, seed)
    ]
    return _curve(wanted, values, float(stat(list(items))), repeats, seed)


def subset_scores(system: System, aggregate: Aggregate, indices: np.ndarray) -> np.ndarray:
    """The metric pooled over each row's items (row k of ``indices``: subset k's items).

    An :class:`~scoring.resampling.Additive` system sums its rows' statistics and
    scores the sum (BLEU from summed n-gram counts); any other is its per-item
    statistics given to ``aggregate``, as scoring/resampling.py resamples them. A
    row may be shorter than the item set (a subset), unlike a bootstrap resample.
    """
    if isinstance(system, Additive):
        weights = np.zeros((len(indices), n_items(system)))
        np.put_along_axis(weights, indices, 1.0, axis=1)  # subsets never repeat an item
        sums = weighted_sums(weights, system.rows)
        return np.array(
            [math.nan if (v := system.score(row)) is None else v for row in sums], dtype=float
        )
    return resampled_scores(system, aggregate, indices)


def n_items(system: System) -> int:
    """How many items a system has statistics of."""
    return int(system.rows.shape[0]) if isinstance(system, Additive) else len(system)


def pooled_subsample_curve(
    system: System,
    aggregate: Aggregate,
    sizes: Iterable[int],
    repeats: int = 50,
    seed: int = 0,
) -> SubsampleCurve:
    """The corpus metric of random subsets of growing size, pooled from per-item statistics.

    The subsets are :func:`subset_indices`'s (the same as :func:`subsample_curve`'s
    for the same seed); each subset's value is the metric computed from its items'
    statistics (:func:`subset_scores`: BLEU from the subset's summed n-gram counts,
    never a mean of sentence BLEUs), and ``full`` is the metric on every item.
    """
    n = n_items(system)
    wanted = _check_sizes(n, sizes, repeats)
    values = [
        subset_scores(system, aggregate, draw) for draw in subset_indices(n, wanted, repeats, seed)
    ]
    whole = full_score(system, aggregate)
    return _curve(wanted, values, math.nan if whole is None else whole, repeats, seed)


def mean_of_scores(values: Sequence[float]) -> Additive:
    """Per-segment scores as an :class:`~scoring.resampling.Additive` whose metric is their
    mean (score and count summed, then divided): what a file of sentence scores allows."""
    rows = np.column_stack([np.asarray(values, dtype=float), np.ones(len(values))])
    return Additive(rows, _ratio)


def _ratio(sums: np.ndarray) -> float:
    return float(sums[0] / sums[1]) if sums[1] else math.nan


# --- pairs a metric separates ---------------------------------------------------------


@dataclass(frozen=True)
class Separation:
    """How many pairs of systems a metric's paired test separates at ``alpha``.

    The discriminability of a metric as the MT-evaluation analysis measures it: the
    proportion of system pairs whose difference is significant.
    """

    test: str
    alpha: float
    systems: int
    pairs: int
    separated: int
    comparison: Comparison

    @property
    def proportion(self) -> float:
        """Separated pairs over pairs."""
        return self.separated / self.pairs if self.pairs else math.nan


def pair_separation(
    systems: Mapping[str, System],
    aggregate: Aggregate,
    test: str = "bootstrap",
    samples: int | None = None,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
    higher_is_better: bool = True,
) -> Separation:
    """Run ``test`` (``bootstrap`` or ``ar``, scoring/resampling.py's) on every pair of
    ``systems`` (per-item statistics, item i the same item in each) and count the pairs
    it separates at ``alpha``."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose from {list(TESTS)}")
    sizes = {test: samples} if samples is not None else {}
    result = compare(
        systems,
        aggregate,
        tests=(test,),
        samples=sizes,
        seed=seed,
        alpha=alpha,
        higher_is_better=higher_is_better,
    )
    separated = sum(p.better is not None for p in result.pairs)
    return Separation(test, alpha, len(systems), len(result.pairs), separated, result)


# --- clustering -------------------------------------------------------------------


def normalize_metrics(
    table: Mapping[str, Mapping[str, float]],
    method: Literal["zscore", "minmax"] = "zscore",
    lower_is_better: Iterable[str] = (),
) -> tuple[list[str], list[str], np.ndarray]:
    """System x metric matrix with each metric column normalised.

    `table` maps system -> metric -> score; every system needs every metric.
    "zscore" subtracts the mean and divides by the population SD (scipy's
    zscore); "minmax" maps to 0..1 as Yao et al.'s Table 3 does. Metrics in
    `lower_is_better` (error rates) are negated first, so that higher is
    better everywhere; distances are unchanged by that. A constant column
    becomes all zeros (it cannot tell systems apart).
    """
    systems = list(table)
    if len(systems) < 2:
        raise ValueError("need at least two systems")
    metrics = list(table[systems[0]])
    for s in systems:
        if set(table[s]) != set(metrics):
            raise ValueError(f"system {s!r} does not have the metrics {metrics}")
    flip = set(lower_is_better)
    unknown = flip - set(metrics)
    if unknown:
        raise ValueError(f"lower_is_better names unknown metrics {sorted(unknown)}")
    x = np.array([[table[s][m] for m in metrics] for s in systems], dtype=float)
    if not np.isfinite(x).all():
        raise ValueError("metric values must be finite")
    for j, m in enumerate(metrics):
        if m in flip:
            x[:, j] = -x[:, j]
    if method == "zscore":
        sd = x.std(axis=0)
        centred = x - x.mean(axis=0)
        out = np.divide(centred, sd, out=np.zeros_like(x), where=sd > 0)
    elif method == "minmax":
        span = x.max(axis=0) - x.min(axis=0)
        out = np.divide(x - x.min(axis=0), span, out=np.zeros_like(x), where=span > 0)
    else:
        raise ValueError(f"method must be 'zscore' or 'minmax', not {method!r}")
    return systems, metrics, out


def linkage(vectors: np.ndarray, method: Linkage = "average") -> np.ndarray:
    """Agglomerative clustering on Euclidean distances, in scipy's linkage format.

    Row i merges clusters Z[i,0] < Z[i,1] (leaves 0..n-1, the cluster made
    at row i is n+i) at distance Z[i,2], giving Z[i,3] leaves. Cluster
    distances follow the Lance-Williams update of `method`. Ties go to the
    pair with the smallest cluster ids, which keeps the result deterministic.
    """
    x = np.asarray(vectors, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError("need a 2-D array with at least two rows")
    if method not in ("average", "single", "complete"):
        raise ValueError(f"unknown linkage method {method!r}")
    n = x.shape[0]
    diff = x[:, None, :] - x[None, :, :]
    dist: dict[tuple[int, int], float] = {
        (i, j): float(np.sqrt((diff[i, j] ** 2).sum())) for i in range(n) for j in range(i + 1, n)
    }
    size = dict.fromkeys(range(n), 1)
    z = np.zeros((n - 1, 4))
    for step in range(n - 1):
        (a, b), d = min(dist.items(), key=lambda kv: (kv[1], kv[0]))
        new = n + step
        z[step] = (a, b, d, size[a] + size[b])
        others = [c for c in size if c not in (a, b)]
        for c in others:
            da = dist.pop((min(a, c), max(a, c)))
            db = dist.pop((min(b, c), max(b, c)))
            if method == "average":
                dn = (size[a] * da + size[b] * db) / (size[a] + size[b])
            elif method == "single":
                dn = min(da, db)
            else:
                dn = max(da, db)
            dist[(c, new)] = dn  # c < new always: new ids grow
        del dist[(a, b)]
        size[new] = size.pop(a) + size.pop(b)
    return z


@dataclass(frozen=True)
class Dendrogram:
    """Systems clustered on their normalised metric vectors."""

    labels: tuple[str, ...]
    metrics: tuple[str, ...]
    normalization: str
    method: str
    linkage: np.ndarray
    vectors: np.ndarray

    def leaf_order(self) -> list[int]:
        """Leaves left to right as drawn (first merged child on the left)."""
        n = len(self.labels)

        def walk(node: int) -> list[int]:
            if node < n:
                return [node]
            a, b = self.linkage[node - n, :2].astype(int)
            return walk(int(a)) + walk(int(b))

        return walk(2 * n - 2)

    def clusters(self, k: int) -> list[list[str]]:
        """The `k` groups left after cutting the tree above its last k-1 merges."""
        n = len(self.labels)
        if not 1 <= k <= n:
            raise ValueError(f"k must lie in 1..{n}")
        groups: dict[int, list[int]] = {i: [i] for i in range(n)}
        for step in range(n - k):
            a, b = (int(v) for v in self.linkage[step, :2])
            groups[n + step] = groups.pop(a) + groups.pop(b)
        return sorted(sorted(self.labels[i] for i in g) for g in groups.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready merges (``[cluster_a, cluster_b, distance, size]`` as scipy lists them)."""
        return {
            "labels": list(self.labels),
            "metrics": list(self.metrics),
            "normalization": self.normalization,
            "method": self.method,
            "merges": [[int(a), int(b), float(d), int(c)] for a, b, d, c in self.linkage],
            "leaf_order": [self.labels[i] for i in self.leaf_order()],
            "vectors": {
                s: [float(v) for v in row] for s, row in zip(self.labels, self.vectors, strict=True)
            },
        }


def cluster_systems(
    table: Mapping[str, Mapping[str, float]],
    method: Linkage = "average",
    normalization: Literal["zscore", "minmax"] = "zscore",
    lower_is_better: Iterable[str] = (),
) -> Dendrogram:
    """Cluster systems (system -> metric -> score) on normalised metric vectors."""
    systems, metrics, x = normalize_metrics(table, normalization, lower_is_better)
    return Dendrogram(tuple(systems), tuple(metrics), normalization, method, linkage(x, method), x)


# --- plots ---------------------------------------------------------------------------


def plot_dendrogram(
    tree: Dendrogram, stem: str | Path, title: str = "System clusters"
) -> PlotFiles:
    """Draw `tree` (leaves along x, merge distance up y); write PNG and SVG."""
    from .plots import _new_axes, _save, _style

    n = len(tree.labels)
    order = tree.leaf_order()
    xpos: dict[int, float] = {leaf: float(i) for i, leaf in enumerate(order)}
    height: dict[int, float] = dict.fromkeys(range(n), 0.0)
    with _style():
        fig, ax = _new_axes()
        for step, (a, b, d, _) in enumerate(tree.linkage):
            a, b, node = int(a), int(b), n + step
            xa, xb = xpos[a], xpos[b]
            ax.plot(
                [xa, xa, xb, xb],
                [height[a], d, d, height[b]],
                color="tab:blue",
                linewidth=1.5,
            )
            xpos[node] = (xa + xb) / 2.0
            height[node] = float(d)
        ax.set_xticks(range(n))
        ax.set_xticklabels([tree.labels[i] for i in order], rotation=45, ha="right")
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(0.0, max(height.values()) * 1.05 or 1.0)
        ax.set_ylabel(f"{tree.method} linkage distance ({tree.normalization} metrics)")
        ax.set_title(title)
        ax.grid(True, axis="y", alpha=0.3)
        return _save(fig, stem)


def plot_subsample_curves(
    curves: Mapping[str, SubsampleCurve],
    stem: str | Path,
    title: str = "Score against test-set size",
    ylabel: str = "score",
) -> PlotFiles:
    """Mean score per subset size with its 5-95% band, one line per metric or system."""
    from .plots import _legend, _new_axes, _save, _style

    if not curves:
        raise ValueError("plot_subsample_curves: no curves to plot (empty mapping)")
    with _style():
        fig, ax = _new_axes()
        for name, c in curves.items():
            (line,) = ax.plot(c.sizes, c.mean, label=name, linewidth=1.5)
            ax.fill_between(c.sizes, c.low, c.high, color=line.get_color(), alpha=0.2)
            ax.axhline(c.full, color=line.get_color(), linewidth=0.8, linestyle="--")
        ax.set_xlabel("test-set size (segments)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        _legend(ax, "best")
        return _save(fig, stem)
