"""Scoring speed and peak memory against jiwer, sacrebleu and pytrec_eval, CLI and in process.

First table, from the command line, as users call the tools: the generated
corpora below are written to files and each job runs as a separate process,
onsite's command and its peer's alternating, `--rounds` (3) times after one
untimed run of each (the page cache, both sides' bytecode cache, see `cli_env`,
and numba's cache for the MT kernels warm); best wall time
and largest peak RSS (from /usr/bin/time, Debian package `time`) per side:

* WER: `onsite score asr --unit char` on Kaldi text files of ~1M Chinese
  characters, against a ten-line script that reads the same files and calls
  `jiwer.process_characters`.
* BLEU: `onsite score mt --metrics bleu` on 100,000 plain-text segments with
  one reference, against sacrebleu's own CLI `sacrebleu REF -i HYP -m bleu -b`.
* MT, all metrics: `onsite score mt --metrics all` against the same
  sacrebleu command (goal: within 2x its time).
* Retrieval: `onsite score ir` on 200 topics x 1,000 documents, against a
  script that reads the TREC files into dicts and calls pytrec_eval.

Goal for the first, second and last: ratio <= 1.0 in time and in memory.
Each side's printed score is shown so the numbers can be compared.

Second table, in process and warm (`--cli-only` skips it):

Character error rate over a large Chinese corpus: onsite's sclite alignment against jiwer.

Data: deterministic synthetic Chinese (seeded numpy). References are
utterances of 10-40 characters drawn from a few thousand CJK ideographs, about
`--chars` characters in all; each hypothesis has about 10% edits (a third
each substitutions, deletions and insertions).

Onsite: `scoring.score_asr(refs, hyps, unit="char")` on the whole corpus,
tokenisation included, with sclite's weights (C=0, S=4, I=3, D=3) and
tie-break. Peer: `jiwer.process_characters(refs, hyps)` on the same lists,
which does the equivalent work (character split, per-utterance alignment and
counts; `jiwer.cer` calls it too) with rapidfuzz's unit-cost Levenshtein.

Each side is run once to warm up, then timed best of 3 in the same process.
The aligner is numpy; the JIT cost of the MT kernels (numba) is reported
separately: import and first call in a fresh process, with an empty numba
cache and with the cache that leaves. Goal: onsite / jiwer <= 1.0.

Also reported: how many utterances' (S, D, I) differ between the two (some
are expected: with unit costs a substitution and an insertion+deletion pair
tie differently) and whether total errors differ.

Then BLEU and retrieval against their usual peers (both goal <= 1.0):

* BLEU: `--segments` (100,000) synthetic English-like hypotheses of 10-40
  tokens from a Zipfian vocabulary (punctuation, numbers and an SGML entity
  among the frequent words), each with `--refs` references (1, and 4 too
  unless `--refs` is given) made from the same source sentence with about 30%
  of the words changed. Onsite: `scoring.mt.corpus_bleu` (mteval-v13a,
  case-sensitive); peer: `sacrebleu.corpus_bleu(..., tokenize="13a",
  lowercase=False, smooth_method="exp")`; both from strings, tokenisation
  included, best of 3. The two scores are printed and must agree.
* Retrieval: 200 topics x 1,000 retrieved documents with heavily tied scores,
  qrels of 150 judged documents per topic, 50 relevant. Onsite:
  `scoring.ir.score_ir` (MAP, R-precision, P@10, trec_eval's tie-break by
  docno); peer: `pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec",
  "P_10"}).evaluate(run)`, timed including copying the parsed data into the
  dicts it takes. Then from files: onsite's `score_ir_files` against a plain
  reader of the same TREC files into dicts, then pytrec_eval. Per-topic
  scores must agree.

Run: `.venv/bin/python benchmarks/scoring_speed.py [--chars N] [--segments N] [--refs K]
[--rounds N] [--only WER BLEU MT retrieval] [--cli-only] [--skip-asr]`.
"""

