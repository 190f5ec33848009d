"""One self-contained HTML file: inline CSS, figures as inline SVG, no network access.

Figures are drawn by scoring.plots (and the per-item timing plot here) into a
temporary directory and inlined; their SVG is reproducible, so the same
ReportData always gives the same bytes.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from io import StringIO
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.engine.running_score import USAGE_CAP
from harness.kinds.registry import metric_label, speed_unit, task_kind
from harness.leaderboard import LeaderboardRow
from harness.report.build import JobReport, ReportData, SystemReport, TaskReport
from scoring.plots import (
    PlotFiles,
    plot_rtf_distribution,
)

_VERDICT_COLOURS = {
    "ok": "#4c9a2a",
    "over_budget": "#e0a800",
    "timeout": "#c0392b",
    "crashed": "#8e1b10",
    "error": "#8e44ad",
    "invalid_output": "#d35490",
}
_RC: Any = {"svg.hashsalt": "onsite-report", "svg.fonttype": "none"}
_LOCK = threading.Lock()  # rcParams are process-global

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
th { background: #f2f2f2; }
td.l, th.l { text-align: left; }
.VALID { color: #fff; background: #2e7d32; font-weight: bold; }
.INVALID { color: #fff; background: #c62828; font-weight: bold; }
.pass { color: #2e7d32; font-weight: bold; }
.fail { color: #c62828; font-weight: bold; }
.figure { display: inline-block; margin: 0.5em 1em 0.5em 0; vertical-align: top; }
.figure svg { max-width: 560px; width: 100%; height: auto; }
.muted { color: #666; }
.ci { color: #555; font-size: 90%; white-space: nowrap; }
code, pre { font-family: ui-monospace, monospace; font-size: 12px; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
/* The page fits 1280 px: headers wrap, and a table still too wide scrolls in its box. */
.tablebox { max-width: 100%; overflow-x: auto; }
th { white-space: normal; vertical-align: bottom; }
details.items { margin: 0.6em 0; }
details.items summary { cursor: pointer; font-weight: 600; }
table.items td { max-width: 28em; overflow-wrap: anywhere; text-align: left; }
"""

# Filters a per-item table as the reader types (the report is one self-contained file).
SEARCH_JS = """
function onsiteFilter(input) {
  const needle = input.value.toLowerCase();
  for (const row of input.closest("details").querySelectorAll("tbody tr")) {
    row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
  }
}
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
<script>{script}</script>
</head>
<body>
{body}
</body>
</html>
"""


# --- formatting ----------------------------------------------------------------------


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _when(unix: float | None) -> str:
    if unix is None:
        return "-"
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = ""
) -> str:
    """A table of already-escaped cells; the first `left` columns are left-aligned."""
    head = "".join(
        f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(headers)
    )
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    attr = f' class="{cls}"' if cls else ""
    table = f"<table{attr}>{thead}<tbody>{''.join(body)}</tbody></table>"
    return f'<div class="tablebox">{table}</div>'


# --- figures -------------------------------------------------------------------------

_PROLOG = re.compile(r"\A.*?(?=<svg)", re.DOTALL)


def _inline_svg(text: str) -> str:
    # An inline <svg> must not carry the XML declaration and DOCTYPE of a standalone file.
    return _PROLOG.sub("", text, count=1).strip()


def _figure(title: str, svg: str) -> str:
    return f'<div class="figure" title="{_e(title)}">{svg}</div>'


def _scoring_plot(draw: Callable[[Path], PlotFiles]) -> str | None:
    """Run one scoring.plots function into a temporary directory and return its SVG."""
    with tempfile.TemporaryDirectory(prefix="onsite-report-") as tmp:
        try:
            files = draw(Path(tmp) / "figure")
        except ValueError:
            return None  # the data cannot be drawn (e.g. no finite points): leave it out
        return _inline_svg(files.svg.read_text(encoding="utf-8"))


