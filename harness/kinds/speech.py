"""Speech kinds: `asr` (transcripts), `command` (spoken commands) and `kws` (keyword slots).

docs/task-kinds.md gives each kind's test-set layout, input, output, headline
metric and speed unit. The scorers are scoring/'s, so a run's numbers are the
same as `onsite score` gives on the saved outputs.
"""

from __future__ import annotations

import argparse
from collections.abc import Hashable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.kinds.base import (
    ENCODING_ARG,
    RATE_ADDITIVE,
    REF_HYP,
    RTF,
    AdditiveStatistics,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    Plot,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    audio_options,
    overall,
    pct,
    positive_int,
    rate,
    real_time_factor,
    ref_hyp_files,
    refuse_outputs_file,
)
from harness.kinds.formats import score_jsonl, write_ctm, write_kaldi, write_trn
from harness.kinds.keywords import (
    check_kws_item,
    check_kws_output,
    kws_det_run_args,
    kws_detail,
    kws_plots,
    score_detections,
    with_keywords,
    write_kws_det,
)
from harness.kinds.submissions import READ_ASR
from harness.testsets import (
    TestSet,
    audio_testset,
    load_asr_testset,
    load_command_testset,
    read_truth,
)

if TYPE_CHECKING:
    from harness.kinds.options import KindOptions
    from scoring import AsrReport
    from scoring.plots import PlotFiles


@cache
def _command_options() -> type[KindOptions]:
    from harness.kinds.options import AudioOptions

    class CommandOptions(AudioOptions):
        """command: audio options, and whether case counts when matching a command."""

        case_sensitive: bool = False

    return CommandOptions


@cache
def _command_kind_options() -> type[KindOptions]:
    class CommandKindOptions(_command_options()):  # type: ignore[misc]
        """command: audio options, case, and whether commands are compared as sclite
        compares sentences (literal = true: no width or CJK-space normalisation)."""

        literal: bool = False

    return CommandKindOptions


@cache
def _asr_options() -> type[KindOptions]:
    class AsrOptions(_command_options()):  # type: ignore[misc]
        """asr: audio options, case, and the token unit (word; char for Chinese characters;
        syllable for pinyin syllables, "ni3 hao3" or "ni3hao3")."""

        unit: Literal["word", "char", "syllable"] = "word"

    return AsrOptions


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
        literal=task.literal,
    )
    return report.to_dict()


def _load_kws(root: Path, task: TaskConfig) -> TestSet:
    from scoring import read_slot_file

    encoding = getattr(task, "encoding", None)
    frames = read_truth(
        root / "slots.jsonl",
        lambda path: read_slot_file(path, encoding=encoding),
        'one line per recording: {"id", "setting", "slots": {name: [keywords]}}',
    )
    settings = {k: f.setting for k, f in frames.items()}
    testset = audio_testset(root, frames, task.sample_rates, settings, root / "slots.jsonl")
    return with_keywords(testset, frames, root / "slots.jsonl", encoding)


