"""Readers for ASR transcript files: sclite ``trn`` and Kaldi ``text``.

* trn (sclite): ``words words (utt_id)``; the id is what lies between the
  last ``(`` and the last ``)`` of the line, as sclite's ``remove_id`` takes
  it, and the words are everything before that ``(``.
* Kaldi text: ``utt_id words...``; the id is the first whitespace-separated
  field. A line holding only an id is an empty transcript.

The format is detected per file: trn if at least half of its transcript
lines end with ``)`` after a ``(``, Kaldi otherwise. Deciding per file rather
than per line keeps a Kaldi transcript that happens to end in ``(laughter)``
from being read as trn, while a trn file with one forgotten id is reported as
such instead of silently turning into nonsense Kaldi ids.

sclite's CTM (hypothesis words with times) and STM (reference segments) are
read by `read_ctm` and `read_stm`, chosen by the file's suffix in
`read_any_transcripts`.

Blank lines and sclite comment lines (starting with ``;;``) are skipped.
Files are UTF-8 (a leading byte-order mark is allowed) unless an ``encoding`` is
given (GBK, Big5, UTF-16 ...: scoring.charsets); ``\\r\\n`` line ends are
accepted. Texts are returned as written: case folding and tokenisation are the
scorer's job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Literal

from .charsets import codec_of, decode_text, iter_lines
from .errors import FormatError

__all__ = [
    "CtmWord",
    "StmSegment",
    "TranscriptFormat",
    "check_ids",
    "detect_format",
    "read_any_transcripts",
    "read_ctm",
    "read_ctm_words",
    "read_stm",
    "read_stm_segments",
    "read_transcripts",
    "sclite_byte_warnings",
    "transcript_lines",
]

TranscriptFormat = Literal["trn", "kaldi"]

_BOM = "\ufeff"
_SHOWN_IDS = 10


def _decoded_lines(
    path: str | os.PathLike[str], encoding: str | None = None, empty_ok: bool = False
) -> list[tuple[int, str]]:
    """(line number, text) for every transcript line, skipping blanks and comments;
    FormatError for a file without any unless `empty_ok`."""
    try:
        lines = _streamed_lines(path, encoding)
    except UnicodeDecodeError:
        # Read again as bytes to name the line and byte.
        lines = _bytewise_lines(path, encoding)
    if not lines and not empty_ok:
        raise FormatError(
            path,
            None,
            "the file holds no transcripts",
            "write one utterance per line, as `words (utt_id)` (trn) or `utt_id words` (Kaldi)",
        )
    return lines


def _kept(lineno: int, text: str) -> str | None:
    """A line's transcript text, or None for a blank or comment line (one rule for both readers)."""
    if lineno == 1 and text.startswith(_BOM):
        text = text[len(_BOM) :]
    text = text.rstrip("\r")
    if not text.strip() or text.lstrip().startswith(";;"):
        return None
    return text


def _streamed_lines(
    path: str | os.PathLike[str], encoding: str | None = None
) -> list[tuple[int, str]]:
    """`_decoded_lines` read as a text stream: no copy of the whole file is held.

    Lines end at "\n" alone, as in `_bytewise_lines`; a FormatError naming the
    line and the file's likely encoding when it does not decode (scoring.charsets).
    """
    lines: list[tuple[int, str]] = []
    for lineno, text in enumerate(iter_lines(path, encoding), start=1):
        kept = _kept(lineno, text)
        if kept is not None:
            lines.append((lineno, kept))
    return lines


