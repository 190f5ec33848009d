"""One figure per published table: each system's headline as a dot and its 95% interval
as a bar, best at the top, as a small SVG written by hand.

Hand-written rather than drawn with matplotlib, whose SVG carries ids, a creator and
a date: this file holds the labels ("System 3"), the figures and nothing else.
"""

from __future__ import annotations

from html import escape

from harness.publish.tables import PublishedTable

_ROW = 22
_LEFT = 90
_PLOT = 360
_TOP = 40


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def figure_svg(table: PublishedTable) -> str:
    """The table's figure as SVG text (no ids, no metadata)."""
    rows = [r for r in table.rows if r.score is not None]
    values = [v for r in rows for v in (r.score, r.ci_low, r.ci_high) if v is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
    pad = (high - low) * 0.05
    low, high = low - pad, high + pad

    def x(value: float) -> float:
        return _LEFT + (value - low) / (high - low) * _PLOT

    height = _TOP + _ROW * max(len(rows), 1) + 40
    width = _LEFT + _PLOT + 30
    title = f"{table.title}: {table.metric_label} (%)"
    better = "higher is better" if table.higher_is_better else "lower is better"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<text x="{_LEFT}" y="18" font-weight="bold">{escape(title)}</text>',
        f'<text x="{_LEFT}" y="32" fill="#555">dot: score; bar: 95% interval; {better}</text>',
    ]
    axis_y = _TOP + _ROW * max(len(rows), 1) + 6
    parts.append(
        f'<line x1="{_LEFT}" y1="{axis_y}" x2="{_LEFT + _PLOT}" y2="{axis_y}" stroke="#000"/>'
    )
    for k in range(5):
        value = low + (high - low) * k / 4
        tx = x(value)
        parts.append(
            f'<line x1="{tx:.1f}" y1="{axis_y}" x2="{tx:.1f}" y2="{axis_y + 4}" stroke="#000"/>'
        )
        parts.append(
            f'<text x="{tx:.1f}" y="{axis_y + 18}" text-anchor="middle">{_pct(value)}</text>'
        )
    for k, row in enumerate(rows):
        y = _TOP + _ROW * k + _ROW / 2
        assert row.score is not None
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(row.label)}</text>'
        )
        if row.ci_low is not None and row.ci_high is not None:
            parts.append(
                f'<line x1="{x(row.ci_low):.1f}" y1="{y:.1f}" x2="{x(row.ci_high):.1f}" '
                f'y2="{y:.1f}" stroke="#4a78b5" stroke-width="3"/>'
            )
        parts.append(f'<circle cx="{x(row.score):.1f}" cy="{y:.1f}" r="4" fill="#1b3f6e"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
