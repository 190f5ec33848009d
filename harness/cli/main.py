"""The `onsite` command: run, check, status, report."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem
from harness.judge.args import add_arguments as add_judge_arguments

if TYPE_CHECKING:
    import socket

    from rich.console import Console

    from harness.engine.controller import Controller
    from harness.site import Site
    from harness.store.directory import JobKey, RunStore

# Each command imports what it uses when it runs: the controller, runners,
# report (HTML, plots) and scorers cost most of a second to import, and
# `onsite --help`, `onsite status` or `onsite score ir` need none of them.

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# Errors of the disk under the run directory: the run stops cleanly and can resume.
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS}


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _fresh_run_dir(run_dir: Path, console: Console) -> int | None:
    """Move an earlier run aside for --fresh, holding its lock while doing so.

    The lock is taken before anything moves, so --fresh while a controller works there
    is refused instead of starting a second controller beside it. Returns the lock fd
    of the new, empty run directory (or None when there was nothing to move).
    """
    from harness.store.directory import lock_run_dir

    if not (run_dir / "journal.jsonl").exists():
        return None
    old_lock = lock_run_dir(run_dir)
    try:
        archived = run_dir.with_name(f"{run_dir.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        run_dir.rename(archived)
        new_lock = lock_run_dir(run_dir)
    finally:
        os.close(old_lock)
    console.print(f"previous run moved to {archived}", markup=False)
    return new_lock


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """Run (or resume) every job of a site."""
    from harness.cli.render import ProgressListener, leaderboard_table
    from harness.engine.controller import DEVICE_DOWN, SKIPPED, Controller
    from harness.leaderboard import leaderboard
    from harness.site import load_site
    from harness.store.directory import RunStore, RunStoreError
    from harness.store.run_model import RunModel

    site = load_site(args.site)
    run_dir = (Path(args.runs).resolve() / site.name) if args.runs else site.run_dir
    if site.config.site.store is not None or args.station is not None or args.max_jobs:
        from harness.cli.station import run_station

        jobs = _selected_jobs(site, args.task, args.system)
        # Bound before anything starts, as for one controller.
        bound = _listen(args.console) if args.console else None
        return run_station(
            args,
            site,
            run_dir,
            jobs,
            console,
            None
            if bound is None
            else lambda controller, location: _console_beside(
                controller, location, bound, console, args.link_host
            ),
        )
    lock_fd = _fresh_run_dir(run_dir, console) if args.fresh else None
    jobs = _selected_jobs(site, args.task, args.system)
    # Bound before anything starts, so a port in use is refused with nothing changed.
    listen = _listen(args.console) if args.console else None
    import secrets  # here: `onsite score` and the other short commands never need it

    # The outputs files are rebuilt in the same pass over the journal as the replay.
    store = RunStore(
        run_dir, secrets.token_hex(6), site.config.site.fsync_seconds, lock_fd, site.jobs()
    )
    resume = f"onsite run {args.site}" + "".join(
        f" --{flag} {name}" for flag in ("task", "system") for name in getattr(args, flag)
    )
    background = None
    try:
        store.keep_site_copy(site.path, site.root)
        controller = Controller(
            site, store, limit=args.limit, accept_site_change=args.accept_site_change
        )
        controller.load_testsets()
        if listen is not None:
            background = _console_beside(controller, run_dir, listen, console, args.link_host)
        with ProgressListener(
            console, testsets=controller.testsets, site=site, outputs=store.outputs_path
        ) as listener:
            controller.listener = listener
            results = controller.run(jobs)
    except KeyboardInterrupt:
        _quietly_record(store, "session_interrupted", reason="stopped by the operator")
        console.print(
            f"interrupted; everything recorded is kept. Run the same command to resume: {resume}",
            markup=False,
        )
        return 130
    except (RunStoreError, OSError) as exc:
        if isinstance(exc, OSError):
            if exc.errno not in _DISK_ERRORS:
                raise
            exc = RunStoreError.from_os_error(exc, run_dir)
        _quietly_record(store, "session_interrupted", reason=str(exc))
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
    except InputError:
        _quietly_record(store, "session_interrupted", reason="refused: bad or changed input")
        raise
    finally:
        if background is not None:
            background.stop()
        try:
            store.close()
        except RunStoreError as exc:
            sys.stderr.write(f"error: {exc}\n")
    console.print(f"run directory: {run_dir}", markup=False)
    run = RunModel.after_run(run_dir, site, store.state, controller.testsets)
    console.print(leaderboard_table(leaderboard(run), console.width))
    failed = [r for r in results if r.failed]
    for job in failed:
        what = job.failed if job.failed in (SKIPPED, DEVICE_DOWN) else f"failed: {job.failed}"
        console.print(f"job {job.task} / {job.system} {what}", markup=False)
    return EXIT_FAILED if failed else EXIT_OK


def _selected_jobs(site: Site, tasks: Sequence[str], systems: Sequence[str]) -> list[JobKey]:
    """The site's jobs narrowed by --task and --system (each repeatable); names are checked."""
    problems = [
        Problem(
            site.path,
            flag,
            f"no {flag} {name!r} in the site file",
            f"use one of: {', '.join(known)}",
        )
        for flag, names, known in (
            ("task", tasks, list(site.config.tasks)),
            ("system", systems, list(site.config.systems)),
        )
        for name in names
        if name not in known
    ]
    if problems:
        raise InputError(problems)
    jobs = [
        (task, system)
        for task, system in site.jobs()
        if (not tasks or task in tasks) and (not systems or system in systems)
    ]
    if not jobs:
        raise InputError(
            [Problem(site.path, "", "no job matches the --task and --system given", "widen them")]
        )
    return jobs