from __future__ import annotations

import argparse
import math
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
from scoring.ir import score_ir, score_ir_files  # noqa: E402
from scoring.mt import corpus_bleu  # noqa: E402

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


_FIRST_CALL_MT = """
import time
t0 = time.perf_counter()
import numpy as np
from scoring._fast_mt import edit_distances, gtm_weights
codes, off = np.array([1, 2, 2, 1], dtype=np.int32), np.array([0, 2, 4], dtype=np.int64)
edit_distances(codes, off, 1, 1)
gtm_weights(codes, off, 1, 1, 2.0)
print(time.perf_counter() - t0)
"""


def jit_figures(snippet: str = _FIRST_CALL_MT) -> tuple[float, float]:
    """Seconds to import and first run the MT kernels in a fresh process.

    Returns ``(cold, cached)``: with an empty numba cache (what the first
    run on a machine, or after an edit to the kernel, pays), then again with
    the cache that run left.
    """
    times = []
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", snippet],
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


# --------------------------------------------------------------------------- BLEU

MT_VOCAB = 20_000
MT_CHANGED = 0.30  # words of the source sentence replaced in each hypothesis or reference
# Frequent "words" that exercise the v13a rules: punctuation, numbers, an entity.
MT_SPECIAL = [",", ".", "?", "'s", "3.14", "1,000", "(", ")", '"', "--", "e.g.", "U.S.", "-"]
MT_SPECIAL += [";", ":", "&amp;", "50%"]


def make_mt_corpus(
    n_segments: int, n_refs: int, seed: int = SEED
) -> tuple[list[str], list[list[str]]]:
    """Hypotheses and `n_refs` reference sets of English-like synthetic text."""
    rng = np.random.default_rng(seed)
    word_len = rng.integers(1, 11, size=MT_VOCAB)
    letters = _decode(rng.integers(ord("a"), ord("z") + 1, size=int(word_len.sum())))
    ends = np.cumsum(word_len)
    words = [letters[a:b] for a, b in zip((ends - word_len).tolist(), ends.tolist(), strict=True)]
    words[::7] = [w.capitalize() for w in words[::7]]
    words[: len(MT_SPECIAL)] = MT_SPECIAL
    vocab = np.array(words, dtype=object)
    cdf = np.cumsum(1.0 / np.arange(1, MT_VOCAB + 1) ** 1.1)
    cdf /= cdf[-1]

    def draw(size: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(size)), MT_VOCAB - 1)

    lengths = rng.integers(10, 41, size=n_segments)
    source = draw(int(lengths.sum()))
    seg_ends = np.cumsum(lengths)
    bounds = list(zip((seg_ends - lengths).tolist(), seg_ends.tolist(), strict=True))

    def variant() -> list[str]:
        ids = source.copy()
        changed = rng.random(len(ids)) < MT_CHANGED
        ids[changed] = draw(int(changed.sum()))
        toks = vocab[ids]
        return [" ".join(toks[a:b]) for a, b in bounds]

    refs = [variant() for _ in range(n_refs)]
    return variant(), refs


def bench_bleu(n_segments: int, n_refs: int) -> None:
    """Time corpus BLEU against sacrebleu and print the figures."""
    import sacrebleu

    hyps, refs = make_mt_corpus(n_segments, n_refs)
    n_tokens = sum(map(len, map(str.split, hyps)))

    def run_onsite() -> float:
        return corpus_bleu(hyps, refs, "en")

    def run_sacrebleu() -> Any:
        return sacrebleu.corpus_bleu(
            hyps, refs, tokenize="13a", lowercase=False, smooth_method="exp", force=True
        )

    run_onsite()
    run_sacrebleu()
    onsite_s, ours = best_of(run_onsite)
    peer_s, theirs = best_of(run_sacrebleu)
    print(f"BLEU, {n_segments:,} segments ({n_tokens:,} hypothesis words), {n_refs} reference(s):")
    print(f"  onsite scoring.mt.corpus_bleu: {onsite_s:.3f} s  BLEU {100 * ours:.6f}")
    print(f"  sacrebleu.corpus_bleu:         {peer_s:.3f} s  BLEU {theirs.score:.6f}")
    same = math.isclose(100 * ours, theirs.score, rel_tol=1e-9)
    print(
        f"  ratio onsite / sacrebleu: {onsite_s / peer_s:.2f}  (goal <= 1.0); "
        f"scores {'equal' if same else 'DIFFER'}"
    )


