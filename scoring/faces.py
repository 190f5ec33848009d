"""Face detection, identification and verification scoring (HTRDP FD&FR-04 conventions).

Every tie-break, interpolation and degenerate case is listed in
docs/scoring-faces.md; the short version:

* Detection: a box is correct for a face when it contains the mouth centre and
  at least one eye centre (edges inclusive), covers >= 80% of the face's ROI
  (bounding box of the two eyes and the mouth) and has an area < 6x the ROI's.
  Faces and boxes are paired by a maximum bipartite matching, so the number of
  correct detections is the largest possible. A ROI side shorter than one pixel
  is widened to one pixel about its centre, so its area is never zero.
* Identification: candidates are ranked by similarity (file order is ignored);
  a true id tied with other ids gets the worst rank of the tie. A probe whose
  true id is not among its candidates (or that has no candidates) never matches.
* Verification: accept when score >= threshold. The threshold for a target FAR
  is the smallest observed score whose impostor accept fraction is <= the
  target, so tied scores are never split. EER interpolates linearly between
  the two ROC points where FRR - FAR changes sign. A pair with no score is
  rejected at every finite threshold (scored as -inf).

This module imports only the standard library and numpy.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .charsets import iter_lines
from .det import RocCurve, roc_curve
from .det import equal_error_rate as det_eer
from .ocr import misread_hint

__all__ = [
    "CMC_MAX_RANK",
    "COVERAGE_MIN",
    "SIZE_RATIO_MAX",
    "Box",
    "DetectionInput",
    "DetectionReport",
    "DetectionScore",
    "FaceLandmarks",
    "IdentificationReport",
    "IdentificationScore",
    "ImageDetectionResult",
    "ImageReference",
    "ProbeResult",
    "ProbeTruth",
    "RocCurve",
    "VerificationReport",
    "VerificationRate",
    "check_detection",
    "equal_error_rate",
    "match_faces",
    "maximum_bipartite_matching",
    "probe_rank",
    "read_face_detections",
    "read_face_references",
    "read_identification_candidates",
    "read_identification_truth",
    "read_verification_scores",
    "read_verification_truth",
    "roc_curve",
    "score_detection",
    "score_identification",
    "score_verification",
    "score_verification_pairs",
    "verification_rate_at_far",
]

Point = tuple[float, float]
PairKey = tuple[str, str]

COVERAGE_MIN = 0.8
"""A correct box covers at least this fraction of the ROI area."""
SIZE_RATIO_MAX = 6.0
"""A correct box's area is strictly less than this multiple of the ROI area."""
CMC_MAX_RANK = 50
"""The CMC is reported for ranks 1..CMC_MAX_RANK."""
_FAR_TARGETS = (0.01, 0.001)


def _frac(num: int | float, den: int | float) -> float:
    # An empty set scores 0.0 rather than NaN so reports stay JSON-serialisable.
    return float(num) / den if den else 0.0


# --- detection ---------------------------------------------------------------


@dataclass(frozen=True)
class FaceLandmarks:
    """One reference face: left eye, right eye and mouth centres (x, y)."""

    left_eye: Point
    right_eye: Point
    mouth: Point

    def roi(self) -> tuple[float, float, float, float]:
        """ROI as (x0, y0, x1, y1); sides under 1 px are widened to 1 px about their centre."""
        xs = (self.left_eye[0], self.right_eye[0], self.mouth[0])
        ys = (self.left_eye[1], self.right_eye[1], self.mouth[1])
        x0, x1 = _min_side(min(xs), max(xs))
        y0, y1 = _min_side(min(ys), max(ys))
        return x0, y0, x1, y1

    def roi_area(self) -> float:
        """Area of `roi()`, at least 1 square pixel."""
        x0, y0, x1, y1 = self.roi()
        return (x1 - x0) * (y1 - y0)


def _min_side(lo: float, hi: float) -> tuple[float, float]:
    # Collinear landmarks give a zero-area ROI, which would make the coverage
    # and size tests meaningless; widening keeps both tests well defined.
    if hi - lo >= 1.0:
        return lo, hi
    mid = (lo + hi) / 2.0
    return mid - 0.5, mid + 0.5


