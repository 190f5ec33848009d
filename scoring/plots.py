"""Report figures: ROC, DET, CMC, error rate by condition and real-time factor spread.

Each function takes plain data keyed by system name, writes ``<stem>.png`` and
``<stem>.svg`` and returns their paths as a `PlotFiles`. Figures are built
with `matplotlib.figure.Figure` and the Agg canvas, never pyplot, so no global
figure registry or interactive backend is touched. Output is reproducible: a
fixed SVG hash salt, no dates or software stamps in the metadata, and SVG text
kept as ``<text>`` elements (selectable in an HTML report) rather than paths.

DET axes use the normal-deviate (probit) scale; probabilities are clipped to
[`DET_CLIP`, 1 - `DET_CLIP`] first so 0 and 1 map to finite positions.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter

from .faces import IdentificationScore, RocCurve
from .kws import DetCurve

__all__ = [
    "DET_CLIP",
    "DET_LIMITS",
    "DET_TICKS",
    "PlotFiles",
    "plot_cmc",
    "plot_confusion",
    "plot_det",
    "plot_roc",
    "plot_rtf_distribution",
    "plot_wer_by_condition",
    "probit",
]

DET_CLIP = 1e-4
"""Probabilities are clipped to [DET_CLIP, 1 - DET_CLIP] before the probit transform."""
DET_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
"""DET tick positions (probabilities), labelled in percent."""
DET_LIMITS = (DET_CLIP, 0.5)
"""Default DET axis span (probabilities) on both axes."""

RocInput = RocCurve | tuple[Sequence[float], Sequence[float]]
DetInput = DetCurve | tuple[Sequence[float], Sequence[float]]
CmcInput = IdentificationScore | Sequence[float]

_FIGSIZE = (6.4, 4.4)
_PNG_DPI = 150
_RC: Any = {
    # A fixed salt makes the SVG element ids the same on every run.
    "svg.hashsalt": "onsite-scoring-plots",
    # Real <text> elements: searchable in the report, and smaller than glyph paths.
    "svg.fonttype": "none",
}
# rcParams are process-global and rc_context swaps them in and out, so plots
# built concurrently from several threads are serialised here.
_LOCK = threading.Lock()
_NORMAL = NormalDist()


@dataclass(frozen=True)
class PlotFiles:
    """Paths of the PNG and SVG renderings of one figure."""

    png: Path
    svg: Path


# --- helpers -----------------------------------------------------------------


@contextmanager
def _style() -> Iterator[None]:
    with _LOCK, matplotlib.rc_context(_RC):
        yield


def _new_axes(figsize: tuple[float, float] = _FIGSIZE) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, layout="constrained")
    # Attaching the Agg canvas explicitly keeps us off pyplot's backend selection.
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _save(fig: Figure, stem: str | Path) -> PlotFiles:
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # Append rather than with_suffix(): a stem like "roc.v2" must keep its dot.
    png = stem.parent / f"{stem.name}.png"
    svg = stem.parent / f"{stem.name}.svg"
    try:
        fig.savefig(png, format="png", dpi=_PNG_DPI, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    finally:
        # Not registered with pyplot, so clearing is all "closing" needs.
        fig.clear()
    return PlotFiles(png, svg)


def _require(data: Mapping[str, Any], what: str, func: str) -> None:
    if not data:
        raise ValueError(f"{func}: no {what} to plot (empty mapping)")


def _series(values: Any, name: str, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name!r}: empty {what}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name!r}: {what} must be finite")
    return arr


def _pair(values: Any, name: str, xs: str, ys: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = values
    x, y = _series(x, name, xs), _series(y, name, ys)
    if x.size != y.size:
        raise ValueError(f"{name!r}: {x.size} {xs} values but {y.size} {ys} values")
    return x, y


def _legend(ax: Any, loc: str) -> None:
    ax.legend(loc=loc, fontsize="small", frameon=True)


def _finish(
    fig: Figure,
    ax: Any,
    stem: str | Path,
    labels: tuple[str, str],
    title: str,
    legend: str,
    **grid: Any,
) -> PlotFiles:
    """Label the axes (x, y), title the plot, draw its grid (``grid``: where, besides the
    faint lines every plot has), place the legend and save."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title)
    ax.grid(True, alpha=0.3, **grid)
    _legend(ax, legend)
    return _save(fig, stem)