# --------------------------------------------------------------------------- retrieval

IR_TOPICS = 200
IR_RETRIEVED = 1_000
IR_JUDGED = 150
IR_RELEVANT = 50
IR_MEASURES = {"map", "Rprec", "P_10"}


def make_ir_data(
    seed: int = SEED,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels and a run: tied scores, most relevant documents among the retrieved."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in range(IR_TOPICS):
        topic = f"{t + 1:03d}"
        pool = dict.fromkeys(
            f"CWT-{a:05d}-{b:04d}"
            for a, b in zip(
                rng.integers(0, 100_000, 2 * IR_RETRIEVED).tolist(),
                rng.integers(0, 10_000, 2 * IR_RETRIEVED).tolist(),
                strict=True,
            )
        )
        docs = list(pool)
        # Scores on a coarse grid so many documents tie, better for relevant ones.
        judged = rng.choice(IR_RETRIEVED + IR_RELEVANT, size=IR_JUDGED, replace=False)
        relevant = set(judged[:IR_RELEVANT].tolist())
        bonus = np.array([3.0 if k in relevant else 0.0 for k in range(IR_RETRIEVED)])
        scores = np.round(rng.random(IR_RETRIEVED) * 20 + bonus)
        run[topic] = dict(zip(docs[:IR_RETRIEVED], scores.tolist(), strict=True))
        qrels[topic] = {docs[k]: int(k in relevant) for k in judged.tolist()}
    return qrels, run


def _write_trec(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], d: Path
) -> None:
    with open(d / "qrels", "w", encoding="utf-8") as f:
        for topic, judged in qrels.items():
            f.writelines(f"{topic} 0 {doc} {rel}\n" for doc, rel in judged.items())
    with open(d / "run", "w", encoding="utf-8") as f:
        for topic, scores in run.items():
            ranked = sorted(scores.items(), key=lambda x: -x[1])
            f.writelines(
                f"{topic} Q0 {doc} {k} {score:g} myrun\n"
                for k, (doc, score) in enumerate(ranked, start=1)
            )


