"""Hand-worked cases for scoring.faces, plus cross-checks against scipy/sklearn."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from scoring.faces import (
    Box,
    FaceLandmarks,
    ImageReference,
    ProbeTruth,
    check_detection,
    equal_error_rate,
    match_faces,
    maximum_bipartite_matching,
    probe_rank,
    read_face_detections,
    read_face_references,
    read_identification_candidates,
    read_identification_truth,
    read_verification_scores,
    read_verification_truth,
    roc_curve,
    score_detection,
    score_identification,
    score_verification,
    score_verification_pairs,
    verification_rate_at_far,
)

# Face A: ROI [10, 20] x [10, 20], area 100; correct boxes need area < 600.
FACE_A = FaceLandmarks(left_eye=(10, 10), right_eye=(20, 10), mouth=(15, 20))
# Face B: the same face shifted by (4, 4): ROI [14, 24] x [14, 24].
FACE_B = FaceLandmarks(left_eye=(14, 14), right_eye=(24, 14), mouth=(19, 24))


def box(x0: float, y0: float, x1: float, y1: float, score: float | None = None) -> Box:
    return Box(x0, y0, x1 - x0, y1 - y0, score)


# --- detection: one condition at a time --------------------------------------


def test_roi_and_area() -> None:
    assert FACE_A.roi() == (10, 10, 20, 20)
    assert FACE_A.roi_area() == 100


def test_correct_box_covering_whole_roi() -> None:
    assert check_detection(FACE_A, box(8, 8, 22, 22)) == ()


def test_fails_mouth_outside_only() -> None:
    # Both eyes in, coverage [10,20]x[10,19] = 90, area 120: only the mouth fails.
    assert check_detection(FACE_A, box(9, 9, 21, 19)) == ("mouth_outside",)


def test_fails_no_eye_inside_only() -> None:
    # Eyes at x = 10 and 20 lie outside [11, 19]; coverage 8 x 10 = 80 is exactly 80%.
    assert check_detection(FACE_A, box(11, 9, 19, 21)) == ("eyes_outside",)


def test_one_eye_is_enough() -> None:
    # Left eye and mouth inside, right eye not; coverage 9 x 10 = 90.
    assert check_detection(FACE_A, box(9, 9, 19, 21)) == ()


def test_fails_low_coverage_only() -> None:
    # Left eye + mouth inside but the box covers [10,17]x[10,20] = 70 < 80.
    assert check_detection(FACE_A, box(9, 9, 17, 21)) == ("low_coverage",)


def test_fails_too_large_only_and_boundary_is_strict() -> None:
    assert check_detection(FACE_A, box(0, 0, 30, 30)) == ("too_large",)
    # Area exactly 6 x 100 = 600 fails (the rule is "less than 6 times").
    assert check_detection(FACE_A, box(0, 0, 20, 30)) == ("too_large",)
    assert check_detection(FACE_A, box(0, 0, 20, 29.95)) == ()


def test_points_on_box_edge_count_as_inside() -> None:
    assert check_detection(FACE_A, box(10, 10, 20, 20)) == ()


def test_degenerate_roi_gets_one_pixel_minimum() -> None:
    flat = FaceLandmarks(left_eye=(10, 10), right_eye=(20, 10), mouth=(15, 10))
    assert flat.roi() == (10, 9.5, 20, 10.5)
    assert flat.roi_area() == 10
    assert check_detection(flat, box(9, 9, 21, 11)) == ()  # area 24 < 60
    assert check_detection(flat, box(0, 0, 20, 20)) == ("too_large",)  # 400 >= 60
    point = FaceLandmarks((5, 5), (5, 5), (5, 5))
    assert point.roi_area() == 1
    assert check_detection(point, box(4.5, 4.5, 5.5, 5.5)) == ()


# --- detection: matching -----------------------------------------------------


def test_face_with_two_candidate_detections() -> None:
    refs = {"i": ImageReference("i", (FACE_A,), "s")}
    dets = {"i": [box(8, 8, 22, 22), box(9, 9, 21, 21)]}
    r = score_detection(refs, dets)
    assert (r.overall.correct, r.overall.false_detections) == (1, 1)
    assert r.overall.correct_detection_rate == 1.0


def test_bipartite_matching_beats_greedy() -> None:
    # big: correct for A and B; small: correct for A only (B's mouth (19,24) is outside).
    big, small = box(9, 9, 25, 25, 0.9), box(8, 8, 22, 22, 0.8)
    assert check_detection(FACE_A, big) == () and check_detection(FACE_B, big) == ()
    assert check_detection(FACE_A, small) == () and check_detection(FACE_B, small) != ()
    # Greedy (faces in order, highest-scoring box first) gives A->big and leaves
    # B unmatched: 1 correct. The maximum matching finds A->small, B->big.
    taken: set[int] = set()
    for f in (FACE_A, FACE_B):
        for j, b in enumerate([big, small]):
            if j not in taken and not check_detection(f, b):
                taken.add(j)
                break
    assert len(taken) == 1
    assert match_faces([FACE_A, FACE_B], [big, small]) == [(0, 1), (1, 0)]
    refs = {"i": ImageReference("i", (FACE_A, FACE_B))}
    r = score_detection(refs, {"i": [big, small]})
    assert (r.overall.correct, r.overall.false_detections) == (2, 0)


def test_each_box_matches_at_most_one_face() -> None:
    big = box(9, 9, 25, 25)
    r = score_detection({"i": ImageReference("i", (FACE_A, FACE_B))}, {"i": [big]})
    assert (r.overall.correct, r.overall.false_detections) == (1, 0)
    assert r.overall.correct_detection_rate == 0.5


def _brute_force_matching_size(adj: np.ndarray) -> int:
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-adj.astype(float))
    return int(adj[rows, cols].sum())


def test_matching_size_equals_scipy_on_random_graphs() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n, m = rng.integers(0, 8, size=2)
        adj = rng.random((n, m)) < rng.random()
        pairs = maximum_bipartite_matching([list(np.flatnonzero(row)) for row in adj], int(m))
        assert len({r for _, r in pairs}) == len(pairs)
        assert all(adj[i, j] for i, j in pairs)
        expected = _brute_force_matching_size(adj) if n and m else 0
        assert len(pairs) == expected


def test_subsets_timing_and_missing_images() -> None:
    refs = {
        "a": ImageReference("a", (FACE_A,), "indoor"),
        "b": ImageReference("b", (FACE_A, FACE_B), "outdoor"),
        "c": ImageReference("c", (), "outdoor"),
    }
    dets = {"a": [box(8, 8, 22, 22)], "c": [box(0, 0, 5, 5)]}
    r = score_detection(refs, dets, seconds={"a": 0.02, "c": 0.04})
    assert r.overall.to_dict() == {
        "images": 3,
        "reference_faces": 3,
        "detections": 2,
        "correct": 1,
        "false_detections": 1,
        "correct_detection_rate": pytest.approx(1 / 3),
        "timed_frames": 2,
        "ms_per_frame": pytest.approx(30.0),
    }
    assert r.by_subset["indoor"].correct_detection_rate == 1.0
    assert r.by_subset["outdoor"].correct_detection_rate == 0.0
    assert r.by_subset["outdoor"].false_detections == 1
    assert r.images[1].detections_missing
    json.dumps(r.to_dict(include_images=True))
    with pytest.raises(ValueError, match="not in the reference"):
        score_detection(refs, {"zzz": []})


# --- identification ----------------------------------------------------------


def test_rank_with_ties_is_pessimistic() -> None:
    cands = [("B", 0.9), ("C", 0.8), ("A", 0.8), ("D", 0.7)]
    assert probe_rank(cands, "A") == 3
    assert probe_rank(cands, "C") == 3
    assert probe_rank(cands, "B") == 1
    assert probe_rank(cands, "D") == 4
    assert probe_rank(cands, "E") is None
    # File order is ignored: only similarities rank.
    assert probe_rank(list(reversed(cands)), "B") == 1


def test_cmc_with_ties_and_unmatched() -> None:
    truth = {
        "p1": ProbeTruth("p1", "A", "pose"),
        "p2": ProbeTruth("p2", "A", "pose"),
        "p3": ProbeTruth("p3", "A", "expression"),
        "p4": ProbeTruth("p4", "A", "expression"),
    }
    cands = {
        "p1": [("A", 0.9), ("B", 0.5)],  # rank 1
        "p2": [("B", 0.9), ("C", 0.8), ("A", 0.8)],  # tie -> rank 3
        "p3": [("B", 0.9)],  # truth absent -> never
        # p4 has no candidates -> never
    }
    r = score_identification(cands, truth, max_rank=5)
    assert r.overall.cmc == (0.25, 0.25, 0.5, 0.5, 0.5)
    assert r.overall.rank1 == 0.25
    assert r.overall.never_matched == 2
    assert r.by_subset["pose"].cmc == (0.5, 0.5, 1.0, 1.0, 1.0)
    assert r.by_subset["expression"].cmc == (0.0,) * 5
    assert [p.rank for p in r.probes] == [1, 3, None, None]
    d = r.to_dict(include_probes=True)
    assert d["overall"]["rank10"] is None  # fewer than 10 ranks requested
    json.dumps(d)


def test_default_cmc_runs_to_rank_50() -> None:
    gallery = [(f"g{i:02d}", 1.0 - i / 100) for i in range(60)]
    truth = {f"p{k}": ProbeTruth(f"p{k}", f"g{k:02d}") for k in (0, 9, 10, 49, 55)}
    r = score_identification({p: gallery for p in truth}, truth)
    assert len(r.overall.cmc) == 50
    assert r.overall.rank1 == 0.2
    assert r.overall.rank10 == 0.4  # ranks 1 and 10
    assert r.overall.cmc[49] == 0.8  # rank 56 is beyond the CMC


def test_identification_rejects_duplicates_and_unknown_probes() -> None:
    truth = {"p": ProbeTruth("p", "A")}
    with pytest.raises(ValueError, match="listed twice"):
        score_identification({"p": [("A", 0.5), ("A", 0.4)]}, truth)
    with pytest.raises(ValueError, match="not in the reference"):
        score_identification({"q": []}, truth)


# --- verification ------------------------------------------------------------


def test_eer_exact_crossing() -> None:
    # thresholds 0.9: FAR 0, FRR 2/3; 0.8: 0, 1/3; 0.7: 1/3, 1/3 -> EER 1/3.
    r = score_verification([0.9, 0.8, 0.4, 0.7, 0.3, 0.2], [1, 1, 1, 0, 0, 0])
    assert r.eer == pytest.approx(1 / 3)


def test_eer_interpolated_by_hand() -> None:
    # Points (FAR, FRR): +inf (0, 1); 0.9 (0, 1/2); 0.5 (1/4, 0) where a genuine
    # and an impostor tie. FRR - FAR goes 1/2 -> -1/4, so t = (1/2)/(3/4) = 2/3:
    # FAR = 2/3 * 1/4 = 1/6 and FRR = 1/2 - 2/3 * 1/2 = 1/6.
    r = score_verification([0.9, 0.5, 0.5, 0.1, 0.05, 0.0], [1, 1, 0, 0, 0, 0])
    assert r.eer == pytest.approx(1 / 6)


def test_eer_interpolated_along_frr_only() -> None:
    # 0.7: (1/4, 1/2) d = 1/4; 0.6: (1/4, 0) d = -1/4 -> EER 1/4.
    r = score_verification([0.9, 0.6, 0.7, 0.5, 0.2, 0.1], [1, 1, 0, 0, 0, 0])
    assert r.eer == pytest.approx(0.25)


def test_perfect_separation() -> None:
    r = score_verification([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0])
    assert r.eer == 0.0
    assert r.rate_at(0.001).tar == 1.0
    assert r.rate_at(0.001).threshold == 0.8


IMPOSTORS = [0.9, 0.8, 0.8, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.0]
GENUINE = [0.95, 0.85, 0.8, 0.3]


def _vr(target: float) -> tuple[float, float, float]:
    roc = roc_curve(GENUINE + IMPOSTORS, [True] * 4 + [False] * 10)
    v = verification_rate_at_far(roc, target)
    return v.threshold, v.far, v.tar


def test_vr_at_far_with_ties_at_threshold() -> None:
    # 10 impostors, FAR 10% allows 1 false accept. t = 0.8 would accept 3
    # (the tied pair), so the threshold stays at the next observed score up,
    # 0.85 (a genuine score): FAR 1/10, and the genuine 0.8 is rejected.
    assert _vr(0.1) == (0.85, 0.1, 0.5)
    # FAR 20% allows 2: still cannot take the tie, achieved FAR 10% < target.
    assert _vr(0.2) == (0.85, 0.1, 0.5)
    # FAR 30% allows 3: the whole tie is accepted, with the tied genuine 0.8.
    assert _vr(0.3) == (0.8, 0.3, 0.75)
    # FAR 0 allows none: only scores above the best impostor (0.9).
    assert _vr(0.0) == (0.95, 0.0, 0.25)


def test_vr_threshold_inf_when_nothing_can_be_accepted() -> None:
    r = score_verification([0.5, 0.5], [True, False], far_targets=[0.01])
    v = r.rate_at(0.01)
    assert (v.threshold, v.far, v.tar) == (math.inf, 0.0, 0.0)
    assert v.to_dict()["threshold"] is None
    assert r.eer == 0.5


def test_vr_float_rounding_allows_exact_count() -> None:
    # 0.29 * 100 is 28.999999999999996 in binary; 29 false accepts are allowed.
    imp = list(np.linspace(1, 0, 100))
    roc = roc_curve([2.0, *imp], [True] + [False] * 100)
    assert verification_rate_at_far(roc, 0.29).far == pytest.approx(0.29)


def test_missing_pairs_are_rejected() -> None:
    truth = {("x", "y"): True, ("x", "z"): False, ("y", "z"): True, ("w", "x"): False}
    scores = {("y", "x"): 0.9, ("x", "z"): 0.1, ("w", "x"): 0.2}  # (y, z) unscored
    r = score_verification_pairs(scores, truth)
    assert r.missing_scores == 1
    assert r.rate_at(0.01).tar == 0.5
    assert r.roc.thresholds[-1] == -math.inf
    assert (r.roc.far[-1], r.roc.tar[-1]) == (1.0, 1.0)
    json.dumps(r.to_dict(include_roc=True), allow_nan=False)
    with pytest.raises(ValueError, match="not in the reference"):
        score_verification_pairs({("q", "r"): 0.3}, truth)


def test_verification_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="genuine and one impostor"):
        score_verification([0.1, 0.2], [True, True])
    with pytest.raises(ValueError, match="finite"):
        score_verification([math.nan, 0.2], [True, False])


@pytest.mark.parametrize("seed", range(5))
def test_roc_matches_sklearn(seed: int) -> None:
    from sklearn.metrics import roc_curve as sk_roc

    rng = np.random.default_rng(seed)
    n = 400
    genuine = rng.random(n) < 0.3
    # Rounding makes plenty of ties, including genuine/impostor ties.
    scores = np.round(rng.normal(genuine.astype(float), 1.0), 1)
    roc = roc_curve(scores, genuine)
    fpr, tpr, thr = sk_roc(genuine, scores, drop_intermediate=False)
    assert np.isinf(thr[0]) and roc.thresholds[0] == math.inf
    np.testing.assert_allclose(roc.thresholds[1:], thr[1:])
    np.testing.assert_allclose(roc.far, fpr)
    np.testing.assert_allclose(roc.tar, tpr)
    # VR@FAR is the best TAR over sklearn's points with FPR <= target.
    for target in (0.01, 0.05, 0.1):
        v = verification_rate_at_far(roc, target)
        assert v.tar == pytest.approx(tpr[fpr <= target + 1e-12].max())
    # EER lies between FAR and FRR at the bracketing points.
    eer = equal_error_rate(roc)
    frr = 1 - tpr
    i = int(np.argmax(frr - fpr <= 0))
    lo, hi = sorted((fpr[i - 1], fpr[i]))
    assert lo - 1e-12 <= eer <= hi + 1e-12


# --- readers -----------------------------------------------------------------


def write(tmp_path: Path, name: str, lines: list[object | str]) -> Path:
    p = tmp_path / name
    p.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return p


def test_readers_round_trip(tmp_path: Path) -> None:
    face = {"left_eye": [10, 10], "right_eye": [20, 10], "mouth": [15, 20]}
    refs = read_face_references(
        write(tmp_path, "ref.jsonl", [{"image": "i1", "subset": "s", "faces": [face]}, ""])
    )
    assert refs["i1"] == ImageReference("i1", (FACE_A,), "s")
    dets = read_face_detections(
        write(
            tmp_path,
            "det.jsonl",
            [
                {"image": "i1", "boxes": [[8, 8, 14, 14, 0.9], [0, 0, 1, 1]], "seconds": 0.05},
                {"image": "i2", "boxes": []},
            ],
        )
    )
    assert dets.boxes["i1"] == (Box(8, 8, 14, 14, 0.9), Box(0, 0, 1, 1))
    assert dets.seconds == {"i1": 0.05}
    cands = read_identification_candidates(
        write(tmp_path, "c.jsonl", [{"probe": "p", "candidates": [["A", 0.9], ["B", 1]]}])
    )
    assert cands == {"p": (("A", 0.9), ("B", 1.0))}
    truth = read_identification_truth(
        write(tmp_path, "t.jsonl", [{"probe": "p", "id": "A", "subset": "pose"}])
    )
    assert truth == {"p": ProbeTruth("p", "A", "pose")}
    vs = read_verification_scores(write(tmp_path, "vs.jsonl", [{"a": "y", "b": "x", "score": 1}]))
    assert vs == {("x", "y"): 1.0}
    vt = read_verification_truth(
        write(tmp_path, "vt.jsonl", [{"a": "x", "b": "y", "genuine": True}])
    )
    assert vt == {("x", "y"): True}


@pytest.mark.parametrize(
    ("reader", "lines", "message"),
    [
        (read_face_references, ["{not json"], r"ref\.jsonl:1: not valid JSON"),
        (read_face_references, [{"faces": []}], r":1: missing key 'image'"),
        (
            read_face_references,
            [{"image": "i", "faces": [{"left_eye": [1, 2], "mouth": [1, 2]}]}],
            r":1: face 0 is missing 'right_eye'",
        ),
        (
            read_face_references,
            [{"image": "i", "faces": []}, {"image": "i", "faces": []}],
            r":2: duplicate image 'i' \(first on line 1\)",
        ),
        (read_face_detections, [{"image": "i", "boxes": [[1, 2, 3]]}], r":1: box 0 must be"),
        (read_face_detections, [{"image": "i", "boxes": [[1, 2, -3, 4]]}], r"negative width"),
        (
            read_identification_candidates,
            [{"probe": "p", "candidates": [["A", 0.5], ["A", 0.4]]}],
            r":1: gallery id 'A' listed twice.*best similarity",
        ),
        (read_identification_truth, ["", {"probe": "p"}], r":2: missing key 'id'; add it"),
        (
            read_verification_scores,
            [{"a": "x", "b": "y", "score": 1}, {"a": "y", "b": "x", "score": 2}],
            r":2: duplicate pair \('x', 'y'\)",
        ),
        (read_verification_scores, [{"a": "x", "b": "y", "score": "hi"}], r"wrong type"),
        (read_verification_truth, [{"a": "x", "b": "y", "genuine": 1}], r"'genuine' has the wr"),
        (read_verification_truth, ["[1, 2]"], r":1: expected a JSON object"),
    ],
)
def test_readers_name_file_line_and_fix(
    tmp_path: Path, reader: object, lines: list[object], message: str
) -> None:
    path = write(tmp_path, "ref.jsonl", lines)
    with pytest.raises(ValueError, match=message) as exc:
        reader(path)  # type: ignore[operator]
    assert str(path) in str(exc.value)
