"""Text files read in the encoding a user named, refusing one that plainly is not in it.

`scoring.charsets` decodes and names the encoding of bytes that do not decode. Two
mistakes decode without an error, into nonsense: UTF-16 named for a file in an 8-bit
encoding (GBK, Big5, UTF-8), whose byte pairs all decode; and Big5 named for a GBK file
(or GBK for a Big5 one), whose two-byte codes mostly are codes of the other too. Every
UTF-16 line end is ``0A 00``, so a file of one line or more without a NUL byte is not
UTF-16; and Chinese text read in its own standard is made mostly of that standard's
frequent characters, read in the other of rare ones. Both are refused here, naming the
encoding the file reads as. The readers of the listening-test, summarization, ROUGE,
CESTA, human-judgement and word-alignment files go through this.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from . import charsets
from .errors import FormatError

__all__ = [
    "check_named",
    "iter_named_lines",
    "read_named_lines",
    "read_named_text",
    "refuse_false_utf16",
    "refuse_other_standard",
]


def refuse_false_utf16(path: str | os.PathLike[str], encoding: str | None) -> None:
    """FormatError when UTF-16 is named for a non-empty file with no NUL byte."""
    if not charsets.codec_of(encoding).startswith("utf-16"):
        return
    data = Path(path).read_bytes()
    if b"\x00" in data or not data:
        return
    guess = charsets.guess_encoding(data) or "utf-8"
    raise FormatError(
        path,
        1,
        f"not {encoding}: the file has no NUL byte, which every UTF-16 line end holds; "
        f"it reads as {guess}",
        f"name its own encoding, e.g. `--encoding {guess}` (in a site file, the task's "
        f'`encoding = "{guess}"`)',
    )


# How much of a file the cross-standard check reads (as charsets' guess does).
_SAMPLE = 1 << 16
# The two national standards' families: a file named in one that reads as the other.
_FAMILIES = {
    "gbk": "gb",
    "gb18030": "gb",
    "big5": "big5",
    "cp950": "big5",
    "big5hkscs": "big5",
}


def refuse_other_standard(path: str | os.PathLike[str], encoding: str | None) -> None:
    """FormatError when GBK (GB2312, GB18030) is named for a file that decodes in it into
    rare characters but reads as Big5, or Big5 for one that reads as GBK.

    Only a file whose text in the named encoding is implausible (under half of its
    Chinese characters frequent ones of that standard) is refused: a short text that
    reads plausibly in both is left as named.
    """
    family = _FAMILIES.get(charsets.codec_of(encoding))
    if family is None:
        return
    with open(path, "rb") as fh:
        sample = fh.read(_SAMPLE)
    if len(sample) == _SAMPLE:
        sample = sample[: sample.rfind(b"\n") + 1] or sample
    guess = charsets.guess_encoding(sample)
    if guess is None or _FAMILIES.get(charsets.codec_of(guess), family) == family:
        return
    try:
        text = sample.decode(charsets.codec_of(encoding))
    except UnicodeDecodeError:
        return  # the reader names the line that does not decode
    # The charsets module's own measure, as its guess uses it, over the Chinese of the
    # text: accented Latin letters (GBK's pinyin row: "café") and general punctuation
    # (“”—…) are left out, as text in either standard holds them.
    chinese = "".join(c for c in text if not _neutral(c))
    if charsets.plausibility(chinese, family) >= 0.5:
        return
    line = next((n for n, row in enumerate(text.split("\n"), 1) if not row.isascii()), 1)
    rare = "".join(c for c in text if not c.isascii())[:6]
    raise FormatError(
        path,
        line,
        f"decodes as {encoding} into rare characters ({rare}...): not {encoding}; "
        f"it reads as {guess}",
        f'read it with `--encoding {guess}` (in a site file, the task\'s `encoding = "{guess}"`)',
    )


def _neutral(char: str) -> bool:
    """Latin-1 and Latin Extended letters, general punctuation: in both standards."""
    return "\u00a0" <= char <= "\u024f" or "\u2000" <= char <= "\u206f"


def check_named(path: str | os.PathLike[str], encoding: str | None) -> None:
    """Both refusals: UTF-16 named for an 8-bit file, one Chinese standard for the other."""
    refuse_false_utf16(path, encoding)
    refuse_other_standard(path, encoding)


def read_named_text(path: str | os.PathLike[str], encoding: str | None = None) -> str:
    """The whole file in ``encoding`` (None: UTF-8, a BOM allowed), BOM dropped."""
    check_named(path, encoding)
    return charsets.read_text(path, encoding)


def read_named_lines(path: str | os.PathLike[str], encoding: str | None = None) -> list[str]:
    """The file's lines as `scoring.charsets.read_lines` gives them (split at "\\n")."""
    check_named(path, encoding)
    return charsets.read_lines(path, encoding)


def iter_named_lines(path: str | os.PathLike[str], encoding: str | None = None) -> Iterator[str]:
    """The lines of `read_named_lines`, read as a stream (`scoring.charsets.iter_lines`)."""
    check_named(path, encoding)
    yield from charsets.iter_lines(path, encoding)
