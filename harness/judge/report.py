"""The judging panels' results for the report: scores, agreement, warnings (the terminal's
rendering of them is harness/cli/judge_panel.py's)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.judge.results import agreement, panel_warnings, panels
from harness.judge.scores import panel_scores
from harness.judge.store import JudgeStore
from harness.judge.subset import describe


def judging_results(run_dir: Path) -> list[dict[str, Any]]:
    """Per panel of the run: its scores (``tables``), agreement and warnings."""
    out = []
    for path in panels(run_dir):
        store = JudgeStore(path)
        try:
            if not store.meta():
                continue
            result = panel_scores(store, run_dir)
            result["agreement"] = [a.to_dict() for a in agreement(store, run_dir)]
            result["warnings"] = list(panel_warnings(store))
            result["progress"] = store.progress()
            out.append(result)
        finally:
            store.close()
    return out


def pool_line(pool: dict[str, Any]) -> str:
    """The relevance pool in one sentence, each run's contribution in the tables."""
    runs = "; ".join(
        f"{system} {r['contributed']} ({r['unique']} only its own)"
        for system, r in pool["runs"].items()
    )
    return (
        f"Pool of depth {pool['depth']}: {pool['documents']} documents, "
        f"{pool['mean_per_topic']:.1f} per topic on average; contributed by run: {runs}."
    )


def interval_note(columns: Sequence[str]) -> str:
    """ " (95% intervals)" after a table's name when its columns hold intervals."""
    return " (95% intervals)" if any("ci_" in c for c in columns) else ""


def result_cell(value: Any) -> Any:
    """A table cell of a panel's results: 4 significant digits, "-" for none."""
    return f"{value:.4g}" if isinstance(value, float) else ("-" if value is None else value)


Table = Callable[[Sequence[str], Iterable[Sequence[str]]], str]


def judging_html(run_dir: Path, table_html: Table) -> list[str]:
    """One HTML section per panel for the report (cells escaped here)."""
    out = []
    for result in judging_results(run_dir):
        head = html.escape(f"Judging: {result['task']} / {result['test']}")
        parts = [f"<section><h2>{head}</h2>"]
        if result.get("category"):
            parts.append(f"<p>Items of category {html.escape(result['category'])}.</p>")
        if result.get("subset"):
            line = describe(result["subset"])
            parts.append(f"<p>{html.escape(line[0].upper() + line[1:])}.</p>")
        if result.get("pool"):
            parts.append(f"<p>{html.escape(pool_line(result['pool']))}</p>")
        if not result["judgements"]:
            parts.append("<p>No judgements yet.</p>")
        for name, rows in result["tables"].items():
            if rows:
                columns = list(rows[0])
                cells = [[html.escape(str(result_cell(r[c]))) for c in columns] for r in rows]
                parts.append(f"<h3>{html.escape(name)}{interval_note(columns)}</h3>")
                parts.append(table_html([html.escape(c) for c in columns], cells))
        for a in result["agreement"] if result["judgements"] else []:
            alpha = "-" if a["alpha"] is None else f"{a['alpha']:.3f}"
            parts.append(
                f"<p>Judge agreement ({html.escape(a['measure'])}): Krippendorff's alpha "
                f"({a['level']}) {alpha} over {a['units']} units.</p>"
            )
        for warning in result["warnings"] if result["judgements"] else []:
            parts.append(f"<p><strong>Warning:</strong> {html.escape(warning)}</p>")
        parts.append("</section>")
        out.append("\n".join(parts))
    return out
