"""Reports of a run: verdicts, running score, manifest, and HTML / CSV / JSON renderings.

    data = build_report(run_dir)      # everything, read from the run directory
    write_html(data, "report.html")   # one self-contained file
    write_csv(data, "report.csv")     # one line per task and system
    write_json(data, "report.json")

docs/report.md defines the verdict rules and the running score.
"""

from typing import Any

from .build import (
    Failure,
    ItemTiming,
    JobReport,
    ReportData,
    Session,
    SystemReport,
    TaskReport,
    build_report,
)
from .export import CSV_COLUMNS, write_csv, write_json
from .manifest import MANIFEST_NAME, build_manifest, read_manifest, write_manifest
from .running_score import DEFAULT_WEIGHTS, USAGE_CAP, RunningScore, running_score
from .verdicts import DEFAULT_LIMITS, JobVerdict, RuleLine, judge_job

# The HTML writer loads matplotlib for its figures: only when it is asked for (PEP 562),
# so reading a verdict or a running score does not pay for it.
_LAZY = {"html_text", "write_html"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import html

    value = getattr(html, name)
    globals()[name] = value
    return value


__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_LIMITS",
    "DEFAULT_WEIGHTS",
    "MANIFEST_NAME",
    "USAGE_CAP",
    "Failure",
    "ItemTiming",
    "JobReport",
    "JobVerdict",
    "ReportData",
    "RuleLine",
    "RunningScore",
    "Session",
    "SystemReport",
    "TaskReport",
    "build_manifest",
    "build_report",
    "html_text",
    "judge_job",
    "read_manifest",
    "running_score",
    "write_csv",
    "write_html",
    "write_json",
    "write_manifest",
]