def _bytewise_lines(
    path: str | os.PathLike[str], encoding: str | None = None
) -> list[tuple[int, str]]:
    """`_decoded_lines` from the file's bytes: FormatError naming the first line that
    does not decode and the encoding the file reads as (scoring.charsets)."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines: list[tuple[int, str]] = []
    # Split on "\n" only: str.splitlines would also break on \x0b, \x1c,
    # U+2028 and others, shifting line numbers and splitting transcripts.
    for lineno, text in enumerate(decode_text(path, data, encoding).split("\n"), start=1):
        kept = _kept(lineno, text)
        if kept is not None:
            lines.append((lineno, kept))
    return lines


def _looks_trn(text: str) -> bool:
    stripped = text.rstrip()
    return stripped.endswith(")") and "(" in stripped


def detect_format(lines: Iterable[str]) -> TranscriptFormat:
    """``trn`` if at least half of `lines` end with ``(...)``, else ``kaldi``."""
    looks = list(map(_looks_trn, lines))
    total, trn = len(looks), sum(looks)
    return "trn" if total and 2 * trn >= total else "kaldi"


def _parse_trn(path: str | os.PathLike[str], lineno: int, text: str) -> tuple[str, str]:
    stripped = text.rstrip()
    open_at = stripped.rfind("(")
    if not stripped.endswith(")") or open_at < 0:
        raise FormatError(
            path,
            lineno,
            "trn line without an utterance id",
            "end the line with the id in parentheses, e.g. `hello world (spk1-utt1)`",
        )
    utt_id = stripped[open_at + 1 : -1].strip()
    if not utt_id:
        raise FormatError(
            path,
            lineno,
            "trn line with an empty id `()`",
            "put the utterance id inside the final parentheses",
        )
    # Only space and tab separate sclite's words, so other blanks (NBSP,
    # U+3000) at either end are left for the tokeniser to keep as text.
    return utt_id, stripped[:open_at].strip(" \t")


def _parse_kaldi(text: str) -> tuple[str, str]:
    fields = text.strip().split(maxsplit=1)
    return fields[0], fields[1] if len(fields) > 1 else ""


def _quick_kaldi(
    path: str | os.PathLike[str], encoding: str | None = None
) -> dict[str, str] | None:
    """`read_transcripts` of a well-formed Kaldi file, or None for anything else.

    The usual case with every per-line step a C-level call over the whole
    file: no Python function runs per line. None (the caller then reads the
    file line by line, and names the line of any problem) when the file is
    not UTF-8, holds no transcripts, looks like trn or repeats an id.
    Results equal the line-by-line reader's: a line's text is only ever
    used stripped, and `_parse_kaldi` is ``strip().split(maxsplit=1)``.
    """
    try:
        with open(path, encoding=codec_of(encoding), newline="\n") as fh:
            data = fh.read()
    except UnicodeDecodeError:
        return None
    if "\x00" in data:
        return None  # UTF-16 read as UTF-8, maybe: the line-by-line reader says
    lines = data.removeprefix(_BOM).split("\n")
    if lines[-1] == "":
        lines.pop()  # after the final line end
    stripped = list(map(str.strip, lines))
    if ";;" in data or not all(stripped):
        # Blank or comment lines: keep the others, by the rule of `_kept`.
        stripped = [t for t in stripped if t and not t.startswith(";;")]
    if not stripped:
        return None
    # A trn line ends with ")": with fewer than half the lines ending so, the
    # file is Kaldi without asking `detect_format` line by line.
    ends = sum(map(str.endswith, stripped, repeat(")")))
    if 2 * ends >= len(stripped) and detect_format(stripped) != "kaldi":
        return None
    fields = list(map(str.split, stripped, repeat(None), repeat(1)))
    if min(map(len, fields)) < 2:
        # Some line holds an id alone (an empty transcript).
        fields = [f if len(f) == 2 else [f[0], ""] for f in fields]
    out = dict(fields)
    return out if len(out) == len(fields) else None


def read_transcripts(path: str | os.PathLike[str], encoding: str | None = None) -> dict[str, str]:
    """Read a trn or Kaldi text file into ``{utt_id: text}`` in file order.

    ``encoding`` is the file's (scoring.charsets; None: UTF-8). Raises FormatError
    (naming file and line) for undecodable text, a trn line without an id, a
    duplicate id, or a file with no transcripts.
    """
    quick = _quick_kaldi(path, encoding)
    if quick is not None:
        return quick
    lines = _decoded_lines(path, encoding)
    texts = [text for _, text in lines]
    fmt = detect_format(texts)
    if fmt == "kaldi":
        # The usual case in one pass of C-level calls; a repeated id makes the
        # dict shorter than the list, and the loop below names its line.
        parsed = list(map(_parse_kaldi, texts))
        out = dict(parsed)
        if len(out) == len(parsed):
            return out
    out = {}
    first_line: dict[str, int] = {}
    for lineno, text in lines:
        utt_id, words = _parse_trn(path, lineno, text) if fmt == "trn" else _parse_kaldi(text)
        if utt_id in out:
            # Even an identical repeat is refused: sclite itself only rejects
            # repeats whose text differs, but a repeat usually means two
            # files were concatenated and the scores would be wrong anyway.
            raise FormatError(
                path,
                lineno,
                f"duplicate utterance id {utt_id!r} (first on line {first_line[utt_id]})",
                "keep one transcript per id",
            )
        out[utt_id] = words
        first_line[utt_id] = lineno
    return out


def _show(ids: list[str]) -> str:
    shown = ", ".join(repr(k) for k in ids[:_SHOWN_IDS])
    more = f" (+{len(ids) - _SHOWN_IDS} more)" if len(ids) > _SHOWN_IDS else ""
    return f"{shown}{more}"


def check_ids(
    refs: Mapping[str, object],
    hyps: Mapping[str, object],
    ref_path: str | os.PathLike[str],
    hyp_path: str | os.PathLike[str],
) -> None:
    """Raise FormatError unless `refs` and `hyps` hold exactly the same ids.

    The error (with ``path`` = `hyp_path`, ``line`` = None) lists the ids
    missing from each side, at most ten per side.
    """
    missing = sorted(k for k in refs if k not in hyps)
    extra = sorted(k for k in hyps if k not in refs)
    if not missing and not extra:
        return
    problems: list[str] = []
    if missing:
        problems.append(
            f"{len(missing)} reference id(s) from {os.fspath(ref_path)} have no hypothesis: "
            f"{_show(missing)}"
        )
    if extra:
        problems.append(
            f"{len(extra)} hypothesis id(s) are not in {os.fspath(ref_path)}: {_show(extra)}"
        )
    raise FormatError(
        hyp_path,
        None,
        "; ".join(problems),
        "give one hypothesis per reference id (an empty transcript if the system output "
        "nothing), spelled exactly as in the reference file",
    )


def read_conditions(
    path: str | os.PathLike[str], refs: Mapping[str, str], encoding: str | None = None
) -> dict[str, str]:
    """Read `<utt_id>\\t<label>` lines (an SNR bucket, a speaker group) for every reference id.

    References the file does not label get "unlabelled", so none drops out of
    the per-condition breakdown; an id that is not a reference is an error.
    """
    labels: dict[str, str] = {}
    for lineno, text in _decoded_lines(path, encoding):
        fields = text.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise FormatError(
                path, lineno, "expected `<utt_id>\\t<label>`", "separate id and label with a tab"
            )
        utt_id, label = fields[0].strip(), fields[1].strip()
        if utt_id in labels:
            raise FormatError(path, lineno, f"id {utt_id!r} appears twice", "keep one line per id")
        if utt_id not in refs:
            raise FormatError(
                path, lineno, f"id {utt_id!r} is not in the references", "remove the line"
            )
        labels[utt_id] = label
    return {utt_id: labels.get(utt_id, "unlabelled") for utt_id in refs}


# --------------------------------------------------------------------------- CTM and STM

_CTM_EXAMPLE = "`utt1 A 0.000 0.500 hello` (file channel begin duration word [confidence])"
_STM_EXAMPLE = "`utt1 A spk1 0.000 2.000 hello world` (file channel speaker begin end words)"


def _number(path: str | os.PathLike[str], lineno: int, text: str, what: str, example: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FormatError(path, lineno, f"{what} {text!r} is not a number", example) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise FormatError(path, lineno, f"{what} {text!r} is not a finite number", example)
    return value


# sclite splits a CTM line into fields at spaces and tabs only: a word keeps an NBSP,
# \x1c or a vertical tab, where str.split would cut it.
_CTM_FIELD = re.compile("[ \t]+")


@dataclass(frozen=True)
class CtmWord:
    """One CTM line: a hypothesis word of a waveform's channel, with its time."""

    file: str
    channel: str
    begin: float
    duration: float
    word: str
    line: int

    @property
    def middle(self) -> float:
        """The word's mid time, which sclite compares with segment ends."""
        return self.begin + self.duration / 2.0


