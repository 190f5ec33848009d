"""`onsite meta ...`: the meta-evaluation of metrics and test sets.

Five commands over the functions of `scoring.meta` (file formats in
`scoring.meta_files` and docs/scoring-textcat-ir-meta.md):

* ``correlate``: automatic metrics against human judgements, Pearson and
  Spearman, at system or segment level (survey Table 37), plus the
  metric-metric and human-human matrices (Tables 36, 38) and, with
  ``--length COLUMN``, each metric against sentence length (Table 35);
* ``profile``: difficulty and spread (X_best - X_worst) / (H - L) of a test set
  per metric;
* ``stability``: the metric on random subsets of growing size, per system, with
  its 5-95% band (and the figure with ``--plot``);
* ``discriminability``: the proportion of system pairs a paired test (bootstrap
  or approximate randomization, as `onsite compare`) separates at ``--alpha``;
* ``cluster``: agglomerative clustering of systems on their normalised
  metric vectors, with the dendrogram (``--plot``).

``stability`` and ``discriminability`` read a file of segment scores (the metric
is then the mean of segment scores), or a run's task or MT/ASR reference and
hypothesis files, read as `onsite compare` reads them: per-item statistics, so
each subset or resample's metric is pooled (BLEU from summed n-gram counts,
docs/significance.md "Meta-evaluation"). Each prints tables, or one JSON object
with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.cli.shared import text_encoding

if TYPE_CHECKING:
    from rich.console import Console

    from harness.significance import Compared
    from scoring.meta_files import ScoreTable

__all__ = ["add_meta_parser", "cmd_meta"]


def _columns(
    table: ScoreTable, wanted: list[str] | None, exclude: tuple[str, ...] = ()
) -> list[str]:
    if wanted:
        for name in wanted:
            table.column(name)  # names the file and the columns if absent
        return wanted
    return [c for c in table.columns if c not in exclude]


def _matrix_rows(matrix: Any, kind: str) -> list[dict[str, Any]]:
    values = matrix.to_dict()[kind]
    return [
        {"": name, **dict(zip(matrix.names, row, strict=True))}
        for name, row in zip(matrix.names, values, strict=True)
    ]


def _correlate(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.errors import FormatError
    from scoring.meta import correlation_matrix, length_correlations, metric_human_correlations

    metrics_table = _read(args.metrics, args.encoding)
    human_table = _read(args.human, args.encoding)
    if metrics_table.level != human_table.level:
        raise FormatError(
            args.human,
            None,
            f"{human_table.level}-level scores, but {args.metrics} is {metrics_table.level}-level",
            "give both files at the same level",
        )
    level = metrics_table.level
    exclude = (args.length,) if args.length else ()
    metric_names = _columns(metrics_table, args.metric, exclude)
    human_names = _columns(human_table, args.judgement)
    metrics = {m: metrics_table.column(m) for m in metric_names}
    human = {h: human_table.column(h) for h in human_names}
    try:
        rows = metric_human_correlations(metrics, human, level)
    except ValueError as exc:
        raise FormatError(
            args.human, None, str(exc), f"score the same keys as {args.metrics}"
        ) from None
    result: dict[str, Any] = {
        "level": level,
        "pairs": rows[0].n if rows else 0,
        "correlations": [
            {"metric": c.a, "human": c.b, "pearson": d["pearson"], "spearman": d["spearman"]}
            for c in rows
            for d in [c.to_dict()]
        ],
    }
    if len(metrics) >= 2:
        m = correlation_matrix(metrics, level)
        result["metrics_pearson"] = _matrix_rows(m, "pearson")
        result["metrics_spearman"] = _matrix_rows(m, "spearman")
    if len(human) >= 2:
        h = correlation_matrix(human, level)
        result["human_pearson"] = _matrix_rows(h, "pearson")
        result["human_spearman"] = _matrix_rows(h, "spearman")
    if args.length:
        lengths = metrics_table.column(args.length)
        result["length"] = [
            {"metric": name, "pearson": d["pearson"], "spearman": d["spearman"]}
            for name, c in length_correlations(metrics, lengths).items()
            for d in [c.to_dict()]
        ]
    return result


def _range(text: str) -> tuple[str, float, float]:
    """``METRIC=LOW:HIGH``."""
    try:
        name, span = text.split("=", 1)
        low, high = (float(x) for x in span.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write METRIC=LOW:HIGH, e.g. nist=0:15"
        ) from None
    if not name or not high > low:
        raise argparse.ArgumentTypeError(f"{text!r}: need a metric name and LOW < HIGH")
    return name, low, high


def _profile(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.meta import test_set_profile

    table = _read(args.scores, args.encoding)
    by_system = table.by_system()
    names = _columns(table, args.metric)
    spans = {name: (low, high) for name, low, high in args.range}
    for name in list(spans) + list(args.lower_is_better):
        table.column(name)
    rows = []
    for name in names:
        low, high = spans.get(name, (0.0, 1.0))
        scores = {s: v[name] for s, v in by_system.items()}
        profile = test_set_profile(scores, high, low, name not in args.lower_is_better)
        rows.append({"metric": name, **profile.to_dict()})
    return {"systems": len(by_system), "metrics": rows}


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give sizes like 10,20,50") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be positive")
    return sizes


def _usage(args: argparse.Namespace, problem: str, fix: str) -> Exception:
    from scoring.errors import FormatError

    return FormatError(f"onsite meta {args.meta_command}", None, problem, fix)


def _source(args: argparse.Namespace) -> str:
    """Which input the command reads: "segments", "run" or "files" (exactly one)."""
    given = [
        name
        for name, present in (
            ("segments", args.segments is not None),
            ("run", args.run is not None),
            ("files", bool(args.hyp or args.ref)),
        )
        if present
    ]
    if len(given) != 1:
        raise _usage(
            args,
            f"{' and '.join(given) or 'no input'} given",
            "give one of --segments FILE --metric M, --run RUN --task T, or --ref REF --hyp A ...",
        )
    if given[0] != "run" and (args.task is not None or args.systems):
        raise _usage(
            args,
            "--task and --systems choose a run's",
            "give --run RUN with them, or leave them out",
        )
    if given[0] != "segments" and args.metric:
        raise _usage(
            args,
            "--metric names a column of --segments",
            "leave it out: a run or files are scored with the kind's headline metric",
        )
    if given[0] == "run" and args.task is None:
        raise _usage(args, "which task of the run?", "give --task T")
    return given[0]


def _pooled(args: argparse.Namespace) -> Compared:
    """A run's task or MT/ASR files as per-item statistics and their metric's aggregate,
    read as `onsite compare` reads them (so pooled: BLEU from summed n-gram counts)."""
    from harness.cli import compare

    if _source(args) == "run":
        target = argparse.Namespace(target=args.run, task=args.task, systems=args.systems)
        return compare.systems_from_run(target)
    hyps = list(args.hyp or [])
    if not args.ref or not hyps:
        raise _usage(args, "files need --ref and --hyp", "give --ref REF --hyp A [--hyp B ...]")
    if len(set(hyps)) < len(hyps):
        raise _usage(args, "a --hyp file given twice", "give each system's file once")
    if args.family == "asr":
        if len(args.ref) > 1:
            raise _usage(args, "asr takes one reference file", "give --ref once")
        return compare.asr_systems_from_files(hyps, args.ref[0], args.encoding)
    return compare.mt_systems_from_files(hyps, args.ref, args.lang, args.encoding)


def _statistic(compared: Compared) -> str:
    return f"{compared.metric} pooled from per-item statistics"


def _segment_systems(
    args: argparse.Namespace, metric: str, table: ScoreTable, aligned: bool
) -> dict[str, list[float]]:
    """Each system's segment scores of one column; with ``aligned``, in the same segment
    order for every system (a paired test needs the same segments)."""
    per_system: dict[str, dict[tuple[str, ...], float]] = {}
    for key, value in table.column(metric).items():
        per_system.setdefault(key[0], {})[key[1:]] = value
    if not aligned:
        return {s: list(v.values()) for s, v in per_system.items()}
    names = list(per_system)
    first = per_system[names[0]]
    for name in names[1:]:
        if set(per_system[name]) != set(first):
            from scoring.errors import FormatError

            raise FormatError(
                args.segments,
                None,
                f"system {name} does not score the segments {names[0]} scores",
                "give every system a row for every segment (a paired test compares them "
                "segment by segment)",
            )
    return {s: [v[k] for k in first] for s, v in per_system.items()}


def _segment_table(args: argparse.Namespace) -> ScoreTable:
    from scoring.errors import FormatError

    table = _read(args.segments, args.encoding)
    if table.level != "segment":
        raise FormatError(
            args.segments, None, "system-level scores", "give one row per system and segment"
        )
    return table


def _stability(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.errors import FormatError
    from scoring.meta import (
        SubsampleCurve,
        n_items,
        plot_subsample_curves,
        pooled_subsample_curve,
        subsample_curve,
    )

    where: str
    if _source(args) == "segments":
        if not args.metric or len(args.metric) != 1:
            raise _usage(args, "stability follows one --metric", "give --metric NAME once")
        metric = args.metric[0]
        where = args.segments
        per_system = _segment_systems(args, metric, _segment_table(args), aligned=False)
        counts = {s: len(v) for s, v in per_system.items()}
        statistic = "mean of segment scores"
        items: dict[str, Any] = per_system
    else:
        compared = _pooled(args)
        metric, where = compared.metric, args.run or compared.task
        _NOTES.extend(compared.notes)
        items = dict(compared.systems)
        counts = {s: n_items(v) for s, v in items.items()}
        statistic = _statistic(compared)
    smallest = min(counts.values())
    if args.sizes:
        if max(args.sizes) > smallest:
            raise FormatError(
                where,
                None,
                f"size {max(args.sizes)} is more than the {smallest} segments of a system",
                f"give sizes up to {smallest}",
            )
        sizes = args.sizes
    else:
        # Ten steps up to the whole set.
        sizes = sorted({max(1, round(smallest * i / 10)) for i in range(1, 11)})
    if args.segments is not None:
        curves: dict[str, SubsampleCurve] = {
            s: subsample_curve(v, sizes, repeats=args.repeats, seed=args.seed)
            for s, v in items.items()
        }
    else:
        curves = {
            s: pooled_subsample_curve(
                v, compared.aggregate, sizes, repeats=args.repeats, seed=args.seed
            )
            for s, v in items.items()
        }
    if args.plot:
        files = plot_subsample_curves(
            curves, args.plot, title=f"{metric} against test-set size", ylabel=metric
        )
        sys.stderr.write(f"wrote {files.png} and {files.svg}\n")
    return {
        "metric": metric,
        "statistic": statistic,
        "repeats": args.repeats,
        "seed": args.seed,
        "full": [
            {"system": s, "segments": counts[s], "full": _number(c.full)} for s, c in curves.items()
        ],
        "curves": [
            {
                "system": s,
                "size": n,
                "mean": _number(m),
                "sd": _number(sd),
                "low": _number(lo),
                "high": _number(hi),
            }
            for s, c in curves.items()
            for n, m, sd, lo, hi in zip(c.sizes, c.mean, c.sd, c.low, c.high, strict=True)
        ],
    }


def _number(value: float | None) -> float | None:
    # JSON has no NaN: an undefined figure (no subset with a value) is null.
    return None if value is None or math.isnan(value) else value


def _discriminability(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.meta import mean_of_scores, pair_separation
    from scoring.resampling import DEFAULT_SAMPLES, DEFAULT_SEED

    if not 0 < args.alpha < 1:
        raise _usage(args, f"--alpha {args.alpha}", "give a level in (0, 1), e.g. 0.05")
    if args.samples is not None and args.samples < 1:
        raise _usage(args, f"--samples {args.samples}", "give 1 or more")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    # (metric, statistic, higher is better, systems, aggregate) per metric followed.
    followed: list[tuple[str, str, bool, Mapping[str, Any], Any]] = []
    if _source(args) == "segments":
        table = _segment_table(args)
        for name in list(args.metric or []) + list(args.lower_is_better):
            table.column(name)
        wanted = list(args.metric or table.columns)
        for name in wanted:
            per_system = _segment_systems(args, name, table, aligned=True)
            systems = {s: mean_of_scores(v) for s, v in per_system.items()}
            followed.append(
                (
                    name,
                    "mean of segment scores",
                    name not in args.lower_is_better,
                    systems,
                    _mean,
                )
            )
    else:
        if args.lower_is_better:
            raise _usage(
                args,
                "--lower-is-better names a column of --segments",
                "leave it out: the kind knows its metric's direction",
            )
        compared = _pooled(args)
        _NOTES.extend(compared.notes)
        followed.append(
            (
                compared.metric,
                _statistic(compared),
                compared.higher_is_better,
                compared.systems,
                compared.aggregate,
            )
        )
    rows: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    samples = DEFAULT_SAMPLES[args.test] if args.samples is None else args.samples
    for metric, statistic, higher, compared_systems, aggregate in followed:
        if len(compared_systems) < 2:
            raise _usage(
                args, f"{len(compared_systems)} system to compare", "give two or more systems"
            )
        found = pair_separation(
            compared_systems,
            aggregate,
            test=args.test,
            samples=samples,
            seed=seed,
            alpha=args.alpha,
            higher_is_better=higher,
        )
        rows.append(
            {
                "metric": metric,
                "statistic": statistic,
                "higher_is_better": higher,
                "items": found.comparison.items,
                "systems": found.systems,
                "pairs": found.pairs,
                "separated": found.separated,
                "proportion": _number(found.proportion),
            }
        )
        pairs.extend(
            {
                "metric": metric,
                "a": p.a,
                "b": p.b,
                "difference": _number(p.statistic),
                "p": p.p,
                "better": p.better,
            }
            for p in found.comparison.pairs
        )
    return {
        "test": args.test,
        "alpha": args.alpha,
        "seed": seed,
        "samples": samples,
        "metrics": rows,
        "comparisons": pairs,
    }


def _mean(items: Sequence[Any]) -> float | None:
    # The aggregate of mean_of_scores's rows (score, 1): their mean.
    return float(sum(r[0] for r in items) / len(items)) if len(items) else None


def _cluster(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.meta import cluster_systems, plot_dendrogram

    table = _read(args.scores, args.encoding)
    by_system = table.by_system()
    names = _columns(table, args.metric)
    for name in args.lower_is_better:
        table.column(name)
    tree = cluster_systems(
        {s: {m: v[m] for m in names} for s, v in by_system.items()},
        method=args.method,
        normalization=args.normalization,
        lower_is_better=[n for n in args.lower_is_better if n in names],
    )
    if args.plot:
        files = plot_dendrogram(tree, args.plot)
        sys.stderr.write(f"wrote {files.png} and {files.svg}\n")
    d = tree.to_dict()
    n = len(tree.labels)
    result: dict[str, Any] = {
        "method": tree.method,
        "normalization": tree.normalization,
        "systems": n,
        "leaf_order": " ".join(d["leaf_order"]),
        "merges": [
            {
                "step": i + 1,
                "a": _node(tree.labels, a),
                "b": _node(tree.labels, b),
                "distance": dist,
                "size": size,
            }
            for i, (a, b, dist, size) in enumerate(d["merges"])
        ],
    }
    if args.clusters:
        if not 1 <= args.clusters <= n:
            raise ValueError(f"--clusters must lie in 1..{n}")
        result["clusters"] = [
            {"cluster": i + 1, "systems": " ".join(g)}
            for i, g in enumerate(tree.clusters(args.clusters))
        ]
    return result


def _node(labels: tuple[str, ...], node: int) -> str:
    # Leaves by name; merged clusters as scipy numbers them (n + step), shown as "#step".
    n = len(labels)
    return labels[node] if node < n else f"#{node - n + 1}"


# What the readers left out (report tasks not scored for every system), said on stderr.
_NOTES: list[str] = []


def _read(path: str, encoding: str | None) -> ScoreTable:
    from scoring.meta_files import read_score_table

    table = read_score_table(path, encoding)
    _NOTES.extend(f"{path}: {n}" for n in table.notes)
    return table


_COMMANDS = {
    "correlate": _correlate,
    "profile": _profile,
    "stability": _stability,
    "discriminability": _discriminability,
    "cluster": _cluster,
}


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    """The three inputs of stability and discriminability: a file of segment scores,
    a run's task, or MT/ASR reference and hypothesis files (docs/significance.md)."""
    parser.add_argument("--segments", help="segment-level scores (CSV or JSON lines)")
    parser.add_argument(
        "--metric", action="append", help="with --segments: the score column (repeatable)"
    )
    parser.add_argument("--run", help="a run directory (or postgresql://...) with --task")
    parser.add_argument("--task", help="with --run: the task whose systems are read")
    parser.add_argument("--systems", help="with --run: comma-separated systems (default: all)")
    parser.add_argument("--ref", action="append", help="a reference file (mt: repeatable)")
    parser.add_argument("--hyp", action="append", help="a system's output file; repeatable")
    parser.add_argument(
        "--family", choices=("mt", "asr"), default="mt", help="what --ref/--hyp hold (mt)"
    )
    parser.add_argument(
        "--lang", choices=("en", "zh", "ja"), default="en", help="mt: target language"
    )