# --- ROC ---------------------------------------------------------------------


def plot_roc(
    curves: Mapping[str, RocInput],
    stem: str | Path,
    title: str = "ROC",
    eer: Mapping[str, float] | None = None,
) -> PlotFiles:
    """False accept rate (log x) vs correct verification rate, one line per system.

    A curve is a `RocCurve` or a (far, tar) pair. Points with FAR = 0 cannot sit
    on a log axis and are left out; the x axis spans the nonzero FARs. `eer`
    maps system -> equal error rate, marked at (EER, 1 - EER) and quoted in
    the legend (an EER of 0 is only quoted).
    """
    _require(curves, "ROC curves", "plot_roc")
    eer = eer or {}
    unknown = sorted(k for k in eer if k not in curves)
    if unknown:
        raise ValueError(f"plot_roc: EER given for systems without a curve: {unknown}")
    data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, c in curves.items():
        raw = (c.far, c.tar) if isinstance(c, RocCurve) else c
        data[name] = _pair(raw, name, "FAR", "TAR")
    positive = np.concatenate([far[far > 0] for far, _ in data.values()])
    if positive.size == 0:
        raise ValueError("plot_roc: no nonzero false accept rate to show on a log axis")
    lo, hi = float(positive.min()), float(positive.max())
    if lo >= hi:
        lo = hi / 10.0  # a single FAR value still needs a nonzero-width axis

    with _style():
        fig, ax = _new_axes()
        for name, (far, tar) in data.items():
            keep = far > 0
            label = name
            if name in eer:
                label = f"{name} (EER {eer[name]:.2%})"
            (line,) = ax.plot(far[keep], tar[keep], label=label, linewidth=1.5)
            e = eer.get(name)
            if e is not None and e > 0:
                ax.plot([e], [1.0 - e], marker="o", color=line.get_color(), linestyle="none")
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(0.0, 1.01)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        labels = ("false accept rate", "correct verification rate")
        return _finish(fig, ax, stem, labels, title, "lower right", which="both")


# --- DET ---------------------------------------------------------------------