def _slot_frames(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reference frames and the answered frames (in the reference's setting)."""
    from scoring.kws import SlotFrame

    refs: dict[str, SlotFrame] = testset.references()
    hyps = {
        k: SlotFrame(k, refs[k].setting, {n: tuple(w) for n, w in (v or {})["slots"].items()})
        for k, v in outputs.items()
        if k in refs and v is not None
    }
    return refs, hyps


def _score_kws(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring import score_slots

    scores = score_slots(*_slot_frames(testset, outputs)).to_dict()
    det = score_detections(testset, outputs)
    if det is not None:
        scores["det"] = det
    return scores


# --------------------------------------------------------------------------- statistics


def _asr_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each utterance's (C, S, D, I): the WER is summed errors over summed words."""
    from scoring.asr import utterance_counts

    return utterance_counts(
        testset.references(),
        _text(outputs, testset),
        unit=task.unit,
        case_sensitive=task.case_sensitive,
    )


def _asr_aggregate(task: TaskConfig, counts: Sequence[Any]) -> float:
    from scoring.asr import AsrScore

    return AsrScore.from_counts(counts).wer


def _asr_vector(task: TaskConfig, counts: Any) -> Mapping[Hashable, float]:
    return dict(zip("CSDI", counts, strict=True))


def _asr_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    from scoring.asr import AsrScore

    # One row of the summed counts: the WER reads only the totals.
    return AsrScore.from_counts([[int(sums.get(op, 0)) for op in "CSDI"]]).wer


def _command_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each command: recognised or not."""
    from scoring import score_commands

    refs = testset.references()
    report = score_commands(refs, _text(outputs, testset), None, task.case_sensitive, task.literal)
    wrong = set(report.wrong_ids)
    return {k: k not in wrong for k in refs}


def _kws_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each utterance's slot outcome: the rate is summed right slots over summed slots."""
    from scoring import score_slots

    return {r.id: r for r in score_slots(*_slot_frames(testset, outputs)).sentences}


def _kws_aggregate(task: TaskConfig, results: Sequence[Any]) -> float:
    from scoring.kws import SlotScore

    return SlotScore.from_results(results).slot_rate


def _kws_vector(task: TaskConfig, result: Any) -> Mapping[Hashable, float]:
    return {"slots": result.slots, "right_slots": result.right_slots}


def _kws_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    from scoring.kws import SlotScore

    slots, right = int(sums.get("slots", 0)), int(sums.get("right_slots", 0))
    # The slot rate reads only these two sums.
    return SlotScore(0, 0, slots, right, 0, 0).slot_rate


# --------------------------------------------------------------------------- onsite score


def _asr_format(path: str | Path) -> str:
    """sclite's name for a transcript file's format, from its suffix (trn for any other)."""
    suffix = str(path).lower().rsplit(".", 1)[-1]
    return suffix if suffix in ("ctm", "stm") else "trn"


def _asr_report(args: argparse.Namespace) -> tuple[AsrReport, dict[str, Any]]:
    """The report, and for an STM against a CTM the segments' speakers, files and
    channels (keys "speakers", "files", "channels"); "warnings" always."""
    from scoring import check_ids, read_any_transcripts, read_conditions, score_asr
    from scoring.asr_formats import read_stm, sclite_byte_warnings
    from scoring.asr_stm import fold_name, read_paired_ctm_stm

    refuse_outputs_file(args.hyp, "asr")

    encoding = getattr(args, "encoding", None)
    ref_fmt, hyp_fmt = _asr_format(args.ref), _asr_format(args.hyp)
    warnings: list[str] = []
    for path, fmt in ((args.ref, ref_fmt), (args.hyp, hyp_fmt)):
        warnings += sclite_byte_warnings(Path(path), fmt, encoding)
    extra: dict[str, Any] = {}
    if (ref_fmt, hyp_fmt) == ("stm", "ctm"):
        # sclite's pairing: each CTM word to the STM segment holding its middle.
        paired = read_paired_ctm_stm(Path(args.ref), Path(args.hyp), args.case_sensitive, encoding)
        refs, hyps = dict(paired.refs), dict(paired.hyps)
        warnings += paired.warnings
        extra = {"speakers": paired.speakers, "files": paired.files, "channels": paired.channels}
        conditions = None
        if args.conditions:
            # The conditions file labels waveforms (STM files); each segment takes its file's.
            labels = read_conditions(Path(args.conditions), read_stm(Path(args.ref), encoding))
            by_file = {fold_name(f, args.case_sensitive): v for f, v in labels.items()}
            conditions = {k: by_file[paired.files[k]] for k in refs}
    else:
        refs = read_any_transcripts(Path(args.ref), encoding)
        hyps = read_any_transcripts(Path(args.hyp), encoding)
        if hyp_fmt == "ctm":
            # A CTM has no line for an utterance without words: an empty hypothesis.
            hyps = {k: hyps.get(k, "") for k in refs} | hyps
        check_ids(refs, hyps, Path(args.ref), Path(args.hyp))
        conditions = (
            read_conditions(Path(args.conditions), refs, encoding) if args.conditions else None
        )
    report = score_asr(
        refs,
        hyps,
        unit=args.unit,
        case_sensitive=args.case_sensitive,
        conditions=conditions,
        unicode=args.unicode,
    )
    extra["warnings"] = warnings
    return report, extra


def _score_asr_files(args: argparse.Namespace) -> dict[str, Any]:
    report, extra = _asr_report(args)
    total = report.overall
    out = {
        "unit": args.unit,
        "case_sensitive": args.case_sensitive,
        "n_ref": total.ref_tokens,
        "correct": total.correct,
        "substitutions": total.substitutions,
        "deletions": total.deletions,
        "insertions": total.insertions,
        "errors": total.errors,
        "wer": total.wer,
        "correct_rate": total.correct_rate,
        "sub_rate": total.sub_rate,
        "del_rate": total.del_rate,
        "ins_rate": total.ins_rate,
        "sentences": total.utterances,
        "sentences_correct": total.sentences_correct,
        "sentence_correct_rate": total.sentence_correct_rate,
        # Per-utterance counts only go to --json: the table shows the totals.
        "utterances": [
            {
                "id": u.id,
                "n_ref": u.ref_tokens,
                "correct": u.correct,
                "substitutions": u.substitutions,
                "deletions": u.deletions,
                "insertions": u.insertions,
            }
            for u in (report.utterances if args.json else ())
        ],
        "by_condition": {k: v.to_dict() for k, v in report.by_condition.items()},
    }
    if "speakers" in extra:
        # An STM against a CTM: sclite's per-speaker report, and the same per file.
        for key, of in (("by_speaker", extra["speakers"]), ("by_file", extra["files"])):
            out[key] = _grouped(report, of)
        for u in out["utterances"]:
            u |= {k: extra[n][u["id"]] for k, n in _SEGMENT_KEYS}
    out["warnings"] = extra["warnings"]
    return out


_SEGMENT_KEYS = (("speaker", "speakers"), ("file", "files"), ("channel", "channels"))


def _grouped(report: AsrReport, of: Mapping[str, str]) -> dict[str, Any]:
    """Totals of the report's utterances grouped by `of` (utterance id -> group), in
    order of first appearance."""
    from scoring.asr import AsrScore

    rows: dict[str, list[list[int]]] = {}
    for u in report.utterances:
        rows.setdefault(of[u.id], []).append(
            [u.correct, u.substitutions, u.deletions, u.insertions]
        )
    return {k: AsrScore.from_counts(v).to_dict() for k, v in rows.items()}


def _plot_asr(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring.plots import plot_wer_by_condition

    report, _ = _asr_report(args)
    if not report.by_condition:
        raise ValueError("--plot for asr shows WER by condition: give --conditions FILE too")
    metric = {"char": "CER", "syllable": "SylER"}.get(args.unit, "WER")
    values = {Path(args.hyp).stem: {k: v.wer for k, v in report.by_condition.items()}}
    return plot_wer_by_condition(values, stem, metric=metric)


def _score_command_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.commands import read_command_file, score_commands

    encoding = getattr(args, "encoding", None)
    return score_commands(
        read_command_file(args.ref, encoding),
        read_command_file(args.hyp, encoding),
        case_sensitive=args.case_sensitive,
        literal=getattr(args, "literal", False),
    ).to_dict()


def _score_kws_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.kws import read_slot_file, score_slots

    encoding = getattr(args, "encoding", None)
    refs = read_slot_file(args.ref, encoding=encoding)
    hyps = read_slot_file(args.hyp, require_setting=False, encoding=encoding)
    return score_slots(refs, hyps).to_dict(include_sentences=args.details)


def _score_kws_det_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.kws import det_figures, read_detections

    # The reader's errors name the file and line already.
    detections = read_detections(args.hyp, getattr(args, "encoding", None))
    try:
        return det_figures(detections, args.n_true, args.n_nontarget)
    except ValueError as exc:
        # Counts that contradict the file: name the file, the fix is in the message.
        raise ValueError(f"{args.hyp}: {exc}") from None


def _plot_det(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring import det_curve, read_detections
    from scoring.plots import plot_det

    detections = read_detections(args.hyp, getattr(args, "encoding", None))
    curve = det_curve(detections, args.n_true, args.n_nontarget)
    return plot_det({Path(args.hyp).stem: curve}, stem)


ASR_FAMILY = ScoreFamily(
    _score_asr_files,
    "WER/CER with sclite's conventions; trn or Kaldi text files, or an STM with a CTM",
    (
        arg("--ref", required=True, help="reference transcripts (trn, Kaldi text, or .stm)"),
        arg(
            "--hyp",
            required=True,
            help="hypotheses (trn, Kaldi text, or .ctm: against an .stm, each word is "
            "scored in the segment of its file and channel holding its middle, as sclite does)",
        ),
        arg(
            "--unit",
            choices=("word", "char", "syllable"),
            default="word",
            help="tokens: words, characters (-c NOASCII), or pinyin syllables: each word "
            "split after its tone digit and at apostrophes (ni3hao3 -> ni3 hao3)",
        ),
        arg("--case-sensitive", action="store_true"),
        arg(
            "--unicode",
            action="store_true",
            help="Unicode-aware tokens instead of sclite's: any Unicode space splits, "
            "str.lower folds, char mode splits CJK only, `foo*` stays as written",
        ),
        arg("--conditions", help="'<utt-id>\\t<label>' lines (e.g. SNR): WER per label"),
        ENCODING_ARG,
    ),
    plot=_plot_asr,
)
COMMAND_FAMILY = ScoreFamily(
    _score_command_files,
    "correct command rate; JSON lines {id, text}, trn or Kaldi text",
    (
        arg("--ref", required=True, help="reference commands (JSON lines, trn or Kaldi text)"),
        arg("--hyp", required=True, help="recognized commands (same formats)"),
        arg(
            "--case-sensitive",
            action="store_true",
            help="keep case (default: fold it, as the live command task does)",
        ),
        arg(
            "--literal",
            action="store_true",
            help="compare as sclite does (words split at whitespace, A-Z folded, no "
            "full-width or CJK-space normalisation): the correct count is sclite's "
            "sentence-correct count on the same trn files",
        ),
        ENCODING_ARG,
    ),
)
KWS_FAMILY = ScoreFamily(
    _score_kws_files,
    "keyword spotting: correct slot and sentence rates; slot JSON lines",
    (*REF_HYP, ENCODING_ARG),
)
KWS_DET_FAMILY = ScoreFamily(
    _score_kws_det_files,
    "keyword spotting DET curve: P_miss and P_fa at every score threshold",
    (
        arg(
            "--hyp",
            required=True,
            help="scored detections {keyword, utterance, score, is_true} (JSON lines, "
            "docs/scoring-ocr-kws-tts.md)",
        ),
        arg("--n-true", type=positive_int, required=True, help="true keyword occurrences"),
        arg("--n-nontarget", type=positive_int, required=True, help="non-target trials"),
        ENCODING_ARG,
    ),
    tables=("points",),
    plot=_plot_det,
)


# --------------------------------------------------------------------------- --run and export


def _asr_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    values = ref_hyp_files(write_trn, ".trn")(job, directory)
    conditions = job.testset.conditions()
    path = None
    if conditions:
        path = directory / "conditions.tsv"
        path.write_text("".join(f"{k}\t{v}\n" for k, v in conditions.items()), encoding="utf-8")
    return {
        **values,
        "unit": job.config.unit,
        "case_sensitive": job.config.case_sensitive,
        "unicode": False,
        "conditions": str(path) if path else None,
    }


write_command_jsonl = score_jsonl(
    lambda item: {"id": item.id, "text": str(item.reference)},
    lambda job, item, answer: {"id": item.id, "text": job.text(item.id)},
)
write_kws_jsonl = score_jsonl(
    lambda item: item.reference.to_dict(),
    lambda job, item, answer: {"id": item.id, "slots": answer["slots"]},
)


def _command_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    return {
        **ref_hyp_files(write_command_jsonl, ".jsonl")(job, directory),
        "case_sensitive": job.config.case_sensitive,
        "literal": job.config.literal,
    }


# The live `det` block's figures that `onsite score kws-det --run` gives.
_DET_SAME = {
    k: f"det.{k}" for k in ("eer", "n_true", "n_nontarget", "detections", "true_detections")
}


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
    text_encodings=True,
    summary="continuous speech recognition: audio in, a transcript out",
    options_model=_asr_options,
    max_output_bytes=256 << 10,
    load=lambda root, task: load_asr_testset(
        root, task.sample_rates, getattr(task, "encoding", None)
    ),
    check_output=_check_text,
    score=_score_asr,
    metric=lambda task: {"char": "cer", "syllable": "syler"}.get(task.unit, "wer"),
    metric_labels={"wer": "WER", "cer": "CER", "syler": "SylER"},
    # scoring's ASR report keeps the error rate under "wer" whatever the unit.
    score_key=lambda task: "wer",
    statistics=ItemStatistics(
        _asr_items, _asr_aggregate, AdditiveStatistics(_asr_vector, _asr_headline)
    ),
    unit=RTF,
    speed=real_time_factor,
    higher_is_better=False,
    detail=lambda s: f"sentences {pct(overall(s).get('sentence_correct_rate'))}",
    plots=lambda task, metric, scores: _asr_plots(task, metric, scores),
    writers={"trn": write_trn, "ctm": write_ctm, "kaldi": write_kaldi},
    readers=READ_ASR,
    score_families={"asr": ASR_FAMILY},
    from_run={"asr": FromRun(_asr_run_args)},
)

COMMAND = TaskKind(
    name="command",
    text_encodings=True,
    summary="spoken command recognition: audio in, the command's text out",
    options_model=_command_kind_options,
    max_output_bytes=64 << 10,
    load=lambda root, task: load_command_testset(
        root, task.sample_rates, getattr(task, "encoding", None)
    ),
    check_output=_check_text,
    score=_score_command,
    metric=lambda task: "correct_rate",
    metric_labels={"correct_rate": "correct"},
    statistics=ItemStatistics(_command_items, lambda task, hits: rate(hits), RATE_ADDITIVE),
    unit=RTF,
    speed=real_time_factor,
    writers={"trn": write_trn, "kaldi": write_kaldi, "score-jsonl": write_command_jsonl},
    score_families={"command": COMMAND_FAMILY},
    from_run={"command": FromRun(_command_run_args)},
)

KWS = TaskKind(
    name="kws",
    text_encodings=True,
    summary="keyword spotting into slots: audio in, keywords per slot (and scored detections) out",
    options_model=audio_options,
    max_output_bytes=256 << 10,
    load=_load_kws,
    check_output=check_kws_output,
    check_item=check_kws_item,
    score=_score_kws,
    metric=lambda task: "slot_rate",
    metric_labels={"slot_rate": "slots"},
    statistics=ItemStatistics(
        _kws_items, _kws_aggregate, AdditiveStatistics(_kws_vector, _kws_headline)
    ),
    unit=RTF,
    speed=real_time_factor,
    detail=kws_detail,
    plots=kws_plots,
    writers={"score-jsonl": write_kws_jsonl, "kws-det": write_kws_det},
    score_families={"kws": KWS_FAMILY, "kws-det": KWS_DET_FAMILY},
    from_run={
        "kws": FromRun(ref_hyp_files(write_kws_jsonl, ".jsonl")),
        "kws-det": FromRun(kws_det_run_args, same_as=_DET_SAME),
    },
)

KINDS = (ASR, COMMAND, KWS)
