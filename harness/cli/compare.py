"""`onsite compare`: which differences between systems are real (docs/significance.md).

Two forms. On a run, ``onsite compare RUN --task T`` reads every system's job of the
task as the leaderboard scores it (the completed items; a failed item counts with no
output, as the kind scores an unanswered item) and takes each item's statistic from the
kind (its ``statistics``), so nothing here names a kind. Offline, ``onsite compare mt
--ref REF --hyp A --hyp B`` reads the files as `onsite score mt` does. Both resample
with scoring/resampling.py: paired bootstrap (``bootstrap``) and approximate
randomization (``ar``), sacrebleu's tests with sacrebleu's seed. The error-rate tests
(``mapsswe``, ``sign``, ``wilcoxon``, ``mcnemar``) are SCTK sc_stats's, from
scoring/sctk_stats.py, on sclite's alignments: offline for the ``asr`` family, and on a
run for a task whose kind the ``asr`` family reads (``from_run``). A kind whose
statistics have an additive form (``ItemStatistics.additive``: BLEU, WER, rates, pooled
F) is resampled with matrix products (harness/significance.py), to the same figures as
one ``aggregate`` call per resample and far faster; the others call ``aggregate``.
Where sacrebleu (ties) or sc_stats (its binomial bug, its normal table, its sign-test
verdict) would print another p-value or verdict, the output says so under ``notes``,
with the tool's value and the flag that reproduces it (``--sacrebleu``, ``--sc-stats``).

Registering the command loads nothing of the run store, the kinds, numpy or the scorers.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from harness.cli.shared import text_encoding

if TYPE_CHECKING:
    from rich.console import Console

    from harness.significance import Compared
    from scoring.resampling import Comparison

RESAMPLING_TESTS = ("bootstrap", "ar")
# SCTK sc_stats's tests on alignments of error-rate kinds (scoring/sctk_stats.py).
ERROR_RATE_TESTS = ("mapsswe", "sign", "wilcoxon", "mcnemar")
# The offline families `onsite compare FAMILY --ref --hyp` reads.
OFFLINE_FAMILIES = ("mt", "asr")


def add_compare_parser(sub: Any) -> None:
    """Register `onsite compare` on the CLI's subparsers."""
    parser = sub.add_parser(
        "compare",
        help="significance tests between systems: paired bootstrap, approximate randomization",
        description="Compare every pair of systems on the same items: a run's task "
        "(RUN --task T) or files (FAMILY --ref REF --hyp A --hyp B ...).",
    )
    parser.add_argument(
        "target",
        metavar="RUN|FAMILY",
        help="a run directory (or postgresql://HOST/DB?run=NAME) with --task, or a family "
        f"({', '.join(OFFLINE_FAMILIES)}) with --ref and --hyp",
    )
    parser.add_argument("--task", help="the run's task whose systems are compared")
    parser.add_argument(
        "--systems", help="comma-separated systems of the task to compare (default: all)"
    )
    parser.add_argument(
        "--ref",
        action="append",
        help="offline: a reference file (mt: repeat for more; asr: one trn or Kaldi text)",
    )
    parser.add_argument(
        "--hyp", action="append", help="offline: a system's output file; repeat, one per system"
    )
    parser.add_argument(
        "--lang", choices=("en", "zh", "ja"), default="en", help="offline mt: target language"
    )
    parser.add_argument(
        "--encoding",
        type=text_encoding,
        help="offline: the files' encoding (utf-8 by default; gb2312, gbk, gb18030, big5, "
        "utf-16 with a BOM, utf-16le); a CWMT XML file's declaration is read when left out",
    )
    parser.add_argument(
        "--test",
        nargs="+",
        default=["bootstrap"],
        metavar="NAME",
        help=f"tests: {', '.join(RESAMPLING_TESTS)} (any kind); "
        f"{', '.join(ERROR_RATE_TESTS)} (error-rate kinds); default bootstrap",
    )
    parser.add_argument(
        "--samples",
        type=int,
        help="resamples for bootstrap and trials for ar (default 1000 and 10000, as sacrebleu)",
    )
    parser.add_argument(
        "--seed", type=int, help="the random seed (default 12345, sacrebleu's); printed"
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the verdicts (0.05)"
    )
    parser.add_argument(
        "--sc-stats",
        action="store_true",
        help="error-rate tests: reproduce SCTK sc_stats exactly, its normal-approximation "
        "bug included",
    )
    parser.add_argument(
        "--sacrebleu",
        action="store_true",
        help="bootstrap and ar: count only resampled differences larger than the observed "
        "one, as sacrebleu does (its p-values exactly; two identical systems then get "
        "p = 1/(samples+1) instead of 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.set_defaults(handler=cmd_compare)


def _problem(where: Path | str, key: str, message: str, fix: str) -> Exception:
    from harness.errors import InputError, Problem

    return InputError([Problem(Path(str(where)), key, message, fix)])


def _check_tests(args: argparse.Namespace) -> list[str]:
    tests = list(dict.fromkeys(args.test))
    for test in tests:
        if test not in RESAMPLING_TESTS + ERROR_RATE_TESTS:
            raise _problem(
                args.target,
                "--test",
                f"unknown test {test!r}",
                f"use some of: {', '.join(RESAMPLING_TESTS + ERROR_RATE_TESTS)}",
            )
    if args.sc_stats and not any(t in ERROR_RATE_TESTS for t in tests):
        raise _problem(
            args.target,
            "--sc-stats",
            "--sc-stats applies to the SCTK tests (mapsswe, sign, wilcoxon, mcnemar)",
            "add --test with some of them, or leave --sc-stats out",
        )
    if args.samples is not None and args.samples < 1:
        raise _problem(args.target, "--samples", f"{args.samples} samples", "give 1 or more")
    if not 0 < args.alpha < 1:
        raise _problem(args.target, "--alpha", f"alpha {args.alpha}", "give a level in (0, 1)")
    return tests


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    """Compare the systems and print the comparison (a table, or JSON with --json)."""
    from harness.cli.shared import EXIT_BAD_INPUT
    from scoring.resampling import DEFAULT_SEED, compare

    tests = _check_tests(args)
    offline = args.hyp is not None or args.ref is not None
    if offline:
        if args.task is not None:
            raise _problem(
                args.target, "--task", "--task reads a run, --hyp reads files", "give one of them"
            )
        compared = _offline(args)
        if compared is None:
            return EXIT_BAD_INPUT
    else:
        if args.task is None:
            raise _problem(
                args.target,
                "--task",
                "which task?",
                f"give --task T to compare a run's systems, or a family "
                f"({', '.join(OFFLINE_FAMILIES)}) with --ref and --hyp to compare files",
            )
        compared = systems_from_run(args)
    sctk = [t for t in tests if t in ERROR_RATE_TESTS]
    if sctk and compared.units is None:
        raise _problem(
            args.target,
            "--test",
            f"{', '.join(sctk)}: SCTK's tests need sclite's alignments, which "
            f"{compared.task!r} ({compared.metric}) has not",
            "use --test bootstrap or ar; the SCTK tests are for the asr family",
        )
    seed = DEFAULT_SEED if args.seed is None else args.seed
    resampling = [t for t in tests if t in RESAMPLING_TESTS]
    samples = {t: args.samples for t in resampling} if args.samples is not None else {}
    if args.samples is not None:
        samples["bootstrap"] = args.samples  # the intervals' resamples
    result = compare(
        compared.systems,
        compared.aggregate,
        tests=resampling,
        samples=samples,
        seed=seed,
        alpha=args.alpha,
        higher_is_better=compared.higher_is_better,
        strict=args.sacrebleu,
    )
    if len(resampling) < len(tests):
        result = _with_error_rate_tests(args, compared, result, tests)
    for note in compared.notes:
        sys.stderr.write(f"note: {note}\n")
    if args.json:
        sys.stdout.write(json.dumps(comparison_json(compared, result), indent=2) + "\n")
    else:
        _print_table(compared, result, args.alpha, console)
    return 0


def _with_error_rate_tests(
    args: argparse.Namespace, compared: Compared, result: Comparison, tests: Sequence[str]
) -> Comparison:
    """The comparison with SCTK sc_stats's tests added, pair by pair in the order asked,
    and the rank ranges of all the tests' verdicts."""
    from dataclasses import replace

    from harness.significance import sc_stats_value
    from scoring.resampling import PairResult, rank_ranges
    from scoring.sctk_stats import TestName, compare_error_rates

    assert compared.units is not None  # checked before resampling
    units = compared.units()
    asked = cast("list[TestName]", [t for t in tests if t in ERROR_RATE_TESTS])
    sctk = compare_error_rates(units, asked, alpha=args.alpha, sc_stats=args.sc_stats)
    # The exact values by default; sc_stats's own beside them where a user comparing
    # with its report would see another p-value or verdict (harness.significance notes).
    tool = (
        {}
        if args.sc_stats
        else {
            (p.a, p.b, p.test): sc_stats_value(exact, p)
            for exact, p in zip(
                sctk,
                compare_error_rates(units, asked, alpha=args.alpha, sc_stats=True),
                strict=True,
            )
        }
    )
    found = {(p.a, p.b, p.test): p for p in result.pairs}
    found.update(
        {
            (p.a, p.b, p.test): PairResult(
                p.a, p.b, p.test, p.statistic, p.p, p.better, tool.get((p.a, p.b, p.test))
            )
            for p in sctk
        }
    )
    names = [s.system for s in result.systems]
    pairs = tuple(
        found[(a, b, t)] for i, a in enumerate(names) for b in names[i + 1 :] for t in tests
    )
    ranks = rank_ranges(names, pairs)
    systems = tuple(
        replace(s, rank_low=ranks[s.system][0], rank_high=ranks[s.system][1])
        for s in result.systems
    )
    return replace(result, systems=systems, pairs=pairs)


def _number(value: float | None) -> float | None:
    # JSON has no NaN: an undefined figure is null.
    return None if value is None or math.isnan(value) else value


def comparison_json(compared: Compared, result: Comparison) -> dict[str, Any]:
    """The comparison as `onsite compare --json` prints it: ``notes`` says where a
    reference tool (sacrebleu, sc_stats) would print another p-value or verdict, and
    each such pair's ``tool`` gives that tool's value."""
    from harness.significance import tool_notes

    return {
        "task": compared.task,
        "metric": compared.metric,
        "higher_is_better": compared.higher_is_better,
        "items": result.items,
        "seed": result.seed,
        "samples": dict(result.samples),
        "systems": [
            {
                "system": s.system,
                "score": _number(s.score),
                "ci_low": _number(s.ci_low),
                "ci_high": _number(s.ci_high),
                "rank_low": s.rank_low,
                "rank_high": s.rank_high,
            }
            for s in result.systems
        ],
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "test": p.test,
                "statistic": _number(p.statistic),
                "p": p.p,
                "better": p.better,
                "tool": None
                if p.tool is None
                else {
                    "name": p.tool.tool,
                    "p": p.tool.p,
                    "better": p.tool.better,
                    "significant": p.tool.significant,
                },
            }
            for p in result.pairs
        ],
        "notes": tool_notes(result.pairs),
    }


