"""`onsite score FAMILY ...`: score saved files, or a run's job (--run), re-running nothing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from scoring import AsrReport
    from scoring.plots import PlotFiles

from .judge.args import STATION_FAMILIES, add_station_source

# Each family's function imports its own scorer when it runs, so `onsite score
# ir` loads neither numpy, the numba aligner, matplotlib nor the other families.


T = TypeVar("T")


def _refuse_outputs_file(path: str, family: str) -> None:
    """A run's outputs file (JSON lines) given where a transcript file goes: say what to do.

    Read as trn or plain text, its JSON would quietly become ids or segments.
    """
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return  # the reader names the unreadable path
    if head.startswith('{"'):
        raise ValueError(
            f"{path}: JSON lines (a run's outputs file?), not a {family} file; score the "
            f"run with `onsite score {family} --run RUN_DIR --task T --system S`, or write "
            "the file with `onsite export RUN_DIR --format ...` (docs/formats.md)"
        )


def _asr_report(args: argparse.Namespace) -> AsrReport:
    from scoring import check_ids, read_any_transcripts, read_conditions, score_asr

    _refuse_outputs_file(args.hyp, "asr")

    refs = read_any_transcripts(Path(args.ref))
    hyps = read_any_transcripts(Path(args.hyp))
    if str(args.hyp).lower().endswith(".ctm"):
        # A CTM has no line for an utterance without words: an empty hypothesis.
        hyps = {k: hyps.get(k, "") for k in refs} | hyps
    check_ids(refs, hyps, Path(args.ref), Path(args.hyp))
    conditions = read_conditions(Path(args.conditions), refs) if args.conditions else None
    return score_asr(
        refs,
        hyps,
        unit=args.unit,
        case_sensitive=args.case_sensitive,
        conditions=conditions,
        unicode=args.unicode,
    )


def _asr(args: argparse.Namespace) -> dict[str, Any]:
    report = _asr_report(args)
    overall = report.overall
    return {
        "unit": args.unit,
        "case_sensitive": args.case_sensitive,
        "n_ref": overall.ref_tokens,
        "correct": overall.correct,
        "substitutions": overall.substitutions,
        "deletions": overall.deletions,
        "insertions": overall.insertions,
        "errors": overall.errors,
        "wer": overall.wer,
        "correct_rate": overall.correct_rate,
        "sub_rate": overall.sub_rate,
        "del_rate": overall.del_rate,
        "ins_rate": overall.ins_rate,
        "sentences": overall.utterances,
        "sentences_correct": overall.sentences_correct,
        "sentence_correct_rate": overall.sentence_correct_rate,
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


def _plot_asr(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring.plots import plot_wer_by_condition

    report = _asr_report(args)
    if not report.by_condition:
        raise ValueError("--plot for asr shows WER by condition: give --conditions FILE too")
    metric = "CER" if args.unit == "char" else "WER"
    values = {Path(args.hyp).stem: {k: v.wer for k, v in report.by_condition.items()}}
    return plot_wer_by_condition(values, stem, metric=metric)


def _plot_roc(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring import read_verification_scores, read_verification_truth, score_verification_pairs
    from scoring.plots import plot_roc

    report = score_verification_pairs(
        read_verification_scores(args.hyp), read_verification_truth(args.ref)
    )
    name = Path(args.hyp).stem
    return plot_roc({name: report.roc}, stem, eer={name: report.eer})


def _plot_cmc(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring import (
        read_identification_candidates,
        read_identification_truth,
        score_identification,
    )
    from scoring.plots import plot_cmc

    report = score_identification(
        read_identification_candidates(args.hyp), read_identification_truth(args.ref)
    )
    return plot_cmc({Path(args.hyp).stem: report.overall}, stem)


def _plot_det(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring import det_curve, read_detections
    from scoring.plots import plot_det

    curve = det_curve(read_detections(args.hyp), args.n_true, args.n_nontarget)
    return plot_det({Path(args.hyp).stem: curve}, stem)


def _command(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.commands import read_command_file, score_commands

    return score_commands(
        read_command_file(args.ref),
        read_command_file(args.hyp),
        case_sensitive=args.case_sensitive,
    ).to_dict()


def _kws(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.kws import read_slot_file, score_slots

    refs = read_slot_file(args.ref)
    hyps = read_slot_file(args.hyp, require_setting=False)
    return score_slots(refs, hyps).to_dict(include_sentences=args.details)


def _ocr(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ocr import read_ocr_outputs, read_ocr_truth, score_ocr

    report = score_ocr(read_ocr_truth(args.ref), read_ocr_outputs(args.hyp), seconds=args.seconds)
    return report.to_dict(include_characters=args.details)


def _face_detect(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.faces import read_face_detections, read_face_references, score_detection

    detections = read_face_detections(args.hyp)
    report = score_detection(
        read_face_references(args.ref), detections.boxes, seconds=detections.seconds or None
    )
    return report.to_dict(include_images=args.details)


def _face_identify(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.faces import (
        read_identification_candidates,
        read_identification_truth,
        score_identification,
    )

    report = score_identification(
        read_identification_candidates(args.hyp), read_identification_truth(args.ref)
    )
    return report.to_dict(include_probes=args.details)


def _face_verify(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.faces import (
        read_verification_scores,
        read_verification_truth,
        score_verification_pairs,
    )

    report = score_verification_pairs(
        read_verification_scores(args.hyp), read_verification_truth(args.ref)
    )
    return report.to_dict(include_roc=args.details)


def _kws_det(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.kws import det_curve, read_detections

    detections = read_detections(args.hyp)
    try:
        curve = det_curve(detections, args.n_true, args.n_nontarget)
    except ValueError as exc:
        # Counts that contradict the file: name the file, the fix is in the message.
        raise ValueError(f"{args.hyp}: {exc}") from None
    out = curve.to_dict()
    points = out.pop("points")
    hits = sum(d.is_true for d in detections)
    return {**out, "detections": len(detections), "true_detections": hits, "points": points}


def _tts_pair(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import pair_comparison, read_pair_judgements

    judgements = read_pair_judgements(args.hyp)
    stats = pair_comparison(judgements, confidence=args.confidence, unit=args.unit)
    return {
        "unit": args.unit,
        "confidence": args.confidence,
        "judgements": len(judgements),
        "listeners": len({j.listener for j in judgements}),
        "pairs": [s.to_dict() for s in stats],
    }


def _tts_sus(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import read_sus_responses, score_sus

    responses = read_sus_responses(args.hyp)
    scores = score_sus(responses)
    return {"blanks": len(responses), "systems": [s.to_dict() for s in scores.values()]}


def _tts_mos(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import read_mos_ratings, score_mos

    ratings = read_mos_ratings(args.hyp)
    scores = score_mos(ratings, confidence=args.confidence)
    return {
        "confidence": args.confidence,
        "ratings": len(ratings),
        "systems": [s.to_dict() for s in scores.values()],
    }


def _numbered(prefix: str, n: int) -> list[str]:
    # Zero-padded so the ids sort in numeric order.
    return [f"{prefix}{i:0{len(str(n))}d}" for i in range(1, n + 1)]


def _tts_plan(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import listening_plan, read_sentence_ids

    # A plain number is a count; anything else names a file (write ./12 for a file "12").
    count = args.sentences.isascii() and args.sentences.isdigit()
    sentences = _numbered("s", int(args.sentences)) if count else read_sentence_ids(args.sentences)
    listeners = _numbered("L", args.listeners)
    trials = listening_plan(args.systems, sentences, listeners, args.seed)
    return {
        "systems": args.systems,
        "sentences": sentences,
        "listeners": listeners,
        "seed": args.seed,
        "trials": [t.to_dict() for t in trials],
    }


def _mt(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.cwmt_xml import load_mt_file, require_mirror
    from scoring.mt import score_mt_files

    _refuse_outputs_file(args.hyp, "mt")
    if args.src:
        source = load_mt_file(args.src, "source")
        target = load_mt_file(args.hyp, "target")
        require_mirror(source, target)
    # The table shows system and document figures: segments only go to --json.
    return score_mt_files(
        Path(args.hyp),
        [Path(r) for r in args.ref],
        lang=args.lang,
        metrics=args.metrics,
        with_segments=args.json,
    )


def _mt_check(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.mt_check import check_results

    return check_results(args.src, args.hyp).to_dict()


def _mt_human(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.mt_human import score_human

    return score_human(args.hyp).to_dict()


def _mt_align(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.word_alignment import score_alignment_files

    return score_alignment_files(args.hyp, args.ref)


def _cws(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.cws import score_cws_files

    return score_cws_files(
        args.gold,
        args.test,
        args.words,
        accepted=args.accepted,
        lcs=args.lcs,
        script_quirks=args.sighan_quirks,
    )


def _ner(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ner import score_ner_file

    return score_ner_file(args.conll)


def _pos(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.pos import score_pos_files

    return score_pos_files(args.gold, args.test, args.train)


def _textcat(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.textcat import score_textcat_files

    return score_textcat_files(args.gold, args.pred, seconds=args.seconds)


def _ir(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ir import score_ir_files

    return score_ir_files(args.qrels, args.run, complete=args.complete)


def _summarization(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.summarization import score_summarization_files

    return score_summarization_files(args.hyp)


def _score_text_proc(name: str) -> Callable[[argparse.Namespace], dict[str, Any]]:
    """A scorer of harness/score_text_procs.py, imported when it runs."""

    def run(args: argparse.Namespace) -> dict[str, Any]:
        from . import score_text_procs

        return getattr(score_text_procs, name)(args)

    return run


# `onsite score mt --metrics`: kept here so `--help` needs no scorer import
# (tests check it equals scoring.mt_batch.METRICS).
MT_METRICS = ("bleu", "nist", "gtm", "mwer", "mper", "bleu_shortest")


def _mt_metrics(text: str) -> tuple[str, ...]:
    """``--metrics``: comma-separated MT metric names, or ``all``."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return MT_METRICS
    unknown = [n for n in names if n not in MT_METRICS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {', '.join(unknown) or repr(text)}; give some of "
            f"{','.join(MT_METRICS)} separated by commas, or all"
        )
    return tuple(dict.fromkeys(names))


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