def _read_for_pytrec(d: Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The plain reader a pytrec_eval user writes: split lines into nested dicts."""
    qrels: dict[str, dict[str, int]] = {}
    with open(d / "qrels", encoding="utf-8") as f:
        for line in f:
            topic, _, doc, rel = line.split()
            qrels.setdefault(topic, {})[doc] = int(rel)
    run: dict[str, dict[str, float]] = {}
    with open(d / "run", encoding="utf-8") as f:
        for line in f:
            topic, _, doc, _, score, _ = line.split()
            run.setdefault(topic, {})[doc] = float(score)
    return qrels, run


def bench_ir() -> None:
    """Time MAP / R-precision / P@10 against pytrec_eval and print the figures."""
    import pytrec_eval

    qrels, run = make_ir_data()

    def run_onsite() -> Any:
        return score_ir(qrels, run)

    def run_pytrec() -> Any:
        q = {t: dict(j) for t, j in qrels.items()}
        r = {t: dict(s) for t, s in run.items()}
        return pytrec_eval.RelevanceEvaluator(q, IR_MEASURES).evaluate(r)

    run_onsite()
    run_pytrec()
    onsite_s, report = best_of(run_onsite, 5)
    peer_s, theirs = best_of(run_pytrec, 5)
    n_docs = sum(map(len, run.values()))
    print(f"retrieval, {len(run)} topics, {n_docs:,} retrieved documents:")
    print(
        f"  onsite score_ir:  {onsite_s:.3f} s  MAP {report.map:.6f} "
        f"R-prec {report.rprec:.6f} P@10 {report.p10:.6f}"
    )
    print(
        f"  pytrec_eval:      {peer_s:.3f} s  MAP "
        f"{math.fsum(v['map'] for v in theirs.values()) / len(theirs):.6f}"
    )
    print(f"  ratio onsite / pytrec_eval: {onsite_s / peer_s:.2f}  (goal <= 1.0)")
    differ = sum(
        not (
            math.isclose(s.ap, theirs[s.topic]["map"], rel_tol=1e-12, abs_tol=1e-15)
            and math.isclose(s.rprec, theirs[s.topic]["Rprec"], rel_tol=1e-12, abs_tol=1e-15)
            and math.isclose(s.p10, theirs[s.topic]["P_10"], rel_tol=1e-12, abs_tol=1e-15)
        )
        for s in report.per_topic
    )
    print(f"  topics whose scores differ: {differ} of {len(report.per_topic)}")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _write_trec(qrels, run, d)

        def files_onsite() -> Any:
            return score_ir_files(d / "qrels", d / "run")

        def files_pytrec() -> Any:
            q, r = _read_for_pytrec(d)
            return pytrec_eval.RelevanceEvaluator(q, IR_MEASURES).evaluate(r)

        files_onsite()
        files_pytrec()
        onsite_f, from_file = best_of(files_onsite, 5)
        peer_f, _ = best_of(files_pytrec, 5)
    same = "same" if from_file["map"] == report.map else "DIFFERS"
    print(
        f"  from TREC files: onsite score_ir_files {onsite_f:.3f} s, plain reader + "
        f"pytrec_eval {peer_f:.3f} s; ratio {onsite_f / peer_f:.2f}  (goal <= 1.0); "
        f"MAP {from_file['map']:.6f} ({same})"
    )


# --------------------------------------------------------------------------- command line

_JIWER_SCRIPT = """
import sys
import jiwer

def read(path):
    texts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            utt, _, text = line.rstrip("\\n").partition(" ")
            texts[utt] = text
    return texts

refs, hyps = read(sys.argv[1]), read(sys.argv[2])
ids = sorted(refs)
out = jiwer.process_characters([refs[k] for k in ids], [hyps[k] for k in ids])
print(f"CER {out.cer:.6f}")
"""

_PYTREC_SCRIPT = """
import sys
import pytrec_eval

qrels = {}
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        topic, _, doc, rel = line.split()
        qrels.setdefault(topic, {})[doc] = int(rel)
run = {}
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        topic, _, doc, _, score, _ = line.split()
        run.setdefault(topic, {})[doc] = float(score)
res = pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "P_10"}).evaluate(run)
n = len(res)
for m in ("map", "Rprec", "P_10"):
    print(m, "all", f"{sum(v[m] for v in res.values()) / n:.4f}")
"""


def _bin(name: str) -> str:
    # The commands of the environment running this script (its venv's bin).
    return str(Path(sys.executable).parent / name)


def run_measured(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), the command's own peak RSS in bytes, stdout.

    The peak comes from /usr/bin/time (Debian package `time`): a child forked
    straight from this script would inherit this process's high-water mark,
    which holds the generated corpora, since Linux keeps it across exec.
    """
    with tempfile.NamedTemporaryFile("r") as peak:
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", peak.name, *cmd],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr}")
        kilobytes, user, system = peak.read().split()[-3:]
    return seconds, float(user) + float(system), int(kilobytes) * 1024, proc.stdout


