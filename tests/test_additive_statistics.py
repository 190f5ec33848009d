"""The kinds' additive statistics (``ItemStatistics.additive``) equal their ``aggregate``.

`onsite compare` resamples a kind that declares the additive form with matrix
products (harness/significance.py ``additive_systems``, scoring/resampling.py) instead
of one ``aggregate`` call per resample. For every such kind, on a real job (the
demo-style jobs of tests/test_kind_conformance.py):

* the full item set through the additive form is the leaderboard's headline;
* random resamples with repeats give ``aggregate``'s figure on the same resamples;
* a whole comparison (intervals, paired bootstrap and approximate randomization
  p-values, verdicts) is the same as the generic path's.

To the last bit where the summed numbers are integer counts (BLEU, WER, rates,
pooled F, OCR's per-character counts: float64 sums of integers below 2**53 are
exact in any order, and the headline then does the aggregate's own integer
arithmetic). The two means of float scores (``ir``'s MAP, ``summarization``'s mean
ROUGE F) are summed by a matrix product where the aggregate uses ``math.fsum``: they
agree to 1e-12 relative, not to the bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness import leaderboard, task_kind
from harness.export import read_run
from harness.kinds.base import RATE_ADDITIVE
from harness.kinds.registry import task_kinds
from harness.significance import additive_systems
from scoring.resampling import bootstrap_indices, compare, resampled_scores
from tests.kind_examples import Builder, run_example
from tests.test_kind_conformance import _all_examples

ADDITIVE = [name for name, kind in task_kinds().items() if kind.statistics.additive is not None]
# Means of float scores: a matrix product's sum against the aggregate's fsum.
FLOAT_SUMS = {"ir", "summarization"}


def _same(kind: str, got: Any, want: Any) -> bool:
    if kind in FLOAT_SUMS and got is not None and want is not None:
        return bool(got == pytest.approx(want, rel=1e-12, abs=1e-15))
    return bool(got == want)


@pytest.fixture(scope="module")
def examples() -> dict[str, Builder]:
    return _all_examples()


def test_the_natural_kinds_declare_it() -> None:
    # EER (face-verify, spkv) and textcat's macro F over its categories keep the
    # generic path; the rest are sums.
    expected = {"mt", "combination", "asr", "command", "ocr", "cws", "ner", "pos", "lid"}
    assert expected <= set(ADDITIVE)
    assert not {"face-verify", "spkv"} & set(ADDITIVE)


@pytest.mark.parametrize("kind", ADDITIVE)
def test_additive_form_equals_aggregate_on_a_real_job(
    kind: str, examples: dict[str, Builder], tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)  # a sealed system reads its test set as another user
    run_dir = run_example(kind, examples[kind](tmp_path), tmp_path)
    [row] = leaderboard(run_dir)
    the_kind = task_kind(kind)
    job = read_run(run_dir, None, None)
    cfg = job.config
    stats = list(the_kind.item_statistics(job.testset, cfg, job.outputs, job.seconds).values())
    assert stats
    additive = the_kind.statistics.additive
    assert additive is not None

    # The full set once: the leaderboard's headline.
    [system] = additive_systems(additive, cfg, {"a": stats}).values()
    everything = np.arange(len(stats))[None, :]
    [full] = resampled_scores(system, lambda s: None, everything)
    assert _same(kind, full, row.score), (full, row.score)

    # Random resamples with repeats, and a resample of one item drawn many times.
    indices = bootstrap_indices(len(stats), 25, seed=7)
    indices = np.vstack([indices, np.zeros((1, len(stats)), dtype=indices.dtype)])
    fast = resampled_scores(system, lambda s: None, indices)
    for k, picked in enumerate(indices):
        slow = the_kind.aggregate(cfg, [stats[i] for i in picked])
        assert _same(kind, float(fast[k]), slow), (k, fast[k], slow)

    # A whole comparison: the job's statistics against them in reverse order (a second
    # "system" whose item i is another item: the swaps are what is checked).
    other = stats[::-1]
    fast_systems = additive_systems(additive, cfg, {"a": stats, "b": other})

    def aggregate(items: Any) -> float | None:
        return the_kind.aggregate(cfg, items)

    sizes = {"bootstrap": 40, "ar": 40}
    tests = ("bootstrap", "ar")
    fast_result = compare(fast_systems, aggregate, tests, sizes, higher_is_better=True)
    slow_result = compare({"a": stats, "b": other}, aggregate, tests, sizes)
    if kind in FLOAT_SUMS:
        for f, s in zip(fast_result.systems, slow_result.systems, strict=True):
            assert _same(kind, f.score, s.score) and _same(kind, f.ci_low, s.ci_low)
            assert _same(kind, f.ci_high, s.ci_high)
    else:
        assert fast_result == slow_result


def test_rate_additive_counts_hits_over_items() -> None:
    assert RATE_ADDITIVE.headline(None, {"right": 2.0, "items": 3.0}) == 2 / 3
    assert RATE_ADDITIVE.headline(None, {}) == 0.0
    assert RATE_ADDITIVE.vector(None, "yes") == {"right": 1, "items": 1}


def test_sparse_rows_equal_dense_rows() -> None:
    # OCR's rows have two columns per character: past 64 columns they are a sparse
    # matrix, resampled a block at a time; the sums are those of the dense rows.
    from scoring.resampling import Additive

    rng = np.random.default_rng(3)
    dense = (rng.random((300, 200)) < 0.02).astype(np.float64) * rng.integers(1, 5, (300, 200))
    from scipy.sparse import csr_matrix

    def score(row: np.ndarray) -> float:
        return float(row @ np.arange(1, 201))

    indices = bootstrap_indices(300, 30, seed=1)
    a = resampled_scores(Additive(dense, score), lambda s: None, indices)
    b = resampled_scores(Additive(csr_matrix(dense), score), lambda s: None, indices)
    assert np.array_equal(a, b)


def test_ocr_with_many_characters_resamples_sparse_rows_exactly() -> None:
    # Two columns per character: 150 characters are past the dense limit, so the rows
    # are a sparse matrix; R is still the aggregate's to the bit, and a resample that
    # misses a character averages over the characters it has, as the aggregate does.
    from scipy.sparse import issparse

    ocr = task_kind("ocr")
    additive = ocr.statistics.additive
    assert additive is not None
    rng = np.random.default_rng(11)
    chars = [chr(0x4E00 + k) for k in range(150)]
    stats = []
    for _ in range(600):
        char = chars[int(rng.integers(len(chars)))]
        top1 = bool(rng.random() < 0.7)
        stats.append((char, top1, top1 or bool(rng.random() < 0.5)))
    [system] = additive_systems(additive, None, {"a": stats}).values()
    assert issparse(system.rows)
    indices = bootstrap_indices(len(stats), 20, seed=5)
    fast = resampled_scores(system, lambda s: None, indices)
    for k, picked in enumerate(indices):
        assert float(fast[k]) == ocr.aggregate(None, [stats[i] for i in picked])
