"""Reports of a run: verdicts, and HTML / CSV / JSON renderings (the running score and the
manifest are the engine's: harness/engine/).

    data = build_report(run_dir)      # everything, read from the run directory
    write_html(data, "report.html")   # one self-contained file
    write_csv(data, "report.csv")     # one line per task and system
    write_json(data, "report.json")

docs/report.md defines the verdict rules and the running score.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.report.build import (
        Failure,
        ItemTiming,
        JobReport,
        ReportData,
        Session,
        SystemReport,
        TaskReport,
        build_report,
    )
    from harness.report.html import html_text, write_html
    from harness.report.tables import CSV_COLUMNS, write_csv, write_json
    from harness.report.verdicts import DEFAULT_LIMITS, JobVerdict, RuleLine, judge_job

# Where each public name lives. A module loads when one of its names is first used
# (PEP 562): the live status reads a running score without the report builder, and
# only the HTML writer loads matplotlib.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
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
            ".build",
        ),
        **dict.fromkeys(("CSV_COLUMNS", "write_csv", "write_json"), ".tables"),
        **dict.fromkeys(("html_text", "write_html"), ".html"),
        **dict.fromkeys(("DEFAULT_LIMITS", "JobVerdict", "RuleLine", "judge_job"), ".verdicts"),
    },
)


__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_LIMITS",
    "Failure",
    "ItemTiming",
    "JobReport",
    "JobVerdict",
    "ReportData",
    "RuleLine",
    "Session",
    "SystemReport",
    "TaskReport",
    "build_report",
    "html_text",
    "judge_job",
    "write_csv",
    "write_html",
    "write_json",
]