@dataclass(frozen=True)
class Box:
    """A detected face rectangle: top-left (x, y), width, height, optional confidence."""

    x: float
    y: float
    w: float
    h: float
    score: float | None = None

    @property
    def area(self) -> float:
        """w * h."""
        return self.w * self.h

    def contains(self, p: Point) -> bool:
        """True if `p` lies inside the box or on its edge."""
        return self.x <= p[0] <= self.x + self.w and self.y <= p[1] <= self.y + self.h

    def intersection_area(self, rect: tuple[float, float, float, float]) -> float:
        """Area shared with an (x0, y0, x1, y1) rectangle."""
        x0, y0, x1, y1 = rect
        w = min(self.x + self.w, x1) - max(self.x, x0)
        h = min(self.y + self.h, y1) - max(self.y, y0)
        return max(w, 0.0) * max(h, 0.0)


def check_detection(face: FaceLandmarks, box: Box) -> tuple[str, ...]:
    """Names of the correctness conditions `box` fails for `face`; empty means correct.

    Possible names: "mouth_outside", "eyes_outside", "low_coverage", "too_large".
    """
    failed: list[str] = []
    if not box.contains(face.mouth):
        failed.append("mouth_outside")
    if not (box.contains(face.left_eye) or box.contains(face.right_eye)):
        failed.append("eyes_outside")
    roi_area = face.roi_area()
    if box.intersection_area(face.roi()) < COVERAGE_MIN * roi_area:
        failed.append("low_coverage")
    if not box.area < SIZE_RATIO_MAX * roi_area:
        failed.append("too_large")
    return tuple(failed)


def maximum_bipartite_matching(
    adjacency: Sequence[Sequence[int]], n_right: int
) -> list[tuple[int, int]]:
    """Maximum-cardinality matching; `adjacency[i]` lists right vertices left vertex i may take.

    Returns (left, right) pairs sorted by left index. Uses augmenting paths found
    by breadth-first search (Kuhn's algorithm), deterministic for a given input.
    """
    match_right: list[int] = [-1] * n_right
    match_left: list[int] = [-1] * len(adjacency)
    for start in range(len(adjacency)):
        # BFS over alternating paths; parent[r] = left vertex that reached right vertex r.
        parent: dict[int, int] = {}
        queue: deque[int] = deque([start])
        free_right = -1
        while queue and free_right < 0:
            left = queue.popleft()
            for right in adjacency[left]:
                if right in parent:
                    continue
                parent[right] = left
                if match_right[right] < 0:
                    free_right = right
                    break
                queue.append(match_right[right])
        # Flip the path back to `start`: each right vertex takes its BFS parent.
        right = free_right
        while right >= 0:
            left = parent[right]
            previous = match_left[left]
            match_left[left] = right
            match_right[right] = left
            right = previous
    return [(i, r) for i, r in enumerate(match_left) if r >= 0]


def match_faces(faces: Sequence[FaceLandmarks], boxes: Sequence[Box]) -> list[tuple[int, int]]:
    """(face index, box index) pairs of a maximum matching of faces to correct boxes."""
    adjacency = [[j for j, b in enumerate(boxes) if not check_detection(f, b)] for f in faces]
    return maximum_bipartite_matching(adjacency, len(boxes))


@dataclass(frozen=True)
class ImageReference:
    """Reference faces of one image and its subset label (None: no subset)."""

    image: str
    faces: tuple[FaceLandmarks, ...]
    subset: str | None = None


