"""The published tables as one small HTML page (the figures beside it, as SVG files).

Its own renderer, not the organizer's report (harness/report/html.py), which holds
commands, hosts, manifests, the systems' messages and every item's output.
"""

from __future__ import annotations

from html import escape

from harness.publish.tables import Published, PublishedRow, PublishedTable

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 72em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }
th { background: #eee; }
td.name, td.text { text-align: left; }
td.name, td.score { white-space: nowrap; }
.ci { color: #555; }
.note { color: #444; font-size: 0.9em; }
"""


def _pct(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _headline(row: PublishedRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return _pct(row.score)
    interval = f"[{100 * row.ci_low:.2f}, {100 * row.ci_high:.2f}]"
    return f'{_pct(row.score)} <span class="ci">{interval}</span>'


def _parts(row: PublishedRow) -> str:
    return "<br>".join(escape(f"{part} {_pct(value, 1)}") for part, value in row.breakdown)


def _row(row: PublishedRow) -> str:
    entry = ", ".join(p for p in (row.track, row.run_type) if p)
    declared = escape(row.declarations) if row.declarations else ""
    cells = [
        escape(row.rank),
        f'<td class="name">{escape(row.label)}</td>',
        f'<td class="text">{escape(entry)}</td>',
        f'<td class="text">{declared}</td>',
        _headline(row),
        _number(row.speed_mean),
        _number(row.speed_p95),
        f"{row.completed}/{row.items}",
        str(row.over_budget),
        str(row.failures),
        str(row.restarts),
        {True: "yes", False: "no", None: "-"}[row.set_budget_met],
        f'<td class="text">{escape(row.detail)}</td>',
        f'<td class="name">{_parts(row)}</td>',
    ]
    return "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>"


def _table(table: PublishedTable) -> str:
    better = "higher is better" if table.higher_is_better else "lower is better"
    head = [
        "rank", "system", "entry", "declared beyond the allowed data",
        f"{table.metric_label} [95% interval]", f"speed mean ({table.speed_unit})",
        f"speed p95 ({table.speed_unit})", "completed", "over budget",
        "failed (timeout, crash, error, invalid)", "restarts", "within the set's budget",
        "other figures", f"{table.metric_label} by condition",
    ]  # fmt: skip
    return "\n".join(
        [
            f"<h2>{escape(table.title)}</h2>",
            f'<p class="note">{escape(table.kind)} task; {escape(table.metric_label)}, '
            f"{better}.</p>",
            "<table>",
            "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>",
            *(_row(r) for r in table.rows),
            "</table>",
            f'<img src="figures/{escape(table.stem)}.svg" alt="{escape(table.title)}">',
        ]
    )


def html_text(published: Published) -> str:
    """The page: every table and its figure, and how ranks and intervals were made."""
    intervals = published.intervals
    numbering = (
        "Systems are numbered by rank."
        if published.order == "rank"
        else "Systems are numbered in a random order."
    )
    scope = f" Track: {published.track}." if published.track else ""
    note = (
        f"{numbering}{scope} Each headline has its {intervals['interval']} "
        f"({intervals['bootstrap_samples']} samples); a rank range such as 1-2 means no "
        f"{intervals['rank_test']} test at alpha {intervals['alpha']} separates the systems "
        "it spans. Speed figures are per answered item; an offline submission has none."
    )
    return (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f"<title>{escape(published.evaluation)}: results</title>",
                f"<style>{_STYLE}</style></head><body>",
                f"<h1>{escape(published.evaluation)}: results</h1>",
                f'<p class="note">{escape(note)}</p>',
                *(_table(t) for t in published.tables),
                "</body></html>",
            ]
        )
        + "\n"
    )
