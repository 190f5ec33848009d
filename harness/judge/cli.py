"""`onsite judge`: build and serve a station, show its progress, export and score it."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cli.terminal import table
from harness.judge.plan import PlanError
from harness.judge.report import print_results
from harness.judge.results import agreement, station_warnings, write_export
from harness.judge.scores import station_scores
from harness.judge.station import StationServer, open_station
from harness.judge.store import JudgeStore, StationError


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or len(port) > 5 or int(port) > 65535:
        raise StationError(f"--listen {text!r}: give HOST:PORT, e.g. 0.0.0.0:8017")
    return host, int(port)


def _links(store: JudgeStore, host: str, port: int) -> list[tuple[str, str]]:
    base = f"http://{host}:{port}"
    return [(judge, f"{base}/judge/{token}") for judge, token in store.tokens().items()]


def _print_results(store: JudgeStore, run_dir: Path, console: Console, as_json: bool) -> None:
    result: dict[str, Any] = station_scores(store, run_dir)
    result["agreement"] = [a.to_dict() for a in agreement(store, run_dir)]
    result["warnings"] = list(station_warnings(store))
    result["progress"] = store.progress()
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        print_results(result, console)


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    """Open (or build) the station of a run's task and test; then serve, report or export."""
    run_dir = Path(args.run_dir)
    try:
        store, warnings = open_station(
            run_dir, args.task, args.test, args.judges, args.seed, args.category
        )
    except (StationError, PlanError, ValueError) as exc:
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
            for warning in station_warnings(store):
                console.print(f"warning: {warning}", markup=False)
            return 0
        try:
            host, port = _listen(args.listen)
        except StationError as exc:
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
        for judge, link in _links(store, link_host, port):
            console.print(f"{judge}  {link}", markup=False)
        console.print(
            f"operator  http://{link_host}:{port}/operator/{meta['operator']}", markup=False
        )
        if args.plan_only:
            return 0
        try:
            # Decodes the plan's audio (blind serving) before the first judge arrives.
            server = StationServer(store, host, port, link_host=link_host)
        except StationError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        console.print("serving; Ctrl-C stops (nothing is lost: run again to go on)", markup=False)
        sys.stdout.flush()  # the links must reach a pipe or log before serving blocks
        server.run()
        return 0
    finally:
        store.close()


__all__ = ["cmd_judge"]