@dataclass(frozen=True)
class StmSegment:
    """One STM line: a reference segment of a waveform's channel, spoken by `speaker`."""

    file: str
    channel: str
    speaker: str
    begin: float
    end: float
    text: str
    line: int

    @property
    def ignored(self) -> bool:
        """True for an ``IGNORE_TIME_SEGMENT_IN_SCORING`` segment: sclite's test, a
        substring in any case (``IGNORETIMESEGMENTINSCORING`` too)."""
        folded = self.text.lower()
        return any(tag in folded for tag in _IGNORE_TAGS)


_IGNORE_TAGS = ("ignore_time_segment_in_scoring", "ignoretimesegmentinscoring")


def read_ctm_words(path: str | os.PathLike[str], encoding: str | None = None) -> list[CtmWord]:
    """Every word of a sclite CTM file in file order.

    A line is ``<F> <C> <BT> <DUR> word [<CONF>]``, fields separated by spaces and
    tabs as sclite separates them. Raises FormatError naming the line for a wrong
    number of fields or a time that is not a finite number. A file without words
    is no error: every segment against it is all deletions, as in sclite.
    """
    out: list[CtmWord] = []
    # A recognizer that heard nothing writes an empty CTM: sclite scores it as such.
    for lineno, text in _decoded_lines(path, encoding, empty_ok=True):
        fields = _CTM_FIELD.split(text.strip(" \t"))
        if len(fields) not in (5, 6):
            raise FormatError(
                path, lineno, f"{len(fields)} fields, expected 5 or 6", f"write {_CTM_EXAMPLE}"
            )
        begin = _number(path, lineno, fields[2], "begin time", f"write {_CTM_EXAMPLE}")
        duration = _number(path, lineno, fields[3], "duration", f"write {_CTM_EXAMPLE}")
        out.append(CtmWord(fields[0], fields[1], begin, duration, fields[4], lineno))
    return out