def _listen(text: str) -> tuple[str, socket.socket]:
    """Parse HOST:PORT and bind it; a bad address or a port in use is bad input."""
    from harness.console.server import bind, parse_listen

    try:
        host, port = parse_listen(text)
        return host, bind(host, port)
    except ValueError as exc:
        raise InputError([Problem(Path(text), "--console/--listen", str(exc))]) from None
    except OSError as exc:
        raise InputError(
            [
                Problem(
                    Path(text),
                    "--console/--listen",
                    f"cannot listen on {text}: {exc.strerror or exc}",
                    "give a free port (or 0 for any) on an address of this machine",
                )
            ]
        ) from None


def _console_beside(
    controller: Controller,
    run: Path | str,
    listen: tuple[str, socket.socket],
    console: Console,
    link_host: str | None,
) -> Any:
    """Serve the live console (with controls) of ``run`` (the run directory, or a
    station's run in PostgreSQL) from a process of its own, at the lowest priority: no
    viewer's request reaches this process (harness/console/process.py)."""
    # Imported here, and without the web stack: only the console process loads it.
    from harness.console.auth import Tokens
    from harness.console.process import start_console

    host, sock = listen
    tokens = Tokens.for_bind(host, controls=True)
    address = sock.getsockname()
    beside = start_console(controller, run, host, sock, tokens, link_host)
    _announce(console, address, tokens, link_host)
    return beside


def _announce(console: Console, address: Any, tokens: Any, link_host: str | None) -> None:
    """Print the console's URL (with the link host, as `onsite judge` does) and the tokens."""
    import socket

    from harness.console.auth import OPERATOR_TOKEN_ENV, VIEWER_TOKEN_ENV

    host, port = address[:2]
    host = link_host or host
    if host in ("0.0.0.0", "::"):
        # Listening on every interface: viewers reach the machine by its name.
        host = socket.gethostname()
    shown = f"[{host}]" if ":" in host else host
    query = f"/?token={tokens.viewer}" if tokens.viewer else "/"
    console.print(f"console: http://{shown}:{port}{query}", markup=False)
    if tokens.operator and not os.environ.get(OPERATOR_TOKEN_ENV):
        console.print(f"operator token: {tokens.operator}", markup=False)
    if tokens.viewer and not os.environ.get(VIEWER_TOKEN_ENV):
        console.print(f"viewer token: {tokens.viewer}", markup=False)


def cmd_console(args: argparse.Namespace, console: Console) -> int:
    """Serve a read-only console of any run (a directory or a run in PostgreSQL),
    following its records live."""
    from harness.console.app import ConsoleApp
    from harness.console.auth import Tokens
    from harness.console.server import serve
    from harness.console.view import RunView
    from harness.webguard import allowed_hosts

    view = RunView(args.run_dir)  # checks it is a run before listening
    host, sock = _listen(args.listen)
    tokens = Tokens.for_bind(host, controls=False)
    _announce(console, sock.getsockname(), tokens, args.link_host)
    serve(ConsoleApp(view, tokens, hosts=allowed_hosts(host, args.link_host)), sock)
    return EXIT_OK