@dataclass(frozen=True)
class ImageDetectionResult:
    """Matching outcome for one image."""

    image: str
    subset: str | None
    faces: int
    detections: int
    matches: tuple[tuple[int, int], ...]
    seconds: float | None = None
    detections_missing: bool = False

    @property
    def correct(self) -> int:
        """Reference faces matched to a correct detection."""
        return len(self.matches)

    @property
    def false_detections(self) -> int:
        """Detections left unmatched."""
        return self.detections - len(self.matches)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready per-image counts and matches as [face, box] index pairs."""
        return {
            "image": self.image,
            "subset": self.subset,
            "faces": self.faces,
            "detections": self.detections,
            "correct": self.correct,
            "false_detections": self.false_detections,
            "matches": [list(m) for m in self.matches],
            "seconds": self.seconds,
            "detections_missing": self.detections_missing,
        }


@dataclass(frozen=True)
class DetectionScore:
    """Summed detection counts over a set of images."""

    images: int
    reference_faces: int
    detections: int
    correct: int
    timed_frames: int = 0
    total_seconds: float = 0.0

    @property
    def false_detections(self) -> int:
        """Detections not matched to any reference face."""
        return self.detections - self.correct

    @property
    def correct_detection_rate(self) -> float:
        """correct / reference faces (0.0 when there are no faces)."""
        return _frac(self.correct, self.reference_faces)

    @property
    def ms_per_frame(self) -> float | None:
        """Mean milliseconds per timed image; None when no image was timed."""
        return 1000.0 * self.total_seconds / self.timed_frames if self.timed_frames else None

    @classmethod
    def from_images(cls, results: Iterable[ImageDetectionResult]) -> DetectionScore:
        """Sum per-image results."""
        rs = list(results)
        timed = [r.seconds for r in rs if r.seconds is not None]
        return cls(
            images=len(rs),
            reference_faces=sum(r.faces for r in rs),
            detections=sum(r.detections for r in rs),
            correct=sum(r.correct for r in rs),
            timed_frames=len(timed),
            total_seconds=math.fsum(timed),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts; rates are fractions in 0..1."""
        return {
            "images": self.images,
            "reference_faces": self.reference_faces,
            "detections": self.detections,
            "correct": self.correct,
            "false_detections": self.false_detections,
            "correct_detection_rate": self.correct_detection_rate,
            "timed_frames": self.timed_frames,
            "ms_per_frame": self.ms_per_frame,
        }


@dataclass(frozen=True)
class DetectionReport:
    """Overall and per-subset detection scores plus per-image detail."""

    overall: DetectionScore
    by_subset: Mapping[str, DetectionScore]
    images: tuple[ImageDetectionResult, ...]

    def to_dict(self, include_images: bool = False) -> dict[str, Any]:
        """JSON-ready report; per-image detail only if asked for."""
        out: dict[str, Any] = {
            "overall": self.overall.to_dict(),
            "by_subset": {k: v.to_dict() for k, v in self.by_subset.items()},
        }
        if include_images:
            out["images"] = [r.to_dict() for r in self.images]
        return out


def _unknown_ids(kind: str, ids: Iterable[Any], known: Mapping[Any, Any]) -> None:
    unknown = sorted((k for k in ids if k not in known), key=repr)
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:10])
        more = f" (+{len(unknown) - 10} more)" if len(unknown) > 10 else ""
        raise ValueError(f"{kind} for ids not in the reference: {shown}{more}")


def score_detection(
    references: Mapping[str, ImageReference],
    detections: Mapping[str, Sequence[Box]],
    seconds: Mapping[str, float] | None = None,
) -> DetectionReport:
    """Score detections against reference faces, keyed by image id.

    An image without a detections entry has zero detections (its faces are
    missed). `seconds` maps image -> processing time; ms per frame averages over
    the timed images only. Raises ValueError for images not in `references`.
    """
    _unknown_ids("detections", detections, references)
    seconds = seconds or {}
    _unknown_ids("timings", seconds, references)
    results: list[ImageDetectionResult] = []
    for image, ref in references.items():
        boxes = detections.get(image)
        boxes = () if boxes is None else boxes
        results.append(
            ImageDetectionResult(
                image=image,
                subset=ref.subset,
                faces=len(ref.faces),
                detections=len(boxes),
                matches=tuple(match_faces(ref.faces, boxes)),
                seconds=seconds.get(image),
                detections_missing=image not in detections,
            )
        )
    grouped: dict[str, list[ImageDetectionResult]] = {}
    for r in results:
        if r.subset is not None:
            grouped.setdefault(r.subset, []).append(r)
    by_subset = {k: DetectionScore.from_images(grouped[k]) for k in sorted(grouped)}
    return DetectionReport(DetectionScore.from_images(results), by_subset, tuple(results))


# --- identification ----------------------------------------------------------


@dataclass(frozen=True)
class ProbeTruth:
    """The gallery id a probe belongs to, and its subset (None: no subset)."""

    probe: str
    id: str
    subset: str | None = None


def probe_rank(candidates: Sequence[tuple[str, float]], true_id: str) -> int | None:
    """Pessimistic rank of `true_id`: 1 + number of other ids with similarity >= its own.

    None when `true_id` is not a candidate. Raises ValueError on a repeated id or
    a non-finite similarity.
    """
    seen: set[str] = set()
    for cid, sim in candidates:
        if cid in seen:
            raise ValueError(f"gallery id {cid!r} listed twice for one probe")
        if not math.isfinite(sim):
            raise ValueError(f"similarity for gallery id {cid!r} is not finite: {sim!r}")
        seen.add(cid)
    true_sims = [sim for cid, sim in candidates if cid == true_id]
    if not true_sims:
        return None
    return 1 + sum(1 for cid, sim in candidates if cid != true_id and sim >= true_sims[0])