def timing_svg(job: JobReport) -> str | None:
    """Processing seconds per item in the order processed, coloured by verdict, budget line."""
    timings = job.timings
    if not timings:
        return None
    xs = list(range(1, len(timings) + 1))
    with _LOCK, matplotlib.rc_context(_RC):
        fig = Figure(figsize=(6.4, 3.2), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        seen: dict[str, None] = {}
        many = len(timings) > 400
        for verdict, colour in _VERDICT_COLOURS.items():
            points = [
                (x, t.seconds) for x, t in zip(xs, timings, strict=True) if t.verdict == verdict
            ]
            if not points:
                continue
            seen[verdict] = None
            px, py = zip(*points, strict=True)
            if many:
                ax.plot(px, py, ".", color=colour, label=verdict, markersize=3)
            else:
                ax.bar(px, py, width=0.8, color=colour, label=verdict)
        budgets = [t.budget_seconds for t in timings]
        if any(b is not None for b in budgets):
            ys = [float("nan") if b is None else b for b in budgets]
            # Stairs over each item's full width, so the first and last budgets show too.
            edges = [x - 0.5 for x in xs] + [xs[-1] + 0.5]
            ax.stairs(ys, edges, baseline=None, color="#1f4e79", linewidth=1.4, label="item budget")
        ax.set_xlabel("item, in the order processed")
        ax.set_ylabel("processing seconds")
        ax.set_xlim(0.3, len(timings) + 0.7)
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        # Above the axes: inside, it would hide the bars or the budget line.
        ax.legend(
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            fontsize="small",
            ncols=len(seen) + 1,
            frameon=False,
        )
        out = StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
        fig.clear()
    return _inline_svg(out.getvalue())


def _task_figures(task: TaskReport) -> list[str]:
    jobs = [j for j in task.jobs if j.row.completed]
    figures: list[str] = []
    # The kind's own figures (harness/kinds/): no guessing from the scores' keys.
    plots = task_kind(task.kind).plots
    if plots is not None and jobs:
        scores = {j.row.system: j.row.scores for j in jobs}
        for title, draw in plots(task.name, jobs[0].row.metric, scores):
            svg = _scoring_plot(draw)
            if svg:
                figures.append(_figure(title, svg))
    speeds = {j.row.system: list(j.speeds) for j in jobs if j.speeds}
    if speeds:
        unit = jobs[0].row.speed_unit
        label = speed_unit(unit).label
        budget = task.budget.get("realtime_factor") if unit == "rtf" else None
        svg = _scoring_plot(
            lambda stem: plot_rtf_distribution(
                speeds, stem, budget=budget, label=label, title=f"{task.name}: {label} per item"
            )
        )
        if svg:
            figures.append(_figure(f"{label} per item", svg))
    return figures


# --- sections ------------------------------------------------------------------------


def _budget_text(budget: Mapping[str, Any]) -> str:
    parts = [f"{k} = {v}" for k, v in budget.items()]
    return ", ".join(parts)


def _limits_text(limits: Mapping[str, int | None]) -> str:
    judged = [f"{k} = {v}" for k, v in limits.items() if v is not None]
    free = [k for k, v in limits.items() if v is None]
    return ", ".join(judged) + (f" ({', '.join(free)}: not judged)" if free else "")


def _headline(row: LeaderboardRow) -> str:
    """The headline figure with its 95% interval beside it."""
    if row.ci_low is None or row.ci_high is None:
        return _pct(row.score)
    interval = f"[{100 * row.ci_low:.2f}, {100 * row.ci_high:.2f}]"
    return f'{_pct(row.score)} <span class="ci">{interval}</span>'


def _ranks_note(intervals: Mapping[str, Any] | None) -> str:
    if intervals is None:
        return ""
    test = {"bootstrap": "paired bootstrap resampling", "ar": "paired approximate randomization"}
    name = test.get(intervals["rank_test"], intervals["rank_test"])
    return (
        '<p class="muted">Brackets: the 95% paired-bootstrap percentile interval '
        f"({intervals['bootstrap_samples']} resamples, seed {intervals['seed']}). Rank: a "
        f"range such as 1-2 where {_e(name)} ({intervals['rank_samples']} samples, seed "
        f"{intervals['seed']}) does not separate the systems at alpha {intervals['alpha']}; "
        "reproduce with <code>onsite compare RUN --task "
        f"{{task}} --test {_e(intervals['rank_test'])} --samples "
        f"{intervals['rank_samples']} --seed {intervals['seed']}</code>.</p>"
    )


def _leaderboard(task: TaskReport, intervals: Mapping[str, Any] | None) -> str:
    unit = task.jobs[0].row.speed_unit if task.jobs else "rtf"
    label, fmt = speed_unit(unit).label, speed_unit(unit).fmt
    metric = metric_label(task.jobs[0].row.metric) if task.jobs else "score"
    headers = [
        "rank", "system", "verdict", _e(metric), "scored / items",
        f"{_e(label)} mean", "p95", "max",
        "over budget", "timeouts", "crashes", "restarts", "errors", "invalid",
        "running score", "setup s", "total s", "budget s",
    ]  # fmt: skip
    # The entry columns only where the site file says how systems entered.
    entered = any(j.row.track or j.row.run_type or j.row.participant != j.row.system
                  for j in task.jobs)  # fmt: skip
    if entered:
        headers[2:2] = ["participant", "track", "run"]
    rows = []
    for job in task.jobs:
        r = job.row
        mark = " †" if r.declarations else ""
        entry = [_e(r.participant), _e(r.track or "-"), _e(r.run_type or "-")] if entered else []
        rows.append([
            r.rank_text(),
            f"<b>{_e(r.system)}</b>{mark}",
            *entry,
            f'<span class="{job.verdict.label}">{job.verdict.label}</span>',
            _headline(r),
            f"{r.scored} / {r.items}",
            _num(r.speed_mean, fmt), _num(r.speed_p95, fmt), _num(r.speed_max, fmt),
            str(r.over_budget), str(r.timeouts), str(r.crashes), str(r.restarts),
            str(r.errors), str(r.invalid_outputs),
            f"{job.running.score:.2f}",
            _num(r.setup_seconds), _num(r.total_seconds), _num(r.total_budget_seconds),
        ])  # fmt: skip
    note = _ranks_note(intervals).replace("{task}", _e(task.name))
    declared = "".join(
        f"<li><b>{_e(j.row.system)}</b> †: {_e(j.row.declarations)}</li>"
        for j in task.jobs
        if j.row.declarations
    )
    if declared:
        note += f'<p class="muted">† Used beyond the allowed list:</p><ul>{declared}</ul>'
    notes = "".join(
        f"<li><b>{_e(system)}</b>: {_e(text)}</li>" for system, text in task.scoring_notes()
    )
    if notes:
        note += (
            '<p class="muted">Scoring notes (where the reference tool would print another '
            f"figure, and how to get its):</p><ul class=\"notes\">{notes}</ul>"
        )
    return _table(headers, rows, left=6 if entered else 3, cls="leaderboard") + note


def _verdict_lines(task: TaskReport) -> str:
    rows = []
    for job in task.jobs:
        for line in job.verdict.lines:
            mark = (
                '<span class="pass">PASS</span>'
                if line.passed
                else ('<span class="fail">FAIL</span>')
            )
            rows.append([_e(job.row.system), _e(line.rule), mark, _e(line.figure)])
    return _table(["system", "rule", "result", "figure"], rows, left=4, cls="verdicts")


def _task_section(task: TaskReport, intervals: Mapping[str, Any] | None = None) -> str:
    parts = [
        f'<section id="task-{_e(task.name)}">',
        f"<h2>Task {_e(task.name)} <span class='muted'>({_e(task.kind)})</span></h2>",
    ]
    if task.description:
        parts.append(f"<p>{_e(task.description)}</p>")
    parts.append(
        f"<p>Budget: {_e(_budget_text(task.budget))}. Limits: {_e(_limits_text(task.limits))}.</p>"
    )
    if not task.jobs:
        parts.append("<p>No system takes this task.</p>")
    else:
        parts.append(_leaderboard(task, intervals))
        parts.append("<h3>Verdicts</h3>")
        parts.append(_verdict_lines(task))
        figures = _task_figures(task)
        if figures:
            parts.append("<h3>Figures</h3>")
            parts.extend(figures)
    parts.append("</section>")
    return "\n".join(parts)


def _environment(system: SystemReport) -> str:
    env = system.environment
    if not env:
        return "<p class='muted'>No environment recorded (no manifest).</p>"
    cpu = env.get("cpu_model")
    cpus = env.get("cpu_count")
    rows = [
        ["operating system", _e(env.get("os", "-"))],
        ["CPUs", _e(f"{cpus} x {cpu}" if cpus and cpu else "-")],
        ["memory", _e(_bytes(env.get("memory_bytes")))],
        ["execution time", _e(f"{system.execution_seconds:.2f} s (item seconds + setup)")],
        ["collected", _e(env.get("collected", "-"))],
    ]
    return _table(["", ""], rows, left=2, cls="environment")


def _job_detail(job: JobReport) -> str:
    r = job.row
    parts = [
        f"<h4>{_e(r.task)} <span class='{job.verdict.label}'>{job.verdict.label}</span></h4>",
        f"<p>Running score: {_e(job.running.figure())}. Execution time "
        f"{job.execution_seconds:.2f} s = items + setup {job.setup_seconds_total:.2f} s.</p>",
    ]
    links = sorted(t.round_trip_seconds for t in job.timings if t.round_trip_seconds is not None)
    if links:
        processing = sorted(t.seconds for t in job.timings)
        parts.append(
            f"<p>Remote device: processing time per item (the controller's clock) median "
            f"{processing[len(processing) // 2]:.3f} s; link round trip measured around the items "
            f"median {1000 * links[len(links) // 2]:.2f} ms, max {1000 * links[-1]:.2f} ms.</p>"
        )
    svg = timing_svg(job)
    if svg:
        parts.append(_figure(f"{r.task} / {r.system}: seconds per item", svg))
    if job.failures:
        rows = [
            [_e(f.item), _e("-" if f.attempt is None else f.attempt), _e(f.verdict), _e(f.message)]
            for f in job.failures
        ]
        parts.append(
            _table(["item", "attempt", "verdict", "message"], rows, left=4, cls="failures")
        )
    else:
        parts.append("<p>No failures.</p>")
    if job.items:
        parts.append(_item_details(job))
    return "\n".join(parts)


def _item_details(job: JobReport) -> str:
    """Every completed item (input id, output, reference, verdict, time), collapsed."""
    rows = [
        [
            _e(d.item + (" (audit repeat)" if d.audit else "")),
            _e(d.output),
            _e(d.reference),
            _e(d.verdict),
            f"{d.seconds:.3f}",
        ]
        for d in job.items
    ]
    table = _table(["item", "output", "reference", "verdict", "seconds"], rows, 4, "items")
    return (
        f'<details class="items"><summary>Items ({len(rows)})</summary>'
        '<p><input type="search" placeholder="search items" oninput="onsiteFilter(this)"></p>'
        f"{table}</details>"
    )


def _system_section(data: ReportData, system: SystemReport) -> str:
    jobs = [j for j in data.jobs() if j.row.system == system.name]
    parts = [
        f'<section id="system-{_e(system.name)}">',
        f"<h2>System {_e(system.name)}</h2>",
        f"<p>{_e(system.description or '(no description)')} — device "
        f"<code>{_e(system.device)}</code>, tasks {_e(', '.join(system.tasks))}.</p>",
        _environment(system),
        *(_job_detail(job) for job in jobs),
        "</section>",
    ]
    return "\n".join(parts)


def _intervals_line(intervals: Mapping[str, Any] | None) -> str:
    if intervals is None:
        return "<p>Intervals and ranks: not computed (--no-intervals).</p>"
    return (
        f"<p id='intervals'>Intervals and ranks: {_e(intervals['interval'])}, "
        f"{intervals['bootstrap_samples']} resamples; ranks by {_e(intervals['rank_test'])} "
        f"({intervals['rank_samples']} samples) at alpha {intervals['alpha']}; seed "
        f"{intervals['seed']}. Reproduce: <code>{_e(intervals['reproduce'])}</code>.</p>"
    )


def _manifest_section(
    manifest: Mapping[str, Any] | None, intervals: Mapping[str, Any] | None = None
) -> str:
    if manifest is None:
        return (
            "<section id='manifest'><h2>Manifest</h2><p>This run has no manifest.json."
            f"</p>{_intervals_line(intervals)}</section>"
        )
    site = manifest.get("site", {})
    rows = [["site file", _e(site.get("path", "-")), f"<code>{_e(site.get('sha256'))}</code>"]]
    for task, info in manifest.get("testsets", {}).items():
        rows.append(
            [
                f"test set {_e(task)}",
                _e(f"{info.get('root')} ({len(info.get('files', {}))} files)"),
                f"<code>{_e(info.get('sha256'))}</code>",
            ]
        )
    for name, info in manifest.get("systems", {}).items():
        rows.append(
            [
                f"system {_e(name)} command",
                _e(" ".join(info.get("command", []))),
                f"<code>{_e(info.get('command_sha256'))}</code>",
            ]
        )
        for arg, digest in info.get("files_sha256", {}).items():
            rows.append([f"system {_e(name)} file", _e(arg), f"<code>{_e(digest)}</code>"])
    host = manifest.get("controller", {})
    host_rows = [
        ["platform", _e(host.get("platform", "-"))],
        ["CPU", _e(f"{host.get('cpu_count')} x {host.get('cpu_model')}")],
        ["memory", _e(_bytes(host.get("memory_bytes")))],
        ["Python", _e(host.get("python", "-"))],
        ["packages", _e(", ".join(f"{k} {v}" for k, v in host.get("packages", {}).items() if v))],
    ]
    seeds = manifest.get("seeds", {})
    return "\n".join([
        "<section id='manifest'><h2>Manifest</h2>",
        f"<p>onsite {_e(manifest.get('harness_version'))}; seeds: "
        f"{_e(', '.join(f'{k} = {v}' for k, v in seeds.items()) or 'none')}.</p>",
        _intervals_line(intervals),
        _table(["what", "", "sha256"], rows, left=3, cls="hashes"),
        "<h3>Controller</h3>",
        _table(["", ""], host_rows, left=2, cls="controller"),
        "<details><summary>manifest.json</summary><pre>",
        _e(json.dumps(manifest, indent=2, ensure_ascii=False)),
        "</pre></details></section>",
    ])  # fmt: skip


def _header(data: ReportData) -> str:
    sessions = _table(
        ["session", "started", "ended", "how"],
        [
            [_e(s.session), _e(_when(s.started)), _e(_when(s.ended)), _e(s.end_event or "-")]
            for s in data.sessions
        ],
        left=4,
    )
    weights = ", ".join(f"{k} {v:g}" for k, v in data.weights.items())
    changes = ""
    if data.site_changes:
        changes = "<h2>Accepted site changes</h2>" + _table(
            ["when", "task", "system", "what changed"],
            [
                [_e(_when(c.get("wall"))), _e(c.get("task") or "-"),
                 _e(c.get("system") or "(test set)"), _e("; ".join(c.get("changes", [])))]
                for c in data.site_changes
            ],
            left=4,
            cls="changes",
        )  # fmt: skip
    summary = _table(
        ["task", "system", "verdict", "running score"],
        [[_e(j.row.task), _e(j.row.system) + (" <b>unsealed</b>" if j.row.unsealed else ""),
          f'<span class="{j.verdict.label}">{j.verdict.label}</span>',
          f"{j.running.score:.2f}"] for j in data.jobs()],
        left=3, cls="summary",
    )  # fmt: skip
    return "\n".join([
        f"<h1>Evaluation report: {_e(data.site)}</h1>",
        f"<p class='muted'>Run directory <code>{_e(data.run_dir)}</code>. Times are the "
        "controller's; rates are shown as percentages.</p>",
        f"<p id='track'>Track <b>{_e(data.track)}</b> only: the systems that entered it, ranked "
        "among themselves.</p>" if data.track else "",
        sessions,
        changes,
        summary,
        "<p>Running score = 100 − weight<sub>speed</sub> × mean budget usage (each item's "
        f"seconds / budget, capped at {USAGE_CAP:g}) − Σ weight × events per 100 items, "
        f"clipped to 0..100. Weights: {_e(weights)}.</p>",
    ])  # fmt: skip


def _judging_sections(run_dir: Path) -> list[str]:
    """The judging panels' results (docs/judging.md); a run without one imports nothing."""
    if not (run_dir / "judging").is_dir():
        return []
    from harness.judge.report import judging_html

    return judging_html(run_dir, _table)


def html_text(data: ReportData) -> str:
    """The whole report as one HTML document."""
    body = [_header(data)]
    body.extend(_task_section(task, data.intervals) for task in data.tasks)
    body.extend(_system_section(data, system) for system in data.systems)
    body.extend(_judging_sections(Path(data.run_dir)))
    if data.disputes:
        from harness.report.disputes import disputes_html

        body.append(disputes_html(data.disputes, _table))
    body.append(_manifest_section(data.manifest, data.intervals))
    return PAGE.format(
        title=_e(f"onsite report: {data.site}"), css=CSS, script=SEARCH_JS, body="\n".join(body)
    )


def write_html(data: ReportData, path: Path | str) -> Path:
    """Write the report to `path` (atomically) and return it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html_text(data), encoding="utf-8")
    os.replace(tmp, path)
    return path
