"""The `onsite` command: run, check, status, report."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

# Each command imports what it uses when it runs: the controller, runners,
# report (HTML, plots) and scorers cost most of a second to import, and
# `onsite --help`, `onsite status` or `onsite score ir` need none of them.

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """Run (or resume) every job of a site."""
    from .controller import Controller
    from .leaderboard import leaderboard
    from .render import ProgressListener, leaderboard_table
    from .site import load_site
    from .store import RunStore

    site = load_site(args.site)
    run_dir = (Path(args.runs).resolve() / site.name) if args.runs else site.run_dir
    if args.fresh and (run_dir / "journal.jsonl").exists():
        archived = run_dir.with_name(f"{run_dir.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        run_dir.rename(archived)
        console.print(f"previous run moved to {archived}", markup=False)
    store = RunStore(run_dir, secrets.token_hex(6), site.config.site.fsync_seconds)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        store.keep_site_copy(site.path, site.root)
        controller = Controller(site, store, limit=args.limit)
        controller.load_testsets()
        with ProgressListener(console) as listener:
            controller.listener = listener
            results = controller.run()
    except KeyboardInterrupt:
        store.record("session_interrupted")
        console.print(
            f"interrupted; everything recorded is kept. Run the same command to resume: "
            f"onsite run {args.site}",
            markup=False,
        )
        return 130
    finally:
        store.close()
    console.print(f"run directory: {run_dir}", markup=False)
    console.print(leaderboard_table(leaderboard(run_dir, controller.testsets)))
    failed = [r for r in results if r.failed]
    for job in failed:
        console.print(f"job {job.task} / {job.system} failed: {job.failed}", markup=False)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """Dry run: validate, start each system, run a few items; writes nothing to the run dir."""
    from .dryrun import dry_run, probe_devices
    from .render import ProgressListener, table
    from .site import load_site

    site = load_site(args.site)
    console.print(f"{site.path}: valid; {len(site.jobs())} job(s)", markup=False)
    probes = probe_devices(site)
    if probes:
        console.print(
            table(
                "Device probes",
                ("device", "check", "result", "detail"),
                [
                    (device, p.name, "ok" if p.ok else "FAILED", p.detail)
                    for device, checks in probes.items()
                    for p in checks
                ],
            )
        )
    broken = {device for device, checks in probes.items() if not all(p.ok for p in checks)}
    jobs = [
        (task, system)
        for task, system in site.jobs()
        if site.config.systems[system].device not in broken
    ]
    with ProgressListener(console, verbose_items=True) as listener:
        results = dry_run(site, args.items, listener, jobs) if jobs else []
    rows = []
    for result in results:
        setup = result.starts[0]["setup_seconds"] if result.starts else None
        for record in result.items:
            rows.append(
                (
                    result.job.task,
                    result.job.system,
                    f"{setup:.2f}" if setup is not None else "-",
                    record["item"],
                    record["verdict"],
                    f"{record['seconds']:.3f}",
                    f"{record['budget_seconds']:.3f}"
                    if record["budget_seconds"] is not None
                    else "-",
                    (record.get("message") or "")[:80],
                )
            )
        if not result.items:
            rows.append(
                (
                    result.job.task,
                    result.job.system,
                    "-",
                    "-",
                    "not started",
                    "-",
                    "-",
                    (result.job.failed or "")[:80],
                )
            )
    console.print(
        table(
            "Dry run",
            ("task", "system", "setup s", "item", "verdict", "seconds", "budget s", "message"),
            rows,
        )
    )
    ok = not broken and all(r.ok for r in results)
    console.print("check passed" if ok else "check found problems (see above)", markup=False)
    return EXIT_OK if ok else EXIT_FAILED


def _controller_running(run_dir: Path) -> bool:
    try:
        fd = os.open(run_dir / "run.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    """Where a run stands, from its journal."""
    from .render import table
    from .run_site import site_of_run
    from .store import RunState

    run_dir = Path(args.run_dir)
    site = site_of_run(run_dir)
    state = RunState.from_journal(run_dir / "journal.jsonl")
    running = _controller_running(run_dir)
    loaded = {r["task"]: r for r in state.records if r["event"] == "testset_loaded"}
    rows = []
    for task, system in site.jobs():
        records = state.job_records(task, system)
        done = state.completed.get((task, system), {})
        dispatched = {r["item"] for r in records if r["event"] == "dispatched"}
        in_flight = sorted(dispatched - set(done))
        restarts = sum(1 for r in records if r["event"] == "system_started" and r.get("restart"))
        ended = next(
            (r["event"] for r in reversed(records) if r["event"] in ("job_finished", "job_failed")),
            "",
        )
        total = loaded.get(task, {}).get("items", "?")
        last = time.strftime("%H:%M:%S", time.localtime(records[-1]["wall"])) if records else "-"
        rows.append(
            (
                task,
                system,
                f"{len(done)}/{total}",
                ", ".join(in_flight) or "-",
                restarts,
                ended or ("running" if running else "pending"),
                last,
            )
        )
    state_text = "a controller is running" if running else "no controller is running"
    console.print(f"{run_dir}: {state_text}; {len(state.records)} journal records", markup=False)
    console.print(
        table("Status", ("task", "system", "done", "in flight", "restarts", "state", "last"), rows)
    )
    return EXIT_OK


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """The leaderboard of a run, as a table or JSON; the full report as HTML, CSV or JSON files."""
    from .leaderboard import leaderboard, site_of_run
    from .render import leaderboard_table

    run_dir = Path(args.run_dir)
    if args.html or args.csv or args.json_file:
        from .report import build_report, write_csv, write_html, write_json

        site = site_of_run(run_dir)
        data = build_report(
            run_dir,
            limits={task: cfg.rules.model_dump() for task, cfg in site.config.tasks.items()},
            weights=site.config.site.running_score.model_dump(),
        )
        for path, write in (
            (args.html, write_html),
            (args.csv, write_csv),
            (args.json_file, write_json),
        ):
            if path:
                write(data, Path(path))
                console.print(f"wrote {Path(path).resolve()}", markup=False)
        if not args.json:
            return EXIT_OK
    rows = leaderboard(run_dir)
    if args.json:
        data = []
        for row in rows:
            item = row.to_dict()
            if not args.full:
                item.pop("scores")
            data.append(item)
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    console.print(leaderboard_table(rows))
    return EXIT_OK


def cmd_devices(args: argparse.Namespace, console: Console) -> int:
    """List serial ports and probe each (or the given ones) with HELLO."""
    from runners import list_serial_ports, probe_serial_port

    from .render import table

    ports = list(args.port) or [p.device for p in list_serial_ports()]
    if not ports:
        console.print("no serial ports found; give one with --port PATH", markup=False)
        return EXIT_OK
    descriptions = {p.device: p.description for p in list_serial_ports()}
    rows = []
    for port in ports:
        result = probe_serial_port(port, args.baud, args.timeout)
        if result.ready is not None:
            ready = result.ready
            found = f"{ready.name} {ready.software}"
            rates = ", ".join(str(r) for r in ready.sample_rates)
            rtt = f"{1000 * result.round_trip_seconds:.1f}" if result.round_trip_seconds else "-"
            detail = f"max input {ready.max_input} B; rates {rates} Hz; ping {rtt} ms"
        else:
            found, detail = "no answer", result.error
        rows.append((port, descriptions.get(port, ""), found, detail))
    console.print(table("Serial devices", ("port", "description", "device", "detail"), rows))
    return EXIT_OK if all(r[2] != "no answer" for r in rows) else EXIT_FAILED


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for (package metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from . import __version__

        sys.stdout.write(f"onsite {__version__}\n")
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, kept separate so tests and docs can inspect it.

    Given the command line, `onsite score FAMILY ...` gets a parser with that
    family only (see `add_score_parser`); help and errors are the same.
    """
    parser = argparse.ArgumentParser(
        prog="onsite", description="On-site evaluation harness for participant systems."
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run (or resume) the evaluation a site file describes")
    run.add_argument("site", help="the site file, e.g. site_config/demo.toml")
    run.add_argument("--limit", type=int, help="only the first N items of each task")
    run.add_argument(
        "--fresh", action="store_true", help="move an earlier run aside and start again"
    )
    run.add_argument("--runs", help="put the run directory under this one instead of [site] runs")
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="dry run: start each system and try a few items")
    check.add_argument("site")
    check.add_argument("--items", type=int, default=3, help="items per job (default 3)")
    check.set_defaults(handler=cmd_check)

    status = sub.add_parser("status", help="where a run stands")
    status.add_argument("run_dir")
    status.set_defaults(handler=cmd_status)

    report = sub.add_parser("report", help="the leaderboard of a run")
    report.add_argument("run_dir")
    report.add_argument("--json", action="store_true", help="one JSON array of rows")
    report.add_argument(
        "--full", action="store_true", help="with --json: include every score breakdown"
    )
    report.add_argument("--html", metavar="FILE", help="write the self-contained HTML report")
    report.add_argument("--csv", metavar="FILE", help="write one CSV line per task and system")
    report.add_argument(
        "--json-file", metavar="FILE", help="write the whole report (verdicts, manifest) as JSON"
    )
    report.set_defaults(handler=cmd_report)

    devices = sub.add_parser("devices", help="list serial ports and probe them with HELLO")
    devices.add_argument("--port", action="append", default=[], help="probe this port (or URL)")
    devices.add_argument("--baud", type=int, default=115200)
    devices.add_argument("--timeout", type=float, default=3.0, help="seconds to wait per port")
    devices.set_defaults(handler=cmd_devices)

    from .score_cmd import add_score_parser

    family = None
    if argv is not None and len(argv) >= 2 and argv[0] == "score":
        family = argv[1]
    add_score_parser(sub, only=family)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `onsite` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    from .render import make_console
    from .store import RunLocked

    console = make_console()
    try:
        return int(args.handler(args, console))
    except InputError as exc:
        # Plain writes: an error line must never be re-wrapped or coloured.
        for problem in exc.problems:
            sys.stderr.write(f"error: {problem}\n")
        return EXIT_BAD_INPUT
    except RunLocked as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