@dataclass(frozen=True)
class ProbeResult:
    """Rank of one probe's true id (None: never matched)."""

    probe: str
    true_id: str
    subset: str | None
    rank: int | None
    candidates_missing: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready per-probe outcome."""
        return {
            "probe": self.probe,
            "id": self.true_id,
            "subset": self.subset,
            "rank": self.rank,
            "candidates_missing": self.candidates_missing,
        }


@dataclass(frozen=True)
class IdentificationScore:
    """Rank statistics over a set of probes; `cmc[k-1]` is the rank-k identification rate."""

    probes: int
    cmc: tuple[float, ...]
    never_matched: int

    @property
    def rank1(self) -> float:
        """Fraction of probes whose true id is ranked first."""
        return self.rank_rate(1)

    @property
    def rank10(self) -> float:
        """Fraction of probes whose true id is within the top 10."""
        return self.rank_rate(10)

    def rank_rate(self, k: int) -> float:
        """Fraction of probes whose true id is within the top `k` (1 <= k <= len(cmc))."""
        if not 1 <= k <= len(self.cmc):
            raise ValueError(f"rank {k} outside 1..{len(self.cmc)}")
        return self.cmc[k - 1]

    @classmethod
    def from_probes(
        cls, results: Iterable[ProbeResult], max_rank: int = CMC_MAX_RANK
    ) -> IdentificationScore:
        """CMC over ranks 1..max_rank from per-probe ranks."""
        rs = list(results)
        hits = np.zeros(max_rank + 1, dtype=np.int64)
        for r in rs:
            if r.rank is not None and r.rank <= max_rank:
                hits[r.rank] += 1
        cum = np.cumsum(hits)[1:]
        cmc = tuple(_frac(int(c), len(rs)) for c in cum)
        return cls(len(rs), cmc, sum(1 for r in rs if r.rank is None))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready rates (fractions in 0..1); `cmc` lists ranks 1..N in order."""
        return {
            "probes": self.probes,
            "rank1": self.rank1,
            "rank10": self.rank10 if len(self.cmc) >= 10 else None,
            "never_matched": self.never_matched,
            "cmc": list(self.cmc),
        }


@dataclass(frozen=True)
class IdentificationReport:
    """Overall and per-subset identification scores plus per-probe ranks."""

    overall: IdentificationScore
    by_subset: Mapping[str, IdentificationScore]
    probes: tuple[ProbeResult, ...]

    def to_dict(self, include_probes: bool = False) -> dict[str, Any]:
        """JSON-ready report; per-probe detail only if asked for."""
        out: dict[str, Any] = {
            "overall": self.overall.to_dict(),
            "by_subset": {k: v.to_dict() for k, v in self.by_subset.items()},
        }
        if include_probes:
            out["probes"] = [p.to_dict() for p in self.probes]
        return out


def score_identification(
    candidates: Mapping[str, Sequence[tuple[str, float]]],
    truth: Mapping[str, ProbeTruth],
    max_rank: int = CMC_MAX_RANK,
) -> IdentificationReport:
    """Rank-k rates and CMC (ranks 1..max_rank) per probe subset, keyed by probe id.

    A probe in `truth` without candidates is never matched. Raises ValueError
    for probes not in `truth`, repeated gallery ids or non-finite similarities.
    """
    if max_rank < 1:
        raise ValueError(f"max_rank must be >= 1, got {max_rank}")
    _unknown_ids("candidates", candidates, truth)
    results: list[ProbeResult] = []
    for probe, t in truth.items():
        cands = candidates.get(probe)
        try:
            rank = None if cands is None else probe_rank(cands, t.id)
        except ValueError as exc:
            raise ValueError(f"probe {probe!r}: {exc}") from None
        results.append(ProbeResult(probe, t.id, t.subset, rank, cands is None))
    grouped: dict[str, list[ProbeResult]] = {}
    for r in results:
        if r.subset is not None:
            grouped.setdefault(r.subset, []).append(r)
    by_subset = {k: IdentificationScore.from_probes(grouped[k], max_rank) for k in sorted(grouped)}
    overall = IdentificationScore.from_probes(results, max_rank)
    return IdentificationReport(overall, by_subset, tuple(results))


