"""The judging stations' results in `onsite report`: scores, agreement, warnings."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cli.terminal import table
from harness.judge.results import agreement, station_warnings, stations
from harness.judge.scores import station_scores
from harness.judge.store import JudgeStore


def judging_results(run_dir: Path) -> list[dict[str, Any]]:
    """Per station of the run: its scores (``tables``), agreement and warnings."""
    out = []
    for path in stations(run_dir):
        store = JudgeStore(path)
        try:
            if not store.meta():
                continue
            result = station_scores(store, run_dir)
            result["agreement"] = [a.to_dict() for a in agreement(store, run_dir)]
            result["warnings"] = list(station_warnings(store))
            result["progress"] = store.progress()
            out.append(result)
        finally:
            store.close()
    return out


def _cell(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else ("-" if value is None else value)


def print_results(result: dict[str, Any], console: Console) -> None:
    """One station's tables, agreement lines and warnings."""
    head = f"{result['task']} / {result['test']}"
    if not result["judgements"]:
        judges = len(result.get("progress", []))
        console.print(f"{head}: no judgements yet ({judges} judges)", markup=False)
        return
    for name, rows in result["tables"].items():
        if rows:
            columns = list(rows[0])
            cells = [[_cell(r[c]) for c in columns] for r in rows]
            console.print(table(f"{head}: {name} (95% intervals)", columns, cells))
    if result.get("error"):
        console.print(f"error: {result['error']}", markup=False)
    for a in result["agreement"]:
        alpha = "-" if a["alpha"] is None else f"{a['alpha']:.3f}"
        console.print(
            f"{head}: judge agreement ({a['measure']}): Krippendorff's alpha "
            f"({a['level']}) {alpha} over {a['units']} units",
            markup=False,
        )
    for warning in result["warnings"]:
        console.print(f"{head}: warning: {warning}", markup=False)


def print_judging(run_dir: Path, console: Console) -> None:
    """Every station's results, for `onsite report`."""
    for result in judging_results(run_dir):
        print_results(result, console)


Table = Callable[[Sequence[str], Iterable[Sequence[str]]], str]


def judging_html(run_dir: Path, table_html: Table) -> list[str]:
    """One HTML section per station for the report (cells escaped here)."""
    out = []
    for result in judging_results(run_dir):
        head = html.escape(f"Judging: {result['task']} / {result['test']}")
        parts = [f"<section><h2>{head}</h2>"]
        if not result["judgements"]:
            parts.append("<p>No judgements yet.</p>")
        for name, rows in result["tables"].items():
            if rows:
                columns = list(rows[0])
                cells = [[html.escape(str(_cell(r[c]))) for c in columns] for r in rows]
                parts.append(f"<h3>{html.escape(name)} (95% intervals)</h3>")
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
