"""Character error rate over a large Chinese corpus: onsite's sclite alignment against jiwer.

Data: deterministic synthetic Chinese (seeded numpy). References are
utterances of 10-40 characters drawn from a few thousand CJK ideographs, about
`--chars` characters in all; each hypothesis has about 10% edits (a third
each substitutions, deletions and insertions).

Onsite: `scoring.score_asr(refs, hyps, unit="char")` on the whole corpus,
tokenisation included, with sclite's weights (C=0, S=4, I=3, D=3) and
tie-break. Peer: `jiwer.process_characters(refs, hyps)` on the same lists,
which does the equivalent work (character split, per-utterance alignment and
counts; `jiwer.cer` calls it too) with rapidfuzz's unit-cost Levenshtein.

Each side is run once to warm up (numba compiles or loads its cache on
onsite's first call), then timed best of 3 in the same process. The JIT's
cost is reported separately: import and first call in a fresh process, with
an empty numba cache and with the cache that leaves. Goal: onsite / jiwer <= 1.0.

Also reported: how many utterances' (S, D, I) differ between the two (some
are expected: with unit costs a substitution and an insertion+deletion pair
tie differently) and whether total errors differ.

Run: `.venv/bin/python benchmarks/scoring_speed.py [--chars N]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scoring import score_asr  # noqa: E402

SEED = 20240611
ALPHABET = 3000  # distinct ideographs
EDIT_RATE = 0.10  # substitutions + deletions + insertions per reference char


def make_corpus(n_chars: int, seed: int = SEED) -> tuple[list[str], list[str]]:
    """Reference and hypothesis strings, about `n_chars` reference characters."""
    rng = np.random.default_rng(seed)
    alphabet = rng.choice(np.arange(0x4E00, 0xA000), size=ALPHABET, replace=False)
    lengths = rng.integers(10, 41, size=n_chars // 10 + 1)
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_chars)) + 1]
    total = int(lengths.sum())
    ref_idx = rng.integers(0, ALPHABET, size=total)

    # Per reference char: 0 keep, 1 substitute, 2 delete, 3 keep and insert after.
    op = np.zeros(total, dtype=np.int64)
    u = rng.random(total)
    op[u < EDIT_RATE] = 3
    op[u < 2 * EDIT_RATE / 3] = 2
    op[u < EDIT_RATE / 3] = 1
    # A different ideograph for each substitution, a random one for insertions.
    sub_idx = (ref_idx + rng.integers(1, ALPHABET, size=total)) % ALPHABET
    ins_idx = rng.integers(0, ALPHABET, size=total)

    out_len = np.where(op == 2, 0, np.where(op == 3, 2, 1))
    out_pos = np.cumsum(out_len) - out_len  # first output slot of each ref char
    hyp_idx = np.empty(int(out_len.sum()), dtype=np.int64)
    kept = op != 2
    hyp_idx[out_pos[kept]] = np.where(op == 1, sub_idx, ref_idx)[kept]
    hyp_idx[out_pos[op == 3] + 1] = ins_idx[op == 3]

    ref_text = _decode(alphabet[ref_idx])
    hyp_text = _decode(alphabet[hyp_idx])
    ref_ends = np.cumsum(lengths)
    hyp_ends = np.cumsum(out_len)[ref_ends - 1]
    refs = _split(ref_text, ref_ends)
    hyps = _split(hyp_text, hyp_ends)
    return refs, hyps


def _decode(code_points: np.ndarray) -> str:
    return code_points.astype("<u4").tobytes().decode("utf-32-le")


def _split(text: str, ends: np.ndarray) -> list[str]:
    starts = [0, *ends[:-1].tolist()]
    return [text[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]


def best_of(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Fastest of `repeats` timed calls, and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        result = None  # free the previous result outside the timed region
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


_FIRST_CALL = """
import time
t0 = time.perf_counter()
from scoring.asr_align import align_all
align_all([["a"]], [["b"]])
print(time.perf_counter() - t0)
"""


def jit_figures() -> tuple[float, float]:
    """Seconds to import and first run the aligner in a fresh process.

    Returns ``(cold, cached)``: with an empty numba cache (what the first
    run on a machine, or after an edit to the kernel, pays), then again with
    the cache that run left.
    """
    times = []
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", _FIRST_CALL],
                cwd=REPO,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            times.append(float(out.stdout.split()[-1]))
    return times[0], times[1]


def jiwer_counts(out: Any) -> list[tuple[int, int, int]]:
    """Per-utterance (S, D, I) from jiwer's alignment chunks."""
    counts = []
    for chunks in out.alignments:
        s = d = i = 0
        for ch in chunks:
            if ch.type == "substitute":
                s += ch.ref_end_idx - ch.ref_start_idx
            elif ch.type == "delete":
                d += ch.ref_end_idx - ch.ref_start_idx
            elif ch.type == "insert":
                i += ch.hyp_end_idx - ch.hyp_start_idx
        counts.append((s, d, i))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000, help="reference characters")
    args = parser.parse_args()

    import jiwer

    refs, hyps = make_corpus(args.chars)
    ref_map = {f"utt{k:07d}": r for k, r in enumerate(refs)}
    hyp_map = {f"utt{k:07d}": h for k, h in enumerate(hyps)}
    n_chars = sum(map(len, refs))
    print(
        f"items: {len(refs):,}  reference chars: {n_chars:,}  hypothesis chars: "
        f"{sum(map(len, hyps)):,}"
    )

    cold_s, cached_s = jit_figures()
    print(
        f"numba import + first call in a fresh process: {cold_s:.2f} s compiling, "
        f"{cached_s:.2f} s from its cache"
    )

    def run_onsite() -> Any:
        return score_asr(ref_map, hyp_map, unit="char")

    def run_jiwer() -> Any:
        return jiwer.process_characters(refs, hyps)

    run_onsite()
    run_jiwer()
    onsite_s, report = best_of(run_onsite)
    jiwer_s, jw = best_of(run_jiwer)

    ov = report.overall
    print(
        f"onsite score_asr(unit='char'):  {onsite_s:.3f} s  "
        f"({n_chars / onsite_s / 1e6:.2f} M chars/s)  CER {ov.wer:.5f}"
    )
    print(
        f"jiwer.process_characters:      {jiwer_s:.3f} s  "
        f"({n_chars / jiwer_s / 1e6:.2f} M chars/s)  CER {jw.cer:.5f}"
    )
    print(f"ratio onsite / jiwer: {onsite_s / jiwer_s:.2f}  (goal <= 1.0)")

    ours = [(u.substitutions, u.deletions, u.insertions) for u in report.utterances]
    theirs = jiwer_counts(jw)
    differ = sum(a != b for a, b in zip(ours, theirs, strict=True))
    jw_errors = jw.substitutions + jw.deletions + jw.insertions
    print(f"utterances whose (S, D, I) differ: {differ:,} of {len(ours):,}")
    print(
        f"total errors: onsite {ov.errors:,} (S {ov.substitutions:,} D {ov.deletions:,} "
        f"I {ov.insertions:,}), jiwer {jw_errors:,} (S {jw.substitutions:,} "
        f"D {jw.deletions:,} I {jw.insertions:,}): "
        f"{'differ' if ov.errors != jw_errors else 'same'}"
    )


if __name__ == "__main__":
    main()
