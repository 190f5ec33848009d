"""Text files in the encodings evaluation corpora use: decoding, detection, writing.

The HTRDP and CWMT test sets were GB2312/GBK (simplified Chinese), Big5 (traditional
Chinese) and UTF-16LE (some MT sets), besides UTF-8. Every reader of scoring input and
of test sets decodes through `read_text`/`read_lines`/`iter_lines` here, with the
encoding the user named (`--encoding`, a task's ``encoding`` key) or UTF-8 (a leading
byte-order mark allowed) when none was named; the writers encode through `encode_text`.

Nothing is guessed silently: a file that is not in the encoding asked for is an error
naming the file, its first bad line and, found by `guess_encoding` (UTF-16 by its BOM or
its NUL bytes, then GB18030 against Big5 by which decodes cleanly into the more
plausible Chinese text), the encoding to name instead.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import FormatError

__all__ = [
    "ENCODINGS",
    "codec_of",
    "decode_text",
    "encode_text",
    "guess_encoding",
    "iter_lines",
    "plausibility",
    "read_lines",
    "read_text",
    "xml_name",
]

# The names accepted (lower case, as typed) and the Python codec each reads with.
# GB2312 is read as GBK, its superset at the same byte values: files labelled GB2312
# routinely hold GBK characters, which a strict GB2312 decoder refuses.
ENCODINGS: dict[str, str] = {
    "utf-8": "utf-8",
    "utf8": "utf-8",
    "utf-8-sig": "utf-8",
    "gb2312": "gbk",
    "gbk": "gbk",
    "cp936": "gbk",
    "gb18030": "gb18030",
    "big5": "big5",
    "cp950": "cp950",
    "big5hkscs": "big5hkscs",
    "utf-16": "utf-16",
    "utf-16le": "utf-16-le",
    "utf-16-le": "utf-16-le",
    "utf-16be": "utf-16-be",
    "utf-16-be": "utf-16-be",
    "latin-1": "latin-1",
    "latin1": "latin-1",
    "iso-8859-1": "latin-1",
}
# What the writers encode with, when it differs from the reading codec: GB2312 is
# written strictly, so a file declared GB2312 holds only GB2312 characters.
_WRITE_CODECS = {"gb2312": "gb2312"}
# The name an XML declaration gives each codec (IANA's charset names).
_XML_NAMES = {
    "utf-8": "UTF-8",
    "gbk": "GBK",
    "gb2312": "GB2312",
    "gb18030": "GB18030",
    "big5": "Big5",
    "cp950": "Big5",
    "big5hkscs": "Big5-HKSCS",
    "utf-16": "UTF-16",
    "utf-16-le": "UTF-16",
    "utf-16-be": "UTF-16",
    "latin-1": "ISO-8859-1",
}
_NAMES = "utf-8, gb2312, gbk, gb18030, big5, utf-16 (with a BOM), utf-16le, utf-16be"

_BOM = "\ufeff"
Frequent = Callable[[str], bool]
# How much of a file detection looks at: enough lines to judge, bounded work.
_SAMPLE_BYTES = 1 << 16


def codec_of(encoding: str | None) -> str:
    """The Python codec that reads ``encoding`` (one of `ENCODINGS`; None is UTF-8).

    ValueError naming the accepted names for any other.
    """
    if encoding is None:
        return "utf-8"
    codec = ENCODINGS.get(encoding.strip().lower().replace("_", "-"))
    if codec is None:
        raise ValueError(f"unknown encoding {encoding!r}; use one of {_NAMES}")
    return codec


def xml_name(encoding: str | None) -> str:
    """The name an XML declaration gives ``encoding`` (``GBK``, ``Big5``, ``UTF-16``)."""
    key = (encoding or "utf-8").strip().lower().replace("_", "-")
    return _XML_NAMES.get(_WRITE_CODECS.get(key, codec_of(encoding)), "UTF-8")


def _fix(name: str) -> str:
    return f'read it with `--encoding {name}` (in a site file, the task\'s `encoding = "{name}"`)'


def _named(encoding: str | None) -> str:
    return "UTF-8" if encoding is None else encoding


def _undecodable(
    path: str | os.PathLike[str], data: bytes, encoding: str | None, exc: UnicodeDecodeError
) -> FormatError:
    """The error for bytes that do not decode: file, first bad line, the byte, the fix."""
    codec = codec_of(encoding)
    start = exc.start
    prefix = data[:start].decode(codec, errors="replace")
    line = prefix.count("\n") + 1
    bad = data[start : start + 1].hex()
    if codec.startswith("utf-16"):
        # A UTF-16 line end is two bytes: the place is the file's byte offset.
        place = f"at byte {start + 1} of the file"
    else:
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        place = f"at byte {col} of the line"
    problem = f"not valid {_named(encoding)} (byte 0x{bad} {place})"
    found = _with_guess(path, line, problem, data, encoding)
    if found.problem != problem or codec.startswith("utf-16"):
        return found
    # No encoding reads the whole file: the line alone may say it mixes two.
    begin = data.rfind(b"\n", 0, start) + 1
    end = data.find(b"\n", start)
    alone = guess_encoding(data[begin : end if end >= 0 else len(data)])
    if alone is None or alone.startswith("utf-16") or codec_of(alone) == codec:
        return found
    return FormatError(
        path,
        line,
        f"{problem}; this line reads as {alone}, but not the whole file: it mixes encodings",
        f"re-save the file in one encoding (e.g. `iconv -f {alone} -t UTF-8` on this line)",
    )


def _with_guess(
    path: str | os.PathLike[str],
    line: int | None,
    problem: str,
    data: bytes,
    encoding: str | None,
) -> FormatError:
    guess = guess_encoding(data)
    if guess is not None and (encoding is None or codec_of(guess) != codec_of(encoding)):
        return FormatError(path, line, f"{problem}; it reads as {guess}", _fix(guess))
    return FormatError(
        path,
        line,
        problem,
        f"name its encoding with `--encoding` (one of {_NAMES}), or re-save it as UTF-8",
    )


def decode_text(path: str | os.PathLike[str], data: bytes, encoding: str | None = None) -> str:
    """``data`` (the bytes of ``path``) decoded, without a leading byte-order mark.

    FormatError naming the file, the first line that does not decode and the
    encoding the file reads as; UTF-16 read as UTF-8, GBK or Big5 (valid bytes, NUL
    between the letters) is refused the same way.
    """
    codec = codec_of(encoding)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        raise _undecodable(path, data, encoding, exc) from None
    if not codec.startswith("utf-16") and "\x00" in text:
        _refuse_utf16(path, data, encoding)
    return text.removeprefix(_BOM)


def _refuse_utf16(path: str | os.PathLike[str], data: bytes, encoding: str | None) -> None:
    """FormatError when bytes read in an ASCII-based encoding (UTF-8, GBK, Big5) hold NUL
    and are UTF-16 text (ASCII in UTF-16)."""
    guess = guess_encoding(data)
    if guess is not None and guess.startswith("utf-16"):
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise FormatError(
            path,
            line,
            f"NUL bytes between the characters: not {_named(encoding)}; it reads as {guess}",
            _fix(guess),
        )


def read_text(path: str | os.PathLike[str], encoding: str | None = None) -> str:
    """The whole of a text file, decoded (see `decode_text`)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return decode_text(path, data, encoding)


