"""The `tts` kind: speech synthesis under a budget, the audio kept for listening tests.

Test set (docs/task-kinds.md, docs/judging.md): a directory with

* ``text``: ``<id> <sentence or paragraph>`` per line;
* ``sus.jsonl`` (optional): per semantically unpredictable sentence
  ``{"id", "blanks": [token positions], "answers": [accepted answer(s) per blank]}``;
* ``categories.tsv`` (optional): ``<id><TAB><category>`` (numbers, polyphones, units...)
  for the linguistic test; the category becomes the item's condition.

Item input: ``{"text", "sample_rate", "audio_out": "<absolute path>"}``; the system writes
a mono WAV at ``audio_out`` and answers ``{"audio": "<that path>"}``. The controller
checks the file (`keep_audio`), moves it into the run directory under the item's
anonymous name (``media/<task>/<anon id>.wav``) and records
``{"audio": "media/<task>/<anon id>.wav", "audio_seconds", "sample_rate"}``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# soundfile (and numpy under it) is imported where audio is read: every kind module is
# imported by whatever reads a site file, which must stay cheap (docs/task-kinds.md).

if TYPE_CHECKING:
    # Only for annotations: runners (and paramiko) load only where systems run.
    from runners import OutputFile

from harness.errors import Problem, TestSetError
from harness.kinds._panel_files import hyp_encoding
from harness.kinds.base import (
    CHARS_PER_SECOND,
    ENCODING_ARG,
    RATE_ADDITIVE,
    ItemStatistics,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    audio_options,
    positive_int,
    rate,
    text_encoding,
    units_per_second,
)
from harness.testsets import TestItem, TestSet, _read_id_table, read_text_lines

AUDIO_KEY = "audio_out"
# The largest audio file a system may leave (16-bit mono 48 kHz: about six minutes).
MAX_AUDIO_BYTES = 32 << 20
# No speech is slower than this: longer audio for the text is a faulty system.
MAX_SECONDS_PER_CHAR = 1.0
MIN_MAX_SECONDS = 10.0


@dataclass(frozen=True)
class SusItem:
    """A semantically unpredictable sentence: its tokens, the blanked positions and answers."""

    tokens: tuple[str, ...]
    blanks: tuple[int, ...]
    answers: tuple[tuple[str, ...], ...]  # accepted answers per blank, first is canonical

    def parts(self) -> list[str | None]:
        """The sentence as a judge sees it: tokens, None where a blank is."""
        return [None if i in self.blanks else t for i, t in enumerate(self.tokens)]


def sentence_tokens(text: str) -> tuple[str, ...]:
    """Words split at spaces; a text without spaces (Chinese) is split into characters."""
    return tuple(text.split()) if " " in text.strip() else tuple(text.strip())


def read_sus_file(
    path: Path, texts: Mapping[str, str], encoding: str | None = None
) -> dict[str, SusItem]:
    """Read sus.jsonl against the test set's sentences; errors name the line and the fix.

    The file is in the task's ``encoding`` (None: UTF-8), as the text file is: its
    accepted answers are words of the corpus.
    """
    example = '{"id": "s01", "blanks": [1, 3], "answers": [["cat"], ["red", "read"]]}'
    out: dict[str, SusItem] = {}
    problems: list[Problem] = []
    for number, line in enumerate(read_text_lines(path, encoding), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            item_id = data["id"]
            if item_id not in texts:
                raise ValueError(f"id {item_id!r} is not in the text file")
            if item_id in out:
                raise ValueError(f"id {item_id!r} appears twice")
            tokens = sentence_tokens(texts[item_id])
            blanks = tuple(data["blanks"])
            answers = tuple(
                (a,) if isinstance(a, str) else tuple(a) for a in data.get("answers") or ()
            )
            if not blanks or not all(isinstance(b, int) and 0 <= b < len(tokens) for b in blanks):
                raise ValueError(f"blanks must be token positions 0..{len(tokens) - 1}")
            if len(set(blanks)) != len(blanks):
                raise ValueError("a position is blanked twice")
            if not answers:
                answers = tuple((tokens[b],) for b in blanks)
            if len(answers) != len(blanks) or not all(
                a and all(isinstance(x, str) and x for x in a) for a in answers
            ):
                raise ValueError("give one non-empty list of accepted answers per blank")
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(Problem(path, "", f"bad line ({exc})", f"write e.g. {example}", number))
            continue
        out[item_id] = SusItem(tokens, blanks, answers)
    if problems:
        raise TestSetError(problems)
    return out


def load_tts(root: Path, task: TaskConfig) -> TestSet:
    """The tts test set: sentences to synthesize; SUS blanks and categories checked here."""
    text_path = root / "text"
    if not text_path.is_file():
        raise TestSetError(
            [Problem(text_path, "", "the test set has no such file", "write '<id> <text>' lines")]
        )
    encoding = getattr(task, "encoding", None)
    texts = _read_id_table(text_path, None, "text", encoding)
    empty = [k for k, v in texts.items() if not v]
    if empty:
        raise TestSetError(
            [Problem(text_path, "", f"item {empty[0]!r} has no text", "write '<id> <text>'")]
        )
    sus_path = root / "sus.jsonl"
    sus = read_sus_file(sus_path, texts, encoding) if sus_path.is_file() else {}
    categories: dict[str, str] = {}
    if (root / "categories.tsv").is_file():
        categories = _read_id_table(root / "categories.tsv", "\t", "category", encoding)
        unknown = sorted(set(categories) - set(texts))
        if unknown:
            raise TestSetError(
                [
                    Problem(
                        root / "categories.tsv",
                        "",
                        f"id {unknown[0]!r} is not in the text file",
                        "categorize the ids of the text file only",
                    )
                ]
            )
    rate = task.sample_rates[0]
    items = tuple(
        TestItem(
            id=item_id,
            files={},
            fields={"text": text, "sample_rate": rate},
            reference=sus.get(item_id),
            condition=categories.get(item_id),
            units=float(len(text)),
        )
        for item_id, text in texts.items()
    )
    return TestSet(root, items)


def check_audio_answer(output: Mapping[str, Any]) -> str | None:
    """The answer's shape: {"audio": "<the audio_out path>"}."""
    if not isinstance(output.get("audio"), str) or not output["audio"]:
        return 'output needs "audio": the path given as audio_out, e.g. {"audio": "/…/x.wav"}'
    return None