def _figure(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"


def _label(test: str) -> str:
    # The resampling tests' statistic is the difference a - b; sc_stats's are a Z or a count.
    return "diff" if test in RESAMPLING_TESTS else "stat"


def _print_table(compared: Compared, result: Comparison, alpha: float, console: Console) -> None:
    from harness.significance import tool_notes

    sizes = ", ".join(
        f"{test} {n} {'resamples' if test == 'bootstrap' else 'trials'}"
        for test, n in result.samples.items()
    )
    direction = "higher" if compared.higher_is_better else "lower"
    lines = [
        f"{compared.task}: {compared.metric} ({direction} is better) on {result.items} items; "
        f"seed {result.seed}; {sizes}",
        "",
        f"{'rank':>6}  {'system':<24} {compared.metric:>8}  95% interval",
    ]
    width = max([24, *(len(s.system) for s in result.systems)])
    lines[2] = f"{'rank':>6}  {'system':<{width}} {compared.metric:>8}  95% interval"
    for s in result.systems:
        rank = f"{s.rank_low}" if s.rank_low == s.rank_high else f"{s.rank_low}-{s.rank_high}"
        lines.append(
            f"{rank:>6}  {s.system:<{width}} {_figure(s.score):>8}  "
            f"[{_figure(s.ci_low)}, {_figure(s.ci_high)}]"
        )
    tests = " or ".join(dict.fromkeys(p.test for p in result.pairs))
    lines += [
        f"  (a rank range such as 1-2: no test ({tests}) separates those systems at alpha {alpha})",
        "",
        f"pairs (better at alpha {alpha}):",
    ]
    for p in result.pairs:
        verdict = p.better if p.better is not None else "no significant difference"
        lines.append(
            f"  {p.a} vs {p.b}  {p.test:<9} {_label(p.test)} {p.statistic:+.4f}  "
            f"p = {p.p:.4f}  {verdict}"
        )
    notes = tool_notes(result.pairs)
    if notes:
        lines += ["", "notes (where the reference tool would print another value):"]
        lines += [f"  {note}" for note in notes]
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


# --------------------------------------------------------------------------- a run


def systems_from_run(args: argparse.Namespace) -> Compared:
    """Every chosen system's item statistics on the items all of them completed
    (harness/significance.py, which the report's intervals use too)."""
    from harness.significance import run_systems
    from harness.store.run_model import RunModel

    names = [n.strip() for n in args.systems.split(",") if n.strip()] if args.systems else None
    return run_systems(RunModel.open(args.target), args.task, names)


# --------------------------------------------------------------------------- files


def _offline(args: argparse.Namespace) -> Compared | None:
    """The systems of `onsite compare FAMILY --ref --hyp`, or None after the error line."""
    from harness.cli.shared import scored_or_reported

    if args.target not in OFFLINE_FAMILIES:
        raise _problem(
            args.target,
            "FAMILY",
            f"no offline comparison for {args.target!r}",
            f"use one of: {', '.join(OFFLINE_FAMILIES)}; or give a run with --task",
        )
    if not args.ref:
        raise _problem(args.target, "--ref", "no reference file", "give --ref REF")
    hyps = args.hyp or []
    if len(hyps) < 2:
        raise _problem(
            args.target,
            "--hyp",
            f"{len(hyps)} system file to compare",
            "give --hyp once per system, two or more",
        )
    if len(set(hyps)) < len(hyps):
        raise _problem(args.target, "--hyp", "a file given twice", "give each system's file once")
    if args.systems:
        raise _problem(
            args.target,
            "--systems",
            "--systems chooses a run's systems",
            "list the --hyp files instead",
        )
    if args.target == "asr":
        if len(args.ref) > 1:
            raise _problem(args.target, "--ref", "asr takes one reference file", "give --ref once")
        return scored_or_reported(lambda: asr_systems_from_files(hyps, args.ref[0], args.encoding))
    return scored_or_reported(
        lambda: mt_systems_from_files(hyps, args.ref, args.lang, args.encoding)
    )


def _of_counts(
    task: str,
    metric: str,
    higher_is_better: bool,
    systems: Mapping[str, Any],
    score: Callable[[Any], float],
    units: Callable[[], Mapping[str, Sequence[Any]]] | None = None,
) -> Compared:
    """Files' systems as rows of summed counts (one numpy row per segment) and the
    metric of a sum: resampled with matrix products, aggregated by the same sum."""
    import numpy as np

    from harness.significance import Compared
    from scoring.resampling import Additive

    def aggregate(items: Sequence[Any]) -> float | None:
        return score(np.sum(np.asarray(items), axis=0)) if len(items) else None

    return Compared(
        task=task,
        metric=metric,
        higher_is_better=higher_is_better,
        systems={name: Additive(rows, score) for name, rows in systems.items()},
        aggregate=aggregate,
        units=units,
    )


def systems_from_files(
    family: str,
    hyps: Sequence[str],
    refs: Sequence[str],
    lang: str = "en",
    encoding: str | None = None,
) -> Compared:
    """The systems of one of OFFLINE_FAMILIES's files, read as `onsite score FAMILY`
    reads them (`onsite score --ci` uses it for one file)."""
    if family == "asr":
        return asr_systems_from_files(hyps, refs[0], encoding)
    return mt_systems_from_files(hyps, refs, lang, encoding)


def asr_systems_from_files(hyps: Sequence[str], ref: str, encoding: str | None = None) -> Compared:
    """Each utterance's (C, S, D, I) of each hypothesis file from sclite's alignment
    (trn or Kaldi text in ``encoding``, words, case folded: sclite's defaults and
    sc_stats's input)."""
    import numpy as np

    from harness.kinds.base import refuse_outputs_file
    from scoring.asr import AsrScore

    units = {}
    for hyp in hyps:
        refuse_outputs_file(hyp, "asr")
        units[hyp] = _asr_units(ref, hyp, encoding)
    first = [u.id for u in units[hyps[0]]]
    systems = {}
    for hyp, found in units.items():
        by_id = {u.id: u for u in found}
        if set(by_id) != set(first):
            raise ValueError(
                f"{hyp}: its utterances are not those of {hyps[0]}; give every system's "
                "output for the utterances of the reference"
            )
        rows = [[by_id[i].ops.count(op) for op in "CSDI"] for i in first]
        systems[hyp] = np.array(rows, dtype=np.int64)

    def score(row: np.ndarray) -> float:
        return AsrScore.from_counts([[int(x) for x in row]]).wer

    return _of_counts("asr", "wer", False, systems, score, units=lambda: units)


def _asr_units(ref: str, hyp: str, encoding: str | None) -> list[Any]:
    """A hypothesis file's utterances as `onsite score asr` scores them: an STM against a
    CTM paired segment by segment as sclite pairs them, any other pair by utterance id."""
    from scoring.sctk_stats import unit_errors, unit_errors_from_trn

    if ref.lower().endswith(".stm") and hyp.lower().endswith(".ctm"):
        from scoring.asr_stm import read_paired_ctm_stm

        paired = read_paired_ctm_stm(ref, hyp, encoding=encoding)
        return unit_errors(paired.refs, paired.hyps, speaker_of=paired.speakers)
    return unit_errors_from_trn(ref, hyp, encoding)


def mt_systems_from_files(
    hyps: Sequence[str], refs: Sequence[str], lang: str, encoding: str | None = None
) -> Compared:
    """BLEU's n-gram counts per segment of each hypothesis file, as `onsite score mt`
    reads and scores them (mteval-v13a BLEU, the kind's headline; files in ``encoding``)."""
    import numpy as np

    from harness.kinds.base import refuse_outputs_file
    from scoring.cwmt_xml import load_mt_file
    from scoring.errors import FormatError
    from scoring.mt import NgramStats, bleu_from_stats
    from scoring.mt_batch import score_mt_batch

    # The pairing of `onsite score mt` (scoring/mt_files.py), reused as it stands.
    from scoring.mt_files import _pair, _refuse_empty_references

    ref_sets = []
    for path in refs:
        ref_sets.extend(
            load_mt_file(Path(path), role="reference", encoding=encoding).split_references()
        )
    systems: dict[str, Any] = {}
    first: list[tuple[str, str]] | None = None
    order = 5  # the NgramStats orders (NIST's 5; BLEU reads the first 4)
    n_refs = 0
    for hyp in hyps:
        refuse_outputs_file(hyp, "mt")
        hyp_file = load_mt_file(Path(hyp), role="target", encoding=encoding)
        segments = _pair(hyp_file, ref_sets)
        _refuse_empty_references(segments, lang)
        # A plain-text file's document is its own name: segments are its lines.
        ids = [(s.doc_id if hyp_file.kind == "xml" else "", s.seg_id) for s in segments]
        if first is None:
            first = ids
        elif ids != first:
            raise FormatError(
                hyp,
                None,
                f"{len(ids)} segments that are not those of {hyps[0]} ({len(first)})",
                "give every system's output for the same segments",
            )
        report = score_mt_batch(segments, lang, metrics=("bleu",))
        n_refs = report.n_refs
        rows = np.array(
            [
                [*g.matches, *g.totals, g.ref_len_closest]
                for g in (seg.scores.ngrams for seg in report.segments)
            ],
            dtype=np.int64,
        )
        systems[hyp] = rows

    zeros = (0.0,) * order

    def as_stats(row: np.ndarray) -> NgramStats:
        ints = [int(round(float(x))) for x in row]
        return NgramStats(
            tuple(ints[:order]), tuple(ints[order : 2 * order]), zeros, ints[-1], 0, 0, n_refs
        )

    def score(row: np.ndarray) -> float:
        return bleu_from_stats(as_stats(row))

    return _of_counts("mt", "bleu", True, systems, score)