def read_lines(path: str | os.PathLike[str], encoding: str | None = None) -> list[str]:
    """A text file's lines, split at "\\n" only, one trailing "\\r" dropped.

    A final newline does not start an extra line; a leading BOM is dropped.
    """
    lines = read_text(path, encoding).split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def iter_lines(path: str | os.PathLike[str], encoding: str | None = None) -> Iterator[str]:
    """The lines of `read_lines` (without their "\\n", "\\r" kept), read as a stream.

    No copy of the whole file is held. When the file does not decode, its bytes are
    read again to name the line, as `decode_text` does.
    """
    codec = codec_of(encoding)
    # Text holding NUL may be UTF-16 of ASCII: asked once per file, at the first NUL.
    asked = codec.startswith("utf-16")
    try:
        with open(path, encoding=codec, newline="\n") as fh:
            first = True
            for text in fh:
                if first:
                    text = text.removeprefix(_BOM)
                    first = False
                if not asked and "\x00" in text:
                    asked = True
                    _refuse_utf16(path, Path(path).read_bytes(), encoding)
                yield text[:-1] if text.endswith("\n") else text
    except UnicodeDecodeError:
        data = Path(path).read_bytes()
        decode_text(path, data, encoding)
        raise  # decode_text raised unless the stream and the bytes disagree


