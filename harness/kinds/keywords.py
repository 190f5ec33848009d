"""Live keyword spotting (`kws`): the task's keyword list, detection scores and the DET curve.

A kws test set may give ``keywords.json``, the keyword list of every setting::

    {"settings": {"transportation": {"from": ["boston", "denver"], "to": ["boston", "denver"]}}}

The file reaches the system in hello (``files.keywords``, staged like any hello
file) and each item's input names its ``setting``. An answer is the slots and,
optionally, scored detections::

    {"slots": {"from": ["boston"]}, "detections": [{"keyword": "boston", "score": 0.93}]}

With a keyword list, a slot or keyword the item's setting does not list is
invalid_output. Detections give the DET curve: a trial is a (keyword,
utterance) pair of the setting's keywords and the test set's utterances, true
when the keyword is in the utterance's reference slots; a pair's score is the
highest the system gave that keyword in that utterance, and a pair it never
proposed is never accepted. So the counts come from the test set, never by hand.
docs/task-kinds.md and docs/participant-protocol.md say the same for people.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from harness.errors import Problem, TestSetError
from harness.kinds.base import JobData, Outputs, Plot, jsonl, overall, pct, score_problem
from harness.testsets import TestItem, TestSet
from scoring.kws import Detection, SlotFrame, det_figures

if TYPE_CHECKING:
    from pydantic import BaseModel

MAX_DETECTIONS = 1000
"""At most this many detections per item: more is invalid_output (no flooding the scorer)."""

KEYWORDS_FILE = "keywords.json"
_SHOWN_PROBLEMS = 20
_DETECTION_EXAMPLE = '"detections": [{"keyword": "boston", "score": 0.93}, ...]'


@cache
def keyword_list_model() -> type[BaseModel]:
    """The pydantic model of keywords.json, built when a kws test set is read (pydantic is
    loaded then, never by the kind module: see harness/kinds/options.py)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    Name = Annotated[str, Field(min_length=1)]
    Slots = Annotated[dict[Name, list[Name]], Field(min_length=1)]

    class KeywordList(BaseModel):
        """keywords.json: setting -> slot name -> the keywords that slot may hold."""

        model_config = ConfigDict(extra="forbid", frozen=True)

        settings: Annotated[dict[Name, Slots], Field(min_length=1)]

        @field_validator("settings")
        @classmethod
        def _no_empty_slot(cls, settings: dict[str, dict[str, list[str]]]) -> Any:
            for setting, slots in settings.items():
                for slot, words in slots.items():
                    if not words:
                        raise ValueError(f"slot {slot!r} of setting {setting!r} lists no keyword")
            return settings

    return KeywordList


@dataclass(frozen=True)
class KwsTruth(SlotFrame):
    """A reference frame that also knows its setting's slots and keywords (None: no list)."""

    vocabulary: Mapping[str, frozenset[str]] | None = None

    @property
    def keywords(self) -> frozenset[str]:
        """Every keyword of the setting, whatever its slot (the DET's keyword set)."""
        return frozenset().union(*self.vocabulary.values()) if self.vocabulary else frozenset()


def read_keyword_list(path: Path, encoding: str | None = None) -> Any:
    """Read keywords.json in ``encoding`` (the task's; scoring.charsets, None: UTF-8);
    errors name the file and the key, or the line and the encoding to name."""
    from scoring.charsets import read_text
    from scoring.errors import FormatError

    fix = 'write {"settings": {"<setting>": {"<slot>": ["<keyword>", ...]}}}'
    try:
        data = json.loads(read_text(path, encoding))
    except FormatError as exc:
        raise TestSetError([Problem(path, "", exc.problem, exc.fix, exc.line)]) from None
    except json.JSONDecodeError as exc:
        raise TestSetError([Problem(path, "", f"not JSON ({exc.msg})", fix, exc.lineno)]) from None
    from pydantic import ValidationError

    try:
        return keyword_list_model().model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(path, ".".join(str(p) for p in err["loc"]), err["msg"], fix)
            for err in exc.errors()
        ]
        raise TestSetError(problems) from None


