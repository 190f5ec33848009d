"""Meta-evaluation: correlations, test-set profile, subsampling and clustering."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.cluster.hierarchy as hierarchy  # noqa: E402
import scipy.stats as stats  # noqa: E402

from scoring.meta import (
    cluster_systems,
    correlate,
    correlate_keyed,
    correlation_matrix,
    difficulty,
    discriminability,
    length_correlations,
    linkage,
    metric_human_correlations,
    normalize_metrics,
    pearson,
    plot_dendrogram,
    plot_subsample_curves,
    rankdata,
    spearman,
    subsample_curve,
    test_set_profile,
    unit_correlation,
)

# Yao et al. 2006, Table 3: normalised scores of six MT systems on eight metrics.
METRICS = ["F", "ET", "SLP", "BLEUW", "NISTW", "LM", "EDist", "DICE"]
TABLE3 = {
    "MTS#1": [1.00, 0.92, 1.00, 1.00, 1.00, 1.00, 0.92, 1.00],
    "MTS#2": [0.84, 1.00, 0.85, 0.78, 0.78, 0.46, 1.00, 1.00],
    "MTS#3": [0.60, 0.71, 0.45, 0.22, 0.24, 0.18, 0.23, 0.27],
    "MTS#4": [0.44, 0.71, 0.20, 0.22, 0.15, 0.14, 0.69, 0.80],
    "MTS#5": [0.16, 0.38, 0.10, 0.00, 0.00, 0.00, 0.00, 0.00],
    "MTS#6": [0.00, 0.00, 0.00, 0.11, 0.03, 0.11, 0.08, 0.20],
}


def _table3() -> dict[str, dict[str, float]]:
    return {s: dict(zip(METRICS, v, strict=True)) for s, v in TABLE3.items()}


# --- correlation ----------------------------------------------------------------


def test_pearson_and_spearman_hand_worked() -> None:
    x, y = [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]
    # Deviations (-1, 0, 1) and (-1, 1, 0): r = 1 / (sqrt 2 * sqrt 2) = 1/2.
    assert pearson(x, y) == pytest.approx(0.5)
    # Ranks equal the values, so rho = r = 1/2 (= 1 - 6 * 2 / (3 * 8)).
    assert spearman(x, y) == pytest.approx(0.5)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    assert rankdata([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_constant_side_is_undefined() -> None:
    assert math.isnan(pearson([1, 2, 3], [4, 4, 4]))
    c = correlate([1, 2, 3], [4, 4, 4])
    assert c.to_dict()["pearson"] is None and c.to_dict()["spearman"] is None


def test_correlation_errors() -> None:
    with pytest.raises(ValueError, match="3 x values but 2"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least two"):
        pearson([1], [1])
    with pytest.raises(ValueError, match="finite"):
        pearson([1, math.nan], [1, 2])


def test_matches_scipy_on_random_scores_with_ties() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(3, 40))
        x = rng.integers(0, 5, n).astype(float)  # many ties
        y = rng.normal(size=n) + 0.5 * x
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
        assert rankdata(x) == pytest.approx(stats.rankdata(x))


def test_keyed_correlation_aligns_by_key() -> None:
    metric = {"s1": 0.3, "s2": 0.1, "s3": 0.2}
    human = {"s3": 2.0, "s1": 3.0, "s2": 1.0}  # different order, same systems
    c = correlate_keyed(metric, human, "BLEU", "adequacy", "system")
    assert c.pearson == pytest.approx(1.0) and c.n == 3 and c.level == "system"
    with pytest.raises(ValueError, match="1 keys only in adequacy"):
        correlate_keyed(metric, {**human, "s4": 1.0}, "BLEU", "adequacy")


def test_segment_level_metric_human_correlations() -> None:
    rng = np.random.default_rng(5)
    keys = [(s, g) for s in ("A", "B", "C") for g in range(20)]
    human = {k: float(rng.integers(1, 6)) for k in keys}
    bleu = {k: human[k] / 5 + rng.normal(0, 0.1) for k in keys}
    ter = {k: -human[k] + rng.normal(0, 1) for k in keys}
    out = metric_human_correlations({"BLEU": bleu, "TER": ter}, {"adequacy": human}, "segment")
    assert [(c.a, c.b) for c in out] == [("BLEU", "adequacy"), ("TER", "adequacy")]
    h = [human[k] for k in keys]
    assert out[0].pearson == pytest.approx(stats.pearsonr([bleu[k] for k in keys], h)[0])
    assert out[1].spearman == pytest.approx(stats.spearmanr([ter[k] for k in keys], h)[0])
    assert out[1].pearson < 0  # an error rate correlates negatively


def test_correlation_matrix_against_scipy() -> None:
    table = _table3()
    metrics = {m: {s: table[s][m] for s in table} for m in METRICS}
    cm = correlation_matrix(metrics)
    assert cm.n == 6 and cm.names == tuple(METRICS)
    assert np.allclose(cm.pearson, cm.pearson.T) and np.allclose(np.diag(cm.spearman), 1)
    x = np.array(list(TABLE3.values()))
    assert cm.pearson == pytest.approx(np.corrcoef(x.T))
    assert cm.spearman == pytest.approx(stats.spearmanr(x).statistic)
    json.dumps(cm.to_dict())


def test_length_and_unit_correlations() -> None:
    lengths = {("A", i): float(n) for i, n in enumerate([5, 10, 15, 20, 40])}
    scores = {k: 1.0 / v for k, v in lengths.items()}  # shorter sentences score higher
    out = length_correlations({"ICT": scores}, lengths)
    assert out["ICT"].spearman == pytest.approx(-1.0) and out["ICT"].pearson < -0.8
    assert out["ICT"].level == "segment"
    char = {"s1": 0.30, "s2": 0.25, "s3": 0.21}
    word = {"s1": 0.20, "s2": 0.16, "s3": 0.11}
    c = unit_correlation(char, word, "BLEU")
    assert c.a == "BLEU (characters)" and c.pearson == pytest.approx(
        stats.pearsonr([0.30, 0.25, 0.21], [0.20, 0.16, 0.11])[0]
    )


# --- difficulty and discriminability -----------------------------------------


def test_difficulty_and_discriminability_hand_worked() -> None:
    # Three systems on a 1..5 scale: mean 3 -> (3-1)/4; spread 4-2 -> 2/4.
    assert difficulty([2.0, 3.0, 4.0], high=5, low=1) == pytest.approx(0.5)
    assert discriminability([2.0, 3.0, 4.0], high=5, low=1) == pytest.approx(0.5)
    prof = test_set_profile({"a": 0.2, "b": 0.4, "c": 0.3}, high=1, low=0)
    assert (prof.best, prof.worst, prof.mean) == pytest.approx((0.4, 0.2, 0.3))
    # An error rate: best is the lowest, the spread is the same.
    err = test_set_profile({"a": 0.2, "b": 0.4}, high=1, low=0, higher_is_better=False)
    assert (err.best, err.worst, err.discriminability) == pytest.approx((0.2, 0.4, 0.2))
    # ... and its difficulty is read from the best end: mean 0.3 -> 1 - 0.3 = 0.7.
    assert err.difficulty == pytest.approx(0.7) and not err.higher_is_better
    assert difficulty([0.70], high=1, low=0, higher_is_better=False) == pytest.approx(0.30)
    assert difficulty([60.0, 80.0], high=100, low=0, higher_is_better=False) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="must exceed"):
        difficulty([1.0], high=0, low=1)


# --- test-set size -------------------------------------------------------------------


def test_subsample_curve_is_seeded_and_settles() -> None:
    rng = np.random.default_rng(11)
    seg = rng.uniform(0, 1, 400).tolist()
    c1 = subsample_curve(seg, [10, 50, 200, 400], repeats=40, seed=2)
    c2 = subsample_curve(seg, [400, 200, 50, 10], repeats=40, seed=2)
    assert c1 == c2
    assert c1.sizes == (10, 50, 200, 400)
    assert c1.sd[0] > c1.sd[1] > c1.sd[2] > 0
    assert c1.sd[3] == pytest.approx(0.0, abs=1e-12)  # every full-size subset is the set
    assert c1.full == pytest.approx(np.mean(seg)) and c1.mean[3] == pytest.approx(c1.full)
    # Rounding differs with the subset order, hence the tolerance at full size.
    assert all(
        lo - 1e-12 <= m <= hi + 1e-12 for lo, m, hi in zip(c1.low, c1.mean, c1.high, strict=True)
    )
    assert subsample_curve(seg, [10], repeats=40, seed=3) != subsample_curve(
        seg, [10], repeats=40, seed=2
    )
    json.dumps(c1.to_dict())


def test_subsample_curve_corpus_statistic() -> None:
    # Per-segment (matches, total) pairs pooled into a corpus-level ratio.
    items = [(1, 2), (3, 3), (0, 5), (2, 2)]

    def ratio(sub: list[tuple[int, int]]) -> float:
        return sum(a for a, _ in sub) / sum(b for _, b in sub)

    c = subsample_curve(items, [4], statistic=ratio, repeats=3)
    assert c.full == pytest.approx(6 / 12) and c.mean == pytest.approx((0.5,))
    with pytest.raises(ValueError, match="sizes must lie in 1..4"):
        subsample_curve(items, [5], statistic=ratio)


# --- clustering -------------------------------------------------------------------------


def test_normalize_metrics() -> None:
    table = {
        "a": {"bleu": 0.1, "wer": 0.5},
        "b": {"bleu": 0.3, "wer": 0.3},
        "c": {"bleu": 0.2, "wer": 0.3},
    }
    systems, metrics, mm = normalize_metrics(table, "minmax", lower_is_better=["wer"])
    assert systems == ["a", "b", "c"] and metrics == ["bleu", "wer"]
    assert mm == pytest.approx(np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 1.0]]))
    _, _, z = normalize_metrics(table)
    x = np.array([[0.1, 0.5], [0.3, 0.3], [0.2, 0.3]])
    assert z == pytest.approx(stats.zscore(x, axis=0))
    _, _, const = normalize_metrics({"a": {"m": 1.0}, "b": {"m": 1.0}})
    assert const.tolist() == [[0.0], [0.0]]
    with pytest.raises(ValueError, match="does not have the metrics"):
        normalize_metrics({"a": {"m": 1.0}, "b": {"n": 1.0}})


def test_linkage_hand_worked() -> None:
    # Points on a line at 0, 1, 5: {0,1} merge at 1; then 5 joins at the
    # average of 5 and 4 = 4.5 (single: 4, complete: 5).
    x = np.array([[0.0], [1.0], [5.0]])
    assert linkage(x, "average").tolist() == [[0, 1, 1.0, 2], [2, 3, 4.5, 3]]
    assert linkage(x, "single")[1, 2] == 4.0 and linkage(x, "complete")[1, 2] == 5.0


@pytest.mark.parametrize("method", ["average", "single", "complete"])
def test_linkage_matches_scipy(method: str) -> None:
    rng = np.random.default_rng(13)
    for _ in range(30):
        x = rng.normal(size=(int(rng.integers(2, 12)), int(rng.integers(1, 6))))
        assert linkage(x, method) == pytest.approx(hierarchy.linkage(x, method=method))


def test_cluster_systems_reproduces_yao_et_al_figure_6() -> None:
    # "MTS#5 and MTS#6 ... are clustered first. The MTS#1 and MTS#2 have a
    # second smallest difference. After MTS#3 and MTS#4 are clustered ..."
    for normalization in ("minmax", "zscore"):
        tree = cluster_systems(_table3(), "average", normalization)
        assert [sorted(tree.labels[int(i)] for i in row[:2]) for row in tree.linkage[:3]] == [
            ["MTS#5", "MTS#6"],
            ["MTS#1", "MTS#2"],
            ["MTS#3", "MTS#4"],
        ]
        assert tree.clusters(3) == [["MTS#1", "MTS#2"], ["MTS#3", "MTS#4"], ["MTS#5", "MTS#6"]]
    assert tree.clusters(1) == [sorted(TABLE3)]
    assert sorted(tree.leaf_order()) == list(range(6))
    out = tree.to_dict()
    json.dumps(out)
    assert out["merges"][0][:2] == [4, 5] and len(out["vectors"]["MTS#1"]) == 8


# --- plots ------------------------------------------------------------------------------


def test_plot_dendrogram_deterministic(tmp_path: Path) -> None:
    tree = cluster_systems(_table3())
    a = plot_dendrogram(tree, tmp_path / "a" / "dendro")
    b = plot_dendrogram(tree, tmp_path / "b" / "dendro")
    assert a.png.stat().st_size > 0 and a.png.name == "dendro.png"
    svg = a.svg.read_text(encoding="utf-8")
    assert svg == b.svg.read_text(encoding="utf-8")
    assert "MTS#5" in svg  # labels kept as text


def test_plot_subsample_curves(tmp_path: Path) -> None:
    seg = np.linspace(0, 1, 50).tolist()
    curves = {"BLEU": subsample_curve(seg, [5, 10, 25, 50], repeats=10)}
    files = plot_subsample_curves(curves, tmp_path / "size.v2")
    assert files.svg.name == "size.v2.svg" and files.png.exists()
    with pytest.raises(ValueError, match="no curves"):
        plot_subsample_curves({}, tmp_path / "x")
