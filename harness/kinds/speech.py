"""Speech kinds: `asr` (transcripts), `command` (spoken commands) and `kws` (keyword slots).

docs/task-kinds.md gives each kind's test-set layout, input, output, headline
metric and speed unit. The scorers are scoring/'s, so a run's numbers are the
same as `onsite score` gives on the saved outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from ..testsets import (
    TestSet,
    audio_testset,
    load_asr_testset,
    load_command_testset,
    read_truth,
)
from .base import (
    RTF,
    KindOptions,
    Outputs,
    Plot,
    TaskConfig,
    TaskKind,
    overall,
    pct,
    real_time_factor,
)
from .keywords import (
    check_kws_item,
    check_kws_output,
    kws_detail,
    kws_plots,
    score_detections,
    with_keywords,
)


class AudioOptions(KindOptions):
    """The sample rates a task accepts: items at other rates are refused, never resampled."""

    sample_rates: Annotated[list[Annotated[int, Field(gt=0)]], Field(min_length=1)] = [16000]


class CommandOptions(AudioOptions):
    """command: audio options, and whether case counts when matching a command."""

    case_sensitive: bool = False


class AsrOptions(CommandOptions):
    """asr: audio options, case, and the token unit (word, or char for Chinese)."""

    unit: Literal["word", "char"] = "word"


def _check_text(output: Mapping[str, Any]) -> str | None:
    if not isinstance(output.get("text"), str):
        return 'output needs a "text" string, e.g. {"text": "hello world"}'
    return None


def _conditions(testset: TestSet) -> dict[str, str] | None:
    labelled = testset.conditions()
    if not labelled:
        return None
    return {item.id: labelled.get(item.id, "unlabelled") for item in testset.items}


def _text(outputs: Outputs, testset: TestSet) -> dict[str, str | None]:
    refs = testset.references()
    return {k: (v.get("text") if v else None) for k, v in outputs.items() if k in refs}


def _score_asr(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    # Imported on first use: the aligner is costly to load and a site file needs no scorer.
    from scoring import score_asr

    report = score_asr(
        testset.references(),
        _text(outputs, testset),
        unit=task.unit,
        case_sensitive=task.case_sensitive,
        conditions=_conditions(testset),
    )
    return report.to_dict()


def _score_command(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring import score_commands

    report = score_commands(
        testset.references(),
        _text(outputs, testset),
        conditions=_conditions(testset),
        case_sensitive=task.case_sensitive,
    )
    return report.to_dict()


def _load_kws(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_slot_file

    frames = read_truth(
        root / "slots.jsonl",
        read_slot_file,
        'one line per recording: {"id", "setting", "slots": {name: [keywords]}}',
    )
    settings = {k: f.setting for k, f in frames.items()}
    testset = audio_testset(root, frames, task.sample_rates, settings, root / "slots.jsonl")
    return with_keywords(testset, frames, root / "slots.jsonl")


def _score_kws(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.kws import SlotFrame

    refs: dict[str, SlotFrame] = testset.references()
    hyps = {
        k: SlotFrame(k, refs[k].setting, {n: tuple(w) for n, w in (v or {})["slots"].items()})
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    from scoring import score_slots

    scores = score_slots(refs, hyps).to_dict()
    det = score_detections(testset, outputs)
    if det is not None:
        scores["det"] = det
    return scores


def _asr_plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """The error rate per condition (e.g. SNR), one line per system."""
    from scoring.plots import plot_wer_by_condition

    by_condition = {
        system: {c: s["wer"] for c, s in figures.get("by_condition", {}).items()}
        for system, figures in scores.items()
        if figures.get("by_condition")
    }
    if not by_condition:
        return []
    label = ASR.metric_label(metric)
    return [
        (
            f"{label} by condition",
            lambda stem: plot_wer_by_condition(
                by_condition, stem, metric=label, title=f"{task}: {label} by condition"
            ),
        )
    ]


ASR = TaskKind(
    name="asr",
    summary="continuous speech recognition: audio in, a transcript out",
    options=AsrOptions,
    max_output_bytes=256 << 10,
    load=lambda root, task: load_asr_testset(root, task.sample_rates),
    check_output=_check_text,
    score=_score_asr,
    metric=lambda task: "cer" if task.unit == "char" else "wer",
    metric_labels={"wer": "WER", "cer": "CER"},
    # scoring's ASR report keeps the error rate under "wer" whatever the unit.
    score_key=lambda task: "wer",
    unit=RTF,
    speed=real_time_factor,
    higher_is_better=False,
    detail=lambda s: f"sentences {pct(overall(s).get('sentence_correct_rate'))}",
    plots=lambda task, metric, scores: _asr_plots(task, metric, scores),
    formats=("trn", "ctm", "kaldi", "jsonl"),
)

COMMAND = TaskKind(
    name="command",
    summary="spoken command recognition: audio in, the command's text out",
    options=CommandOptions,
    max_output_bytes=64 << 10,
    load=lambda root, task: load_command_testset(root, task.sample_rates),
    check_output=_check_text,
    score=_score_command,
    metric=lambda task: "correct_rate",
    metric_labels={"correct_rate": "correct"},
    unit=RTF,
    speed=real_time_factor,
    formats=("trn", "kaldi", "score-jsonl", "jsonl"),
)

KWS = TaskKind(
    name="kws",
    summary="keyword spotting into slots: audio in, keywords per slot (and scored detections) out",
    options=AudioOptions,
    max_output_bytes=256 << 10,
    load=_load_kws,
    check_output=check_kws_output,
    check_item=check_kws_item,
    score=_score_kws,
    metric=lambda task: "slot_rate",
    metric_labels={"slot_rate": "slots"},
    unit=RTF,
    speed=real_time_factor,
    detail=kws_detail,
    plots=kws_plots,
    formats=("score-jsonl", "kws-det", "jsonl"),
)

KINDS = (ASR, COMMAND, KWS)
