"""What runs a session: the controller and its jobs, budgets and verdicts, integrity checks and
audits, operator stations' job claims, the dry run, the manifest and the running score.

The public names load with their module on first use (lazy_exports): the live status reads
the running score without loading the controller.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.engine.audits import AuditLine, audit_lines
    from harness.engine.budgets import (
        COUNTED_VERDICTS,
        VERDICTS,
        Verdict,
        hang_seconds,
        item_budget_seconds,
        judge,
    )
    from harness.engine.controller import Controller, Dispatch, Job, JobResult, JobSource
    from harness.engine.dryrun import CheckResult, dry_run
    from harness.engine.integrity import SiteChanged
    from harness.engine.manifest import MANIFEST_NAME, build_manifest, read_manifest, write_manifest
    from harness.engine.running_score import RunningScore, running_score
    from harness.engine.station import Station, StationSettings

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("AuditLine", "audit_lines"), ".audits"),
        **dict.fromkeys(
            (
                "COUNTED_VERDICTS",
                "VERDICTS",
                "Verdict",
                "hang_seconds",
                "item_budget_seconds",
                "judge",
            ),
            ".budgets",
        ),
        **dict.fromkeys(("Controller", "Dispatch", "Job", "JobResult", "JobSource"), ".controller"),
        **dict.fromkeys(("CheckResult", "dry_run"), ".dryrun"),
        "SiteChanged": ".integrity",
        **dict.fromkeys(
            ("MANIFEST_NAME", "build_manifest", "read_manifest", "write_manifest"), ".manifest"
        ),
        **dict.fromkeys(("RunningScore", "running_score"), ".running_score"),
        **dict.fromkeys(("Station", "StationSettings"), ".station"),
    },
)

__all__ = [
    "COUNTED_VERDICTS",
    "MANIFEST_NAME",
    "VERDICTS",
    "AuditLine",
    "CheckResult",
    "Controller",
    "Dispatch",
    "Job",
    "JobResult",
    "JobSource",
    "RunningScore",
    "SiteChanged",
    "Station",
    "StationSettings",
    "Verdict",
    "audit_lines",
    "build_manifest",
    "dry_run",
    "hang_seconds",
    "item_budget_seconds",
    "judge",
    "read_manifest",
    "running_score",
    "write_manifest",
]