def encode_text(text: str, encoding: str | None, where: str | os.PathLike[str]) -> bytes:
    """``text`` in ``encoding`` (None: UTF-8), for a writer: ``utf-16`` with a BOM,
    ``utf-16le``/``utf-16be`` without (scoring.cwmt_write adds one to XML).

    ValueError naming ``where``, the first character the encoding lacks and the fix.
    """
    key = (encoding or "utf-8").strip().lower().replace("_", "-")
    codec = _WRITE_CODECS.get(key, codec_of(encoding))
    try:
        return text.encode(codec)
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        line = text.count("\n", 0, exc.start) + 1
        raise ValueError(
            f"{os.fspath(where)}: line {line}: {char!r} (U+{ord(char):04X}) cannot be written "
            f"in {encoding}; write the file as utf-8 or gb18030, which hold every character"
        ) from None


# --------------------------------------------------------------------------- detection


def guess_encoding(data: bytes) -> str | None:
    """The encoding ``data`` most likely is in, by trying candidates; None if none fits.

    A UTF-16 BOM decides at once. Otherwise each candidate that decodes the bytes
    cleanly is judged by how plausible its text is (`_plausibility`: the share of its
    characters that text in that standard is made of) and the most plausible wins:
    UTF-16 little- and big-endian (its ASCII has a NUL byte, which no real text in the
    others holds), GBK or GB18030 (GB18030 when the bytes need its four-byte forms),
    Big5 or CP950 (Microsoft's extensions).
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    sample = _sample(data)
    tries: list[tuple[tuple[str, ...], Frequent]] = [
        (("utf-16le",), _frequent_any),
        (("utf-16be",), _frequent_any),
        (("gbk", "gb18030"), _frequent_gb),
        (("big5", "cp950", "big5hkscs"), _frequent_big5),
    ]
    candidates: list[tuple[float, str]] = []
    for names, frequent in tries:
        for name in names:
            try:
                text = _even(sample, name).decode(codec_of(name))
            except UnicodeDecodeError:
                continue
            candidates.append((_plausibility(text, frequent), name))
            break
    if not candidates:
        return None
    score, name = max(candidates)
    return name if score >= 0.5 else None


def _even(sample: bytes, name: str) -> bytes:
    """UTF-16 is read in whole code units: a sample cut at an odd length loses a byte."""
    return sample[: len(sample) - len(sample) % 2] if name.startswith("utf-16") else sample


def _sample(data: bytes) -> bytes:
    """The first `_SAMPLE_BYTES` of ``data``, cut after a line end (no split character)."""
    if len(data) <= _SAMPLE_BYTES:
        return data
    cut = data.rfind(b"\n", 0, _SAMPLE_BYTES)
    return data[: cut + 1] if cut > 0 else data[:_SAMPLE_BYTES]


def plausibility(text: str, standard: str) -> float:
    """How plausible ``text`` is as Chinese read in ``standard`` ("gb" or "big5"): the
    share of its Chinese characters that are that standard's frequent ones (the measure
    `guess_encoding` weighs GB18030 against Big5 with)."""
    return _plausibility(text, _frequent_gb if standard == "gb" else _frequent_big5)


def _plausibility(text: str, frequent: Frequent) -> float:
    """The share of ``text``'s other characters than printable ASCII and line ends that
    real Chinese text in the candidate's standard is made of: CJK punctuation and
    full-width forms, and the standard's frequent ideographs (1.0 when there are none:
    ASCII in UTF-16). ASCII is left out of the count, as any candidate reads it alike,
    and would hide a line in another encoding among many ASCII ones."""
    seen = plausible = 0
    for char in text:
        code = ord(char)
        if 0x20 <= code < 0x7F or char in "\t\n\r":
            continue
        seen += 1
        if 0x3000 <= code <= 0x303F or 0xFF01 <= code <= 0xFF5E or frequent(char):
            plausible += 1
    return plausible / seen if seen else 1.0


def _frequent_gb(char: str) -> bool:
    """A level-1 hanzi of GB2312 (its 3755 most used, rows 0xB0-0xD7)."""
    try:
        lead = char.encode("gb2312")[0]
    except UnicodeEncodeError:
        return False
    return 0xB0 <= lead <= 0xD7


def _frequent_big5(char: str) -> bool:
    """A frequent hanzi of Big5 (its 5401 level-1 characters, lead bytes 0xA4-0xC6)."""
    try:
        lead = char.encode("big5")[0]
    except UnicodeEncodeError:
        return False
    return 0xA4 <= lead <= 0xC6


def _frequent_any(char: str) -> bool:
    """A frequent hanzi of either script (UTF-16 holds both)."""
    return _frequent_gb(char) or _frequent_big5(char)