def read_stm_segments(
    path: str | os.PathLike[str], encoding: str | None = None
) -> list[StmSegment]:
    """Every segment of a sclite STM file in file order, ignored ones included.

    A line is ``<F> <C> <S> <BT> <ET> [<LABEL>] transcript``; as in sclite, the
    token after the end time is a label when it starts with ``<`` and is dropped.
    Raises FormatError naming the line for fewer than 5 fields or a bad time.
    """
    out: list[StmSegment] = []
    for lineno, text in _decoded_lines(path, encoding):
        fields = _CTM_FIELD.split(text.strip(" \t"), maxsplit=5)
        if len(fields) < 5:
            raise FormatError(
                path, lineno, f"{len(fields)} fields, expected at least 5", f"write {_STM_EXAMPLE}"
            )
        begin = _number(path, lineno, fields[3], "begin time", f"write {_STM_EXAMPLE}")
        end = _number(path, lineno, fields[4], "end time", f"write {_STM_EXAMPLE}")
        words = fields[5] if len(fields) > 5 else ""
        if words.startswith("<"):
            # sclite's label is the one token starting with "<".
            parts = _CTM_FIELD.split(words, maxsplit=1)
            words = parts[1] if len(parts) > 1 else ""
        # Only sclite's blanks are stripped: an NBSP is part of a word to it.
        said = words.strip(" \t\v\f\r")
        out.append(StmSegment(fields[0], fields[1], fields[2], begin, end, said, lineno))
    return out


def read_ctm(path: str | os.PathLike[str], encoding: str | None = None) -> dict[str, str]:
    """Read a sclite CTM file into ``{file: words}``, each file's words in time order.

    A line is ``<F> <C> <BT> <DUR> word [<CONF>]``; the words of one waveform
    (all its channels) are joined by spaces in begin-time order (file order
    breaks ties). A waveform with no word has no line, so it is not in the result:
    the caller counts it as an empty hypothesis. This is the reader for a CTM
    with one waveform per utterance (a run's submission, `onsite export --format
    ctm`); against an STM, `scoring.asr_stm.pair_ctm_stm` pairs words with
    segments by time, as sclite does.
    """
    words: dict[str, list[tuple[float, int, str]]] = {}
    for w in read_ctm_words(path, encoding):
        words.setdefault(w.file, []).append((w.begin, w.line, w.word))
    return {f: " ".join(w for _, _, w in sorted(ws)) for f, ws in words.items()}


def read_stm(path: str | os.PathLike[str], encoding: str | None = None) -> dict[str, str]:
    """Read a sclite STM reference into ``{file: words}``.

    Segments are read by `read_stm_segments`; those marked
    ``IGNORE_TIME_SEGMENT_IN_SCORING`` are dropped and the others of one file are
    joined in begin-time order. This per-file view suits a reference with one
    segment per waveform (as `onsite export --format stm` writes it); `onsite
    score asr` scores an STM against a CTM segment by segment
    (`scoring.asr_stm.pair_ctm_stm`), as sclite does.
    """
    segments: dict[str, list[tuple[float, int, str]]] = {}
    for s in read_stm_segments(path, encoding):
        segment = segments.setdefault(s.file, [])
        if not s.ignored:
            segment.append((s.begin, s.line, s.text))
    return {f: " ".join(w for _, _, w in sorted(s) if w) for f, s in segments.items()}


