"""The report's Disputes section: each dispute, its decision and both attempts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

# harness/report/html.py's table maker: headers, rows of escaped cells, left columns, class.
TableMaker = Callable[..., str]
_OUTPUT_CHARS = 120


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _when(unix: float | None) -> str:
    if not unix:
        return "-"
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _output(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, Mapping) and set(value) == {"text"}:
        value = value["text"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _OUTPUT_CHARS else text[: _OUTPUT_CHARS - 1] + "…"


def _attempt_row(what: str, attempt: Mapping[str, Any] | None, counts: bool) -> Sequence[str]:
    if attempt is None:
        return [_e(what), "-", "-", "-", "-", "-", ""]
    budget = attempt.get("budget_seconds")
    return [
        _e(what),
        _e(attempt["attempt"]),
        _e(attempt["verdict"]),
        f"{attempt['seconds']:.3f}",
        "-" if budget is None else f"{budget:.3f}",
        _e(_output(attempt.get("output"))) + (f" <i>{_e(attempt['message'])}</i>"
                                              if attempt.get("message") else ""),
        "<b>counts</b>" if counts else "",
    ]  # fmt: skip


def disputes_html(disputes: Iterable[Mapping[str, Any]], table: TableMaker) -> str:
    """The Disputes section: per dispute the challenge, the decision, and each attempt
    (the original and any appeal attempt) with the one the leaderboard counts."""
    parts = [
        "<section id='disputes'><h2>Disputes</h2>",
        "<p>A dispute alone changes nothing; the leaderboard counts an item as the "
        "organizer's decision says: <i>rejected</i> keeps the original result, "
        "<i>amended</i> counts it with the organizer's verdict, <i>rerun</i> counts the "
        "appeal attempt's result. Every attempt stays in the journal.</p>",
    ]
    for d in disputes:
        decision = d.get("decision")
        counted = d.get("counted") or {}
        if decision is None:
            decided = "<b>open</b>: the original result counts until the organizer decides"
        else:
            verdict = f" to {_e(decision['verdict'])}" if decision.get("verdict") else ""
            decided = (
                f"<b>{_e(decision['decision'])}</b>{verdict} on {_e(_when(decision.get('wall')))}"
                + (f": {_e(decision['reason'])}" if decision.get("reason") else "")
            )
        original = d.get("original")
        amended = decision["verdict"] if decision and decision["decision"] == "amended" else None
        # The original counts while the dispute is open or after a rejection.
        kept = decision is None or decision["decision"] == "rejected"
        rows = [_attempt_row("original", original, kept)]
        if amended is not None and original is not None:
            rows.append(_attempt_row("amended", {**original, "verdict": amended}, True))
        for appeal in d.get("appeals", ()):
            counts = decision is not None and decision.get("attempt") == appeal["attempt"]
            rows.append(_attempt_row("appeal attempt", appeal, counts))
        parts.append(
            f"<h3 id='dispute-{_e(d['dispute'])}'>Dispute {_e(d['dispute'])}: "
            f"{_e(d['task'])} / {_e(d['system'])}, item {_e(d['item'])}</h3>"
            f"<p>Filed {_e(_when(d.get('filed_wall')))}"
            + (f" by {_e(d['by'])}" if d.get("by") else "")
            + f": {_e(d['reason'])}<br>Decision: {decided}. Counts as: "
            f"{_e(counted.get('verdict', '-'))}.</p>"
        )
        parts.append(
            table(["attempt", "#", "verdict", "seconds", "budget", "output", ""], rows,
                  left=3, cls="disputes")
        )  # fmt: skip
    parts.append("</section>")
    return "\n".join(parts)