def audio_limit(text: str) -> float:
    """The longest audio accepted for a text, in seconds."""
    return max(MIN_MAX_SECONDS, MAX_SECONDS_PER_CHAR * len(text))


def keep_audio(
    item: TestItem, output: Mapping[str, Any], file: OutputFile, media_dir: Path, anon_id: str
) -> tuple[dict[str, Any], str | None]:
    """Check the audio a system wrote at ``file`` and keep it as media_dir/<anon_id>.wav.

    Returns the output to record and a problem (the item is then invalid_output).
    The answered path must be the one given: a system may not point the controller
    at any other file. The file is read once, safely (runners/system_files.py), and
    checked and kept from those bytes: the name is never opened again.
    """
    from runners.system_files import FileRefused, read_system_file

    answered = str(output.get("audio"))
    given = file.host
    try:
        if answered != file.seen:
            return dict(output), f"answered audio {answered!r} but audio_out was {file.seen!r}"
        data = read_system_file(given, MAX_AUDIO_BYTES)
    except FileRefused as exc:
        return dict(output), f"the audio at audio_out {exc}"
    finally:
        # The stage keeps nothing of an item: what is worth keeping was read into data.
        with contextlib.suppress(OSError):
            given.unlink()
    if data is None:
        return dict(output), "no audio file at audio_out"
    problem, info = _check_wav(data, item)
    if problem or info is None:
        return dict(output), problem or "audio_out is not a readable audio file"
    media_dir.mkdir(parents=True, exist_ok=True)
    target = media_dir / f"{anon_id}.wav"
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    kept = {
        "audio": f"media/{media_dir.name}/{target.name}",
        "audio_seconds": info.frames / info.samplerate,
        "sample_rate": info.samplerate,
    }
    return kept, None


