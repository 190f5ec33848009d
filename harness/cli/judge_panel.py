"""`onsite judge`: build and serve a panel, show its progress, export and score it."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cli.terminal import table
from harness.judge.panel import PanelServer, open_panel
from harness.judge.plan import PlanError
from harness.judge.report import interval_note, judging_results, pool_line, result_cell
from harness.judge.results import agreement, panel_warnings, write_export
from harness.judge.scores import panel_scores
from harness.judge.store import JudgeStore, PanelError
from harness.judge.subset import Subset, SubsetError, describe, stored_subset


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or len(port) > 5 or int(port) > 65535:
        raise PanelError(f"--listen {text!r}: give HOST:PORT, e.g. 0.0.0.0:8017")
    return host, int(port)


def _links(store: JudgeStore, host: str, port: int) -> list[tuple[str, str]]:
    base = f"http://{host}:{port}"
    return [(judge, f"{base}/judge/{token}") for judge, token in store.tokens().items()]


def _print_results(store: JudgeStore, run_dir: Path, console: Console, as_json: bool) -> None:
    result: dict[str, Any] = panel_scores(store, run_dir)
    result["agreement"] = [a.to_dict() for a in agreement(store, run_dir)]
    result["warnings"] = list(panel_warnings(store))
    result["progress"] = store.progress()
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        print_results(result, console)


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    """Open (or build) the panel of a run's task and test; then serve, report or export."""
    run_dir = Path(args.run_dir)
    try:
        subset = None
        if args.subset is not None or args.items is not None:
            items = Path(args.items) if args.items is not None else None
            subset = Subset(args.subset, args.seed or 0, items)
        store, warnings = open_panel(
            run_dir,
            args.task,
            args.test,
            args.judges,
            args.seed,
            args.category,
            subset,
            args.pool_depth,
        )
    except (PanelError, PlanError, SubsetError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    try:
        for warning in warnings:
            console.print(f"warning: {warning}", markup=False)
        if args.export:
            path = write_export(store, run_dir, Path(args.export))
            console.print(f"wrote {path}", markup=False)
            return 0
        if args.results:
            _print_results(store, run_dir, console, args.json)
            return 0
        rows = [(p["judge"], p["answered"], p["total"]) for p in store.progress()]
        if args.progress:
            console.print(table("judging progress", ("judge", "answered", "of"), rows))
            for warning in panel_warnings(store):
                console.print(f"warning: {warning}", markup=False)
            return 0
        try:
            host, port = _listen(args.listen)
        except PanelError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        link_host = args.link_host or host
        if link_host in ("0.0.0.0", "::"):
            # Listening on every interface: judges reach the machine by its name.
            link_host = socket.gethostname()
        meta = store.meta()
        console.print(
            f"{meta['test']} test of task {meta['task']}: {len(rows)} judges, seed {meta['seed']}",
            markup=False,
        )
        held = stored_subset(meta)
        if held:
            console.print(describe(held), markup=False)
        for judge, link in _links(store, link_host, port):
            console.print(f"{judge}  {link}", markup=False)
        console.print(
            f"operator  http://{link_host}:{port}/operator/{meta['operator']}", markup=False
        )
        if args.plan_only:
            return 0
        try:
            # Decodes the plan's audio (blind serving) before the first judge arrives.
            server = PanelServer(store, host, port, link_host=link_host)
        except PanelError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        console.print("serving; Ctrl-C stops (nothing is lost: run again to go on)", markup=False)
        sys.stdout.flush()  # the links must reach a pipe or log before serving blocks
        server.run()
        return 0
    finally:
        store.close()


__all__ = ["cmd_judge"]


def print_results(result: dict[str, Any], console: Console) -> None:
    """One panel's tables, agreement lines and warnings."""
    head = f"{result['task']} / {result['test']}"
    if result.get("category"):
        console.print(f"{head}: items of category {result['category']}", markup=False)
    if result.get("subset"):
        console.print(f"{head}: {describe(result['subset'])}", markup=False)
    if result.get("pool"):
        console.print(f"{head}: {pool_line(result['pool'])}", markup=False)
    if not result["judgements"]:
        judges = len(result.get("progress", []))
        console.print(f"{head}: no judgements yet ({judges} judges)", markup=False)
        return
    for name, rows in result["tables"].items():
        if rows:
            columns = list(rows[0])
            cells = [[result_cell(r[c]) for c in columns] for r in rows]
            console.print(table(f"{head}: {name}{interval_note(columns)}", columns, cells))
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
    """Every panel's results, for `onsite report`."""
    for result in judging_results(run_dir):
        print_results(result, console)