def write_cli_data(d: Path, n_chars: int, n_segments: int, only: set[str] | None) -> None:
    """The generated corpora of the in-process figures, as the files a user scores."""
    if only is None or "WER" in only:
        refs, hyps = make_corpus(n_chars)
        for name, texts in (("asr.ref", refs), ("asr.hyp", hyps)):
            with open(d / name, "w", encoding="utf-8") as f:
                f.writelines(f"utt{k:07d} {t}\n" for k, t in enumerate(texts))
    if only is None or only & {"BLEU", "MT"}:
        mt_hyps, mt_refs = make_mt_corpus(n_segments, 1)
        (d / "mt.hyp").write_text("".join(f"{t}\n" for t in mt_hyps), encoding="utf-8")
        (d / "mt.ref").write_text("".join(f"{t}\n" for t in mt_refs[0]), encoding="utf-8")
    if only is None or "retrieval" in only:
        _write_trec(*make_ir_data(), d)
    (d / "jiwer_cer.py").write_text(_JIWER_SCRIPT, encoding="utf-8")
    (d / "pytrec_ir.py").write_text(_PYTREC_SCRIPT, encoding="utf-8")


def cli_jobs(d: Path) -> list[tuple[str, list[str], list[str], str]]:
    """(job, onsite command, peer command, peer name) for each comparison."""
    onsite, py = _bin("onsite"), sys.executable
    return [
        (
            "WER, char level",
            [onsite, "score", "asr", "--ref", "asr.ref", "--hyp", "asr.hyp", "--unit", "char"],
            [py, "jiwer_cer.py", "asr.ref", "asr.hyp"],
            "jiwer script",
        ),
        (
            "BLEU (--metrics bleu)",
            [onsite, "score", "mt", "--hyp", "mt.hyp", "--ref", "mt.ref", "--metrics", "bleu"],
            [_bin("sacrebleu"), "mt.ref", "-i", "mt.hyp", "-m", "bleu", "-b"],
            "sacrebleu -m bleu",
        ),
        (
            "MT, all metrics",
            [onsite, "score", "mt", "--hyp", "mt.hyp", "--ref", "mt.ref", "--metrics", "all"],
            [_bin("sacrebleu"), "mt.ref", "-i", "mt.hyp", "-m", "bleu", "-b"],
            "sacrebleu -m bleu",
        ),
        (
            "retrieval",
            [onsite, "score", "ir", "--qrels", "qrels", "--run", "run"],
            [py, "pytrec_ir.py", "qrels", "run"],
            "pytrec_eval script",
        ),
    ]