# --- verification ------------------------------------------------------------


def equal_error_rate(roc: RocCurve) -> float:
    """EER by linear interpolation between the two ROC points where FRR - FAR changes sign.

    If some point has FRR == FAR exactly, that value is returned (`scoring.det`).
    """
    eer = det_eer(roc.frr, roc.far)
    # Unreachable when the curve ends at (1, 1); kept so the function is total.
    return eer if eer is not None else (roc.far[-1] + roc.frr[-1]) / 2.0


@dataclass(frozen=True)
class VerificationRate:
    """True accept rate at the threshold chosen for a target FAR."""

    target_far: float
    threshold: float
    far: float
    tar: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; threshold is None when nothing can be accepted."""
        return {
            "target_far": self.target_far,
            "threshold": self.threshold if math.isfinite(self.threshold) else None,
            "far": self.far,
            "verification_rate": self.tar,
        }


def verification_rate_at_far(roc: RocCurve, target_far: float) -> VerificationRate:
    """Smallest ROC threshold whose FAR <= target_far, and the TAR there.

    Thresholds are observed scores, so a run of tied impostor scores is accepted
    or rejected as a whole and the achieved FAR may be below the target.
    """
    if not 0.0 <= target_far <= 1.0:
        raise ValueError(f"target FAR must be in [0, 1], got {target_far}")
    # Compare counts, not float rates, with a small slack so e.g. 0.29 * 100
    # (28.999999999999996 in binary) still allows 29 false accepts.
    allowed = math.floor(target_far * roc.impostor + 1e-9)
    best = 0
    for i, far in enumerate(roc.far):
        if round(far * roc.impostor) <= allowed:
            best = i
        else:
            break  # FAR only grows as the threshold falls.
    return VerificationRate(target_far, roc.thresholds[best], roc.far[best], roc.tar[best])


@dataclass(frozen=True)
class VerificationReport:
    """ROC, EER and verification rates at the target FARs."""

    roc: RocCurve
    eer: float
    rates: tuple[VerificationRate, ...]
    missing_scores: int = 0

    def rate_at(self, target_far: float) -> VerificationRate:
        """The VerificationRate computed for `target_far`."""
        for r in self.rates:
            if r.target_far == target_far:
                return r
        raise KeyError(target_far)

    def to_dict(self, include_roc: bool = False) -> dict[str, Any]:
        """JSON-ready summary; the full ROC only if asked for."""
        out: dict[str, Any] = {
            "genuine": self.roc.genuine,
            "impostor": self.roc.impostor,
            "missing_scores": self.missing_scores,
            "eer": self.eer,
            "rates": [r.to_dict() for r in self.rates],
        }
        if include_roc:
            out["roc"] = self.roc.to_dict()
        return out


def score_verification(
    scores: Sequence[float],
    genuine: Sequence[bool],
    far_targets: Sequence[float] = _FAR_TARGETS,
) -> VerificationReport:
    """ROC, EER and TAR at each target FAR from parallel score/label sequences.

    A score of -inf marks a pair with no score: rejected at every finite threshold.
    """
    roc = roc_curve(scores, genuine)
    rates = tuple(verification_rate_at_far(roc, t) for t in far_targets)
    missing = int(np.isneginf(np.asarray(scores, dtype=float)).sum())
    return VerificationReport(roc, equal_error_rate(roc), rates, missing)


def _pair(a: str, b: str) -> PairKey:
    # Verification is symmetric: (a, b) and (b, a) are the same comparison.
    return (a, b) if a <= b else (b, a)


def score_verification_pairs(
    scores: Mapping[PairKey, float],
    truth: Mapping[PairKey, bool],
    far_targets: Sequence[float] = _FAR_TARGETS,
) -> VerificationReport:
    """Like score_verification, keyed by unordered (a, b) pairs.

    Pairs in `truth` without a score are rejected at every threshold. Raises
    ValueError for scored pairs not in `truth`.
    """
    norm_truth = {_pair(*k): v for k, v in truth.items()}
    norm_scores = {_pair(*k): v for k, v in scores.items()}
    if len(norm_truth) != len(truth) or len(norm_scores) != len(scores):
        raise ValueError("a pair is given twice, once as (a, b) and once as (b, a)")
    _unknown_ids("scores", norm_scores, norm_truth)
    keys = list(norm_truth)
    s = [norm_scores.get(k, -math.inf) for k in keys]
    return score_verification(s, [norm_truth[k] for k in keys], far_targets)


# --- readers -----------------------------------------------------------------


@dataclass(frozen=True)
class DetectionInput:
    """A detections file: boxes per image and, where given, seconds per image."""

    boxes: Mapping[str, tuple[Box, ...]]
    seconds: Mapping[str, float] = field(default_factory=dict)


class _Line:
    """One parsed JSON line, with errors that name file:line and the fix."""

    def __init__(self, path: Path, lineno: int, obj: dict[str, Any]) -> None:
        self.path, self.lineno, self.obj = path, lineno, obj

    def error(self, problem: str, fix: str) -> ValueError:
        return ValueError(f"{self.path}:{self.lineno}: {problem}; {fix}")

    def get(self, key: str, kind: type | tuple[type, ...], example: str) -> Any:
        if key not in self.obj:
            raise self.error(f"missing key {key!r}", f"add it, e.g. {example}")
        value = self.obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.error(f"{key!r} has the wrong type ({type(value).__name__})", example)
        return value

    def number(self, value: Any, what: str, example: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"{what} is not a number: {value!r}", example)
        if not math.isfinite(value):
            raise self.error(f"{what} is not finite: {value!r}", "use a finite number")
        return float(value)

    def point(self, value: Any, what: str) -> Point:
        example = f'"{what}": [x, y]'
        if not isinstance(value, list) or len(value) != 2:
            raise self.error(f"{what} must be a list of two numbers, got {value!r}", example)
        return (self.number(value[0], what, example), self.number(value[1], what, example))


def _lines(path: str | Path, encoding: str | None = None) -> Iterable[_Line]:
    # Decoded through scoring.charsets: a file not in ``encoding`` is refused naming
    # its first bad line and the encoding it reads as.
    p = Path(path)
    for lineno, text in enumerate(iter_lines(p, encoding), start=1):
        if not text.strip():
            continue  # blank lines (e.g. a trailing newline) carry nothing
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{p}:{lineno}: not valid JSON ({exc.msg}); write one JSON object per line"
                + misread_hint(p, encoding)
            ) from None
        if not isinstance(obj, dict):
            raise ValueError(
                f"{p}:{lineno}: expected a JSON object, got {text.strip()[:40]!r}; "
                "write one JSON object {...} per line" + misread_hint(p, encoding)
            )
        yield _Line(p, lineno, obj)


def _first_seen(seen: dict[Any, int], key: Any, line: _Line, what: str) -> None:
    if key in seen:
        raise line.error(
            f"duplicate {what} {key!r} (first on line {seen[key]})", "keep one line per " + what
        )
    seen[key] = line.lineno


def _subset(line: _Line) -> str | None:
    value = line.obj.get("subset")
    if value is not None and not isinstance(value, str):
        raise line.error(f"'subset' must be a string, got {value!r}", 'e.g. "subset": "pose"')
    return value


def read_face_references(
    path: str | Path, encoding: str | None = None
) -> dict[str, ImageReference]:
    """Read `{"image", "subset"?, "faces": [{"left_eye", "right_eye", "mouth"}]}` lines.

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    out: dict[str, ImageReference] = {}
    seen: dict[Any, int] = {}
    face_ex = '"faces": [{"left_eye": [x, y], "right_eye": [x, y], "mouth": [x, y]}]'
    for line in _lines(path, encoding):
        image = line.get("image", str, '"image": "img001.jpg"')
        _first_seen(seen, image, line, "image")
        faces: list[FaceLandmarks] = []
        for i, f in enumerate(line.get("faces", list, face_ex)):
            if not isinstance(f, dict):
                raise line.error(f"face {i} is not an object", face_ex)
            pts = []
            for key in ("left_eye", "right_eye", "mouth"):
                if key not in f:
                    raise line.error(f"face {i} is missing {key!r}", face_ex)
                pts.append(line.point(f[key], key))
            faces.append(FaceLandmarks(*pts))
        out[image] = ImageReference(image, tuple(faces), _subset(line))
    return out