def add_meta_parser(sub: Any) -> None:
    """Register `onsite meta` and its commands on the CLI's subparsers."""
    meta = sub.add_parser(
        "meta",
        help="meta-evaluation: correlations, difficulty, stability, pairs separated, clusters",
    )
    commands = meta.add_subparsers(dest="meta_command", required=True)

    c = commands.add_parser("correlate", help="metrics against human judgements (Tables 35-38)")
    c.add_argument("--metrics", required=True, help="automatic scores (CSV or JSON, see docs)")
    c.add_argument("--human", required=True, help="human scores, same systems (and segments)")
    c.add_argument("--metric", action="append", help="only this metric column (repeatable)")
    c.add_argument("--judgement", action="append", help="only this human column (repeatable)")
    c.add_argument("--length", metavar="COLUMN", help="a --metrics column of sentence lengths")

    p = commands.add_parser("profile", help="difficulty and discriminability of a test set")
    p.add_argument("--scores", required=True, help="system-level scores (CSV or JSON)")
    p.add_argument("--metric", action="append", help="only this metric (repeatable)")
    p.add_argument(
        "--range",
        type=_range,
        action="append",
        default=[],
        metavar="METRIC=LOW:HIGH",
        help="lowest and highest possible score (default 0:1), e.g. nist=0:15",
    )
    p.add_argument(
        "--lower-is-better",
        action="append",
        default=[],
        metavar="METRIC",
        help="an error rate: best is lowest, difficulty (H - mean) / (H - L), higher = easier",
    )

    s = commands.add_parser(
        "stability", help="score against test-set size (random subsets, pooled where it can)"
    )
    _add_inputs(s)
    s.add_argument("--sizes", type=_sizes, help="subset sizes, e.g. 10,20,50 (default: 10 steps)")
    s.add_argument("--repeats", type=int, default=50, help="subsets per size (default 50)")
    s.add_argument("--seed", type=int, default=0, help="same seed, same subsets (default 0)")
    s.add_argument("--plot", metavar="STEM", help="write the curves to STEM.png and STEM.svg")

    d = commands.add_parser(
        "discriminability", help="proportion of system pairs a metric separates at --alpha"
    )
    _add_inputs(d)
    d.add_argument(
        "--lower-is-better", action="append", default=[], metavar="METRIC", help="an error rate"
    )
    d.add_argument(
        "--test",
        choices=("bootstrap", "ar"),
        default="bootstrap",
        help="paired bootstrap or approximate randomization (default bootstrap)",
    )
    d.add_argument(
        "--samples", type=int, help="resamples or trials (default 1000 bootstrap, 10000 ar)"
    )
    d.add_argument("--seed", type=int, help="the random seed (default 12345, sacrebleu's)")
    d.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")

    k = commands.add_parser("cluster", help="cluster systems on their metrics; dendrogram")
    k.add_argument("--scores", required=True, help="system-level scores (CSV or JSON)")
    k.add_argument("--metric", action="append", help="only this metric (repeatable)")
    k.add_argument("--method", choices=("average", "single", "complete"), default="average")
    k.add_argument("--normalization", choices=("zscore", "minmax"), default="zscore")
    k.add_argument(
        "--lower-is-better", action="append", default=[], metavar="METRIC", help="an error rate"
    )
    k.add_argument("--clusters", type=int, metavar="K", help="also list the K clusters")
    k.add_argument("--plot", metavar="STEM", help="write the dendrogram to STEM.png and STEM.svg")

    for parser in (c, p, s, d, k):
        parser.add_argument(
            "--encoding",
            type=text_encoding,
            help="the input files' encoding: utf-8 (the default; a BOM is allowed), gb2312, "
            "gbk, gb18030, big5, utf-16 (with a BOM), utf-16le; left out, a CWMT XML "
            "file's declaration is read",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")
    meta.set_defaults(handler=cmd_meta)


def cmd_meta(args: argparse.Namespace, console: Console) -> int:
    """Run one `onsite meta` command and print its tables (or JSON)."""
    from harness.cli.score_tables import print_result
    from harness.cli.shared import scored_or_reported

    result = scored_or_reported(lambda: _COMMANDS[args.meta_command](args))
    if result is None:
        return 2
    for note in _NOTES:
        sys.stderr.write(f"note: {note}\n")
    _NOTES.clear()
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        print_result(console, f"meta {args.meta_command}", result)
    return 0
