"""Chinese word segmentation scoring (SIGHAN bakeoff ``score`` conventions).

Conventions, as in the bakeoff ``score`` script:

* Gold and test files are read line by line, in step. A line is split into
  words at ASCII whitespace and at the full-width space U+3000 (the script
  turns U+3000 into a space; other Unicode spaces are *not* separators).
* Per line, the script runs GNU ``diff -y`` on the two word lists (one word
  per line) and counts its rows with its own patterns. By default this
  module does the same over the rows `scoring.gnu_diff` computes (a model
  of GNU diff 3.8, checked against the real binary in the tests), so the
  matched words are the lines diff leaves unchanged, which is not always a
  longest common subsequence. ``lcs=True`` matches a true LCS instead.
* Recall = gold words recognised / gold words, precision = test words
  recognised / test words, F = 2PR / (P + R), all pooled over the file.
* OOV = a gold word not in the training word list (exact string). OOV rate
  = OOV gold words / gold words; OOV recall = matched OOV gold words / OOV
  gold words; IV recall likewise for the other gold words.
* A gold line with no words is skipped, test words on it included (the
  script warns "possible misalignment"); such lines are listed in
  ``warnings``. Unlike the script, files with different line counts are an
  error rather than silently truncated to the shorter one.
* Three slips of the script (an empty word before a leading U+3000, ``chop``
  of a word list's last byte, a UTF-8 BOM kept as part of line 1's first
  word) are reproduced only with ``script_quirks``; by default each is
  reported in ``warnings`` where it would change a number.

The HTRDP error-tolerance procedure (differing pieces reviewed by judges,
accepted pieces added to the reference) is `write_cws_review` +
`read_accepted_pieces` + ``score_cws(..., accepted=...)``; see
docs/scoring-cws-ner-pos.md.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import charsets
from .charsets import codec_of
from .errors import FormatError
from .gnu_diff import render_sdiff_row, sdiff_rows

__all__ = [
    "CwsScore",
    "apply_accepted",
    "check_line_counts",
    "Piece",
    "REVIEW_HEADER",
    "diff_pieces",
    "match_words",
    "read_accepted_pieces",
    "read_lines",
    "read_segmentation",
    "read_word_list",
    "score_cws",
    "score_cws_files",
    "script_encoding",
    "sighan_answer_notes",
    "sighan_file_notes",
    "split_words",
    "write_cws_review",
]

_BOM = "\ufeff"
# The script splits with Perl's byte-mode \s (ASCII whitespace) after turning
# U+3000 into a space; str.split() would also split at U+00A0, U+2000.. etc.
_SEPARATORS = re.compile("[ \t\n\r\f\v\u3000]+")
_ASCII_SPACE = " \t\n\r\f\v"

Pair = tuple[int, int]
AcceptedPieces = Collection[tuple[tuple[str, ...], tuple[str, ...]]]


def _frac(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# --- reading ------------------------------------------------------------------


# Encodings in which the byte 0x0a is always a line end, never part of a
# character: for them a text stream splits lines exactly as the bytes do.
_STREAMED_CODECS = frozenset({"utf-8", "gb18030", "gbk", "gb2312", "ascii"})


def _streamed_lines(path: str | os.PathLike[str], encoding: str) -> list[str]:
    """`read_lines` from a text stream, holding no copy of the whole file.

    Lines end at "\n" alone, as in `read_lines`; UnicodeDecodeError (a
    ValueError) when the file does not decode.
    """
    out: list[str] = []
    with open(path, encoding=encoding, newline="\n") as fh:
        for text in fh:
            text = text[:-1] if text.endswith("\n") else text
            if not out and text.startswith(_BOM):
                text = text[len(_BOM) :]
            out.append(text.rstrip("\r"))
    return out


def read_lines(path: str | os.PathLike[str], encoding: str = "utf-8") -> list[str]:
    """All lines of a text file, decoded line by line so errors name the line.

    A UTF-8 BOM on line 1 and a trailing CR are dropped; a final newline does
    not start an extra line. ``encoding`` is any scoring.charsets reads (gbk,
    big5, utf-16le ...); a file that does not decode is a FormatError naming the
    line and the encoding the file reads as.
    """
    codec = codec_of(encoding)
    if codec in _STREAMED_CODECS:
        try:
            return _streamed_lines(path, codec)
        except UnicodeDecodeError:
            pass  # read again as bytes, to name the line, the byte and the encoding
    return _bytewise_lines(path, encoding)


def _bytewise_lines(path: str | os.PathLike[str], encoding: str) -> list[str]:
    """`read_lines` from the file's bytes (scoring.charsets), naming the first line
    that does not decode and the encoding the file reads as."""
    return [line.rstrip("\r") for line in charsets.read_lines(path, encoding)]


def script_encoding(encoding: str) -> str:
    """The encoding the script's byte-level rules see a file in: its own, but UTF-8
    for UTF-16, which the Perl script cannot read (it would be converted first)."""
    codec = codec_of(encoding)
    return "utf-8" if codec.startswith("utf-16") else codec


def split_words(line: str, script_quirks: bool = False) -> list[str]:
    """Words of one segmented line (separators: ASCII whitespace, U+3000).

    With `script_quirks`, a line whose first non-blank character is U+3000
    starts with an empty word, as in the script (it strips ASCII blanks,
    then turns U+3000 into a space, then splits with Perl's ``split``,
    which keeps a leading empty field). Files are split on their bytes
    instead (`read_segmentation`), exactly as the script splits them.
    """
    words = [w for w in _SEPARATORS.split(line) if w]
    if script_quirks and line.strip(_ASCII_SPACE).startswith("\u3000"):
        words.insert(0, "")
    return words


def read_segmentation(
    path: str | os.PathLike[str], encoding: str = "utf-8", *, script_quirks: bool = False
) -> list[list[str]]:
    """One word list per line of a segmented file (words separated by spaces).

    Lines are split as the script splits them, on their bytes in
    `encoding`: ASCII blanks are trimmed, the byte sequences ``E3 80 80``
    (U+3000 in UTF-8) and ``A1 40`` (U+3000 in Big5) become spaces wherever
    they occur, and ASCII whitespace separates words. So U+3000 separates
    words in UTF-8 and Big5 files but not in GB18030 ones (``A1 A1``), and
    in the rare UTF-8 text where a character ending in byte A1 precedes
    ``@`` (``¡@``), the script's cut is kept too: the broken bytes stay in
    the words as ``surrogateescape`` characters. `script_quirks` adds the
    empty first word the script sees when a line starts with such a space,
    and keeps a UTF-8 BOM on line 1 in front of the first word, as the
    script does (the default drops it).
    """
    out = []
    script = script_encoding(encoding)
    lines = read_lines(path, encoding)
    if script_quirks and lines and _has_utf8_bom(path, encoding):
        # The script reads bytes: the BOM is no blank to `s/^\s*//`, so it stays in front.
        lines[0] = _BOM + lines[0]
    for line in lines:
        raw = line.encode(script, "surrogateescape").strip(_ASCII_BYTES)
        spaced = _SCRIPT_SPACE.sub(b" ", raw)
        words = [w.decode(script, "surrogateescape") for w in spaced.split()]
        if script_quirks and spaced[:1] == b" ":
            words.insert(0, "")
        out.append(words)
    return out


_ASCII_BYTES = b" \t\n\r\f\v"
_SCRIPT_SPACE = re.compile(rb"\xe3\x80\x80|\xa1\x40")


def _has_utf8_bom(path: str | os.PathLike[str], encoding: str) -> bool:
    """True when a UTF-8 file starts with the BOM bytes ``EF BB BF`` (read_lines drops them)."""
    if codec_of(encoding) != "utf-8":
        return False
    with open(path, "rb") as fh:
        return fh.read(3) == _BOM.encode()


def _script_phantom(line: str, encoding: str) -> bool:
    raw = line.encode(script_encoding(encoding), "surrogateescape").strip(_ASCII_BYTES)
    return _SCRIPT_SPACE.match(raw) is not None


def read_word_list(
    path: str | os.PathLike[str], encoding: str = "utf-8", *, script_quirks: bool = False
) -> frozenset[str]:
    """Training word list, one word per line (blank lines ignored).

    With `script_quirks`, a last line without a newline loses its last
    byte, as Perl's ``chop`` makes the script do; the cut word is kept with
    the broken byte escaped (``surrogateescape``), so it matches nothing
    unless the cut left a valid word. A UTF-8 BOM stays in front of the
    first word, as in the script.
    """
    words: set[str] = set()
    lines = read_lines(path, encoding)
    if script_quirks and lines and _has_utf8_bom(path, encoding):
        lines[0] = _BOM + lines[0]  # the script's dictionary key keeps the BOM's bytes
    if script_quirks and lines and _last_byte(path) not in (b"", b"\n", b"\r"):
        script = script_encoding(encoding)
        raw = lines[-1].encode(script, "surrogateescape")[:-1]
        lines[-1] = raw.decode(script, "surrogateescape")
    for lineno, line in enumerate(lines, start=1):
        word = line.strip(_ASCII_SPACE)
        if not word:
            continue
        if _SEPARATORS.search(word):
            raise FormatError(
                path,
                lineno,
                f"line holds several words ({word[:40]!r}); a word list has one word per line",
                "pass the training *word list*, e.g. "
                "`tr ' ' '\\n' < training.utf8 | sort -u > words.utf8`",
            )
        words.add(word)
    return frozenset(words)


def check_line_counts(gold: Path | str, test: Path | str, n_gold: int, n_test: int) -> None:
    if n_gold != n_test:
        raise FormatError(
            test,
            min(n_gold, n_test) + 1,
            f"the test file has {n_test} lines but the gold file {os.fspath(gold)} has {n_gold}",
            "keep exactly one output line per input line, in order "
            "(an empty line for empty output)",
        )


# --- matching -----------------------------------------------------------------


def match_words(gold: Sequence[str], test: Sequence[str]) -> list[Pair]:
    """Index pairs (gold i, test j) of a longest common subsequence of words.

    Myers' O((N+M)D) greedy algorithm after trimming the common prefix and
    suffix, i.e. a minimal edit script as GNU diff computes; the number of
    pairs is the LCS length. Among equally long subsequences the choice may
    differ from GNU diff's (see the docs); the counts never do.
    """
    n, m = len(gold), len(test)
    head = 0
    while head < n and head < m and gold[head] == test[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and gold[n - 1 - tail] == test[m - 1 - tail]:
        tail += 1
    a = gold[head : n - tail]
    b = test[head : m - tail]
    pairs = [(i, i) for i in range(head)]
    pairs.extend((head + i, head + j) for i, j in _myers(a, b))
    pairs.extend((n - tail + k, m - tail + k) for k in range(tail))
    return pairs


def _myers(a: Sequence[str], b: Sequence[str]) -> list[Pair]:
    n, m = len(a), len(b)
    if not n or not m:
        return []
    offset = n + m
    v = [0] * (2 * offset + 2)
    trace: list[list[int]] = []
    for d in range(n + m + 1):
        trace.append(v[offset - d : offset + d + 2].copy())
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]  # step down: a test word inserted
            else:
                x = v[offset + k - 1] + 1  # step right: a gold word deleted
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _backtrack(trace, a, b, d)
    raise AssertionError("unreachable: the edit distance is at most n + m")


def _backtrack(trace: list[list[int]], a: Sequence[str], b: Sequence[str], dist: int) -> list[Pair]:
    # trace[d] holds v[-d .. d+1] as it was before round d (index k + d).
    pairs: list[Pair] = []
    x, y = len(a), len(b)
    for d in range(dist, -1, -1):
        k = x - y
        if d == 0:
            while x > 0 and y > 0:
                x, y = x - 1, y - 1
                pairs.append((x, y))
            break
        prev = trace[d]

        def at(kk: int, prev: list[int] = prev, d: int = d) -> int:
            return prev[kk + d]

        if k == -d or (k != d and at(k - 1) < at(k + 1)):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = at(prev_k)
        prev_y = prev_x - prev_k
        start_x = prev_x if prev_k == k + 1 else prev_x + 1
        start_y = start_x - k
        while x > start_x and y > start_y:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    pairs.reverse()
    return pairs


@dataclass(frozen=True)
class Piece:
    """A stretch of text the reference and the system segment differently.

    ``start``/``end`` index the gold words (``gold``), the test words are
    ``test``; both cover the same characters. ``line`` is 1-based.
    """

    line: int
    start: int
    end: int
    gold: tuple[str, ...]
    test: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "line": self.line,
            "start": self.start,
            "end": self.end,
            "gold": list(self.gold),
            "test": list(self.test),
        }


def diff_pieces(gold: Sequence[str], test: Sequence[str], line: int = 0) -> list[Piece] | None:
    """Pieces between common word boundaries where the segmentations differ.

    Returns None when the two lines do not hold the same characters (then
    there is no character alignment to cut pieces from).
    """
    if "".join(gold) != "".join(test):
        return None
    pieces: list[Piece] = []
    i = j = 0
    gi = gj = 0  # character offsets reached in gold and test
    si = sj = 0  # word indices where the current piece starts
    while i < len(gold) or j < len(test):
        # Advance the side that lags; equal texts guarantee it has words left.
        if gi <= gj and i < len(gold):
            gi += len(gold[i])
            i += 1
        else:
            gj += len(test[j])
            j += 1
        if gi == gj:  # a boundary in both segmentations closes the piece
            g, t = tuple(gold[si:i]), tuple(test[sj:j])
            if g != t:
                pieces.append(Piece(line, si, i, g, t))
            si, sj = i, j
    return pieces


# --- scoring ------------------------------------------------------------------


@dataclass(frozen=True)
class CwsScore:
    """Pooled segmentation counts and rates (fractions 0..1)."""

    lines: int
    gold_words: int
    test_words: int
    matched: int
    insertions: int
    deletions: int
    substitutions: int
    oov_words: int | None
    oov_matched: int | None
    iv_words: int | None
    iv_matched: int | None
    accepted_pieces: int
    warnings: tuple[str, ...]
    # Test words counted as recognised; equal to `matched` except where the
    # script's patterns count the two sides differently (empty words).
    test_matched: int | None = None

    @property
    def precision(self) -> float:
        """test words recognised / test words."""
        hits = self.matched if self.test_matched is None else self.test_matched
        return _frac(hits, self.test_words)

    @property
    def recall(self) -> float:
        """matched / gold words."""
        return _frac(self.matched, self.gold_words)

    @property
    def f(self) -> float:
        """2PR / (P + R)."""
        return _f(self.precision, self.recall)

    @property
    def oov_rate(self) -> float | None:
        """OOV gold words / gold words (None without a word list)."""
        return None if self.oov_words is None else _frac(self.oov_words, self.gold_words)

    @property
    def oov_recall(self) -> float | None:
        """Matched OOV gold words / OOV gold words (None if none or no list)."""
        if not self.oov_words or self.oov_matched is None:
            return None
        return self.oov_matched / self.oov_words

    @property
    def iv_recall(self) -> float | None:
        """Matched IV gold words / IV gold words (None if none or no list)."""
        if not self.iv_words or self.iv_matched is None:
            return None
        return self.iv_matched / self.iv_words

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f": self.f,
            "oov_rate": self.oov_rate,
            "oov_recall": self.oov_recall,
            "iv_recall": self.iv_recall,
            "lines": self.lines,
            "gold_words": self.gold_words,
            "test_words": self.test_words,
            "matched": self.matched,
            "test_matched": self.matched if self.test_matched is None else self.test_matched,
            "insertions": self.insertions,
            "deletions": self.deletions,
            "substitutions": self.substitutions,
            "changes": self.insertions + self.deletions + self.substitutions,
            "oov_words": self.oov_words,
            "oov_matched": self.oov_matched,
            "iv_words": self.iv_words,
            "iv_matched": self.iv_matched,
            "accepted_pieces": self.accepted_pieces,
            "warnings": list(self.warnings),
        }


def _edit_counts(pairs: Sequence[Pair], n: int, m: int) -> tuple[int, int, int]:
    """(insertions, deletions, substitutions) as diff -y shows them.

    Between two matches, diff -y pairs up min(deleted, inserted) lines as
    ``|`` (substitutions); the rest are ``<`` or ``>``.
    """
    ins = dels = subs = 0
    pi = pj = 0
    for i, j in [*pairs, (n, m)]:
        gap_gold, gap_test = i - pi, j - pj
        both = min(gap_gold, gap_test)
        subs += both
        dels += gap_gold - both
        ins += gap_test - both
        pi, pj = i + 1, j + 1
    return ins, dels, subs


def apply_accepted(
    gold: Sequence[str], test: Sequence[str], accepted: AcceptedPieces
) -> tuple[list[str], int]:
    """The gold line with accepted system pieces substituted, and how many."""
    pieces = diff_pieces(gold, test)
    if not pieces or not accepted:
        return list(gold), 0
    out: list[str] = []
    pos = used = 0
    for p in pieces:
        if (p.gold, p.test) in accepted:
            out.extend(gold[pos : p.start])
            out.extend(p.test)
            pos = p.end
            used += 1
    out.extend(gold[pos:])
    return out, used


def _script_line(
    gold: Sequence[str],
    test: Sequence[str],
    words: Collection[str] | None,
    encoding: str,
    shortcut: bool = True,
) -> tuple[int, int, int, int, int, int, int, int, int]:
    """One line as the script counts it from ``diff -y``'s output.

    Returns (insertions, deletions, substitutions, gold missed, test
    missed, OOV, OOV missed, IV, IV missed). The rows are rendered as diff
    prints them and read with the script's own patterns, so words spelled
    ``|``, ``<`` or ``>``, empty words and words cut at the 61st column
    count exactly as the script counts them. With `shortcut`, lines whose
    words the patterns cannot misread skip the rendering (same counts).
    """
    gb = [w.encode(encoding, "surrogateescape") for w in gold]
    tb = [w.encode(encoding, "surrogateescape") for w in test]
    plain = (0 < len(w) <= _HALF_ROW and _ROW_SENSITIVE.search(w) is None for w in (*gb, *tb))
    if shortcut and all(plain):
        return _plain_rows(gold, test, gb, tb, words)
    ins = dels = subs = gold_missed = test_missed = oov = oov_missed = iv = iv_missed = 0
    for row in sdiff_rows(gb, tb):
        line = render_sdiff_row(
            row.marker,
            None if row.left is None else gb[row.left],
            None if row.right is None else tb[row.right],
        )
        if _SUB_ROW.search(line):
            subs += 1
        elif _INS_ROW.search(line):
            ins += 1
        elif _DEL_ROW.search(line):
            dels += 1
        first = _FIRST_WORD.match(line)
        if first:
            missed = _GOLD_MISSED.match(line) is not None
            gold_missed += missed
            if words is not None:
                if first.group(1).decode(encoding, "surrogateescape") in words:
                    iv += 1
                    iv_missed += missed
                else:
                    oov += 1
                    oov_missed += missed
        test_missed += _TEST_MISSED.search(line) is not None
    return ins, dels, subs, gold_missed, test_missed, oov, oov_missed, iv, iv_missed


# Words of at most 60 bytes leave at least two blanks before diff -y's
# marker column in any encoding (no character is wider than its bytes; a
# 61-column word leaves one, and the script's "missed" pattern needs two),
# and words without these bytes cannot make the script's patterns read
# anything but the row's own marker.
_HALF_ROW = 60
_ROW_SENSITIVE = re.compile(rb"[|<>\x00-\x1f\x7f]")


def _plain_rows(
    gold: Sequence[str],
    test: Sequence[str],
    gb: Sequence[bytes],
    tb: Sequence[bytes],
    words: Collection[str] | None,
) -> tuple[int, int, int, int, int, int, int, int, int]:
    """`_script_line` for words the patterns read plainly: the marker decides."""
    if not tb or gb == tb:
        # What diff says needs no diff here: every gold line deleted, or none changed.
        missed = 0 if tb else 1
        iv = 0 if words is None else sum(1 for w in gold if w in words)
        oov = 0 if words is None else len(gold) - iv
        n = len(gold) * missed
        return 0, n, 0, n, 0, oov, oov * missed, iv, iv * missed
    ins = dels = subs = gold_missed = test_missed = oov = oov_missed = iv = iv_missed = 0
    for row in sdiff_rows(gb, tb):
        missed = row.marker in "|<"
        if row.marker == "|":
            subs += 1
            test_missed += 1
        elif row.marker == ">":
            ins += 1
            test_missed += 1
        elif row.marker == "<":
            dels += 1
        if row.left is not None:
            gold_missed += missed
            if words is not None:
                if gold[row.left] in words:
                    iv += 1
                    iv_missed += missed
                else:
                    oov += 1
                    oov_missed += missed
    return ins, dels, subs, gold_missed, test_missed, oov, oov_missed, iv, iv_missed


# The script's patterns over a diff -y row (Perl byte-mode \s is ASCII, as
# in Python's bytes patterns; `$` also matches before the final newline).
_SUB_ROW = re.compile(rb"\s\|\s")
_INS_ROW = re.compile(rb"\s>\s")
_DEL_ROW = re.compile(rb"\s<\s")
_FIRST_WORD = re.compile(rb"([^\s]+)\s")
_GOLD_MISSED = re.compile(rb"[^\s]+\s.*\s[|><]\s")
_TEST_MISSED = re.compile(rb"\s[|><]\s.*[^\s]$")


def score_cws(
    gold_lines: Sequence[Sequence[str]],
    test_lines: Sequence[Sequence[str]],
    words: Collection[str] | None = None,
    accepted: AcceptedPieces = frozenset(),
    *,
    lcs: bool = False,
    encoding: str = "utf-8",
) -> CwsScore:
    """Score segmented lines (already split into words), paired by index.

    ``words`` is the training word list (None: no OOV/IV figures);
    ``accepted`` holds ``(gold piece, accepted segmentation)`` word tuples
    from the judges (`read_accepted_pieces`).

    By default words are matched as the bakeoff script matches them: by the
    lines GNU diff 3.8 leaves unchanged (`scoring.gnu_diff`), counted with
    the script's patterns over diff's side-by-side rows (``encoding`` is
    the files' encoding, which decides diff's column widths). ``lcs=True``
    matches a true longest common subsequence instead (never fewer matches
    than diff; ins/del/sub from `_edit_counts`).
    """
    if len(gold_lines) != len(test_lines):
        raise ValueError(f"{len(gold_lines)} gold lines but {len(test_lines)} test lines")
    n_gold = n_test = matched = test_matched = ins = dels = subs = used = 0
    oov = oov_hit = iv = iv_hit = 0
    warnings: list[str] = []
    for lineno, (gold, test) in enumerate(zip(gold_lines, test_lines, strict=True), start=1):
        if not gold:
            if test:
                warnings.append(f"line {lineno}: gold is empty but test is not (skipped)")
            continue
        if not test:
            warnings.append(f"line {lineno}: no test output where gold has words")
        if accepted:
            gold, k = apply_accepted(gold, test, accepted)
            used += k
        n_gold += len(gold)
        n_test += len(test)
        if not lcs:
            a, b, c, g_miss, t_miss, o, o_miss, v, v_miss = _script_line(
                gold, test, words, encoding
            )
            ins, dels, subs = ins + a, dels + b, subs + c
            matched += len(gold) - g_miss
            test_matched += len(test) - t_miss
            oov, oov_hit, iv, iv_hit = oov + o, oov_hit + o - o_miss, iv + v, iv_hit + v - v_miss
            continue
        pairs = match_words(gold, test)
        matched += len(pairs)
        test_matched += len(pairs)
        a, b, c = _edit_counts(pairs, len(gold), len(test))
        ins, dels, subs = ins + a, dels + b, subs + c
        if words is not None:
            hit = [False] * len(gold)
            for i, _ in pairs:
                hit[i] = True
            for w, h in zip(gold, hit, strict=True):
                if w in words:
                    iv += 1
                    iv_hit += h
                else:
                    oov += 1
                    oov_hit += h
    has_list = words is not None
    return CwsScore(
        lines=len(gold_lines),
        gold_words=n_gold,
        test_words=n_test,
        matched=matched,
        insertions=ins,
        deletions=dels,
        substitutions=subs,
        oov_words=oov if has_list else None,
        oov_matched=oov_hit if has_list else None,
        iv_words=iv if has_list else None,
        iv_matched=iv_hit if has_list else None,
        accepted_pieces=used,
        warnings=tuple(warnings),
        test_matched=test_matched,
    )


def score_cws_files(
    gold: Path | str,
    test: Path | str,
    words: Path | str | None = None,
    *,
    accepted: Path | str | None = None,
    encoding: str = "utf-8",
    lcs: bool = False,
    script_quirks: bool = False,
) -> dict[str, Any]:
    """Score a segmented test file against the gold file (`CwsScore.to_dict`).

    ``words``: training word list (one word per line); ``accepted``: a
    judged review file (`write_cws_review`, verdicts filled in); ``lcs``:
    see `score_cws`. ``script_quirks`` reproduces three slips of the script
    that are off by default (and reported in ``warnings`` when they would
    change a number): a line starting with U+3000 gets an extra empty word,
    a word list without a final newline loses the last byte of its last
    word (Perl's ``chop``), and a UTF-8 BOM on line 1 of any of the files
    stays part of the first word.
    """
    gold_lines = read_segmentation(gold, encoding, script_quirks=script_quirks)
    test_lines = read_segmentation(test, encoding, script_quirks=script_quirks)
    check_line_counts(gold, test, len(gold_lines), len(test_lines))
    _refuse_empty(gold, gold_lines, "gold")
    _refuse_empty(test, test_lines, "test")
    notes: list[str] = []
    if not script_quirks:
        notes += _bom_notes(gold, encoding) + _bom_notes(test, encoding)
        notes += _phantom_notes(gold, encoding) + _phantom_notes(test, encoding)
    word_list = None
    if words is not None:
        word_list = read_word_list(words, encoding, script_quirks=script_quirks)
        if not script_quirks and _has_utf8_bom(words, encoding):
            notes.append(
                f"{os.fspath(words)}:1: starts with a byte-order mark (U+FEFF); onsite drops "
                "it, the SIGHAN script keeps its bytes in front of the list's first word, which "
                "then matches no gold word without a BOM: that word counts as OOV "
                "(--sighan-quirks reproduces that)"
            )
        if not script_quirks and not _ends_with_newline(words):
            notes.append(
                f"{os.fspath(words)}: no newline after the last word; the script's `chop` "
                "would cut its last byte (--sighan-quirks reproduces that)"
            )
    pieces = frozenset() if accepted is None else read_accepted_pieces(accepted)
    out = score_cws(
        gold_lines, test_lines, word_list, pieces, lcs=lcs, encoding=script_encoding(encoding)
    )
    out_dict = out.to_dict()
    out_dict["warnings"] = notes + out_dict["warnings"]
    out_dict["matching"] = "lcs" if lcs else "gnu-diff"
    return out_dict


def _last_byte(path: Path | str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return b""
        fh.seek(size - 1)
        return fh.read(1)


def _ends_with_newline(path: Path | str) -> bool:
    return _last_byte(path) in (b"", b"\n")


def _bom_notes(path: Path | str, encoding: str) -> list[str]:
    """The warning for a UTF-8 BOM on line 1, which the script keeps as part of the first word."""
    if not _has_utf8_bom(path, encoding):
        return []
    lines = read_lines(path, encoding)
    # Line 1 as the script splits it: the BOM's bytes are no blank, so they lead.
    raw = (_BOM + (lines[0] if lines else "")).encode("utf-8", "surrogateescape")
    first = _SCRIPT_SPACE.sub(b" ", raw.strip(_ASCII_BYTES)).split()[0]
    word = first.decode("utf-8", "surrogateescape")
    what = (
        "the BOM counts as a word of its own on line 1"
        if word == _BOM
        else f"the first word {word[1:]!r} is read as U+FEFF + {word[1:]!r} and matches no "
        "word without the BOM"
    )
    return [
        f"{os.fspath(path)}:1: starts with a byte-order mark (U+FEFF); onsite drops it, the "
        f"SIGHAN script keeps its bytes: {what} (--sighan-quirks reproduces that)"
    ]


def sighan_file_notes(path: Path | str, encoding: str = "utf-8") -> list[str]:
    """Where the SIGHAN script would read a segmented file otherwise than onsite: a BOM
    on line 1 (part of the first word to it) and lines starting with U+3000 (an extra
    empty word to it), each naming the line and ``--sighan-quirks``."""
    return _bom_notes(path, encoding) + _phantom_notes(path, encoding)


def sighan_answer_notes(answers: Mapping[str, str]) -> list[str]:
    """The same for a run's answers (item id -> segmented text): one line naming the
    items whose segmentation starts with U+3000, where the script counts an extra word."""
    starting = [item for item, text in answers.items() if _phantom_text(text)]
    if not starting:
        return []
    shown = ", ".join(repr(i) for i in starting[:5]) + (
        f" and {len(starting) - 5} more" if len(starting) > 5 else ""
    )
    return [
        f"{len(starting)} answer(s) start with U+3000 (ideographic space): {shown}; the SIGHAN "
        "script would count an extra empty word in each (`onsite score cws --run RUN "
        "--sighan-quirks` reproduces that)"
    ]


def _phantom_text(text: str) -> bool:
    return text.strip(_ASCII_SPACE).startswith("\u3000")


def _phantom_notes(path: Path | str, encoding: str) -> list[str]:
    notes = []
    bom = _has_utf8_bom(path, encoding)
    for lineno, line in enumerate(read_lines(path, encoding), start=1):
        if lineno == 1 and bom:
            continue  # the script sees the BOM first, not the U+3000
        if _script_phantom(line, encoding):
            notes.append(
                f"{os.fspath(path)}:{lineno}: starts with U+3000 (ideographic space); the script "
                "would count an extra empty word here (--sighan-quirks reproduces that)"
            )
    return notes


def _refuse_empty(path: Path | str, lines: Sequence[Sequence[str]], what: str) -> None:
    if not any(lines):
        raise FormatError(
            path,
            None,
            f"the {what} file holds no words",
            "give the segmented text, one sentence per line, words separated by spaces "
            "(the script would divide by zero here)",
        )


# --- the HTRDP error-tolerance review ----------------------------------------

REVIEW_HEADER = "#verdict\treference\tsystem\toccurrences\tfirst_seen\tcontext"
_VERDICTS = {"y": True, "n": False, "?": False}
_CONTEXT = 8  # characters shown either side of a piece


def _context(gold: Sequence[str], piece: Piece) -> str:
    before = "".join(gold[: piece.start])[-_CONTEXT:]
    after = "".join(gold[piece.end :])[:_CONTEXT]
    return f"{before}[{' '.join(piece.test)}]{after}"


def write_cws_review(
    gold: Path | str,
    tests: Iterable[Path | str],
    out: Path | str,
    encoding: str = "utf-8",
) -> int:
    """Write every distinct differing piece of the test files for the judges.

    Pieces from all systems are pooled and deduplicated by (reference words,
    system words). Each row starts with the verdict ``?``; judges replace it
    by ``y`` (acceptable) or ``n``. Lines whose characters differ from the
    reference cannot be cut into pieces and are listed as comments. Returns
    the number of pieces written.
    """
    gold_lines = read_segmentation(gold, encoding)
    counts: Counter[tuple[tuple[str, ...], tuple[str, ...]]] = Counter()
    first: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, str]] = {}
    notes: list[str] = []
    for test in tests:
        test_lines = read_segmentation(test, encoding)
        check_line_counts(gold, test, len(gold_lines), len(test_lines))
        for lineno, (g, t) in enumerate(zip(gold_lines, test_lines, strict=True), start=1):
            pieces = diff_pieces(g, t, lineno)
            if pieces is None:
                notes.append(f"# {os.fspath(test)}:{lineno}: text differs from the reference")
                continue
            for p in pieces:
                key = (p.gold, p.test)
                counts[key] += 1
                first.setdefault(key, (f"{os.fspath(test)}:{lineno}", _context(g, p)))
    rows = [REVIEW_HEADER]
    for key, n in counts.items():
        where, context = first[key]
        # Tabs inside fields would break the columns; words never hold them.
        rows.append(f"?\t{' '.join(key[0])}\t{' '.join(key[1])}\t{n}\t{where}\t{context}")
    rows.extend(notes)
    Path(out).write_text("\n".join(rows) + "\n", encoding="utf-8", errors="surrogateescape")
    return len(counts)


def read_accepted_pieces(path: Path | str) -> frozenset[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The ``(reference words, system words)`` pieces judged ``y`` in a review file.

    Rows: verdict, reference piece, system piece (words separated by
    spaces), then optional columns (ignored). ``#`` lines are comments.
    """
    accepted: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 3:
            raise FormatError(
                path,
                lineno,
                f"expected verdict<TAB>reference<TAB>system, got {len(cols)} column(s)",
                "keep the tab-separated columns of the review file",
            )
        verdict = cols[0].strip().lower()
        if verdict not in _VERDICTS:
            raise FormatError(
                path, lineno, f"verdict {cols[0]!r} is not y, n or ?", "write y (accept) or n"
            )
        ref, alt = tuple(split_words(cols[1])), tuple(split_words(cols[2]))
        if not ref or "".join(ref) != "".join(alt):
            raise FormatError(
                path,
                lineno,
                f"the system piece {cols[2]!r} does not spell the reference piece {cols[1]!r}",
                "an accepted piece must segment the same characters differently",
            )
        if _VERDICTS[verdict]:
            accepted.add((ref, alt))
    return frozenset(accepted)