_Arg = tuple[tuple[str, ...], dict[str, Any]]


def _arg(*flags: str, **options: Any) -> _Arg:
    """One `add_argument` call, declared as data."""
    return flags, options


def _hyp(what: str) -> _Arg:
    return _arg("--hyp", required=True, help=f"{what} (JSON lines, docs/scoring-ocr-kws-tts.md)")


_REF_HYP = (
    _arg("--ref", required=True, help="the truth file (docs/scoring*.md)"),
    _arg("--hyp", required=True, help="the system's output file"),
    _arg("--details", action="store_true", help="per-item breakdown too"),
)
_CONFIDENCE = _arg(
    "--confidence", type=_fraction, default=0.95, help="interval confidence (default 0.95)"
)


@dataclass(frozen=True)
class _Family:
    """One `onsite score` family: its scorer, help and own arguments (besides --json)."""

    scorer: Callable[[argparse.Namespace], dict[str, Any]]
    help: str
    args: tuple[_Arg, ...] = _REF_HYP
    # List-valued result keys shown as tables without --json.
    tables: tuple[str, ...] = ()
    # Without --json, print this list as JSON lines instead of tables (plans, not scores).
    lines: str | None = None
    # Writes the family's figure (PNG and SVG) for --plot STEM.
    plot: Callable[[argparse.Namespace, Path], PlotFiles] | None = None