def read_face_detections(path: str | Path, encoding: str | None = None) -> DetectionInput:
    """Read `{"image", "boxes": [[x, y, w, h, score?], ...], "seconds"?}` lines.

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    boxes: dict[str, tuple[Box, ...]] = {}
    seconds: dict[str, float] = {}
    seen: dict[Any, int] = {}
    box_ex = '"boxes": [[x, y, w, h, score], ...] with w, h >= 0'
    for line in _lines(path, encoding):
        image = line.get("image", str, '"image": "img001.jpg"')
        _first_seen(seen, image, line, "image")
        parsed: list[Box] = []
        for i, b in enumerate(line.get("boxes", list, box_ex)):
            if not isinstance(b, list) or len(b) not in (4, 5):
                raise line.error(f"box {i} must be [x, y, w, h] or [x, y, w, h, score]", box_ex)
            nums = [line.number(v, f"box {i}", box_ex) for v in b]
            if nums[2] < 0 or nums[3] < 0:
                raise line.error(f"box {i} has a negative width or height", box_ex)
            parsed.append(Box(*nums))
        boxes[image] = tuple(parsed)
        if line.obj.get("seconds") is not None:
            sec = line.number(line.obj["seconds"], "'seconds'", '"seconds": 0.031')
            if sec < 0:
                raise line.error("'seconds' is negative", '"seconds": 0.031')
            seconds[image] = sec
    return DetectionInput(boxes, seconds)


def read_identification_candidates(
    path: str | Path, encoding: str | None = None
) -> dict[str, tuple[tuple[str, float], ...]]:
    """Read `{"probe", "candidates": [[gallery_id, similarity], ...]}` lines.

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    out: dict[str, tuple[tuple[str, float], ...]] = {}
    seen: dict[Any, int] = {}
    ex = '"candidates": [["id17", 0.93], ["id04", 0.88]]'
    for line in _lines(path, encoding):
        probe = line.get("probe", str, '"probe": "p0001"')
        _first_seen(seen, probe, line, "probe")
        cands: list[tuple[str, float]] = []
        ids: dict[Any, int] = {}
        for i, c in enumerate(line.get("candidates", list, ex)):
            if not isinstance(c, list) or len(c) != 2 or not isinstance(c[0], str):
                raise line.error(f"candidate {i} must be [gallery_id, similarity]", ex)
            if c[0] in ids:
                raise line.error(
                    f"gallery id {c[0]!r} listed twice (candidates {ids[c[0]]} and {i})",
                    "give each gallery id once, with its best similarity",
                )
            ids[c[0]] = i
            cands.append((c[0], line.number(c[1], f"similarity of {c[0]!r}", ex)))
        out[probe] = tuple(cands)
    return out


