"""Reports of a run: verdicts, running score, manifest, and HTML / CSV / JSON renderings.

    data = build_report(run_dir)      # everything, read from the run directory
    write_html(data, "report.html")   # one self-contained file
    write_csv(data, "report.csv")     # one line per task and system
    write_json(data, "report.json")

docs/report.md defines the verdict rules and the running score.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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
    from .running_score import DEFAULT_WEIGHTS, USAGE_CAP, RunningScore, running_score
    from .verdicts import DEFAULT_LIMITS, JobVerdict, RuleLine, judge_job

# Where each public name lives: a module loads on first use (PEP 562), so reading a
# running score or a verdict does not load the HTML writer and its plotting library.
_EXPORTS: dict[str, str] = {
    "Failure": "build",
    "ItemTiming": "build",
    "JobReport": "build",
    "ReportData": "build",
    "Session": "build",
    "SystemReport": "build",
    "TaskReport": "build",
    "build_report": "build",
    "CSV_COLUMNS": "export",
    "write_csv": "export",
    "write_json": "export",
    "html_text": "html",
    "write_html": "html",
    "MANIFEST_NAME": "manifest",
    "build_manifest": "manifest",
    "read_manifest": "manifest",
    "write_manifest": "manifest",
    "DEFAULT_WEIGHTS": "running_score",
    "USAGE_CAP": "running_score",
    "RunningScore": "running_score",
    "running_score": "running_score",
    "DEFAULT_LIMITS": "verdicts",
    "JobVerdict": "verdicts",
    "RuleLine": "verdicts",
    "judge_job": "verdicts",
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