_FAMILIES: dict[str, _Family] = {
    "asr": _Family(
        _asr,
        "WER/CER with sclite's conventions; trn or Kaldi text files",
        (
            _arg("--ref", required=True, help="reference transcripts (trn, Kaldi text, or .stm)"),
            _arg("--hyp", required=True, help="hypotheses (trn, Kaldi text, or .ctm)"),
            _arg("--unit", choices=("word", "char"), default="word"),
            _arg("--case-sensitive", action="store_true"),
            _arg(
                "--unicode",
                action="store_true",
                help="Unicode-aware tokens instead of sclite's: any Unicode space splits, "
                "str.lower folds, char mode splits CJK only, `foo*` stays as written",
            ),
            _arg("--conditions", help="'<utt-id>\\t<label>' lines (e.g. SNR): WER per label"),
        ),
        plot=_plot_asr,
    ),
    "command": _Family(
        _command,
        "correct command rate; JSON lines {id, text}, trn or Kaldi text",
        (
            _arg("--ref", required=True, help="reference commands (JSON lines, trn or Kaldi text)"),
            _arg("--hyp", required=True, help="recognized commands (same formats)"),
            _arg(
                "--case-sensitive",
                action="store_true",
                help="keep case (default: fold it, as the live command task does)",
            ),
        ),
    ),
    "kws": _Family(_kws, "keyword spotting: correct slot and sentence rates; slot JSON lines"),
    "kws-det": _Family(
        _kws_det,
        "keyword spotting DET curve: P_miss and P_fa at every score threshold",
        (
            _hyp("scored detections {keyword, utterance, score, is_true}"),
            _arg("--n-true", type=_positive_int, required=True, help="true keyword occurrences"),
            _arg("--n-nontarget", type=_positive_int, required=True, help="non-target trials"),
        ),
        tables=("points",),
        plot=_plot_det,
    ),
    "ocr": _Family(
        _ocr,
        "character recognition: R, R^10 per subset, speed V",
        (*_REF_HYP, _arg("--seconds", type=float, help="total recognition seconds, for V")),
    ),
    "faces-detect": _Family(
        _face_detect, "face detection: correct detection rate, false detections"
    ),
    "faces-identify": _Family(
        _face_identify, "face identification: rank-1, rank-10, CMC", plot=_plot_cmc
    ),
    "faces-verify": _Family(
        _face_verify, "face verification: ROC, EER, VR at FAR 1%% and 0.1%%", plot=_plot_roc
    ),
    "mt": _Family(
        _mt,
        "translation: BLEU and NIST (mteval-v13a), BLEU shortest-ref, GTM, mWER, mPER",
        (
            _arg("--hyp", required=True, help="system output: CWMT XML or one segment per line"),
            _arg(
                "--ref",
                required=True,
                action="append",
                help="a reference file; repeat for more (any number, as mteval)",
            ),
            _arg("--lang", choices=("en", "zh", "ja"), default="en", help="target language"),
            _arg("--src", help="the source XML: the output must mirror its docs and segments"),
            _arg(
                "--metrics",
                type=_mt_metrics,
                default=MT_METRICS,
                help="comma-separated, from bleu,nist,gtm,mwer,mper,bleu_shortest; "
                "default all (the CWMT/HTRDP set); e.g. --metrics bleu computes BLEU alone",
            ),
        ),
        tables=("documents",),
    ),
    "mt-check": _Family(
        _mt_check,
        "CWMT submissions: mirror the source, system description, file naming rule",
        (
            _arg("--src", required=True, help="the source XML"),
            _arg("--hyp", required=True, nargs="+", help="one or more result files"),
        ),
        tables=("problems",),
    ),
    "mt-human": _Family(
        _mt_human,
        "adequacy and fluency (0-5) from several judges' sheets, averaged per system",
        (_arg("--hyp", required=True, nargs="+", help="judges' sheets (CSV or JSON lines)"),),
        tables=("systems",),
    ),
    "mt-align": _Family(
        _mt_align,
        "word alignment: precision, recall, F1, AER with sure and possible links",
        (
            _arg("--ref", required=True, help="gold links: i-j sure, i-j-p possible"),
            _arg("--hyp", required=True, help="system links: i-j"),
        ),
    ),
    "cws": _Family(
        _cws,
        "word segmentation, SIGHAN bakeoff `score` conventions",
        (
            _arg("--gold", required=True, help="reference segmentation, words split by spaces"),
            _arg("--test", required=True, help="system segmentation"),
            _arg("--words", help="the training word list, for OOV and IV figures"),
            _arg("--accepted", help="judged review file: pieces accepted as correct"),
            _arg(
                "--lcs",
                action="store_true",
                help="match a true longest common subsequence instead of GNU diff's choice "
                "(the script's numbers are the default)",
            ),
            _arg(
                "--sighan-quirks",
                action="store_true",
                help="also reproduce the script's slips: an empty word before a leading "
                "U+3000, `chop` of a word list's last byte when it lacks a final newline",
            ),
        ),
    ),
    "ner": _Family(
        _ner,
        "named entities, conlleval conventions",
        (_arg("--conll", required=True, help="token ... gold-tag predicted-tag per line"),),
    ),
    "pos": _Family(
        _pos,
        "POS tagging: HTRDP P/R/F and relative precision; SIGHAN accuracy, IV/OOV, baseline",
        (
            _arg("--gold", required=True, help="reference, word/TAG tokens"),
            _arg("--test", required=True, help="system output, word/TAG tokens"),
            _arg("--train", help="training data (word/TAG), for IV/OOV and the baseline"),
        ),
    ),
    "textcat": _Family(
        _textcat,
        "text categorization: per category P/R/F1, macro and micro, HTRDP general score",
        (
            _arg("--gold", required=True, help="doc_id<TAB>category[,category2]"),
            _arg("--pred", required=True, help="doc_id<TAB>category[,category2] (ranked)"),
            _arg("--seconds", type=float, help="classifying time, from the run"),
        ),
    ),
    "ir": _Family(
        _ir,
        "retrieval: MAP, R-precision, P@10 with trec_eval's conventions",
        (
            _arg("--qrels", required=True, help="TREC qrels: topic 0 docno relevance"),
            _arg(
                "--run",
                required=True,
                help="TREC run: topic Q0 docno rank score tag; or an onsite run directory "
                "(with --task, --system), read without --qrels",
            ),
            _arg("--complete", action="store_true", help="like trec_eval -c"),
        ),
    ),
    "summarization": _Family(
        _summarization,
        "summaries and keywords: expert scores summed per system",
        (_arg("--hyp", required=True, help="task<TAB>system<TAB>document<TAB>expert<TAB>score"),),
        tables=("summary", "keywords"),
    ),
    "rouge": _Family(
        _score_text_proc("score_rouge"),
        "summaries: ROUGE-1, ROUGE-2, ROUGE-L with ROUGE-1.5.5's conventions",
        (
            _arg("--hyp", required=True, help='summaries, JSON lines {"id", "text"}'),
            _arg("--ref", required=True, action="append", help="reference summaries; repeatable"),
            _arg("--lang", choices=("en", "zh"), default="en", help="zh: character level"),
            _arg("--formula", choices=("A", "B"), default="A", help="A pools references, B best"),
            _arg("--alpha", type=float, default=0.5, help="F weight of precision (default 0.5)"),
            _arg("--length-limit", type=int, help="cut each summary after this many units"),
            _arg("--length-unit", choices=("char", "word"), default="char", help="of the limit"),
            _arg("--details", action="store_true", help="per-document scores too"),
        ),
    ),
    "cesta": _Family(
        _score_text_proc("score_cesta"),
        "CESTA significant-word score: over-generation o, under-generation u, o&u",
        (
            _arg("--hyp", required=True, help='one system\'s texts, JSON lines {"id", "text"}'),
            _arg("--ref", required=True, help='reference texts, JSON lines {"id", "text"}'),
            _arg("--lang", choices=("en", "zh"), default="en", help="zh: character level"),
            _arg("--threshold", type=float, default=1.0, help="significant when S > this"),
            _arg("--details", action="store_true", help="per-text scores too"),
        ),
    ),
    "cesta-rank": _Family(
        _score_text_proc("score_cesta_rank"),
        "CESTA human rankings with ties ('4 [1 2] 6 [3 5]') correlated with a metric",
        (
            _arg("--rankings", required=True, help="name<TAB>ranking lines, best first"),
            _arg("--scores", required=True, help="item<TAB>score lines of the metric"),
            _arg("--lower-is-better", action="store_true", help="the metric is an error rate"),
        ),
    ),
    "tts-pair": _Family(
        _tts_pair,
        "speech synthesis pair comparison: preference means and t intervals",
        (
            _hyp("judgements {listener, sentence, first, second, score}"),
            _arg(
                "--unit",
                choices=("rating", "listener"),
                default="rating",
                help="one sample per rating, or per listener (their mean)",
            ),
            _CONFIDENCE,
        ),
        tables=("pairs",),
    ),
    "tts-sus": _Family(
        _tts_sus,
        "speech synthesis SUS intelligibility: correct blanks / blanks",
        (_hyp("responses {system, listener, sentence, expected, answer}"),),
        tables=("systems",),
    ),
    "tts-mos": _Family(
        _tts_mos,
        "speech synthesis MOS: mean opinion score and t interval per system",
        (_hyp("ratings {system, listener, sentence, score}"), _CONFIDENCE),
        tables=("systems",),
    ),
    "tts-plan": _Family(
        _tts_plan,
        "balanced, seeded pair-comparison listening plan (one trial per line)",
        (
            _arg("--systems", nargs="+", required=True, help="two or more system names"),
            _arg(
                "--sentences",
                required=True,
                help="N (ids s1..sN) or a file with one sentence id per line",
            ),
            _arg("--listeners", type=_positive_int, required=True, help="N (ids L1..LN)"),
            _arg("--seed", type=int, required=True, help="same seed, same plan"),
        ),
        lines="trials",
    ),
}


