"""Chinese word segmentation scoring (SIGHAN bakeoff ``score`` conventions).

Conventions, as in the bakeoff ``score`` script:

* Gold and test files are read line by line, in step. A line is split into
  words at ASCII whitespace and at the full-width space U+3000 (the script
  turns U+3000 into a space; other Unicode spaces are *not* separators).
* Per line, words are matched as a longest common subsequence of the two
  word-string sequences (what the script gets from GNU ``diff`` on
  one-word-per-line files), not by character offsets: the matched count is
  the LCS length. "True words recognised" = gold words minus gold words on
  changed diff lines = matched words; likewise for test words.
* Recall = matched / gold words, precision = matched / test words,
  F = 2PR / (P + R), all pooled over the file (micro averages).
* OOV = a gold word not in the training word list (exact string). OOV rate
  = OOV gold words / gold words; OOV recall = matched OOV gold words / OOV
  gold words; IV recall likewise for the other gold words.
* A gold line with no words is skipped, test words on it included (the
  script warns "possible misalignment"); such lines are listed in
  ``warnings``. Unlike the script, files with different line counts are an
  error rather than silently truncated to the shorter one.

The HTRDP error-tolerance procedure (differing pieces reviewed by judges,
accepted pieces added to the reference) is `write_cws_review` +
`read_accepted_pieces` + ``score_cws(..., accepted=...)``; see
docs/scoring-cws-ner-pos.md.
"""

from __future__ import annotations

import codecs
import os
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import FormatError

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
    not start an extra line.
    """
    if codecs.lookup(encoding).name in _STREAMED_CODECS:
        try:
            return _streamed_lines(path, encoding)
        except UnicodeDecodeError:
            pass  # read again as bytes, line by line, to name the line and byte
    return _bytewise_lines(path, encoding)


def _bytewise_lines(path: str | os.PathLike[str], encoding: str) -> list[str]:
    """`read_lines` from the file's bytes, naming the first line that does not decode."""
    with open(path, "rb") as fh:
        data = fh.read()
    raw_lines = data.split(b"\n")
    # Split on b"\n" only: str.splitlines would also break on \x0b, \x1c,
    # U+2028 and others, shifting line numbers against the other file.
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    out: list[str] = []
    for lineno, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise FormatError(
                path,
                lineno,
                f"not valid {encoding} (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} "
                "of the line)",
                f"re-save the file as {encoding}, e.g. `iconv -f GB18030 -t UTF-8`",
            ) from None
        if lineno == 1 and text.startswith(_BOM):
            text = text[len(_BOM) :]
        out.append(text.rstrip("\r"))
    return out


def split_words(line: str) -> list[str]:
    """Words of one segmented line (separators: ASCII whitespace, U+3000)."""
    return [w for w in _SEPARATORS.split(line) if w]


def read_segmentation(path: str | os.PathLike[str], encoding: str = "utf-8") -> list[list[str]]:
    """One word list per line of a segmented file (words separated by spaces)."""
    return [split_words(line) for line in read_lines(path, encoding)]


def read_word_list(path: str | os.PathLike[str], encoding: str = "utf-8") -> frozenset[str]:
    """Training word list, one word per line (blank lines ignored)."""
    words: set[str] = set()
    for lineno, line in enumerate(read_lines(path, encoding), start=1):
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

    @property
    def precision(self) -> float:
        """matched / test words."""
        return _frac(self.matched, self.test_words)

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


def score_cws(
    gold_lines: Sequence[Sequence[str]],
    test_lines: Sequence[Sequence[str]],
    words: Collection[str] | None = None,
    accepted: AcceptedPieces = frozenset(),
) -> CwsScore:
    """Score segmented lines (already split into words), paired by index.

    ``words`` is the training word list (None: no OOV/IV figures);
    ``accepted`` holds ``(gold piece, accepted segmentation)`` word tuples
    from the judges (`read_accepted_pieces`).
    """
    if len(gold_lines) != len(test_lines):
        raise ValueError(f"{len(gold_lines)} gold lines but {len(test_lines)} test lines")
    n_gold = n_test = matched = ins = dels = subs = used = 0
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
        pairs = match_words(gold, test)
        n_gold += len(gold)
        n_test += len(test)
        matched += len(pairs)
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
    )


def score_cws_files(
    gold: Path | str,
    test: Path | str,
    words: Path | str | None = None,
    *,
    accepted: Path | str | None = None,
    encoding: str = "utf-8",
) -> dict[str, Any]:
    """Score a segmented test file against the gold file (`CwsScore.to_dict`).

    ``words``: training word list (one word per line); ``accepted``: a
    judged review file (`write_cws_review`, verdicts filled in).
    """
    gold_lines = read_segmentation(gold, encoding)
    test_lines = read_segmentation(test, encoding)
    check_line_counts(gold, test, len(gold_lines), len(test_lines))
    word_list = None if words is None else read_word_list(words, encoding)
    pieces = frozenset() if accepted is None else read_accepted_pieces(accepted)
    return score_cws(gold_lines, test_lines, word_list, pieces).to_dict()


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
    Path(out).write_text("\n".join(rows) + "\n", encoding="utf-8")
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
