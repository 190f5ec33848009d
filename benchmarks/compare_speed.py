"""`onsite compare` with paired bootstrap resampling against sacrebleu's --paired-bs.

From the command line, as users call the tools, on the same files in the same run:

* onsite: `onsite compare mt --ref REF --hyp H1 ... --hyp H8 --test bootstrap
  --samples 1000` (mteval-v13a BLEU of each system, 95% intervals, every pair's
  paired bootstrap p-value: 28 pairs);
* sacrebleu: `sacrebleu REF -i H1 ... H8 -m bleu --paired-bs --paired-bs-n 1000`
  (13a BLEU, intervals, the baseline H1 against each other system: 7 pairs).

Data: deterministic synthetic English-like text (seeded numpy): `--segments` (2,000)
reference sentences of 10-40 tokens from a Zipfian vocabulary of a few thousand
made-up words with punctuation and numbers, and `--systems` (8) hypotheses, system k
changing about 15 + 4k percent of the words (substituted, dropped or inserted), one
plain-text line per segment, written to a temporary directory.

Each command runs once untimed (page cache and both sides' bytecode cache warm, see
`cli_env`), then the two alternate `--rounds` (3) times; the median wall time of each
and the ratio onsite / sacrebleu are printed (goal: <= 1.0). The BLEU of the first
system from each side is printed too (they differ slightly: mteval-v13a and
sacrebleu's 13a tokenise alike but smooth and round differently).

Then, in process, run mode's resampling (`--run-mode`, on by default): the mt kind's
per-segment statistics of two systems (scoring/mt_batch.py, as a run's job gives
them) resampled with one `aggregate` call per resample (the generic path, every kind)
against the kind's additive form (matrix products, harness/kinds/base.py
``AdditiveStatistics``), both through scoring.resampling.compare with 1,000
bootstrap resamples and `--ar` (1,000) randomization trials; the two comparisons must
be equal.

Run: `.venv/bin/python benchmarks/compare_speed.py [--segments N] [--systems K]
[--samples N] [--rounds N] [--ar N] [--no-run-mode]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PUNCTUATION = [",", ".", "?", "!", ";", "'s", '"', "(", ")"]


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def cli_env(pycache: Path) -> dict[str, str]:
    """This checkout first and a private bytecode cache, compiled in the untimed run
    (as an installed tool's __pycache__; see benchmarks/scoring_speed.py)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def vocabulary(rng: np.random.Generator, size: int = 4000) -> list[str]:
    """Made-up lower-case words of 2-10 letters, plus punctuation and numbers."""
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    weights = 1.0 / np.arange(1, 27)
    weights /= weights.sum()
    words = {
        "".join(rng.choice(letters, size=int(rng.integers(2, 11)), p=weights))
        for _ in range(size * 2)
    }
    found = sorted(words)[:size]
    return [*PUNCTUATION, *(str(n) for n in range(1, 40)), *found]


def sentences(rng: np.random.Generator, vocab: list[str], n: int) -> list[list[str]]:
    """n sentences of 10-40 tokens, words drawn Zipf-like (rank r with weight 1/r)."""
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    out = []
    for _ in range(n):
        words = [
            vocab[i] for i in rng.choice(len(vocab), size=int(rng.integers(10, 41)), p=weights)
        ]
        words[0] = words[0].capitalize()
        out.append([*words, "."])
    return out


def system_output(
    rng: np.random.Generator, vocab: list[str], refs: list[list[str]], change: float
) -> list[str]:
    """Each reference with about `change` of its words substituted, dropped or doubled."""
    lines = []
    for ref in refs:
        words: list[str] = []
        for word in ref:
            if rng.random() >= change:
                words.append(word)
                continue
            edit = rng.integers(3)
            if edit == 0:
                words.append(vocab[int(rng.integers(len(vocab)))])
            elif edit == 2:
                words += [word, vocab[int(rng.integers(len(vocab)))]]
        lines.append(" ".join(words))
    return lines


def write_data(d: Path, segments: int, systems: int, seed: int) -> tuple[Path, list[Path]]:
    """The reference and the systems' files (one segment per line)."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    refs = sentences(rng, vocab, segments)
    ref = d / "ref.txt"
    ref.write_text("".join(" ".join(s) + "\n" for s in refs), encoding="utf-8")
    hyps = []
    for k in range(systems):
        path = d / f"sys{k + 1}.txt"
        lines = system_output(rng, vocab, refs, 0.15 + 0.04 * k)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        hyps.append(path)
    return ref, hyps


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """Wall seconds and stdout of one command (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return seconds, proc.stdout


def bench_cli(segments: int, systems: int, samples: int, rounds: int, seed: int) -> None:
    """Both commands on the same files, alternating, median of `rounds`."""
    with tempfile.TemporaryDirectory(prefix="compare-speed-") as tmp:
        d = Path(tmp)
        env = cli_env(d / "pycache")
        ref, hyps = write_data(d, segments, systems, seed)
        ours = [_bin("onsite"), "compare", "mt", "--ref", str(ref)]
        for hyp in hyps:
            ours += ["--hyp", str(hyp)]
        ours += ["--test", "bootstrap", "--samples", str(samples), "--json"]
        theirs = [_bin("sacrebleu"), str(ref), "-i", *map(str, hyps), "-m", "bleu"]
        theirs += ["--paired-bs", "--paired-bs-n", str(samples)]
        timed(ours, env, d)  # untimed: caches warm
        timed(theirs, env, d)
        times: dict[str, list[float]] = {"onsite": [], "sacrebleu": []}
        out = {"onsite": "", "sacrebleu": ""}
        for _ in range(rounds):
            for side, cmd in (("onsite", ours), ("sacrebleu", theirs)):
                seconds, out[side] = timed(cmd, env, d)
                times[side].append(seconds)
        result = json.loads(out["onsite"])
        first = result["systems"][0]
        # sacrebleu prints JSON when its output is not a terminal: the baseline first.
        baseline = json.loads(out["sacrebleu"])[0]["BLEU"]["score"]
        onsite_s, peer_s = statistics.median(times["onsite"]), statistics.median(times["sacrebleu"])
        print(
            f"compare, {segments} MT segments x {systems} systems, {samples} bootstrap "
            f"resamples, median of {rounds}:"
        )
        print(
            f"  onsite compare mt  {onsite_s:7.2f} s  ({len(result['pairs'])} pairs; "
            f"first system BLEU {100 * first['score']:.2f} "
            f"[{100 * first['ci_low']:.2f}, {100 * first['ci_high']:.2f}])"
        )
        print(
            f"  sacrebleu --paired-bs {peer_s:7.2f} s  ({systems - 1} pairs; baseline BLEU "
            f"{baseline:.2f})"
        )
        print(f"  ratio onsite / sacrebleu: {onsite_s / peer_s:.2f}  (goal <= 1.0)")
        print(
            "  all times (s): onsite "
            + " ".join(f"{t:.2f}" for t in times["onsite"])
            + "; sacrebleu "
            + " ".join(f"{t:.2f}" for t in times["sacrebleu"])
        )


def bench_run_mode(segments: int, samples: int, ar: int, seed: int) -> None:
    """Run mode's resampling of the mt kind's statistics: generic against additive."""
    from harness.kinds.text import BLEU_STATISTICS
    from harness.significance import additive_systems
    from scoring.mt import MtSegment
    from scoring.mt_batch import score_mt_batch
    from scoring.resampling import compare

    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    refs = sentences(rng, vocab, segments)
    stats = {}
    for k, change in enumerate((0.2, 0.3)):
        hyps = system_output(rng, vocab, refs, change)
        segs = [
            MtSegment("doc", str(i), hyp, (" ".join(ref),))
            for i, (hyp, ref) in enumerate(zip(hyps, refs, strict=True))
        ]
        report = score_mt_batch(segs, "en", metrics=("bleu",))
        stats[f"sys{k + 1}"] = [s.scores.ngrams for s in report.segments]
    cfg = None  # BLEU's statistics read no task option

    def aggregate(items: object) -> float | None:
        return BLEU_STATISTICS.aggregate(cfg, items)  # type: ignore[arg-type]

    assert BLEU_STATISTICS.additive is not None
    sizes = {"bootstrap": samples, "ar": ar}
    start = time.perf_counter()
    slow = compare(stats, aggregate, ("bootstrap", "ar"), sizes)
    generic_s = time.perf_counter() - start
    start = time.perf_counter()
    fast_systems = additive_systems(BLEU_STATISTICS.additive, cfg, stats)
    fast = compare(fast_systems, aggregate, ("bootstrap", "ar"), sizes)
    additive_s = time.perf_counter() - start
    print(
        f"run mode, in process: 2 systems x {segments} segments, {samples} bootstrap "
        f"resamples and {ar} randomization trials:"
    )
    print(f"  generic (one aggregate per resample)  {generic_s:7.2f} s")
    print(f"  additive (matrix products)            {additive_s:7.2f} s")
    print(f"  speed-up {generic_s / additive_s:.1f}x; the two comparisons equal: {slow == fast}")


def main() -> None:
    """Parse the options and run the benchmarks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=2000)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ar", type=int, default=1000, help="run mode's randomization trials")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--no-run-mode", action="store_true", help="skip the in-process table")
    args = parser.parse_args()
    bench_cli(args.segments, args.systems, args.samples, args.rounds, args.seed)
    if not args.no_run_mode:
        print()
        bench_run_mode(args.segments, args.samples, args.ar, args.seed)


if __name__ == "__main__":
    main()