def _families(only: str | None) -> dict[str, _Family]:
    """The families above, and those the task kinds bring (harness/kinds/).

    The kinds are loaded only when the family asked for is not one of the above
    (or for the full listing), so `onsite score ir` stays as fast as before.
    """
    if only is not None and only in _FAMILIES:
        return _FAMILIES
    from .kinds.registry import score_families

    brought = score_families()
    clash = sorted(set(brought) & set(_FAMILIES))
    if clash:
        raise ValueError(f"`onsite score {clash[0]}` is defined twice: rename the kind's family")
    return {
        **_FAMILIES,
        **{n: _Family(f.scorer, f.help, f.args, tables=f.tables) for n, f in brought.items()},
    }


def add_score_parser(sub: Any, only: str | None = None, listed: bool = True) -> None:
    """Register `onsite score` and its families on the CLI's subparsers.

    With `only` naming a family, just that family is registered: enough to
    parse a command line that names it, at a fraction of the cost of all
    twenty-odd parsers (argparse formats help text as each option is added).
    With `listed` false, `score` is registered without its families (another
    command is being parsed), so the task kinds are not loaded.
    """
    score = sub.add_parser(
        "score", help="score saved outputs against references (files, or a run's job with --run)"
    )
    families = score.add_subparsers(dest="family", required=True)
    if not listed:
        return
    for name, family in _families(only).items():
        if only is not None and name != only and only in _FAMILIES:
            continue
        parser = families.add_parser(name, help=family.help)
        from_run = name in RUN_FAMILIES
        needs: list[tuple[str, str]] = []
        for flags, options in family.args:
            if from_run and options.get("required"):
                # With --run the files come from the run: required only without it.
                options = {**options, "required": False}
                needs.append((flags[0].lstrip("-").replace("-", "_"), flags[0]))
            parser.add_argument(*flags, **options)
        # ir's own --run is the TREC run file: there a directory means a run directory.
        shared = any("--run" in flags for flags, _ in family.args)
        if from_run and not shared:
            parser.add_argument(
                "--run",
                metavar="RUN_DIR",
                help="score a run's job instead of files: its outputs and the task's "
                "references, with the task's settings (the live leaderboard's number)",
            )
        if from_run:
            parser.add_argument("--task", help="with --run: the task (if the run has several)")
            parser.add_argument("--system", help="with --run: the system (if several)")
        parser.set_defaults(needs=needs)
        if family.plot is not None:
            parser.add_argument(
                "--plot", metavar="STEM", help="also write the figure to STEM.png and STEM.svg"
            )
        default = f" (default: {family.lines} as JSON lines)" if family.lines else ""
        parser.add_argument("--json", action="store_true", help="print one JSON object" + default)
        parser.set_defaults(handler=cmd_score, scorer=family.scorer)
        if name in STATION_FAMILIES:
            add_station_source(parser, name)