def with_keywords(
    testset: TestSet,
    frames: Mapping[str, SlotFrame],
    slots_path: Path,
    encoding: str | None = None,
) -> TestSet:
    """The kws test set with its keyword list: hello's file, each item's setting, the
    vocabulary the checks use. Without keywords.json the set is returned as it is, warned.
    ``encoding`` is the task's, keywords.json's as the slot file's.
    """
    path = testset.root / KEYWORDS_FILE
    if not path.is_file():
        warning = (
            f"{path}: no keyword list; systems get none in hello, keywords are not checked "
            "and no DET curve is computed"
        )
        return replace(testset, warnings=(*testset.warnings, warning))
    listed = read_keyword_list(path, encoding)
    problems: list[Problem] = []
    vocabularies: dict[str, dict[str, frozenset[str]]] = {
        setting: {slot: frozenset(words) for slot, words in slots.items()}
        for setting, slots in listed.settings.items()
    }
    for frame in frames.values():
        vocabulary = vocabularies.get(frame.setting)
        if vocabulary is None:
            problems.append(
                Problem(
                    slots_path,
                    f"id {frame.id}",
                    f"setting {frame.setting!r} is not in {path.name}",
                    f"add it to {path.name} or correct the setting",
                )
            )
            continue
        for slot, words in frame.slots.items():
            unknown = [w for w in words if w not in vocabulary.get(slot, ())]
            if slot not in vocabulary or unknown:
                what = f"slot {slot!r}" if slot not in vocabulary else f"keywords {unknown}"
                problems.append(
                    Problem(
                        slots_path,
                        f"id {frame.id}",
                        f"{what} not listed for setting {frame.setting!r} in {path.name}",
                        f"list every reference keyword in {path.name}",
                    )
                )
    if problems:
        # A wrong list (or the wrong file) mismatches every line: the first few say enough.
        shown = problems[:_SHOWN_PROBLEMS]
        if len(problems) > len(shown):
            more = f"and {len(problems) - len(shown)} more lines like these"
            shown.append(Problem(slots_path, "", more, f"check {path.name} against it"))
        raise TestSetError(shown)
    items = tuple(
        replace(
            item,
            fields={**item.fields, "setting": item.reference.setting},
            reference=KwsTruth(
                item.reference.id,
                item.reference.setting,
                item.reference.slots,
                vocabularies[item.reference.setting],
            ),
        )
        for item in testset.items
    )
    return replace(testset, items=items, setup_files={"keywords": path})


def check_kws_output(output: Mapping[str, Any]) -> str | None:
    """The answer's shape: a "slots" object of keyword lists, optional scored "detections"."""
    slots = output.get("slots")
    example = 'e.g. {"slots": {"from": ["北京"], "to": ["上海"]}}'
    if not isinstance(slots, dict):
        return f'output needs a "slots" object, {example}'
    for name, words in slots.items():
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            return f"slot {name!r} must be a list of keyword strings, {example}"
    if "detections" not in output:
        return None
    detections = output["detections"]
    if not isinstance(detections, list):
        return f"output.detections must be a list, e.g. {_DETECTION_EXAMPLE}"
    if len(detections) > MAX_DETECTIONS:
        return f"output.detections has {len(detections)} entries; at most {MAX_DETECTIONS}"
    for i, det in enumerate(detections):
        if not isinstance(det, dict):
            return f"output.detections[{i}] must be an object, e.g. {_DETECTION_EXAMPLE}"
        if not isinstance(det.get("keyword"), str) or not det["keyword"]:
            return f'output.detections[{i}] needs a "keyword" string'
        problem = score_problem(det.get("score"), f"output.detections[{i}]", " (higher: surer)")
        if problem:
            return problem
    return None


def check_kws_item(item: TestItem, output: Mapping[str, Any]) -> str | None:
    """Slots and keywords the item's setting does not list (when the test set lists them)."""
    truth = item.reference
    vocabulary = truth.vocabulary if isinstance(truth, KwsTruth) else None
    if vocabulary is None:
        return None
    setting = truth.setting
    for slot, words in output["slots"].items():
        if slot not in vocabulary:
            return f"slot {slot!r} is not a slot of setting {setting!r}: use {sorted(vocabulary)}"
        unknown = [w for w in words if w not in vocabulary[slot]]
        if unknown:
            return f"keywords {unknown} are not listed for slot {slot!r} of setting {setting!r}"
    for i, det in enumerate(output.get("detections", ())):
        if det["keyword"] not in truth.keywords:
            return (
                f"output.detections[{i}]: keyword {det['keyword']!r} is not in the keyword "
                f"list of setting {setting!r}"
            )
    return None


