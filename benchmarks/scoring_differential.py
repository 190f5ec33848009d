"""Large differential run of the scorers against models of their reference tools.

The same cases as the differential tests in
tests/test_scoring_reference_edges.py, many more of them, with seeds that
can be chosen. Each family prints how many cases ran and how many
disagreed (the goal is 0 everywhere), and the time onsite took against its
named peer in the same run:

* GNU diff: `scoring.gnu_diff` rows against the real `diff -y` output, byte
  for byte, on random word lists (repeated words, empty lines, `|`, long
  ASCII and CJK words; 0 to 1,500 lines). Peer: the real `diff` process.
* SIGHAN `score`: `score_cws_files` (default and `--sighan-quirks`) against
  `tests.reference_models.sighan_score`, the script's steps driving the
  real `diff`. Peer: that model.
* sclite: `score_asr` (words and characters) against
  `tests.reference_models.sclite_counts` on random text with non-ASCII
  letters, Unicode spaces, `*` and emoji. Peer: that model.
* mteval: `score_mt_files` on plain files with entities, `<skipped>`, `<`,
  `>` and Unicode spaces against the BLEU and NIST models, and against
  sacrebleu BLEU (13a, exp smoothing) where sacrebleu follows mteval (some
  hypothesis has 4 tokens and some unigram matches). Peer: the models and
  sacrebleu.
* conlleval: `score_ner` against `tests.reference_models.conlleval_counts`
  on random IOB tags with a type `0`. Peer: that model.

Run: `.venv/bin/python benchmarks/scoring_differential.py [--cases N] [--seed S]`
(default 400 cases per family; about 80 seconds on one core).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scoring.gnu_diff import render_sdiff_row, sdiff_rows  # noqa: E402
from tests import test_scoring_reference_edges as edges  # noqa: E402


def _diff_case(rng: random.Random, tmp: Path) -> tuple[bool, float, float]:
    pool = [b"a", b"b", b"c", "的".encode(), "的的".encode(), b"|", b"", b"x" * 70]
    pool.append("中".encode() * 35)
    vocab = rng.sample(pool, rng.randint(1, len(pool)))
    sizes = [0, 3, 20, 80, 300, 1500]
    a = [rng.choice(vocab) for _ in range(rng.randint(0, rng.choice(sizes)))]
    b = [rng.choice(vocab) for _ in range(rng.randint(0, rng.choice(sizes)))]
    (tmp / "a").write_bytes(b"".join(w + b"\n" for w in a))
    (tmp / "b").write_bytes(b"".join(w + b"\n" for w in b))
    t0 = time.perf_counter()
    real = subprocess.run(
        ["diff", "-y", str(tmp / "a"), str(tmp / "b")],
        capture_output=True,
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"},
    ).stdout
    t1 = time.perf_counter()
    mine = b"".join(
        render_sdiff_row(
            r.marker, None if r.left is None else a[r.left], None if r.right is None else b[r.right]
        )
        for r in sdiff_rows(a, b)
    )
    t2 = time.perf_counter()
    return mine == real, t2 - t1, t1 - t0


def _run(name: str, peer: str, cases: int, one: Callable[[], object]) -> None:
    bad = 0
    first = ""
    t0 = time.perf_counter()
    for _ in range(cases):
        try:
            one()
        except AssertionError as exc:
            bad += 1
            first = first or str(exc)[:2000]
    took = time.perf_counter() - t0
    print(f"{name:<10} {cases:>6} cases  {bad:>4} disagree  ({took:.1f} s, {peer})")
    _first_failure(name, first)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bad = 0
        ours = theirs = 0.0
        for _ in range(args.cases):
            ok, mine, real = _diff_case(rng, tmp)
            bad += not ok
            ours += mine
            theirs += real
        print(
            f"{'gnu-diff':<10} {args.cases:>6} cases  {bad:>4} disagree  "
            f"model / real diff process time = {ours / theirs:.2f}"
        )
        _run(
            "sighan",
            "peer: script model on real diff",
            args.cases,
            lambda: edges.cws_differential_case(rng, tmp, rng.randint(1, 8)),
        )
        _run("sclite", "peer: sclite model", args.cases, lambda: edges.asr_differential_case(rng))
        _run(
            "mteval",
            "peer: mteval models + sacrebleu",
            args.cases,
            lambda: edges.mt_differential_case(rng, tmp, rng.randint(1, 20)),
        )
        _run(
            "conlleval",
            "peer: conlleval model",
            args.cases,
            lambda: edges.ner_differential_case(rng),
        )
    return 0


def _first_failure(name: str, message: str) -> None:
    if message:
        print(f"  first {name} disagreement: {message}")


if __name__ == "__main__":
    raise SystemExit(main())
