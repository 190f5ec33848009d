"""`onsite meta ...`: the meta-evaluation of metrics and test sets, from score files.

Four commands over the functions of `scoring.meta` (file formats in
`scoring.meta_files` and docs/scoring-textcat-ir-meta.md):

* ``correlate``: automatic metrics against human judgements, Pearson and
  Spearman, at system or segment level (survey Table 37), plus the
  metric-metric and human-human matrices (Tables 36, 38) and, with
  ``--length COLUMN``, each metric against sentence length (Table 35);
* ``profile``: difficulty and discriminability of a test set per metric;
* ``stability``: the mean segment score on random subsets of growing size,
  per system, with its 5-95% band (and the figure with ``--plot``);
* ``cluster``: agglomerative clustering of systems on their normalised
  metric vectors, with the dendrogram (``--plot``).

Each prints tables, or one JSON object with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

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

    metrics_table = _read(args.metrics)
    human_table = _read(args.human)
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

    table = _read(args.scores)
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


def _stability(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.errors import FormatError
    from scoring.meta import SubsampleCurve, plot_subsample_curves, subsample_curve

    table = _read(args.segments)
    if table.level != "segment":
        raise FormatError(
            args.segments, None, "system-level scores", "give one row per system and segment"
        )
    column = table.column(args.metric)
    per_system: dict[str, list[float]] = {}
    for key, value in column.items():
        per_system.setdefault(key[0], []).append(value)
    smallest = min(len(v) for v in per_system.values())
    if args.sizes:
        if max(args.sizes) > smallest:
            raise FormatError(
                args.segments,
                None,
                f"size {max(args.sizes)} is more than the {smallest} segments of a system",
                f"give sizes up to {smallest}",
            )
        sizes = args.sizes
    else:
        # Ten steps up to the whole set.
        sizes = sorted({max(1, round(smallest * i / 10)) for i in range(1, 11)})
    curves: dict[str, SubsampleCurve] = {
        s: subsample_curve(v, sizes, repeats=args.repeats, seed=args.seed)
        for s, v in per_system.items()
    }
    if args.plot:
        files = plot_subsample_curves(
            curves, args.plot, title=f"{args.metric} against test-set size", ylabel=args.metric
        )
        sys.stderr.write(f"wrote {files.png} and {files.svg}\n")
    return {
        "metric": args.metric,
        "statistic": "mean of segment scores",
        "repeats": args.repeats,
        "seed": args.seed,
        "full": [
            {"system": s, "segments": len(per_system[s]), "full": c.full} for s, c in curves.items()
        ],
        "curves": [
            {"system": s, "size": n, "mean": m, "sd": sd, "low": lo, "high": hi}
            for s, c in curves.items()
            for n, m, sd, lo, hi in zip(c.sizes, c.mean, c.sd, c.low, c.high, strict=True)
        ],
    }


def _cluster(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.meta import cluster_systems, plot_dendrogram

    table = _read(args.scores)
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


def _read(path: str) -> ScoreTable:
    from scoring.meta_files import read_score_table

    table = read_score_table(path)
    _NOTES.extend(f"{path}: {n}" for n in table.notes)
    return table


_COMMANDS = {
    "correlate": _correlate,
    "profile": _profile,
    "stability": _stability,
    "cluster": _cluster,
}


def add_meta_parser(sub: Any) -> None:
    """Register `onsite meta` and its commands on the CLI's subparsers."""
    meta = sub.add_parser(
        "meta", help="meta-evaluation: correlations, difficulty, stability, clusters"
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
        "--lower-is-better", action="append", default=[], metavar="METRIC", help="an error rate"
    )

    s = commands.add_parser("stability", help="score against test-set size (random subsets)")
    s.add_argument("--segments", required=True, help="segment-level scores (CSV or JSON lines)")
    s.add_argument("--metric", required=True, help="the score column")
    s.add_argument("--sizes", type=_sizes, help="subset sizes, e.g. 10,20,50 (default: 10 steps)")
    s.add_argument("--repeats", type=int, default=50, help="subsets per size (default 50)")
    s.add_argument("--seed", type=int, default=0, help="same seed, same subsets (default 0)")
    s.add_argument("--plot", metavar="STEM", help="write the curves to STEM.png and STEM.svg")

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

    for parser in (c, p, s, k):
        parser.add_argument("--json", action="store_true", help="print one JSON object")
    meta.set_defaults(handler=cmd_meta)


def cmd_meta(args: argparse.Namespace, console: Console) -> int:
    """Run one `onsite meta` command and print its tables (or JSON)."""
    from harness.cli.score import scored_or_reported
    from harness.cli.score_tables import print_result

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
