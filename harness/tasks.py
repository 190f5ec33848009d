"""Task kinds: how each kind loads its test set, checks outputs and scores them.

docs/task-kinds.md lists each kind's test-set layout, input, output, headline
metric and speed unit. The scorers are scoring/'s, so a run's numbers are the
same as `onsite score` gives on the saved outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring import (
    read_face_references,
    read_identification_truth,
    read_ocr_truth,
    read_slot_file,
    read_verification_truth,
    score_asr,
    score_commands,
    score_detection,
    score_identification,
    score_ocr,
    score_slots,
    score_verification_pairs,
)
from scoring.faces import Box, FaceLandmarks, ImageReference
from scoring.kws import SlotFrame

if TYPE_CHECKING:
    # Only for annotations: runners (and paramiko) load only where systems run.
    from runners import OutputFile

from .errors import Problem, TestSetError
from .media import VIDEO_SUFFIXES, check_image, check_ink, extract_frames
from .site import Task
from .testsets import (
    InvalidItem,
    TestItem,
    TestSet,
    audio_testset,
    file_testset,
    load_asr_testset,
    load_command_testset,
    read_truth,
)
from .tts_task import (
    AUDIO_KEY,
    check_audio_answer,
    keep_audio,
    load_tts,
    score_tts,
)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm", ".webp")

Outputs = Mapping[str, Mapping[str, Any] | None]


@dataclass(frozen=True)
class TaskKind:
    """What the controller and the report need to know about one kind of task."""

    name: str
    load: Callable[[Path, Task], TestSet]
    check_output: Callable[[Mapping[str, Any]], str | None]
    # (test set, task, outputs of answered items, seconds per completed item) -> scores
    score: Callable[[TestSet, Task, Outputs, Mapping[str, float]], dict[str, Any]]
    metric: Callable[[Task], str]
    speed_unit: str
    # Per-item speed in speed_unit from the item and its processing seconds.
    speed: Callable[[TestItem, float], float | None]
    # Higher is better for the headline metric (False for error rates).
    higher_is_better: bool = True
    # The secondary figures a leaderboard line shows beside the headline, from the scores.
    detail: Callable[[Mapping[str, Any]], str] = lambda scores: ""
    # Checks an output needs its item for (e.g. one NER tag per token sent).
    check_item: Callable[[TestItem, Mapping[str, Any]], str | None] | None = None
    # The largest answer a system may send for one item (the task's max_output_bytes
    # overrides it); larger is invalid_output, so no system can flood the controller.
    max_output_bytes: int = 1 << 20
    # Files the system writes per item: input key -> suffix (tts: {"audio_out": ".wav"}).
    # The item input carries a path for each; the system answers with it.
    output_files: Mapping[str, str] = field(default_factory=dict)
    # Checks such a file and keeps it in the run directory:
    # (item, output, the file, media dir, anonymous id) -> (output to record, problem).
    keep_output: (
        Callable[
            [TestItem, Mapping[str, Any], OutputFile, Path, str], tuple[dict[str, Any], str | None]
        ]
        | None
    ) = None


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}%" if isinstance(value, int | float) else "-"


def _rate_at(scores: Mapping[str, Any], far: float) -> float | None:
    rates = scores.get("rates", [])
    return next((r["verification_rate"] for r in rates if r.get("target_far") == far), None)


def _overall(scores: Mapping[str, Any]) -> Mapping[str, Any]:
    overall = scores.get("overall")
    return overall if isinstance(overall, Mapping) else scores


def _check_text(output: Mapping[str, Any]) -> str | None:
    if not isinstance(output.get("text"), str):
        return 'output needs a "text" string, e.g. {"text": "hello world"}'
    return None


def _check_slots(output: Mapping[str, Any]) -> str | None:
    slots = output.get("slots")
    example = 'e.g. {"slots": {"from": ["北京"], "to": ["上海"]}}'
    if not isinstance(slots, dict):
        return f'output needs a "slots" object, {example}'
    for name, words in slots.items():
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            return f"slot {name!r} must be a list of keyword strings, {example}"
    return None


def _check_candidates(output: Mapping[str, Any]) -> str | None:
    candidates = output.get("candidates")
    if (
        not isinstance(candidates, list)
        or not all(isinstance(c, str) for c in candidates)
        or len(candidates) > 10
    ):
        return 'output needs "candidates": up to ten strings, best first, e.g. ["天", "夭"]'
    return None


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


def _conditions(testset: TestSet) -> dict[str, str] | None:
    labelled = testset.conditions()
    if not labelled:
        return None
    return {item.id: labelled.get(item.id, "unlabelled") for item in testset.items}


def _text(outputs: Outputs, testset: TestSet) -> dict[str, str | None]:
    refs = testset.references()
    return {k: (v.get("text") if v else None) for k, v in outputs.items() if k in refs}


def _score_asr(testset: TestSet, task: Task, outputs: Outputs, _: Any) -> dict[str, Any]:
    report = score_asr(
        testset.references(),
        _text(outputs, testset),
        unit=task.unit,
        case_sensitive=task.case_sensitive,
        conditions=_conditions(testset),
    )
    return report.to_dict()


def _score_command(testset: TestSet, task: Task, outputs: Outputs, _: Any) -> dict[str, Any]:
    report = score_commands(
        testset.references(),
        _text(outputs, testset),
        conditions=_conditions(testset),
        case_sensitive=task.case_sensitive,
    )
    return report.to_dict()


def _load_kws(root: Path, task: Task) -> TestSet:
    frames = read_truth(
        root / "slots.jsonl",
        read_slot_file,
        'one line per recording: {"id", "setting", "slots": {name: [keywords]}}',
    )
    settings = {k: f.setting for k, f in frames.items()}
    testset = audio_testset(root, frames, task.sample_rates, settings, root / "slots.jsonl")
    return testset


def _score_kws(testset: TestSet, task: Task, outputs: Outputs, _: Any) -> dict[str, Any]:
    refs: dict[str, SlotFrame] = testset.references()
    hyps = {
        k: SlotFrame(k, refs[k].setting, {n: tuple(w) for n, w in (v or {})["slots"].items()})
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    return score_slots(refs, hyps).to_dict()


def _load_ocr(root: Path, task: Task) -> TestSet:
    truth = read_truth(
        root / "truth.jsonl",
        read_ocr_truth,
        'one line per sample: {"id", "char", "subsets": [...]}, the image named <id>.png',
    )
    refs = {t.id: t for t in truth}
    subsets = {t.id: "/".join(t.subsets) for t in truth if t.subsets}
    # A sample is online ink when <id>.json is there, else an image <id>.png (or .jpg ...).
    files = {t.id: {"ink" if (root / f"{t.id}.json").is_file() else "image": t.id} for t in truth}
    return file_testset(
        root, refs, files, (*IMAGE_SUFFIXES, ".json"), subsets, units=1.0, check=_check_input
    )


def _check_input(key: str, path: Path) -> str | None:
    if key == "ink":
        return check_ink(path)
    return check_image(path)


def _score_ocr(
    testset: TestSet, task: Task, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    refs = testset.references()
    candidates = {
        k: (tuple(v["candidates"]) if v is not None else None)
        for k, v in outputs.items()
        if k in refs
    }
    total = sum(seconds.get(k, 0.0) for k in refs) or None
    return score_ocr(refs.values(), candidates, seconds=total).to_dict()


def _read_frame_faces(path: Path) -> dict[int, ImageReference]:
    """frames.jsonl: {"frame": n, "subset"?: ..., "faces": [{left_eye, right_eye, mouth}]}."""
    out: dict[int, ImageReference] = {}
    example = '{"frame": 0, "faces": [{"left_eye": [x, y], "right_eye": [x, y], "mouth": [x, y]}]}'
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            frame = data["frame"]
            faces = tuple(
                FaceLandmarks(
                    *(tuple(map(float, f[k])) for k in ("left_eye", "right_eye", "mouth"))
                )
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


def _load_faces(root: Path, task: Task) -> TestSet:
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
    testset: TestSet, task: Task, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    refs = testset.references()
    references = {k: ref for k, ref in refs.items()}
    detections = {
        k: tuple(Box(*b[:4], b[4] if len(b) > 4 else None) for b in v["boxes"])
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


def _load_identify(root: Path, task: Task) -> TestSet:
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


def _score_identify(testset: TestSet, task: Task, outputs: Outputs, _: Any) -> dict[str, Any]:
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


def _load_pairs(root: Path, task: Task) -> TestSet:
    truth = read_truth(
        root / "pairs.jsonl",
        read_verification_truth,
        'one line per pair: {"a": "<image file>", "b": "<image file>", "genuine": true}',
    )
    refs = {_pair_id(a, b): ((a, b), genuine) for (a, b), genuine in truth.items()}
    files = {_pair_id(a, b): {"image_a": a, "image_b": b} for (a, b) in truth}
    return file_testset(root, refs, files, IMAGE_SUFFIXES, units=1.0, check=_check_input)


def _score_pairs(testset: TestSet, task: Task, outputs: Outputs, _: Any) -> dict[str, Any]:
    refs = testset.references()
    truth = {pair: genuine for pair, genuine in refs.values()}
    scores = {
        refs[k][0]: float(v["score"]) for k, v in outputs.items() if k in refs and v is not None
    }
    return score_verification_pairs(scores, truth).to_dict(include_roc=True)


def _rtf(item: TestItem, seconds: float) -> float | None:
    return seconds / item.duration if item.duration else None


def _per_second(item: TestItem, seconds: float) -> float | None:
    return (item.units or 1.0) / seconds if seconds > 0 else None


def _ms_per_unit(item: TestItem, seconds: float) -> float | None:
    return 1000.0 * seconds / (item.units or 1.0)


TASK_KINDS: dict[str, TaskKind] = {
    "asr": TaskKind(
        name="asr",
        max_output_bytes=256 << 10,
        load=lambda root, task: load_asr_testset(root, task.sample_rates),
        check_output=_check_text,
        score=_score_asr,
        metric=lambda task: "cer" if task.unit == "char" else "wer",
        speed_unit="rtf",
        speed=_rtf,
        higher_is_better=False,
        detail=lambda s: f"sentences {_pct(_overall(s).get('sentence_correct_rate'))}",
    ),
    "command": TaskKind(
        name="command",
        max_output_bytes=64 << 10,
        load=lambda root, task: load_command_testset(root, task.sample_rates),
        check_output=_check_text,
        score=_score_command,
        metric=lambda task: "correct_rate",
        speed_unit="rtf",
        speed=_rtf,
    ),
    "kws": TaskKind(
        name="kws",
        max_output_bytes=256 << 10,
        load=_load_kws,
        check_output=_check_slots,
        score=_score_kws,
        metric=lambda task: "slot_rate",
        speed_unit="rtf",
        speed=_rtf,
        detail=lambda s: f"sentences {_pct(_overall(s).get('sentence_rate'))}",
    ),
    "ocr": TaskKind(
        name="ocr",
        max_output_bytes=64 << 10,
        load=_load_ocr,
        check_output=_check_candidates,
        score=_score_ocr,
        metric=lambda task: "recognition_rate",
        speed_unit="chars_per_second",
        speed=_per_second,
        detail=lambda s: f"R10 {_pct(_overall(s).get('top10_rate'))}",
    ),
    "face-detect": TaskKind(
        name="face-detect",
        load=_load_faces,
        check_output=_check_boxes,
        score=_score_faces,
        metric=lambda task: "correct_detection_rate",
        speed_unit="ms_per_frame",
        speed=_ms_per_unit,
        detail=lambda s: f"{_overall(s).get('false_detections', '-')} false detections",
    ),
    "face-identify": TaskKind(
        name="face-identify",
        load=_load_identify,
        check_output=_check_ranked,
        score=_score_identify,
        metric=lambda task: "rank1",
        speed_unit="ms_per_frame",
        speed=_ms_per_unit,
        detail=lambda s: f"rank10 {_pct(_overall(s).get('rank10'))}",
    ),
    "tts": TaskKind(
        name="tts",
        max_output_bytes=64 << 10,
        load=load_tts,
        check_output=check_audio_answer,
        score=score_tts,
        metric=lambda task: "audio_rate",
        speed_unit="chars_per_second",
        speed=_per_second,
        detail=lambda s: f"{s.get('audio_seconds', 0.0):.1f} s of audio",
        output_files={AUDIO_KEY: ".wav"},
        keep_output=keep_audio,
    ),
    "face-verify": TaskKind(
        name="face-verify",
        max_output_bytes=64 << 10,
        load=_load_pairs,
        check_output=_check_score,
        score=_score_pairs,
        metric=lambda task: "eer",
        speed_unit="ms_per_pair",
        speed=_ms_per_unit,
        higher_is_better=False,
        detail=lambda s: f"VR@FAR1% {_pct(_rate_at(s, 0.01))}",
    ),
}


def task_kind(name: str) -> TaskKind:
    """The TaskKind registered under a site file's `kind`."""
    return TASK_KINDS[name]


def headline(kind: TaskKind, task: Task, scores: Mapping[str, Any]) -> float | None:
    """The kind's headline figure from its scores (found in "overall" or at the top)."""
    name = kind.metric(task)
    if name in ("wer", "cer"):
        name = "wer"
    for place in (scores.get("overall"), scores):
        if isinstance(place, Mapping) and isinstance(place.get(name), int | float):
            return float(place[name])
    return None


def kind_names() -> Sequence[str]:
    """Every task kind a site file may name."""
    return tuple(TASK_KINDS)


# The text kinds live in their own module, which needs TaskKind from this one.
from .text_tasks import TEXT_TASK_KINDS  # noqa: E402

TASK_KINDS.update(TEXT_TASK_KINDS)
