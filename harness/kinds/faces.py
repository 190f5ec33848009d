"""Face kinds: `face-detect` (images or video frames), `face-identify`, `face-verify`.

docs/task-kinds.md gives each kind's test-set layout; the scorers are scoring/'s.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from harness.errors import Problem, TestSetError
from harness.kinds.base import (
    ENCODING_ARG,
    IMAGE_SUFFIXES,
    MS_PER_FRAME,
    REF_HYP,
    AdditiveStatistics,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    Plot,
    ScoreFamily,
    SpeedUnit,
    TaskConfig,
    TaskKind,
    overall,
    pct,
    ref_hyp_files,
)
from harness.kinds.formats import score_jsonl
from harness.kinds.trials import (
    EER_HEADLINE,
    det_plot,
    scored_trials,
    system_curves,
    trial_id,
    trials_jsonl,
)
from harness.media import VIDEO_SUFFIXES, check_image, extract_frames
from harness.testsets import InvalidItem, TestItem, TestSet, file_testset, read_truth

if TYPE_CHECKING:
    from harness.kinds.options import KindOptions
    from scoring.faces import ImageReference
    from scoring.plots import PlotFiles

# The face scorers (numpy) are imported inside the functions that use them: reading a
# site file or a run directory imports every kind module, and must stay cheap.

MS_PER_PAIR = SpeedUnit("ms_per_pair", "ms/pair", "ms / pair")


@cache
def _detect_options() -> type[KindOptions]:
    from harness.kinds.options import KindOptions

    class DetectOptions(KindOptions):
        """face-detect: with stream = true, video frames are sent at the stream's own rate
        whether or not the system is done."""

        stream: bool = False

    return DetectOptions


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


def _rows_problem(rows: Any, row_ok: Callable[[Any], bool], problem: str) -> str | None:
    """``problem`` unless ``rows`` is a list whose every row is ``row_ok``."""
    return None if isinstance(rows, list) and all(map(row_ok, rows)) else problem


def _number(value: Any) -> bool:
    # bool is an int in Python; true/false is a mistake, not a number.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_box(box: Any) -> bool:
    return (
        isinstance(box, list)
        and len(box) in (4, 5)
        and all(map(_number, box))
        and box[2] >= 0
        and box[3] >= 0
    )


def _check_boxes(output: Mapping[str, Any]) -> str | None:
    problem = 'output needs "boxes": [[x, y, w, h, score], ...] with w, h >= 0'
    return _rows_problem(output.get("boxes"), _is_box, problem)


def _check_score(output: Mapping[str, Any]) -> str | None:
    if not _number(output.get("score")):
        return 'output needs a numeric "score" (a similarity: higher means more alike)'
    return None


def _read_frame_faces(path: Path, encoding: str | None = None) -> dict[int, ImageReference]:
    """frames.jsonl: {"frame": n, "subset"?: ..., "faces": [{left_eye, right_eye, mouth}]},
    in ``encoding`` (the task's; scoring.charsets, None: UTF-8)."""
    from scoring.charsets import read_lines
    from scoring.errors import FormatError
    from scoring.faces import FaceLandmarks, ImageReference

    out: dict[int, ImageReference] = {}
    example = '{"frame": 0, "faces": [{"left_eye": [x, y], "right_eye": [x, y], "mouth": [x, y]}]}'
    try:
        lines = read_lines(path, encoding)
    except FormatError as exc:
        raise TestSetError([Problem(path, "", exc.problem, exc.fix, exc.line)]) from None
    for number, line in enumerate(lines, 1):
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


def _load_video(root: Path, video: Path, encoding: str | None = None) -> TestSet:
    references = _read_frame_faces(root / "frames.jsonl", encoding)
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

    encoding = getattr(task, "encoding", None)
    videos = [p for p in sorted(root.iterdir()) if p.suffix.lower() in VIDEO_SUFFIXES]
    if (root / "frames.jsonl").is_file() and videos:
        return _load_video(root, videos[0], encoding)
    references = read_truth(
        root / "faces.jsonl",
        lambda path: read_face_references(path, encoding),
        'one line per image: {"image": "<file>", "faces": [{"left_eye", "right_eye", "mouth"}]}',
    )
    ids = {image: Path(image).stem for image in references}
    refs = {ids[image]: ref for image, ref in references.items()}
    files = {ids[image]: {"image": image} for image in references}
    subsets = {ids[i]: r.subset for i, r in references.items() if r.subset}
    return file_testset(root, refs, files, IMAGE_SUFFIXES, subsets, units=1.0, check=_check_input)


def _detections(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], dict[str, Any]]:
    from scoring.faces import Box

    refs = testset.references()
    detections = {
        k: tuple(Box(b[0], b[1], b[2], b[3], b[4] if len(b) > 4 else None) for b in v["boxes"])
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    return refs, detections


def _score_faces(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    from scoring import score_detection

    refs, detections = _detections(testset, outputs)
    timing = {k: s for k, s in seconds.items() if k in refs}
    return score_detection(refs, detections, seconds=timing or None).to_dict()


def _detect_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each image's matching: the rate is summed correct boxes over summed faces."""
    from scoring import score_detection

    return {r.image: r for r in score_detection(*_detections(testset, outputs)).images}


def _detect_aggregate(task: TaskConfig, images: Sequence[Any]) -> float:
    from scoring.faces import DetectionScore

    return DetectionScore.from_images(images).correct_detection_rate


def _detect_vector(task: TaskConfig, image: Any) -> Mapping[Hashable, float]:
    return {"faces": image.faces, "correct": image.correct}


def _detect_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    from scoring.faces import DetectionScore

    faces, correct = int(sums.get("faces", 0)), int(sums.get("correct", 0))
    # The rate reads only the summed faces and correct boxes.
    return DetectionScore(0, faces, 0, correct).correct_detection_rate


def _is_candidate(pair: Any) -> bool:
    return (
        isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and _number(pair[1])
    )


def _check_ranked(output: Mapping[str, Any]) -> str | None:
    problem = 'output needs "candidates": [[gallery id, similarity], ...], e.g. [["id07", 0.93]]'
    return _rows_problem(output.get("candidates"), _is_candidate, problem)


def _load_identify(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_identification_truth

    encoding = getattr(task, "encoding", None)
    truth = read_truth(
        root / "probes.jsonl",
        lambda path: read_identification_truth(path, encoding),
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


def _identify_inputs(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], ...]:
    refs = testset.references()
    truth = {t.probe: t for t in refs.values()}
    candidates = {
        refs[k].probe: tuple((str(c[0]), float(c[1])) for c in v["candidates"])
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    return refs, candidates, truth


def _score_identify(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring import score_identification

    _, candidates, truth = _identify_inputs(testset, outputs)
    return score_identification(candidates, truth).to_dict()


def _identify_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each probe's rank: rank-1 is the share ranked first."""
    from scoring import score_identification

    refs, candidates, truth = _identify_inputs(testset, outputs)
    probes = {r.probe: r for r in score_identification(candidates, truth).probes}
    return {k: probes[ref.probe] for k, ref in refs.items()}


def _identify_aggregate(task: TaskConfig, probes: Sequence[Any]) -> float:
    from scoring.faces import IdentificationScore

    return IdentificationScore.from_probes(probes).rank1


def _identify_vector(task: TaskConfig, probe: Any) -> Mapping[Hashable, float]:
    return {"first": int(probe.rank == 1), "probes": 1}


def _identify_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    # from_probes's rank-1 rate: probes ranked first over probes, float(int) / int.
    probes = int(sums.get("probes", 0))
    return float(int(sums.get("first", 0))) / probes if probes else 0.0


def _load_pairs(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_verification_truth

    encoding = getattr(task, "encoding", None)
    truth = read_truth(
        root / "pairs.jsonl",
        lambda path: read_verification_truth(path, encoding),
        'one line per pair: {"a": "<image file>", "b": "<image file>", "genuine": true}',
    )
    refs = {trial_id(a, b): ((a, b), genuine) for (a, b), genuine in truth.items()}
    files = {trial_id(a, b): {"image_a": a, "image_b": b} for (a, b) in truth}
    return file_testset(root, refs, files, IMAGE_SUFFIXES, units=1.0, check=_check_input)


def _score_pairs(scores: dict[Any, float], genuine: dict[Any, bool]) -> dict[str, Any]:
    from scoring import score_verification_pairs

    return score_verification_pairs(scores, genuine).to_dict(include_roc=True)


def _verify_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """ROC (with each system's EER) and DET curves."""
    from scoring.plots import plot_roc

    roc = system_curves(scores, "roc", "far", "tar")
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
        det_plot(task, det),
    ]


def _identify_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """The cumulative match characteristic, one line per system."""
    from scoring.plots import plot_cmc

    cmc = {system: figures["cmc"] for system, figures in scores.items() if figures.get("cmc")}
    if not cmc:
        return []
    return [("CMC", lambda stem: plot_cmc(cmc, stem, title=f"{task}: CMC"))]


# --------------------------------------------------------------------------- onsite score


def _score_detect_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.faces import read_face_detections, read_face_references, score_detection

    encoding = getattr(args, "encoding", None)
    detections = read_face_detections(args.hyp, encoding)
    report = score_detection(
        read_face_references(args.ref, encoding),
        detections.boxes,
        seconds=detections.seconds or None,
    )
    return report.to_dict(include_images=args.details)


def _identification(args: argparse.Namespace) -> Any:
    from scoring.faces import (
        read_identification_candidates,
        read_identification_truth,
        score_identification,
    )

    encoding = getattr(args, "encoding", None)
    return score_identification(
        read_identification_candidates(args.hyp, encoding),
        read_identification_truth(args.ref, encoding),
    )


def _verification(args: argparse.Namespace) -> Any:
    from scoring.faces import (
        read_verification_scores,
        read_verification_truth,
        score_verification_pairs,
    )

    encoding = getattr(args, "encoding", None)
    return score_verification_pairs(
        read_verification_scores(args.hyp, encoding),
        read_verification_truth(args.ref, encoding),
    )


def _plot_roc(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring.plots import plot_roc

    report = _verification(args)
    name = Path(args.hyp).stem
    return plot_roc({name: report.roc}, stem, eer={name: report.eer})


def _plot_cmc(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring.plots import plot_cmc

    return plot_cmc({Path(args.hyp).stem: _identification(args).overall}, stem)


def _subset(row: dict[str, Any], subset: str | None) -> dict[str, Any]:
    return row if subset is None else {**row, "subset": subset}


def _faces(ref: Any) -> list[dict[str, Any]]:
    return [
        {"left_eye": list(f.left_eye), "right_eye": list(f.right_eye), "mouth": list(f.mouth)}
        for f in ref.faces
    ]


def _detect_hyp(job: JobData, item: TestItem, answer: Mapping[str, Any]) -> dict[str, Any]:
    ref = item.reference
    return {"image": ref.image, "boxes": answer["boxes"], "seconds": job.seconds.get(item.id)}


write_detect_jsonl = score_jsonl(
    lambda item: {
        **_subset({"image": item.reference.image}, item.reference.subset),
        "faces": _faces(item.reference),
    },
    _detect_hyp,
)
write_identify_jsonl = score_jsonl(
    lambda item: _subset(
        {"probe": item.reference.probe, "id": item.reference.id}, item.reference.subset
    ),
    lambda job, item, answer: {"probe": item.reference.probe, "candidates": answer["candidates"]},
)
write_verify_jsonl = trials_jsonl("a", "b", "genuine")


# Every face family's files: truth and output, in one encoding (--encoding).
_FILE_ARGS = (*REF_HYP, ENCODING_ARG)

FACE_DETECT = TaskKind(
    name="face-detect",
    text_encodings=True,
    summary="face detection: an image (or video frame) in, face boxes out",
    options_model=_detect_options,
    load=_load_faces,
    check_output=_check_boxes,
    score=_score_faces,
    metric=lambda task: "correct_detection_rate",
    metric_labels={"correct_detection_rate": "detected"},
    statistics=ItemStatistics(
        _detect_items, _detect_aggregate, AdditiveStatistics(_detect_vector, _detect_headline)
    ),
    unit=MS_PER_FRAME,
    speed=_ms_per_unit,
    detail=lambda s: f"{overall(s).get('false_detections', '-')} false detections",
    writers={"score-jsonl": write_detect_jsonl},
    score_families={
        "faces-detect": ScoreFamily(
            _score_detect_files,
            "face detection: correct detection rate, false detections",
            _FILE_ARGS,
        )
    },
    from_run={"faces-detect": FromRun(ref_hyp_files(write_detect_jsonl, ".jsonl"))},
)

FACE_IDENTIFY = TaskKind(
    name="face-identify",
    text_encodings=True,
    summary="face identification: a probe image in, ranked gallery ids out",
    load=_load_identify,
    check_output=_check_ranked,
    score=_score_identify,
    metric=lambda task: "rank1",
    statistics=ItemStatistics(
        _identify_items,
        _identify_aggregate,
        AdditiveStatistics(_identify_vector, _identify_headline),
    ),
    unit=MS_PER_FRAME,
    speed=_ms_per_unit,
    detail=lambda s: f"rank10 {pct(overall(s).get('rank10'))}",
    plots=_identify_plots,
    writers={"score-jsonl": write_identify_jsonl},
    score_families={
        "faces-identify": ScoreFamily(
            lambda args: _identification(args).to_dict(include_probes=args.details),
            "face identification: rank-1, rank-10, CMC",
            _FILE_ARGS,
            plot=_plot_cmc,
        )
    },
    from_run={"faces-identify": FromRun(ref_hyp_files(write_identify_jsonl, ".jsonl"))},
)

FACE_VERIFY = TaskKind(
    name="face-verify",
    text_encodings=True,
    summary="face verification: two images in, a similarity out",
    max_output_bytes=64 << 10,
    load=_load_pairs,
    check_output=_check_score,
    score=scored_trials(_score_pairs),
    **EER_HEADLINE,
    unit=MS_PER_PAIR,
    speed=_ms_per_unit,
    detail=lambda s: f"VR@FAR1% {pct(_rate_at(s, 0.01))}",
    plots=_verify_plots,
    writers={"score-jsonl": write_verify_jsonl},
    score_families={
        "faces-verify": ScoreFamily(
            lambda args: _verification(args).to_dict(include_roc=args.details),
            "face verification: ROC, EER, VR at FAR 1%% and 0.1%%",
            _FILE_ARGS,
            plot=_plot_roc,
        )
    },
    from_run={"faces-verify": FromRun(ref_hyp_files(write_verify_jsonl, ".jsonl"))},
)

KINDS = (FACE_DETECT, FACE_IDENTIFY, FACE_VERIFY)