def _quietly_record(store: RunStore, event: str, **fields: object) -> None:
    """Journal how a session ended when the disk still lets us; never raise from here."""
    from harness.store.directory import RunStoreError

    with contextlib.suppress(RunStoreError, OSError, ValueError):
        store.record(event, **fields)


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """Dry run: validate, start each system, run a few items; writes nothing to the run dir."""
    from harness.cli.render import ProgressListener
    from harness.cli.terminal import table
    from harness.engine.dryrun import dry_run, probe_devices
    from harness.site import load_site

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


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    """Where a run stands, from its journal; with --watch, refreshed in place."""
    from harness.cli.render import status_table
    from harness.console.view import RunView  # the read model only: no web stack

    view = RunView(args.run_dir)
    if not args.watch:
        view.refresh()
        console.print(status_table(view.status(), console.width))
        return EXIT_OK
    from rich.live import Live

    with Live(console=console, auto_refresh=False, transient=False) as live:
        while True:
            view.refresh()
            status = view.status()
            live.update(status_table(status, console.width), refresh=True)
            if status["controller"] == "stopped" and args.until_stopped:
                return EXIT_OK
            time.sleep(args.interval)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """The leaderboard of a run, as a table or JSON; the full report as HTML, CSV or JSON files."""
    from harness.cli.render import leaderboard_table
    from harness.leaderboard import leaderboard
    from harness.store.run_model import RunModel

    # Read once: the site, the records and the test sets serve the report and the table.
    run = RunModel.open(args.run_dir)
    if args.html or args.csv or args.json_file:
        from harness.report import build_report, write_csv, write_html, write_json

        site = run.site
        data = build_report(
            run,
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
    rows = leaderboard(run)
    if args.json:
        found = []
        for row in rows:
            item = row.to_dict()
            if not args.full:
                item.pop("scores")
            found.append(item)
        sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    console.print(leaderboard_table(rows, console.width))
    if run.run_dir is not None:
        _judging_section(run.run_dir, console)
    return EXIT_OK


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    """One job's outputs (or, for the organizer, its task's references) in a field format."""
    from harness.export import export_job, read_run

    job = read_run(args.run_dir, args.task, args.system)
    text = export_job(job, args.format, args.references)
    if not job.complete:
        sys.stderr.write(
            f"note: {job.task}/{job.system} completed {len(job.testset.items)} of {job.total} "
            "items; the file holds those, as the leaderboard scores them\n"
        )
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        console.print(f"wrote {Path(args.output).resolve()}", markup=False)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    """The judging station (docs/judging.md); its web stack loads only here."""
    from harness.judge.cli import cmd_judge as judge

    return judge(args, console)


def _judging_section(run_dir: Path, console: Console) -> None:
    """The judging stations' results under the leaderboard (no station: nothing imported)."""
    if not (run_dir / "judging").is_dir():
        return
    from harness.judge.report import print_judging

    print_judging(run_dir, console)


def cmd_devices(args: argparse.Namespace, console: Console) -> int:
    """List serial ports and probe each (or the given ones) with HELLO."""
    from harness.cli.terminal import table
    from runners import list_serial_ports, probe_serial_port

    if args.action is not None:
        return cmd_devices_conformance(args, console)
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
        from harness import __version__

        sys.stdout.write(f"onsite {__version__}\n")
        parser.exit()


def cmd_devices_conformance(args: argparse.Namespace, console: Console) -> int:
    """`onsite devices conformance PORT`: every protocol clause against one device."""
    from harness.cli.terminal import table
    from runners import check_device_conformance

    if args.action != "conformance" or not args.target:
        console.print("usage: onsite devices conformance PORT [--baud N]", markup=False)
        return EXIT_FAILED
    results = check_device_conformance(args.target, args.baud, args.item_timeout)
    rows = [(f"§{r.section}", r.clause, "pass" if r.passed else "FAIL", r.detail) for r in results]
    title = f"Protocol conformance of {args.target} at {args.baud} baud"
    console.print(table(title, ("section", "clause", "result", "detail"), rows))
    failed = sum(not r.passed for r in results)
    console.print(f"{len(results) - failed} of {len(results)} clauses pass", markup=False)
    return EXIT_OK if failed == 0 else EXIT_FAILED


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
    run.add_argument(
        "--accept-site-change",
        action="store_true",
        help="resume although the site or a test set changed since items completed "
        "(the change is journaled and shown in the report)",
    )
    run.add_argument("--task", action="append", default=[], help="run only this task (repeatable)")
    run.add_argument(
        "--system", action="append", default=[], help="run only this system (repeatable)"
    )
    run.add_argument(
        "--console",
        metavar="HOST:PORT",
        help="serve the live console with operator controls there (e.g. 127.0.0.1:8765), "
        "from a process of its own",
    )
    run.add_argument(
        "--link-host",
        help="with --console: the host name to print in its link, and to answer to "
        "(default: the address listened on)",
    )
    run.add_argument(
        "--station",
        metavar="NAME",
        help="with [site] store = postgresql://...: this operator station's name "
        "(default: the host name); stations share the run's jobs (docs/scale.md)",
    )
    run.add_argument(
        "--lease-seconds",
        type=float,
        default=30.0,
        help="with a PostgreSQL store: how long a station's job lease lasts without a "
        "heartbeat (default 30)",
    )
    run.add_argument(
        "--max-jobs",
        type=int,
        metavar="N",
        help="with a PostgreSQL store: at most N jobs at once on this station "
        "(default: one per device), leaving the others to the other stations",
    )
    run.set_defaults(handler=cmd_run)

    con = sub.add_parser("console", help="serve a read-only live console of a run")
    con.add_argument(
        "run_dir", help="a run directory, or a run in PostgreSQL: postgresql://HOST/DB?run=NAME"
    )
    con.add_argument(
        "--listen", default="127.0.0.1:8765", help="HOST:PORT (default 127.0.0.1:8765)"
    )
    con.add_argument(
        "--link-host",
        help="the host name to print in the link, and to answer to (default: HOST)",
    )
    con.set_defaults(handler=cmd_console)

    check = sub.add_parser("check", help="dry run: start each system and try a few items")
    check.add_argument("site")
    check.add_argument("--items", type=int, default=3, help="items per job (default 3)")
    check.set_defaults(handler=cmd_check)

    status = sub.add_parser("status", help="where a run stands")
    status.add_argument(
        "run_dir", help="a run directory, or a run in PostgreSQL: postgresql://HOST/DB?run=NAME"
    )
    status.add_argument("--watch", action="store_true", help="refresh in place until Ctrl-C")
    status.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1)"
    )
    status.add_argument(
        "--until-stopped",
        action="store_true",
        help="with --watch: end once no controller works on the run",
    )
    status.set_defaults(handler=cmd_status)

    report = sub.add_parser("report", help="the leaderboard of a run")
    report.add_argument(
        "run_dir", help="a run directory, or a run in PostgreSQL: postgresql://HOST/DB?run=NAME"
    )
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

    exp = sub.add_parser("export", help="a job's outputs in a field's own format (trn, kaldi ...)")
    exp.add_argument(
        "run_dir", help="a run directory, or a run in PostgreSQL: postgresql://HOST/DB?run=NAME"
    )
    exp.add_argument("--task", help="the task (may be left out when the run has one)")
    exp.add_argument("--system", help="the system (may be left out when the task has one)")
    exp.add_argument(
        "--format",
        required=True,
        help="trn, ctm, kaldi, cwmt-xml, trec, conll, sighan, tsv, score-jsonl, kws-det or "
        "jsonl: what fits the task's kind (docs/formats.md)",
    )
    exp.add_argument("-o", "--output", help="the file to write (default: standard output)")
    exp.add_argument(
        "--references",
        action="store_true",
        help="write the task's references instead (an organizer action)",
    )
    exp.set_defaults(handler=cmd_export)

    judge = sub.add_parser(
        "judge", help="judging station: listening tests, MT and summary scores, CWS review"
    )
    add_judge_arguments(judge)
    judge.set_defaults(handler=cmd_judge)

    devices = sub.add_parser("devices", help="list serial ports and probe them with HELLO")
    devices.add_argument("--port", action="append", default=[], help="probe this port (or URL)")
    devices.add_argument("--baud", type=int, default=115200)
    devices.add_argument("--timeout", type=float, default=3.0, help="seconds to wait per port")
    devices.add_argument(
        "action", nargs="?", choices=["conformance"], help="conformance: check every clause"
    )
    devices.add_argument("target", nargs="?", metavar="PORT", help="the port to check")
    devices.add_argument(
        "--item-timeout", type=float, default=30.0, help="conformance: seconds per answer"
    )
    devices.set_defaults(handler=cmd_devices)

    from harness.cli.score import add_score_parser

    family = None
    command = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    if argv is not None and len(argv) >= 2 and argv[0] == "score":
        family = argv[1]
    # Another command (or `onsite --help`) needs `score` only as a name: its families,
    # some brought by the task kinds, load only when `score` is the command.
    add_score_parser(sub, only=family, listed=argv is None or command == "score")
    from harness.cli.meta import add_meta_parser

    add_meta_parser(sub)
    from harness.store.copy import add_export_store_parser

    add_export_store_parser(sub)
    from harness.cli.combination_set import add_combination_set_parser

    add_combination_set_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `onsite` console script."""
    # SIGTERM ends a run as Ctrl-C does: journaled, resumable, no traceback.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(argv).parse_args(argv)
        from harness.cli.terminal import make_console

        console = make_console()
    except KeyboardInterrupt:
        return 130
    try:
        return int(args.handler(args, console))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except InputError as exc:
        # Plain writes: an error line must never be re-wrapped or coloured.
        for problem in exc.problems:
            sys.stderr.write(f"error: {problem}\n")
        return EXIT_BAD_INPUT
    except Exception as exc:
        # The run store is imported only when a command failed: `onsite score` never needs it.
        from harness.store.directory import RunLocked

        if not isinstance(exc, RunLocked):
            raise
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
