"""scoring.plots: files written, SVG text, DET probit mapping, reproducibility, bad input."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest

from scoring.faces import IdentificationScore, roc_curve
from scoring.kws import det_curve
from scoring.plots import (
    DET_CLIP,
    DET_TICKS,
    PlotFiles,
    plot_cmc,
    plot_det,
    plot_roc,
    plot_rtf_distribution,
    plot_wer_by_condition,
    probit,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# "&" and "<" must survive XML escaping in the SVG text.
NAMES = ("alpha", "beta & <co>")


def _scores() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    scores = np.r_[rng.normal(2.0, 1.0, 60), rng.normal(0.0, 1.0, 400)]
    genuine = np.r_[np.ones(60, dtype=bool), np.zeros(400, dtype=bool)]
    return scores, genuine


def _roc(stem: Path) -> PlotFiles:
    scores, genuine = _scores()
    roc = roc_curve(scores, genuine)
    other = (roc.far, [min(1.0, t * 1.1) for t in roc.tar])
    return plot_roc({NAMES[0]: roc, NAMES[1]: other}, stem, eer={NAMES[0]: 0.2})


def _det(stem: Path) -> PlotFiles:
    scores, genuine = _scores()
    dets = [
        ("kw", f"u{i}", float(s), bool(g))
        for i, (s, g) in enumerate(zip(scores, genuine, strict=True))
    ]
    curve = det_curve(dets, n_true=60, n_nontarget=400)
    return plot_det(
        {NAMES[0]: curve, NAMES[1]: ([0.0, 0.01, 0.2, 1.0], [1.0, 0.3, 0.05, 0.0])}, stem
    )


def _cmc(stem: Path) -> PlotFiles:
    score = IdentificationScore(probes=10, cmc=(0.5, 0.7, 0.8, 0.9, 1.0), never_matched=0)
    return plot_cmc({NAMES[0]: score, NAMES[1]: np.linspace(0.2, 1.0, 80)}, stem, max_rank=50)


def _wer(stem: Path) -> PlotFiles:
    values = {
        NAMES[0]: {"clean": 0.05, "snr15": 0.12, "snr5": 0.4},
        NAMES[1]: {"clean": 0.08, "snr5": 1.1},  # no snr15 value; WER above 100 %
    }
    return plot_wer_by_condition(values, stem, condition_order=["clean", "snr15", "snr5"])


def _rtf(stem: Path) -> PlotFiles:
    rng = np.random.default_rng(3)
    values = {NAMES[0]: rng.gamma(2.0, 0.2, 50), NAMES[1]: [0.4, 0.9, 1.3]}
    return plot_rtf_distribution(values, stem, budget=1.0)


PLOTTERS: dict[str, Callable[[Path], PlotFiles]] = {
    "roc": _roc,
    "det": _det,
    "cmc": _cmc,
    "wer": _wer,
    "rtf": _rtf,
}


def _svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return "\n".join("".join(el.itertext()) for el in root.iter("{http://www.w3.org/2000/svg}text"))


@pytest.mark.parametrize("kind", sorted(PLOTTERS))
def test_writes_png_and_svg_with_system_names(kind: str, tmp_path: Path) -> None:
    files = PLOTTERS[kind](tmp_path / "sub" / f"{kind}.v1")
    # The stem's own dot is kept; the suffix is appended.
    assert files == PlotFiles(
        tmp_path / "sub" / f"{kind}.v1.png", tmp_path / "sub" / f"{kind}.v1.svg"
    )
    png = files.png.read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > len(PNG_SIGNATURE)
    text = _svg_text(files.svg)
    for name in NAMES:
        assert name in text


@pytest.mark.parametrize("kind", sorted(PLOTTERS))
def test_svg_and_png_are_reproducible(kind: str, tmp_path: Path) -> None:
    first = PLOTTERS[kind](tmp_path / "a")
    second = PLOTTERS[kind](tmp_path / "b")
    assert first.svg.read_bytes() == second.svg.read_bytes()
    assert first.png.read_bytes() == second.png.read_bytes()


def test_svg_has_no_date(tmp_path: Path) -> None:
    files = _cmc(tmp_path / "cmc")
    assert b"<dc:date>" not in files.svg.read_bytes()


def test_probit_midpoint_and_monotonic() -> None:
    assert probit(0.5) == pytest.approx(0.0, abs=1e-12)
    p = np.array([0.0, 1e-6, DET_CLIP, *DET_TICKS, 0.5, 0.9, 1.0 - DET_CLIP, 1.0])
    z = probit(p)
    assert np.all(np.isfinite(z))
    assert np.all(np.diff(z) >= 0)
    assert np.all(np.diff(probit([DET_CLIP, *DET_TICKS, 0.5, 1.0 - DET_CLIP])) > 0)
    # Symmetric about 0.5, and 0 / 1 land on the clip bounds.
    assert probit(0.1) == pytest.approx(-probit(0.9))
    assert probit(0.0) == probit(DET_CLIP) == pytest.approx(-3.719016485, abs=1e-6)
    assert probit(1.0) == pytest.approx(-probit(0.0))
    assert probit([[0.5, 0.5]]).shape == (1, 2)


def test_det_ticks_sit_at_probit_positions(tmp_path: Path) -> None:
    files = _det(tmp_path / "det")
    text = _svg_text(files.svg).split()
    for label in ("0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"):
        assert label in text


EMPTY_CALLS: dict[str, Callable[[Path], Any]] = {
    "roc": lambda stem: plot_roc({}, stem),
    "det": lambda stem: plot_det({}, stem),
    "cmc": lambda stem: plot_cmc({}, stem),
    "wer": lambda stem: plot_wer_by_condition({}, stem),
    "rtf": lambda stem: plot_rtf_distribution({}, stem),
    "roc series": lambda stem: plot_roc({"a": ([], [])}, stem),
    "det series": lambda stem: plot_det({"a": ([], [])}, stem),
    "cmc series": lambda stem: plot_cmc({"a": []}, stem),
    "wer conditions": lambda stem: plot_wer_by_condition({"a": {}}, stem),
    "rtf series": lambda stem: plot_rtf_distribution({"a": []}, stem),
}


@pytest.mark.parametrize("case", sorted(EMPTY_CALLS))
def test_empty_input_raises(case: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        EMPTY_CALLS[case](tmp_path / "x")
    assert not list(tmp_path.iterdir())


def test_bad_input_raises(tmp_path: Path) -> None:
    stem = tmp_path / "x"
    with pytest.raises(ValueError, match="2 FAR values but 3 TAR"):
        plot_roc({"a": ([0.1, 1.0], [0.2, 0.5, 1.0])}, stem)
    with pytest.raises(ValueError, match="nonzero false accept"):
        plot_roc({"a": ([0.0, 0.0], [0.0, 1.0])}, stem)
    with pytest.raises(ValueError, match="without a curve"):
        plot_roc({"a": ([0.1, 1.0], [0.5, 1.0])}, stem, eer={"b": 0.1})
    with pytest.raises(ValueError, match="finite"):
        plot_rtf_distribution({"a": [0.5, float("nan")]}, stem)
    with pytest.raises(ValueError, match="condition_order lacks"):
        plot_wer_by_condition({"a": {"clean": 0.1, "snr5": 0.2}}, stem, condition_order=["clean"])
    with pytest.raises(ValueError, match="max_rank"):
        plot_cmc({"a": [0.5, 1.0]}, stem, max_rank=0)
    with pytest.raises(ValueError, match="limits"):
        plot_det({"a": ([0.1], [0.2])}, stem, limits=(0.5, 0.1))
    assert not list(tmp_path.iterdir())


def test_global_rc_untouched_and_threads_agree(tmp_path: Path) -> None:
    before = dict(matplotlib.rcParams)
    with ThreadPoolExecutor(max_workers=4) as pool:
        files = list(pool.map(_rtf, [tmp_path / f"t{i}" for i in range(4)]))
    assert dict(matplotlib.rcParams) == before
    svgs = {f.svg.read_bytes() for f in files}
    assert len(svgs) == 1
