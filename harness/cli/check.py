"""`onsite check`: the dry run of a site, writing nothing to its run directory."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

    from harness.engine.dryrun import CheckResult
    from harness.site import Site

# Characters of an item's output shown in the dry run's table.
OUTPUT_CHARS = 60


def output_text(output: Any, limit: int = OUTPUT_CHARS) -> str:
    """A system's answer as one short line for the terminal: the text of a ``{"text"}``
    answer, else the answer as compact JSON; control characters stripped (`printable`),
    cut to ``limit`` characters with an ellipsis."""
    from harness.cli.terminal import printable

    if output is None:
        return "-"
    if isinstance(output, dict) and list(output) == ["text"] and isinstance(output["text"], str):
        text = output["text"]
    else:
        text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(printable(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def dry_run_quality(site: Site, result: CheckResult) -> tuple[str, float | None] | None:
    """The job's headline metric name and its value over the dry run's items, against
    the test set's references, scored as the leaderboard (and so `onsite report`) scores
    a run's completions; None when no item completed. The value is None where the
    leaderboard has none either (e.g. retrieval topics with no judgement yet)."""
    from harness.kinds.registry import task_kind
    from harness.leaderboard import quality_so_far

    testset = result.testset
    if testset is None or not result.counted:
        return None
    cfg = site.config.tasks[result.job.task]
    kind = task_kind(cfg.kind)
    value = quality_so_far(kind, cfg, testset, result.counted)
    return kind.metric_label(kind.metric(cfg)), value


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
    from harness.engine.preflight import refuse_unstartable
    from harness.site import load_site

    site = load_site(args.site)
    # A system that could never start is refused here, not tried three times.
    refuse_unstartable(site, site.jobs())
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
                    output_text(record.get("output")),
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
                    "-",
                    (result.job.failed or "")[:80],
                )
            )
    console.print(
        table(
            "Dry run",
            (
                "task",
                "system",
                "setup s",
                "item",
                "verdict",
                "seconds",
                "budget s",
                "output",
                "message",
            ),
            rows,
        )
    )
    quality = []
    for result in results:
        found = dry_run_quality(site, result)
        if found is not None:
            name, value = found
            shown = "-" if value is None else f"{name} {100 * value:.1f}%"
            quality.append((result.job.task, result.job.system, len(result.counted), shown))
    if quality:
        console.print(table("Quality so far", ("task", "system", "items", "quality"), quality))
        console.print(
            "quality: the headline metric over the items above, against the test set's "
            "references, scored as the venue scores the run (`onsite report`)",
            markup=False,
        )
    ok = not broken and all(r.ok for r in results)
    console.print("check passed" if ok else "check found problems (see above)", markup=False)
    return EXIT_OK if ok else EXIT_FAILED
