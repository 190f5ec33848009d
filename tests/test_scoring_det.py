"""scoring/det.py: the one ROC/DET, EER and detection cost of face verification, keyword
detection and speaker verification."""

from __future__ import annotations

import math

import pytest

from scoring.det import DetectionCost, equal_error_rate, min_detection_cost, roc_curve
from scoring.faces import score_verification_pairs
from scoring.kws import det_curve
from scoring.spkv import score_trials

TARGETS_FIRST = {("a", "b"): True, ("c", "d"): True, ("a", "c"): False, ("b", "d"): False}
TARGETS_LAST = dict(reversed(list(TARGETS_FIRST.items())))


@pytest.mark.parametrize("truth", [TARGETS_FIRST, TARGETS_LAST], ids=["targets-first", "last"])
def test_answering_nothing_is_chance_whatever_the_trial_order(truth: dict) -> None:
    # The attack: never answer (crash, time out). Every trial is then unscored (-inf), one
    # tie accepted all at once: P_miss 1 -> 0 as P_fa 0 -> 1, the EER is 1/2. It was 0.0
    # (a perfect system) when the truth listed its targets first: the tie was split.
    assert score_verification_pairs({}, truth).eer == 0.5
    assert score_trials({}, truth).eer == 0.5
    roc = roc_curve([-math.inf] * 4, list(truth.values()))
    assert roc.far == (0.0, 1.0) and roc.tar == (0.0, 1.0)


def test_one_eer_for_every_family() -> None:
    # The same curve through each family's own path gives the same EER.
    scores = {("a", "b"): 3.0, ("c", "d"): 1.0, ("a", "c"): 2.0, ("b", "d"): 0.0}
    faces = score_verification_pairs(scores, TARGETS_FIRST).eer
    spkv = score_trials(scores, TARGETS_FIRST).eer
    dets = [(k[0] + k[1], "u", s, TARGETS_FIRST[k]) for k, s in scores.items()]
    kws = det_curve(dets, n_true=2, n_nontarget=2).eer
    assert faces == spkv == kws == 0.5
    # Linear between the points where P_miss - P_fa changes sign; None if never.
    # (0.5, 0.25): d = 1/4; (0, 1): d = -1; a fifth of the way: 0.25 + 0.2 * 0.75.
    assert equal_error_rate([1.0, 0.5, 0.0], [0.0, 0.25, 1.0]) == pytest.approx(0.4)
    assert equal_error_rate([1.0, 0.5], [0.0, 0.25]) is None


def test_min_dcf_is_nist_sre_normalized() -> None:
    # C_det / min(C_miss P_target, C_fa (1 - P_target)), its least value over the points.
    cost = DetectionCost(p_target=0.1, c_miss=10.0, c_fa=1.0)
    assert cost.default == pytest.approx(0.9)
    points = ([1.0, 0.2, 0.0], [0.0, 0.1, 1.0])
    expected = min(10 * m * 0.1 + f * 0.9 for m, f in zip(*points, strict=True)) / 0.9
    assert min_detection_cost(*points, cost) == pytest.approx(expected)
    with pytest.raises(ValueError, match="positive"):
        DetectionCost(c_miss=0.0)
