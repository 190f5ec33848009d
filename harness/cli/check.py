"""`onsite check`: the dry run of a site, writing nothing to its run directory."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console


def add_check_parser(sub: Any) -> None:
    """Register `onsite check` on the CLI's subparsers."""
    check = sub.add_parser("check", help="dry run: start each system and try a few items")
    check.add_argument("site")
    check.add_argument("--items", type=int, default=3, help="items per job (default 3)")
    check.set_defaults(handler=cmd_check)


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