def _check_wav(data: bytes, item: TestItem) -> tuple[str | None, Any]:
    """A problem with the audio (None if it is fine) and what libsndfile says of it."""
    import soundfile

    try:
        info = soundfile.info(io.BytesIO(data))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        return f"audio_out is not a readable audio file ({_why(exc)})", None
    if info.format != "WAV":
        return f"audio_out must be a WAV file, got {info.format}", info
    if info.channels != 1:
        return f"audio must be mono, got {info.channels} channels", info
    rate = int(item.fields.get("sample_rate", 0))
    if info.samplerate != rate:
        return f"audio is at {info.samplerate} Hz, the item asked for {rate} Hz", info
    if info.frames <= 0:
        return "audio is empty (no samples)", info
    seconds = info.frames / info.samplerate
    limit = audio_limit(str(item.fields.get("text", "")))
    if seconds > limit:
        return f"audio lasts {seconds:.1f} s, more than {limit:.0f} s for this text", info
    try:
        soundfile.read(io.BytesIO(data), frames=min(info.frames, 1 << 20), dtype="int16")
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        return f"audio cannot be decoded ({_why(exc)})", info
    return None, info


def _why(exc: Exception) -> str:
    # libsndfile's own words, without the repr of the in-memory file it was given.
    return str(getattr(exc, "error_string", None) or exc)


def _kept(testset: TestSet, outputs: Mapping[str, Any]) -> dict[str, Any]:
    ids = {item.id for item in testset.items}
    return {k: v for k, v in outputs.items() if k in ids and v is not None}


def score_tts(
    testset: TestSet, task: TaskConfig, outputs: Mapping[str, Any], _: Any
) -> dict[str, Any]:
    """What a run can say without listeners: how many items got valid audio, and how long.

    Quality comes from the judging panel (`onsite judge`, docs/judging.md).
    """
    kept = _kept(testset, outputs)
    seconds = sum(float(v.get("audio_seconds") or 0.0) for v in kept.values())
    return {
        "items": len(testset.items),
        "audio_items": len(kept),
        "audio_rate": rate([item.id in kept for item in testset.items]),
        "audio_seconds": seconds,
        "sus_items": sum(1 for item in testset.items if item.reference is not None),
    }


def _items(testset: TestSet, task: TaskConfig, outputs: Mapping[str, Any], _: Any) -> dict:
    """Each item: valid audio kept or not."""
    kept = _kept(testset, outputs)
    return {item.id: item.id in kept for item in testset.items}


# --------------------------------------------------------------------------- onsite score
# The listening tests' files, from the judging panel (`--run RUN --task T`) or saved.


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _hyp(what: str) -> Any:
    return arg("--hyp", required=True, help=f"{what} (JSON lines, docs/scoring-ocr-kws-tts.md)")


_CONFIDENCE = arg(
    "--confidence", type=_fraction, default=0.95, help="interval confidence (default 0.95)"
)