def cli_env(pycache: Path) -> dict[str, str]:
    """The environment of the timed commands: this checkout first, bytecode cached.

    Each side's modules are compiled once, in the untimed run, into a
    private bytecode cache (PYTHONPYCACHEPREFIX), and read from it after, as
    from an installed tool's __pycache__: without it, PYTHONDONTWRITEBYTECODE
    in the caller's environment would make onsite, run from a source tree,
    compile every module of its own on each command, while the peers' installed
    modules come precompiled.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def bench_cli(n_chars: int, n_segments: int, rounds: int, only: set[str] | None) -> None:
    """Each job from the command line, onsite and its peer alternating, `rounds` times."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        env = cli_env(d / "pycache")
        write_cli_data(d, n_chars, n_segments, only)
        jobs = [j for j in cli_jobs(d) if only is None or j[0].split()[0].strip(",") in only]
        # One untimed run each: the page cache (and numba's cache of the MT kernels) are
        # warm, as for a user's second command; the cold JIT cost is reported apart (see
        # `jit_figures`).
        for _, ours, theirs, _ in jobs:
            run_measured(ours, env, d)
            run_measured(theirs, env, d)
        times: dict[tuple[str, int], list[float]] = {}
        cpu: dict[tuple[str, int], list[float]] = {}
        peaks: dict[tuple[str, int], list[int]] = {}
        outputs: dict[tuple[str, int], str] = {}
        for _ in range(rounds):
            for job, ours, theirs, _ in jobs:
                for side, cmd in enumerate((ours, theirs)):
                    seconds, cpu_s, peak, out = run_measured(cmd, env, d)
                    times.setdefault((job, side), []).append(seconds)
                    cpu.setdefault((job, side), []).append(cpu_s)
                    peaks.setdefault((job, side), []).append(peak)
                    outputs[(job, side)] = out
    print(
        f"From the command line ({rounds} interleaved rounds; best wall and CPU time, "
        "largest peak RSS):"
    )
    header = (
        "job", "onsite s", "peer", "peer s", "time ratio", "onsite CPU s", "peer CPU s",
        "CPU ratio", "onsite MB", "peer MB", "mem ratio",
    )  # fmt: skip
    print("  " + " | ".join(header))
    for job, _, _, peer in jobs:
        ours_s, theirs_s = min(times[(job, 0)]), min(times[(job, 1)])
        # CPU time: less disturbed than wall time when other work shares the machine.
        ours_c, theirs_c = min(cpu[(job, 0)]), min(cpu[(job, 1)])
        ours_m, theirs_m = max(peaks[(job, 0)]), max(peaks[(job, 1)])
        print(
            f"  {job} | {ours_s:.2f} | {peer} | {theirs_s:.2f} | {ours_s / theirs_s:.2f}x | "
            f"{ours_c:.2f} | {theirs_c:.2f} | {ours_c / theirs_c:.2f}x | "
            f"{ours_m / 2**20:.0f} | {theirs_m / 2**20:.0f} | {ours_m / theirs_m:.2f}x"
        )
    for (job, side), out in outputs.items():
        lines = [ln for ln in out.splitlines() if ln.strip()]
        shown = " / ".join(lines[:4]) if side else _headline(out)
        print(f"  {job} {'peer' if side else 'onsite'} says: {shown[:160]}")


def _headline(table_text: str) -> str:
    keep = ("wer ", "bleu ", "map ", "rprec ", "p10 ", "gtm ", "mwer ", "mper ", "nist ")
    return " / ".join(
        " ".join(ln.split())
        for ln in table_text.splitlines()
        if ln.strip().lower().startswith(keep)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000, help="reference characters")
    parser.add_argument("--segments", type=int, default=100_000, help="MT segments")
    parser.add_argument("--refs", type=int, help="MT references per segment (default 1 and 4)")
    parser.add_argument("--rounds", type=int, default=3, help="command-line rounds (default 3)")
    parser.add_argument(
        "--only", nargs="+", choices=("WER", "BLEU", "MT", "retrieval"), help="these jobs only"
    )
    parser.add_argument("--cli-only", action="store_true", help="skip the in-process figures")
    parser.add_argument("--skip-asr", action="store_true", help="in process: only BLEU and IR")
    args = parser.parse_args()

    bench_cli(args.chars, args.segments, args.rounds, set(args.only) if args.only else None)
    if args.cli_only:
        return
    print()
    print("In process, warm (best of 3):")
    for n_refs in [args.refs] if args.refs else [1, 4]:
        bench_bleu(args.segments, n_refs)
    bench_ir()
    if args.skip_asr:
        return
    import jiwer

    refs, hyps = make_corpus(args.chars)
    ref_map = {f"utt{k:07d}": r for k, r in enumerate(refs)}
    hyp_map = {f"utt{k:07d}": h for k, h in enumerate(hyps)}
    n_chars = sum(map(len, refs))
    print(
        f"items: {len(refs):,}  reference chars: {n_chars:,}  hypothesis chars: "
        f"{sum(map(len, hyps)):,}"
    )

    cold_s, cached_s = jit_figures(_FIRST_CALL_MT)
    print(
        f"mWER/GTM kernels: numba import + first call in a fresh process: {cold_s:.2f} s "
        f"compiling, {cached_s:.2f} s from its cache"
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