def read_any_transcripts(
    path: str | os.PathLike[str], encoding: str | None = None
) -> dict[str, str]:
    """`read_ctm` for a ``.ctm`` file, `read_stm` for ``.stm``, else `read_transcripts`
    (in ``encoding``, scoring.charsets; None: UTF-8)."""
    suffix = os.fspath(path).lower().rsplit(".", 1)[-1]
    if suffix == "ctm":
        return read_ctm(path, encoding)
    if suffix == "stm":
        return read_stm(path, encoding)
    return read_transcripts(path, encoding)


def transcript_lines(
    path: str | os.PathLike[str], encoding: str | None = None
) -> tuple[TranscriptFormat, list[tuple[int, str, str]]]:
    """The file's format (detected as `read_transcripts` detects it) and every transcript
    line as (line number, utt_id, words), repeats kept: for a caller that lists every
    repeated id with its lines instead of stopping at the first."""
    lines = _decoded_lines(path, encoding)
    fmt = detect_format(text for _, text in lines)
    out = []
    for lineno, text in lines:
        utt_id, words = _parse_trn(path, lineno, text) if fmt == "trn" else _parse_kaldi(text)
        out.append((lineno, utt_id, words))
    return fmt, out


_UTF8_BOM = b"\xef\xbb\xbf"
_BYTE_FIELD = re.compile(rb"[ \t]+")


def sclite_byte_warnings(
    path: str | os.PathLike[str], fmt: str, encoding: str | None = None
) -> list[str]:
    """Lines saying where sclite would read a byte-order mark or a CR of `path` as text.

    onsite drops a leading BOM and the CR of CR LF line ends; sclite reads bytes
    and keeps them. `fmt` is the file's format (``trn``, ``stm``, ``ctm``; any other
    is not sclite's and gets no warning). A CR matters to sclite only where it ends
    a CTM word (a five-field line: ``a\\r`` is not ``a``); in trn and STM text
    sclite splits words at a CR as at a space. A BOM becomes part of line 1's first
    field: a trn file's first word, an STM's or CTM's file name. Files in UTF-16
    get none: sclite cannot read them at all. For ``trn`` the file may be Kaldi text
    too (not read by sclite: no warning); it is told apart only when it has a BOM.
    """
    codec = codec_of(encoding)
    if fmt not in ("trn", "stm", "ctm") or codec.startswith("utf-16"):
        return []
    with open(path, "rb") as fh:
        data = fh.read()
    shown = os.fspath(path)
    out: list[str] = []
    if (
        data.startswith(_UTF8_BOM)
        and codec == "utf-8"
        and (fmt != "trn" or detect_format(t for _, t in _decoded_lines(path, encoding)) == "trn")
    ):
        where = {
            "trn": "part of the first word of line 1, which it would count as a different "
            "word from the other file's",
            "stm": "part of the file name on line 1, so it would not pair that segment's "
            "channel with the CTM's (it scores the channel as deleted, or stops with "
            "'Alignment failed')",
            "ctm": "part of the file name on line 1, so it would not pair that word's "
            "channel with the STM's (it stops with 'Alignment failed')",
        }[fmt]
        out.append(
            f"{shown}: starts with a byte-order mark, which onsite drops and sclite reads as "
            f"{where}. Save the file without the BOM to get the same figures from both "
            "(no flag reproduces sclite here: nobody wants the bytes scored)."
        )
    if fmt == "ctm" and b"\r" in data:
        lines = [
            k
            for k, line in enumerate(data.split(b"\n"), start=1)
            if line.endswith(b"\r")
            and len(_BYTE_FIELD.split(line[:-1].strip(b" \t"))) == 5
            and not line.startswith(b";;")
        ]
        if lines:
            out.append(
                f"{shown}: {len(lines)} line(s) end in CR LF after the word (first: line "
                f"{lines[0]}); onsite drops the CR, sclite keeps it as part of the word, so it "
                "would count the last word of each such line as a different word (`a\\r` is "
                "not `a`). Save the file with LF line ends to get the same figures from both "
                "(no flag reproduces sclite here: nobody wants the bytes scored)."
            )
    return out