def _pair(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import pair_comparison, read_pair_judgements

    judgements = read_pair_judgements(args.hyp, hyp_encoding(args))
    stats = pair_comparison(judgements, confidence=args.confidence, unit=args.unit)
    return {
        "unit": args.unit,
        "confidence": args.confidence,
        "judgements": len(judgements),
        "listeners": len({j.listener for j in judgements}),
        "pairs": [s.to_dict() for s in stats],
    }


def _sus(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import read_sus_responses, score_sus

    responses = read_sus_responses(args.hyp, hyp_encoding(args))
    scores = score_sus(responses)
    return {"blanks": len(responses), "systems": [s.to_dict() for s in scores.values()]}


def _mos(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import read_mos_ratings, score_mos

    ratings = read_mos_ratings(args.hyp, hyp_encoding(args))
    scores = score_mos(ratings, confidence=args.confidence, clip=args.clip)
    warnings = [
        f"system {s.system!r}: the interval [{s.ci_low:.3f}, {s.ci_high:.3f}] reaches outside "
        f"the 1..5 scale (few ratings near an end of it); printed as computed, as the survey "
        "prints intervals (--clip clips it to 1..5)"
        for s in scores.values()
        if s.ci_low is not None and s.ci_high is not None and (s.ci_low < 1 or s.ci_high > 5)
    ]
    return {
        "confidence": args.confidence,
        "clipped": args.clip,
        "ratings": len(ratings),
        "systems": [s.to_dict() for s in scores.values()],
        "warnings": warnings,
    }


def _numbered(prefix: str, n: int) -> list[str]:
    # Zero-padded so the ids sort in numeric order.
    return [f"{prefix}{i:0{len(str(n))}d}" for i in range(1, n + 1)]


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.tts import listening_plan, read_sentence_ids

    # A plain number is a count; anything else names a file (write ./12 for a file "12").
    count = args.sentences.isascii() and args.sentences.isdigit()
    sentences = (
        _numbered("s", int(args.sentences))
        if count
        else read_sentence_ids(args.sentences, args.encoding)
    )
    listeners = _numbered("L", args.listeners)
    trials = listening_plan(args.systems, sentences, listeners, args.seed)
    return {
        "systems": args.systems,
        "sentences": sentences,
        "listeners": listeners,
        "seed": args.seed,
        "trials": [t.to_dict() for t in trials],
    }


_FAMILIES = {
    "tts-pair": ScoreFamily(
        _pair,
        "speech synthesis pair comparison: preference means and t intervals",
        (
            _hyp("judgements {listener, sentence, first, second, score}"),
            arg(
                "--unit",
                choices=("listener", "rating"),
                default="listener",
                help="one sample per listener (their mean; the survey's Table 56, default) "
                "or per rating",
            ),
            _CONFIDENCE,
            ENCODING_ARG,
        ),
        tables=("pairs",),
        panel="pair",
    ),
    "tts-sus": ScoreFamily(
        _sus,
        "speech synthesis SUS intelligibility: correct blanks / blanks",
        (_hyp("responses {system, listener, sentence, expected, answer}"), ENCODING_ARG),
        tables=("systems",),
        panel="sus",
    ),
    "tts-mos": ScoreFamily(
        _mos,
        "speech synthesis MOS: mean opinion score and t interval per system",
        (
            _hyp("ratings {system, listener, sentence, score}"),
            _CONFIDENCE,
            arg(
                "--clip",
                action="store_true",
                help="clip intervals to 1..5 (default: as computed, as the survey prints them)",
            ),
            ENCODING_ARG,
        ),
        tables=("systems",),
        panel="mos",
    ),
    "tts-plan": ScoreFamily(
        _plan,
        "balanced, seeded pair-comparison listening plan (one trial per line)",
        (
            arg("--systems", nargs="+", required=True, help="two or more system names"),
            arg(
                "--sentences",
                required=True,
                help="N (ids s1..sN) or a file with one sentence id per line",
            ),
            arg("--listeners", type=positive_int, required=True, help="N (ids L1..LN)"),
            arg("--seed", type=int, required=True, help="same seed, same plan"),
            arg(
                "--encoding",
                type=text_encoding,
                help="the --sentences file's encoding: utf-8 (the default; a BOM is allowed), "
                "gb2312, gbk, gb18030, big5, utf-16 (with a BOM), utf-16le; the plan is "
                "written back in it",
            ),
        ),
        lines="trials",
    ),
}


TTS = TaskKind(
    name="tts",
    summary="speech synthesis: text in, a WAV file out, kept for listening tests",
    options_model=audio_options,
    max_output_bytes=64 << 10,
    load=load_tts,
    check_output=check_audio_answer,
    score=score_tts,
    metric=lambda task: "audio_rate",
    metric_labels={"audio_rate": "audio"},
    statistics=ItemStatistics(_items, lambda task, kept: rate(kept), RATE_ADDITIVE),
    # Pooled like OCR's V: items answered per second of processing (kept as it was).
    unit=CHARS_PER_SECOND,
    speed=units_per_second,
    detail=lambda s: f"{s.get('audio_seconds', 0.0):.1f} s of audio",
    output_files={AUDIO_KEY: ".wav"},
    keep_output=keep_audio,
    # Its outputs are audio kept for listening tests: `jsonl` only; the listening
    # tests' families read the judging panel.
    score_families=_FAMILIES,
    text_encodings=True,
)

KINDS = (TTS,)
