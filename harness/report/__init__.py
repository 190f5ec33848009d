"""Reports of a run: verdicts, running score, manifest, and HTML / CSV / JSON renderings.

    data = build_report(run_dir)      # everything, read from the run directory
    write_html(data, "report.html")   # one self-contained file
    write_csv(data, "report.csv")     # one line per task and system
    write_json(data, "report.json")

docs/report.md defines the verdict rules and the running score.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Loaded at once: it is small, and the function of that name must win over the
# submodule's name on this package (as every name did when all were loaded eagerly).
from .running_score import DEFAULT_WEIGHTS, USAGE_CAP, RunningScore, running_score

if TYPE_CHECKING:
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
    from .html import html_text, write_html
    from .manifest import MANIFEST_NAME, build_manifest, read_manifest, write_manifest
    from .verdicts import DEFAULT_LIMITS, JobVerdict, RuleLine, judge_job

# Where each public name lives. A module loads when one of its names is first used
# (PEP 562): the live status reads a running score without the report builder, and
# only the HTML writer loads matplotlib.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "Failure",
            "ItemTiming",
            "JobReport",
            "ReportData",
            "Session",
            "SystemReport",
            "TaskReport",
            "build_report",
        ),
        "build",
    ),
    **dict.fromkeys(("CSV_COLUMNS", "write_csv", "write_json"), "export"),
    **dict.fromkeys(("html_text", "write_html"), "html"),
    **dict.fromkeys(
        ("MANIFEST_NAME", "build_manifest", "read_manifest", "write_manifest"), "manifest"
    ),
    **dict.fromkeys(("DEFAULT_LIMITS", "JobVerdict", "RuleLine", "judge_job"), "verdicts"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