def read_identification_truth(
    path: str | Path, encoding: str | None = None
) -> dict[str, ProbeTruth]:
    """Read `{"probe", "id", "subset"?}` lines.

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    out: dict[str, ProbeTruth] = {}
    seen: dict[Any, int] = {}
    for line in _lines(path, encoding):
        probe = line.get("probe", str, '"probe": "p0001"')
        _first_seen(seen, probe, line, "probe")
        true_id = line.get("id", str, '"id": "id17"')
        out[probe] = ProbeTruth(probe, true_id, _subset(line))
    return out


def _pair_of(line: _Line, seen: dict[Any, int]) -> PairKey:
    a = line.get("a", str, '"a": "img1.jpg"')
    b = line.get("b", str, '"b": "img2.jpg"')
    key = _pair(a, b)
    _first_seen(seen, key, line, "pair")
    return key


def read_verification_scores(path: str | Path, encoding: str | None = None) -> dict[PairKey, float]:
    """Read `{"a", "b", "score"}` lines; keys are unordered pairs (sorted a, b).

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    out: dict[PairKey, float] = {}
    seen: dict[Any, int] = {}
    ex = '"score": 0.73'
    for line in _lines(path, encoding):
        key = _pair_of(line, seen)
        out[key] = line.number(line.get("score", (int, float), ex), "'score'", ex)
    return out


def read_verification_truth(path: str | Path, encoding: str | None = None) -> dict[PairKey, bool]:
    """Read `{"a", "b", "genuine": true|false}` lines; keys are unordered pairs.

    ``encoding``: the file's (scoring.charsets; None: UTF-8).
    """
    out: dict[PairKey, bool] = {}
    seen: dict[Any, int] = {}
    for line in _lines(path, encoding):
        key = _pair_of(line, seen)
        out[key] = line.get("genuine", bool, '"genuine": true')
    return out
