"""Scored trials: the ROC/DET curve, the equal error rate and the detection cost.

One implementation for every family whose answers are scores on target and
non-target trials: face verification (`scoring.faces`), keyword detection
(`scoring.kws`) and speaker verification (`scoring.spkv`).

* A curve runs from the strictest threshold (nothing accepted: P_miss 1, P_fa 0)
  to the loosest; a trial is accepted when its score >= the threshold, and tied
  scores are accepted together.
* The equal error rate is where P_miss = P_fa, interpolated linearly between the
  two points where P_miss - P_fa changes sign (a point where they are equal gives
  that value); None when the curve never gets there.
* The detection cost is NIST SRE's:
  ``C_det = C_miss * P_miss * P_target + C_fa * P_fa * (1 - P_target)``,
  normalized by the cost of the better trivial system
  ``min(C_miss * P_target, C_fa * (1 - P_target))``; minDCF is its least value
  over the curve's points (so at most 1).

Standard library only at import; numpy is loaded by `roc_curve`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DetectionCost",
    "SRE_COST",
    "RocCurve",
    "equal_error_rate",
    "min_detection_cost",
    "roc_curve",
    "trials_eer",
]


@dataclass(frozen=True)
class RocCurve:
    """ROC points in order of decreasing threshold; accept when score >= threshold.

    The first point (threshold +inf) accepts nothing. If any pair has no score
    (-inf), the last point (threshold -inf) accepts everything.
    """

    thresholds: tuple[float, ...]
    far: tuple[float, ...]
    tar: tuple[float, ...]
    genuine: int
    impostor: int

    @property
    def frr(self) -> tuple[float, ...]:
        """False reject rate (P_miss), 1 - TAR, per point."""
        return tuple(1.0 - t for t in self.tar)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready arrays; non-finite thresholds become None."""
        return {
            "thresholds": [t if math.isfinite(t) else None for t in self.thresholds],
            "far": list(self.far),
            "tar": list(self.tar),
        }


def _check_scores(scores: Sequence[float], genuine: Sequence[bool]) -> tuple[Any, Any]:
    import numpy as np

    s = np.asarray(scores, dtype=float).reshape(-1)
    g = np.asarray(genuine, dtype=bool).reshape(-1)
    if s.shape != g.shape:
        raise ValueError(f"{s.size} scores but {g.size} genuine/impostor labels")
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ValueError("scores must be finite (or -inf for a pair with no score)")
    if not g.any() or g.all():
        raise ValueError("need at least one genuine and one impostor pair")
    return s, g


def roc_curve(scores: Sequence[float], genuine: Sequence[bool]) -> RocCurve:
    """ROC with one point per distinct score, plus the accept-nothing point at +inf.

    At threshold t a pair is accepted when score >= t, the same rule as
    sklearn.metrics.roc_curve (drop_intermediate=False). A score of -inf marks
    a trial with no score: accepted only by the last point. Raises ValueError
    without a target and a non-target trial, or for a NaN or +inf score.
    """
    import numpy as np

    s, g = _check_scores(scores, genuine)
    order = np.argsort(-s, kind="stable")
    s, g = s[order], g[order]
    # Last index of each run of equal scores: all tied pairs flip together. Compared, not
    # subtracted: -inf minus -inf is NaN, which would split the unscored trials (all -inf)
    # in file order, and a system that answered nothing could score a perfect EER.
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), s.size - 1]
    tp = np.cumsum(g)[last]
    fp = np.cumsum(~g)[last]
    n_gen, n_imp = int(g.sum()), int((~g).sum())
    return RocCurve(
        thresholds=(math.inf, *(float(v) for v in s[last])),
        far=(0.0, *(float(v) / n_imp for v in fp)),
        tar=(0.0, *(float(v) / n_gen for v in tp)),
        genuine=n_gen,
        impostor=n_imp,
    )


def equal_error_rate(p_miss: Iterable[float], p_fa: Iterable[float]) -> float | None:
    """Where P_miss = P_fa on a curve given strictest point first; None if never reached.

    Linear between the two points where P_miss - P_fa changes sign; a point where
    they are equal gives that value. Before the first point the curve is at
    (P_miss 1, P_fa 0), so a sign change always has a predecessor.
    """
    prev_d, prev_fa = 1.0, 0.0
    for miss, fa in zip(p_miss, p_fa, strict=True):
        d = miss - fa
        if d == 0:
            return fa
        if d < 0:
            t = prev_d / (prev_d - d)
            return prev_fa + t * (fa - prev_fa)
        prev_d, prev_fa = d, fa
    return None


def trials_eer(scores: Sequence[float], targets: Sequence[bool]) -> float | None:
    """The EER of scored trials (-inf: a trial with no score), as `roc_curve` and
    `equal_error_rate` give it; None without both a target and a non-target trial."""
    if all(targets) or not any(targets):
        return None
    roc = roc_curve(scores, targets)
    return equal_error_rate(roc.frr, roc.far)


@dataclass(frozen=True)
class DetectionCost:
    """NIST SRE detection cost parameters: the target prior and the two error costs."""

    p_target: float = 0.01
    c_miss: float = 1.0
    c_fa: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 < self.p_target < 1.0:
            raise ValueError(f"P_target must be between 0 and 1, got {self.p_target}")
        if not (self.c_miss > 0 and self.c_fa > 0):
            raise ValueError("C_miss and C_fa must be positive")

    @property
    def default(self) -> float:
        """The cost of the better system that always accepts or always rejects."""
        return min(self.c_miss * self.p_target, self.c_fa * (1.0 - self.p_target))

    def to_dict(self) -> dict[str, float]:
        """JSON-ready parameters."""
        return {"p_target": self.p_target, "c_miss": self.c_miss, "c_fa": self.c_fa}


SRE_COST = DetectionCost()
"""NIST SRE's primary operating point (2016-2021): P_target 0.01, C_miss = C_fa = 1."""


def min_detection_cost(
    p_miss: Iterable[float], p_fa: Iterable[float], cost: DetectionCost = SRE_COST
) -> float:
    """The least normalized detection cost over the curve's points (minDCF).

    A curve from `roc_curve` holds both trivial systems (accept nothing, accept all),
    so the value is at most 1. Raises ValueError for an empty curve.
    """
    return min(
        (cost.c_miss * miss * cost.p_target + cost.c_fa * fa * (1.0 - cost.p_target)) / cost.default
        for miss, fa in zip(p_miss, p_fa, strict=True)
    )
