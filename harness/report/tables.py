"""The report as CSV (one line per task and system) and as JSON (everything)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from harness.report.build import JobReport, ReportData

CSV_COLUMNS = (
    "task",
    "system",
    "participant",
    "track",
    "run_type",
    "declarations",
    "verdict",
    "failed_rules",
    "running_score",
    "metric",
    "score",
    "higher_is_better",
    "items",
    "completed",
    "scored",
    "speed_unit",
    "speed_mean",
    "speed_p95",
    "speed_max",
    "over_budget",
    "timeouts",
    "crashes",
    "errors",
    "invalid_outputs",
    "restarts",
    "setup_seconds",
    "total_seconds",
    "total_budget_seconds",
    "budget_scope",
    "set_budget_met",
    "mean_budget_usage",
    "execution_seconds",
    "ci_low",
    "ci_high",
    "rank_low",
    "rank_high",
)
"""Columns of `write_csv`; rates are fractions, times seconds, empty for none."""


def csv_row(job: JobReport) -> dict[str, Any]:
    """One CSV line's values."""
    row = job.row
    values: dict[str, Any] = {
        "verdict": job.verdict.label,
        "failed_rules": "; ".join(x.rule for x in job.verdict.lines if not x.passed),
        "running_score": round(job.running.score, 4),
        "mean_budget_usage": job.running.mean_budget_usage,
        "execution_seconds": job.execution_seconds,
    }
    for column in CSV_COLUMNS:
        if column not in values:
            values[column] = getattr(row, column)
    return {c: "" if values[c] is None else values[c] for c in CSV_COLUMNS}


def _atomic_write(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def csv_text(data: ReportData) -> str:
    """The CSV document."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for job in data.jobs():
        writer.writerow(csv_row(job))
    return out.getvalue()


def write_csv(data: ReportData, path: Path | str) -> Path:
    """One line per (task, system) with verdict, running score and the leaderboard figures."""
    _atomic_write(Path(path), csv_text(data))
    return Path(path)


def write_json(data: ReportData, path: Path | str) -> Path:
    """Everything in ReportData, manifest included."""
    _atomic_write(Path(path), json.dumps(data.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return Path(path)