def scored_or_reported(compute: Callable[[], T]) -> T | None:
    """``compute()``, or None after writing the input error it raised to stderr.

    Shared by `onsite score` and `onsite meta`: the readers name the file and line, and
    an unreadable path gets its fix.
    """
    from scoring.errors import FormatError

    try:
        return compute()
    except (FormatError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
    except OSError as exc:
        sys.stderr.write(f"error: {_os_error(exc)}\n")
    return None


def _os_error(exc: OSError) -> str:
    """An unreadable path, with the fix: the bare errno text names no remedy."""
    where = exc.filename if exc.filename is not None else "?"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no such file; check the path (relative paths start at {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return f"{where}: is a directory; give the file inside it"
    if isinstance(exc, PermissionError):
        return f"{where}: permission denied; make the file readable (chmod a+r)"
    return f"{where}: {exc.strerror or exc}; check that the path is a readable file"


# The families `--run` reads a run for (harness/export/rescore.py says how; a test
# checks the two lists agree). Kept here so `--help` imports no exporter.
RUN_FAMILIES = frozenset(
    {
        "asr",
        "command",
        "kws",
        "ocr",
        "faces-detect",
        "faces-identify",
        "faces-verify",
        "mt",
        "mt-check",
        "cws",
        "ner",
        "pos",
        "textcat",
        "ir",
        "lid",
        "kws-det",
        "rouge",
        "cesta",
    }
)


def _reads_run(args: argparse.Namespace) -> bool:
    """--run names a run directory (for ir, whose --run is also the TREC run file)."""
    run = getattr(args, "run", None)
    if run is None or args.family not in RUN_FAMILIES:
        return False
    from .station_cmd import is_pg_run

    return args.family != "ir" or is_pg_run(run) or Path(run).is_dir()


def _files_or_run(args: argparse.Namespace) -> str | None:
    """The problem with the choice between the family's files and --run, if any."""
    needs: list[tuple[str, str]] = getattr(args, "needs", [])
    reads_run = _reads_run(args)
    if reads_run:
        needs = [(dest, flag) for dest, flag in needs if dest != "run"]
    given = [flag for dest, flag in needs if getattr(args, dest, None) is not None]
    files = " and ".join(flag for _, flag in needs)
    if reads_run:
        if given:
            return f"give {files}, or --run, not both ({', '.join(given)} given with --run)"
        return None
    # The judging station's families take --run and --task of their own (not these).
    shared_task = args.family in RUN_FAMILIES
    if shared_task and (
        getattr(args, "task", None) is not None or getattr(args, "system", None) is not None
    ):
        return "--task and --system go with --run RUN_DIR"
    missing = [flag for dest, flag in needs if getattr(args, dest, None) is None]
    if missing:
        return f"give {files} (missing {', '.join(missing)}), or --run RUN_DIR --task T --system S"
    return None


def cmd_score(args: argparse.Namespace, console: Console) -> int:
    """Run one family's scorer and print its figures."""
    family = _families(args.family)[args.family]
    problem = _files_or_run(args)
    if problem is not None:
        sys.stderr.write(f"error: onsite score {args.family}: {problem}\n")
        return 2
    if _reads_run(args):
        import tempfile

        with tempfile.TemporaryDirectory(prefix="onsite-score-") as tmp:
            return _score_run(args, family, console, Path(tmp))
    return _score(args, family, console)


def _score_run(args: argparse.Namespace, family: _Family, console: Console, tmp: Path) -> int:
    """`--run`: the job's files written to ``tmp``, then scored as files are."""
    from .export.rescore import run_arguments
    from .station_cmd import run_dir_of  # psycopg only for a run in PostgreSQL

    run_dir = run_dir_of(args.run, follow=False)
    job, values = run_arguments(args.family, run_dir, args.task, args.system, tmp)
    vars(args).update(values)
    if not job.complete:
        sys.stderr.write(
            f"note: {job.task}/{job.system} completed {len(job.testset.items)} of "
            f"{job.total} items; scored over those, as the leaderboard scores it\n"
        )
    return _score(args, family, console)


def _score(args: argparse.Namespace, family: _Family, console: Console) -> int:
    """Score with the family's scorer and print (shared by files and --run)."""

    def compute() -> dict[str, Any]:
        result: dict[str, Any] = args.scorer(args)
        if getattr(args, "plot", None):
            files = family.plot(args, Path(args.plot))  # type: ignore[misc]
            sys.stderr.write(f"wrote {files.png} and {files.svg}\n")
        return result

    result = scored_or_reported(compute)
    if result is None:
        return 2
    # A checker (mt-check) reports "ok": false when it found problems: exit 1, as lint tools do.
    status = 1 if result.get("ok") is False else 0
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return status
    if family.lines is not None:
        for item in result[family.lines]:
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
        return 0
    from .score_tables import print_result

    print_result(console, args.family, result, family.tables)
    return status