def probit(p: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """Normal deviate (inverse standard normal CDF) of `p`, clipped to [DET_CLIP, 1 - DET_CLIP].

    This is the DET axis position of a probability: probit(0.5) == 0.
    """
    arr = np.clip(np.asarray(p, dtype=float), DET_CLIP, 1.0 - DET_CLIP)
    flat = [_NORMAL.inv_cdf(float(v)) for v in arr.reshape(-1)]
    return np.asarray(flat, dtype=float).reshape(arr.shape)


def _percent_label(p: float) -> str:
    return f"{p * 100:g}"


def plot_det(
    curves: Mapping[str, DetInput],
    stem: str | Path,
    title: str = "DET",
    limits: tuple[float, float] = DET_LIMITS,
) -> PlotFiles:
    """Miss vs false alarm probability on probit axes, one line per system.

    A curve is a `DetCurve` or a (p_fa, p_miss) pair. Both axes use the normal
    deviate scale with ticks at `DET_TICKS` labelled in percent; probabilities
    are clipped to [DET_CLIP, 1 - DET_CLIP] so 0 and 1 plot at finite positions.
    Both axes span `limits`; parts of a curve beyond them (e.g. P_miss = 100 %
    at the strictest threshold) leave the frame.
    """
    _require(curves, "DET curves", "plot_det")
    lo, hi = limits
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(f"plot_det: limits must satisfy 0 < lo < hi < 1, got {limits}")
    data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, c in curves.items():
        raw: Any
        if isinstance(c, DetCurve):
            raw = ([p.p_fa for p in c.points], [p.p_miss for p in c.points])
        else:
            raw = c
        p_fa, p_miss = _pair(raw, name, "P_fa", "P_miss")
        data[name] = (probit(p_fa), probit(p_miss))

    ticks = [t for t in DET_TICKS if lo <= t <= hi]
    positions = probit(ticks)
    span = probit([lo, hi])
    with _style():
        # Square: both axes share one probit span, so equal lengths keep the
        # diagonal (P_miss = P_fa) at 45 degrees.
        fig, ax = _new_axes((5.6, 5.6))
        for name, (x, y) in data.items():
            ax.plot(x, y, label=name, linewidth=1.5)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_ticks(positions, [_percent_label(t) for t in ticks])
        ax.set_xlim(*span)
        ax.set_ylim(*span)
        labels = ("false alarm probability (%)", "miss probability (%)")
        return _finish(fig, ax, stem, labels, title, "upper right")


# --- CMC ---------------------------------------------------------------------


def plot_cmc(
    cmcs: Mapping[str, CmcInput],
    stem: str | Path,
    max_rank: int = 50,
    title: str = "CMC",
) -> PlotFiles:
    """Identification rate against rank 1..N (N = min(len(cmc), max_rank)), one line per system.

    A CMC is an `IdentificationScore` or a sequence whose element k-1 is the
    rank-k rate (a fraction, shown in percent).
    """
    _require(cmcs, "CMC curves", "plot_cmc")
    if max_rank < 1:
        raise ValueError(f"plot_cmc: max_rank must be >= 1, got {max_rank}")
    data = {
        name: _series(c.cmc if isinstance(c, IdentificationScore) else c, name, "CMC")[:max_rank]
        for name, c in cmcs.items()
    }
    n = max(v.size for v in data.values())

    with _style():
        fig, ax = _new_axes()
        for name, rates in data.items():
            ranks = np.arange(1, rates.size + 1)
            ax.plot(ranks, rates, label=name, marker="o", markersize=3, linewidth=1.5)
        ax.set_xlim(0.5, n + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        return _finish(fig, ax, stem, ("rank", "identification rate"), title, "lower right")


# --- confusion matrix --------------------------------------------------------


def plot_confusion(
    confusion: Mapping[str, Mapping[str, int]], stem: str | Path, title: str = "confusion"
) -> PlotFiles:
    """A confusion matrix as a heat map with its counts: references down, answers across.

    ``confusion`` maps reference label -> answered label -> count (scoring.lid's).
    """
    _require(confusion, "reference labels", "plot_confusion")
    rows = sorted(confusion)
    columns = sorted({c for row in confusion.values() for c in row} | set(rows))
    counts = [[confusion[r].get(c, 0) for c in columns] for r in rows]
    peak = max(max(r) for r in counts) or 1
    with _style():
        fig, ax = _new_axes((1.6 + 0.6 * len(columns), 1.4 + 0.5 * len(rows)))
        ax.imshow(counts, cmap="Blues", aspect="auto")
        ax.set_xticks(range(len(columns)), columns)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlabel("answered")
        ax.set_ylabel("reference")
        ax.set_title(title)
        for y, row in enumerate(counts):
            for x, n in enumerate(row):
                colour = "white" if n > peak / 2 else "black"
                ax.text(x, y, str(n), ha="center", va="center", color=colour)
        return _save(fig, stem)


# --- error rate by condition -------------------------------------------------


def plot_wer_by_condition(
    values: Mapping[str, Mapping[str, float]],
    stem: str | Path,
    metric: str = "WER",
    condition_order: Sequence[str] | None = None,
    title: str | None = None,
) -> PlotFiles:
    """Grouped bars: per condition, one bar per system showing its error rate (fraction -> %).

    `values` maps system -> condition -> rate (e.g. `AsrScore.wer` from
    `AsrReport.by_condition`). Conditions follow `condition_order` if given
    (it must list every condition present), else first appearance. A system
    without a value for a condition has no bar there.
    """
    _require(values, f"{metric} values", "plot_wer_by_condition")
    seen: dict[str, None] = {}
    for name, by_cond in values.items():
        _require(by_cond, f"conditions for {name!r}", "plot_wer_by_condition")
        for cond, v in by_cond.items():
            if not math.isfinite(v):
                raise ValueError(f"{name!r}: {metric} for {cond!r} must be finite, got {v!r}")
            seen.setdefault(cond, None)
    if condition_order is None:
        conditions = list(seen)
    else:
        conditions = list(condition_order)
        if len(set(conditions)) != len(conditions):
            raise ValueError(f"plot_wer_by_condition: repeated condition in {conditions}")
        missing = [c for c in seen if c not in conditions]
        if missing:
            raise ValueError(f"plot_wer_by_condition: condition_order lacks {missing}")

    x = np.arange(len(conditions), dtype=float)
    width = 0.8 / len(values)
    with _style():
        fig, ax = _new_axes()
        for i, (name, by_cond) in enumerate(values.items()):
            idx = [j for j, c in enumerate(conditions) if c in by_cond]
            heights = [by_cond[conditions[j]] for j in idx]
            offset = (i - (len(values) - 1) / 2.0) * width
            ax.bar(x[idx] + offset, heights, width=width, label=name)
        ax.set_xticks(x, conditions)
        ax.set_ylim(bottom=0.0)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        title = title if title is not None else f"{metric} by condition"
        return _finish(fig, ax, stem, ("condition", metric), title, "upper left", axis="y")


# --- real-time factor --------------------------------------------------------


def plot_rtf_distribution(
    values: Mapping[str, Sequence[float]],
    stem: str | Path,
    budget: float | None = None,
    label: str = "real-time factor",
    title: str | None = None,
) -> PlotFiles:
    """Box plot per system with the individual values jittered on top, and a budget line.

    With `budget`, a dashed horizontal line marks it and each system's tick
    label counts the values above it. The jitter uses a fixed seed.
    """
    _require(values, f"{label} values", "plot_rtf_distribution")
    if budget is not None and not math.isfinite(budget):
        raise ValueError(f"plot_rtf_distribution: budget must be finite, got {budget!r}")
    data = {name: _series(v, name, label) for name, v in values.items()}
    names = list(data)
    positions = np.arange(1, len(names) + 1, dtype=float)
    tick_labels = []
    for name in names:
        if budget is None:
            tick_labels.append(name)
        else:
            over = int((data[name] > budget).sum())
            tick_labels.append(f"{name}\n{over}/{data[name].size} over")
    # Fixed seed: jitter only spreads the dots, and reruns must give the same file.
    rng = np.random.default_rng(0)

    with _style():
        fig, ax = _new_axes()
        ax.boxplot(
            [data[n] for n in names],
            positions=positions,
            widths=0.5,
            showfliers=False,  # every value is drawn as a dot below, outliers included
            medianprops={"color": "black"},
        )
        for pos, name in zip(positions, names, strict=True):
            vals = data[name]
            jitter = rng.uniform(-0.15, 0.15, size=vals.size)
            ax.plot(pos + jitter, vals, linestyle="none", marker="o", markersize=3, alpha=0.5)
        if budget is not None:
            ax.axhline(budget, color="tab:red", linestyle="--", linewidth=1.2)
            ax.annotate(
                f"budget {budget:g}",
                xy=(1.0, budget),
                xycoords=("axes fraction", "data"),
                xytext=(-4, 3),
                textcoords="offset points",
                ha="right",
                color="tab:red",
                fontsize="small",
            )
        ax.set_xticks(positions, tick_labels)
        ax.set_xlim(0.5, len(names) + 0.5)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.set_ylabel(label)
        ax.set_title(title if title is not None else f"{label} per system")
        ax.grid(True, axis="y", alpha=0.3)
        return _save(fig, stem)