def detection_trials(testset: TestSet, outputs: Outputs) -> tuple[list[Detection], int, int] | None:
    """The scored (keyword, utterance) trials of answered outputs and the trial counts
    (true, non-target) from the test set; None without a keyword list or any detections.
    """
    if not any(o is not None and "detections" in o for o in outputs.values()):
        return None
    detections: list[Detection] = []
    n_true = n_nontarget = 0
    for item in testset.items:
        truth = item.reference
        if not isinstance(truth, KwsTruth) or truth.vocabulary is None:
            return None
        true = {w for words in truth.slots.values() for w in words}
        n_true += len(true)
        n_nontarget += len(truth.keywords) - len(true)
        best: dict[str, float] = {}
        for det in (outputs.get(item.id) or {}).get("detections", ()):
            keyword, score = det["keyword"], float(det["score"])
            best[keyword] = max(score, best.get(keyword, score))
        detections += [Detection(k, item.id, s, k in true) for k, s in best.items()]
    return detections, n_true, n_nontarget


def score_detections(testset: TestSet, outputs: Outputs) -> dict[str, Any] | None:
    """The DET curve's figures for the scores' "det" key, or None when there is none."""
    trials = detection_trials(testset, outputs)
    if trials is None:
        return None
    detections, n_true, n_nontarget = trials
    if n_true == 0 or n_nontarget == 0:
        return None  # no target (or no non-target) trial: no curve to draw
    return det_figures(detections, n_true, n_nontarget)


def _job_trials(job: JobData) -> tuple[list[Detection], int, int]:
    """The job's DET trials and counts; an InputError saying why when there is no curve."""
    trials = detection_trials(job.testset, job.outputs)
    if trials is None:
        raise job.refuse(
            "detections",
            "no DET curve: the test set has no keywords.json, or the system sent "
            "no scored detections",
            "score the slots with `onsite score kws`",
        )
    detections, n_true, n_nontarget = trials
    if not detections or n_true == 0 or n_nontarget == 0:
        what = "no detection" if not detections else "no target or no non-target trial"
        raise job.refuse("detections", f"no DET curve: {what}", "use --format jsonl")
    return trials


def write_kws_det(job: JobData, references: bool) -> str:
    """The scored trials `onsite score kws-det --hyp` reads; with --references the counts.

    One line per (keyword, utterance) pair the system proposed, with its highest
    score and ``is_true`` from the test set's slots (so this file, like the
    references, is the organizer's). --references: ``{"n_true", "n_nontarget"}``,
    the values of `onsite score kws-det --n-true --n-nontarget`.
    """
    detections, n_true, n_nontarget = _job_trials(job)
    if references:
        return jsonl([{"n_true": n_true, "n_nontarget": n_nontarget}])
    return jsonl(
        [
            {"keyword": d.keyword, "utterance": d.utterance, "score": d.score, "is_true": d.is_true}
            for d in detections
        ]
    )


def kws_det_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    """`onsite score kws-det --run`: the trials file and the counts from the test set."""
    _, n_true, n_nontarget = _job_trials(job)
    path = directory / "detections.jsonl"
    path.write_text(write_kws_det(job, False), encoding="utf-8")
    return {"hyp": str(path), "n_true": n_true, "n_nontarget": n_nontarget}


def kws_detail(scores: Mapping[str, Any]) -> str:
    """The leaderboard's secondary line: the sentence rate, and the EER when scored."""
    line = f"sentences {pct(overall(scores).get('sentence_rate'))}"
    det = scores.get("det")
    if isinstance(det, Mapping):
        line += f", EER {pct(det.get('eer'))}"
    return line


def kws_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """The DET curves of the systems that sent detection scores."""
    curves = {
        system: ([p["p_fa"] for p in det["points"]], [p["p_miss"] for p in det["points"]])
        for system, figures in scores.items()
        if isinstance(det := figures.get("det"), Mapping)
    }
    if not curves:
        return []

    def draw(stem: Path) -> Any:
        from scoring.plots import plot_det

        return plot_det(curves, stem, title=f"{task}: DET")

    return [("DET", draw)]
