"""Face kinds: `face-detect` (images or video frames), `face-identify`, `face-verify`.

docs/task-kinds.md gives each kind's test-set layout; the scorers are scoring/'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import Problem, TestSetError
from ..media import VIDEO_SUFFIXES, check_image, extract_frames
from ..testsets import InvalidItem, TestItem, TestSet, file_testset, read_truth
from .base import (
    IMAGE_SUFFIXES,
    MS_PER_FRAME,
    KindOptions,
    Outputs,
    Plot,
    SpeedUnit,
    TaskConfig,
    TaskKind,
    overall,
    pct,
)

if TYPE_CHECKING:
    from scoring.faces import ImageReference

# The face scorers (numpy) are imported inside the functions that use them: reading a
# site file or a run directory imports every kind module, and must stay cheap.

MS_PER_PAIR = SpeedUnit("ms_per_pair", "ms/pair", "ms / pair")


class DetectOptions(KindOptions):
    """face-detect: with stream = true, video frames are sent at the stream's own rate
    whether or not the system is done."""

    stream: bool = False


def _check_input(key: str, path: Path) -> str | None:
    return check_image(path)


def _point(value: Any) -> tuple[float, float]:
    # Taken as written, as the reader always has: a wrong count fails where it is used.
    return cast(tuple[float, float], tuple(map(float, value)))


def _rate_at(scores: Mapping[str, Any], far: float) -> float | None:
    rates = scores.get("rates", [])
    return next((r["verification_rate"] for r in rates if r.get("target_far") == far), None)


def _ms_per_unit(item: TestItem, seconds: float) -> float | None:
    return 1000.0 * seconds / (item.units or 1.0)


def _check_boxes(output: Mapping[str, Any]) -> str | None:
    boxes = output.get("boxes")
    problem = 'output needs "boxes": [[x, y, w, h, score], ...] with w, h >= 0'
    if not isinstance(boxes, list):
        return problem
    for box in boxes:
        if (
            not isinstance(box, list)
            or len(box) not in (4, 5)
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in box)
            or box[2] < 0
            or box[3] < 0
        ):
            return problem
    return None


def _check_score(output: Mapping[str, Any]) -> str | None:
    score = output.get("score")
    if not isinstance(score, int | float) or isinstance(score, bool):
        return 'output needs a numeric "score" (a similarity: higher means more alike)'
    return None


def _read_frame_faces(path: Path) -> dict[int, ImageReference]:
    """frames.jsonl: {"frame": n, "subset"?: ..., "faces": [{left_eye, right_eye, mouth}]}."""
    from scoring.faces import FaceLandmarks, ImageReference

    out: dict[int, ImageReference] = {}
    example = '{"frame": 0, "faces": [{"left_eye": [x, y], "right_eye": [x, y], "mouth": [x, y]}]}'
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            frame = data["frame"]
            faces = tuple(
                FaceLandmarks(*(_point(f[k]) for k in ("left_eye", "right_eye", "mouth")))
                for f in data["faces"]
            )
            if not isinstance(frame, int) or frame < 0 or frame in out:
                raise ValueError("frame must be a new non-negative integer")
        except (ValueError, KeyError, TypeError) as exc:
            raise TestSetError(
                [Problem(path, "", f"bad line ({exc}); expected {example}", "fix the line", number)]
            ) from exc
        out[frame] = ImageReference(f"frame{frame:06d}", faces, data.get("subset"))
    return out


def _load_video(root: Path, video: Path) -> TestSet:
    references = _read_frame_faces(root / "frames.jsonl")
    frames = extract_frames(video)
    items = []
    invalid = []
    for n, ref in sorted(references.items()):
        if n >= len(frames.paths):
            # The run goes on without these frames; the leaderboard counts them as not sent.
            reason = f"frame {n} is not in {video.name} ({frames.error or 'too few frames'})"
            invalid.append(InvalidItem(ref.image, video, reason))
            continue
        items.append(
            TestItem(
                id=ref.image,
                files={"image": frames.paths[n]},
                fields={"frame": n, "pts": n / frames.fps, "fps": frames.fps},
                reference=ref,
                condition=ref.subset,
                units=1.0,
            )
        )
    return TestSet(root, tuple(items), tuple(invalid))


def _load_faces(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_face_references

    videos = [p for p in sorted(root.iterdir()) if p.suffix.lower() in VIDEO_SUFFIXES]
    if (root / "frames.jsonl").is_file() and videos:
        return _load_video(root, videos[0])
    references = read_truth(
        root / "faces.jsonl",
        read_face_references,
        'one line per image: {"image": "<file>", "faces": [{"left_eye", "right_eye", "mouth"}]}',
    )
    ids = {image: Path(image).stem for image in references}
    refs = {ids[image]: ref for image, ref in references.items()}
    files = {ids[image]: {"image": image} for image in references}
    subsets = {ids[i]: r.subset for i, r in references.items() if r.subset}
    return file_testset(root, refs, files, IMAGE_SUFFIXES, subsets, units=1.0, check=_check_input)


def _score_faces(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    from scoring import score_detection
    from scoring.faces import Box

    refs = testset.references()
    references = {k: ref for k, ref in refs.items()}
    detections = {
        k: tuple(Box(b[0], b[1], b[2], b[3], b[4] if len(b) > 4 else None) for b in v["boxes"])
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    timing = {k: s for k, s in seconds.items() if k in refs}
    return score_detection(references, detections, seconds=timing or None).to_dict()


def _check_ranked(output: Mapping[str, Any]) -> str | None:
    candidates = output.get("candidates")
    problem = 'output needs "candidates": [[gallery id, similarity], ...], e.g. [["id07", 0.93]]'
    if not isinstance(candidates, list):
        return problem
    for pair in candidates:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not isinstance(pair[1], int | float)
            or isinstance(pair[1], bool)
        ):
            return problem
    return None


def _load_identify(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_identification_truth

    truth = read_truth(
        root / "probes.jsonl",
        read_identification_truth,
        'one line per probe image: {"probe": "<file>", "id": "<gallery id>", "subset": "..."}',
    )
    gallery_dir = root / "gallery"
    gallery = {
        path.stem: path
        for path in sorted(gallery_dir.iterdir() if gallery_dir.is_dir() else [])
        if path.suffix.lower() in IMAGE_SUFFIXES
    }
    if not gallery:
        raise TestSetError(
            [
                Problem(
                    gallery_dir,
                    "",
                    "no gallery images",
                    "put one image per enrolled identity in gallery/, named <gallery id>.png",
                )
            ]
        )
    refs = {Path(probe).stem: t for probe, t in truth.items()}
    files = {Path(probe).stem: {"image": probe} for probe in truth}
    subsets = {Path(p).stem: t.subset for p, t in truth.items() if t.subset}
    testset = file_testset(
        root, refs, files, IMAGE_SUFFIXES, subsets, units=1.0, check=_check_input
    )
    return replace(testset, setup_files=gallery)


def _score_identify(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring import score_identification

    refs = testset.references()
    truth = {t.probe: t for t in refs.values()}
    candidates = {
        refs[k].probe: tuple((str(c[0]), float(c[1])) for c in v["candidates"])
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    return score_identification(candidates, truth).to_dict()


def _pair_id(a: str, b: str) -> str:
    return f"{Path(a).stem}~{Path(b).stem}"


def _load_pairs(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_verification_truth

    truth = read_truth(
        root / "pairs.jsonl",
        read_verification_truth,
        'one line per pair: {"a": "<image file>", "b": "<image file>", "genuine": true}',
    )
    refs = {_pair_id(a, b): ((a, b), genuine) for (a, b), genuine in truth.items()}
    files = {_pair_id(a, b): {"image_a": a, "image_b": b} for (a, b) in truth}
    return file_testset(root, refs, files, IMAGE_SUFFIXES, units=1.0, check=_check_input)


def _score_pairs(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring import score_verification_pairs

    refs = testset.references()
    truth = {pair: genuine for pair, genuine in refs.values()}
    scores = {
        refs[k][0]: float(v["score"]) for k, v in outputs.items() if k in refs and v is not None
    }
    return score_verification_pairs(scores, truth).to_dict(include_roc=True)


def _verify_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """ROC (with each system's EER) and DET curves."""
    from scoring.plots import plot_det, plot_roc

    roc = {
        system: (figures["roc"]["far"], figures["roc"]["tar"])
        for system, figures in scores.items()
        if isinstance(figures.get("roc"), Mapping)
    }
    if not roc:
        return []
    eer = {
        system: figures["eer"]
        for system, figures in scores.items()
        if isinstance(figures.get("eer"), float) and system in roc
    }
    det = {s: (far, [1.0 - t for t in tar]) for s, (far, tar) in roc.items()}
    return [
        ("ROC", lambda stem: plot_roc(roc, stem, title=f"{task}: ROC", eer=eer or None)),
        ("DET", lambda stem: plot_det(det, stem, title=f"{task}: DET")),
    ]


def _identify_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """The cumulative match characteristic, one line per system."""
    from scoring.plots import plot_cmc

    cmc = {system: figures["cmc"] for system, figures in scores.items() if figures.get("cmc")}
    if not cmc:
        return []
    return [("CMC", lambda stem: plot_cmc(cmc, stem, title=f"{task}: CMC"))]


FACE_DETECT = TaskKind(
    name="face-detect",
    summary="face detection: an image (or video frame) in, face boxes out",
    options=DetectOptions,
    load=_load_faces,
    check_output=_check_boxes,
    score=_score_faces,
    metric=lambda task: "correct_detection_rate",
    metric_labels={"correct_detection_rate": "detected"},
    unit=MS_PER_FRAME,
    speed=_ms_per_unit,
    detail=lambda s: f"{overall(s).get('false_detections', '-')} false detections",
    formats=("score-jsonl", "jsonl"),
)

FACE_IDENTIFY = TaskKind(
    name="face-identify",
    summary="face identification: a probe image in, ranked gallery ids out",
    load=_load_identify,
    check_output=_check_ranked,
    score=_score_identify,
    metric=lambda task: "rank1",
    unit=MS_PER_FRAME,
    speed=_ms_per_unit,
    detail=lambda s: f"rank10 {pct(overall(s).get('rank10'))}",
    plots=_identify_plots,
    formats=("score-jsonl", "jsonl"),
)

FACE_VERIFY = TaskKind(
    name="face-verify",
    summary="face verification: two images in, a similarity out",
    max_output_bytes=64 << 10,
    load=_load_pairs,
    check_output=_check_score,
    score=_score_pairs,
    metric=lambda task: "eer",
    metric_labels={"eer": "EER"},
    unit=MS_PER_PAIR,
    speed=_ms_per_unit,
    higher_is_better=False,
    detail=lambda s: f"VR@FAR1% {pct(_rate_at(s, 0.01))}",
    plots=_verify_plots,
    formats=("score-jsonl", "jsonl"),
)

KINDS = (FACE_DETECT, FACE_IDENTIFY, FACE_VERIFY)
