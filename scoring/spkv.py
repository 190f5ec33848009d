"""Speaker verification: a score per trial (enrolment recording, test recording), against
whether the two are one speaker.

Conventions (docs/kind-spkv.md):

* A trial is accepted when its score >= the threshold (higher: more likely the same
  speaker); tied scores are accepted together. A trial the system never scored
  is rejected at every finite threshold (scored as -inf), so it counts against
  the system wherever it falls.
* EER: where P_miss = P_fa on the DET curve, interpolated linearly between the
  two points where they cross (`scoring.det`, the one EER of scoring/).
* minDCF: NIST SRE's normalized detection cost at its best threshold,
  ``min_t (C_miss P_miss(t) P_target + C_fa P_fa(t) (1 - P_target)) /
  min(C_miss P_target, C_fa (1 - P_target))``, by default with P_target = 0.01
  and C_miss = C_fa = 1 (the SRE 2016-2021 primary operating point).
* Trials are ordered pairs: (enrol, test) and (test, enrol) are two trials.

Standard library at import; numpy when scoring (`scoring.det.roc_curve`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .det import (
    SRE_COST,
    DetectionCost,
    RocCurve,
    equal_error_rate,
    min_detection_cost,
    roc_curve,
)
from .kws import _records

__all__ = ["SpkvReport", "Trial", "read_trial_scores", "read_trials", "score_trials"]

Trial = tuple[str, str]  # (enrolment recording, test recording)
T = TypeVar("T")


@dataclass(frozen=True)
class SpkvReport:
    """EER, minDCF at the cost parameters, and the DET curve of one system's trials."""

    roc: RocCurve
    eer: float | None
    min_dcf: float
    cost: DetectionCost
    missing_scores: int

    def to_dict(self, include_det: bool = False) -> dict[str, Any]:
        """JSON-ready figures; the DET curve's points (P_miss, P_fa) only if asked for."""
        out: dict[str, Any] = {
            "targets": self.roc.genuine,
            "nontargets": self.roc.impostor,
            "missing_scores": self.missing_scores,
            "eer": self.eer,
            "min_dcf": self.min_dcf,
            **self.cost.to_dict(),
        }
        if include_det:
            out["det"] = {"p_miss": list(self.roc.frr), "p_fa": list(self.roc.far)}
        return out


def score_trials(
    scores: Mapping[Trial, float],
    truth: Mapping[Trial, bool],
    cost: DetectionCost = SRE_COST,
) -> SpkvReport:
    """Score trials against the truth (True: one speaker). A trial of `truth` without a
    score is rejected at every threshold. Raises ValueError for a scored trial not in
    `truth`, a score that is not finite, or a truth without both kinds of trial."""
    unknown = [t for t in scores if t not in truth]
    if unknown:
        raise ValueError(f"scores for trials not in the truth: {unknown[:3]}")
    bad = [t for t, s in scores.items() if not math.isfinite(s)]
    if bad:
        raise ValueError(f"trial {bad[0]} has a score that is not finite: {scores[bad[0]]!r}")
    trials = list(truth)
    roc = roc_curve([scores.get(t, -math.inf) for t in trials], [truth[t] for t in trials])
    p_miss, p_fa = roc.frr, roc.far
    return SpkvReport(
        roc=roc,
        eer=equal_error_rate(p_miss, p_fa),
        min_dcf=min_detection_cost(p_miss, p_fa, cost),
        cost=cost,
        missing_scores=sum(1 for t in trials if t not in scores),
    )


_ENROL = '"enrol": "spk1-a.wav"'
_TEST = '"test": "spk1-b.wav"'


def _by_trial(
    path: str | Path, what: str, value: Callable[[Any], T], encoding: str | None
) -> dict[Trial, T]:
    """``{"enrol", "test", ...}`` lines of ``what`` -> ``value(line)`` by trial; a trial
    given twice is an error. ``encoding``: the file's (scoring.charsets; None: UTF-8)."""
    out: dict[Trial, T] = {}
    seen: dict[Any, int] = {}
    for rec in _records(path, what, encoding):
        trial = (rec.text("enrol", _ENROL), rec.text("test", _TEST))
        rec.once(seen, trial, "trial")
        out[trial] = value(rec)
    return out


def read_trials(path: str | Path, encoding: str | None = None) -> dict[Trial, bool]:
    """``{"enrol", "test", "target": true|false}`` lines in ``encoding`` (None: UTF-8);
    a trial given twice is an error."""
    return _by_trial(path, "trials", lambda rec: rec.flag("target", '"target": true'), encoding)


def read_trial_scores(path: str | Path, encoding: str | None = None) -> dict[Trial, float]:
    """``{"enrol", "test", "score"}`` lines (higher: more likely one speaker) in
    ``encoding`` (None: UTF-8)."""
    return _by_trial(
        path, "scores", lambda rec: float(rec.number("score", '"score": 2.7')), encoding
    )
