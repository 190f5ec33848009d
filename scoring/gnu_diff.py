"""A model of GNU diff's line matching and of its side-by-side (``-y``) output.

The SIGHAN bakeoff ``score`` script writes each line's words one per line
to two files, runs ``diff -y`` on them and counts the markers of the
output, so its numbers are whatever common subsequence GNU diff picks.
That is not always a longest one: without ``--minimal`` diff first
*discards* lines that match nothing in the other file and, under some
conditions, lines that match many ("confusing") lines, and then runs the
bidirectional middle-snake search only over what remains. This module
follows GNU diffutils 3.8 step by step (``io.c`` trims the identical prefix
and suffix, ``analyze.c`` discards confusing lines, gnulib ``diffseq.h``
finds the edit script, ``analyze.c`` shifts change boundaries, ``side.c``
prints the rows), so the rows it yields are the rows diff prints; the test
suite checks it against the real ``diff -y`` on random inputs.

Lines are compared by equality of the given items (bytes or str): this is
diff without any ``-i``/``-w``/``-B`` option, on files whose every line
ends with a newline (the script writes ``"$w\\n"`` for every word).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["SdiffRow", "changed_lines", "render_sdiff_row", "sdiff_rows"]

Marker = Literal[" ", "|", "<", ">"]

# diff -y with the default width 130 and 8-column tabs (diff.c): the left
# and right halves are 61 columns wide and the right one starts at column 64.
_TAB = 8
_HALF_WIDTH = 61
_COLUMN2 = 64


def _floor_log2(n: int) -> int:
    return n.bit_length() - 1


def _trim_ends(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int]:
    """(prefix, suffix) line counts io.c's find_identical_ends leaves out.

    The suffix may not overlap the prefix in either file; no horizon lines
    are kept (diff -y asks for no context).
    """
    n0, n1 = len(a), len(b)
    prefix = 0
    while prefix < n0 and prefix < n1 and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    limit = min(n0, n1) - prefix
    while suffix < limit and a[n0 - 1 - suffix] == b[n1 - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def _discards(equivs: list[list[int]]) -> list[list[bool]]:
    """analyze.c discard_confusing_lines: which lines the search never sees."""
    counts: list[dict[int, int]] = [{}, {}]
    for f in (0, 1):
        for e in equivs[f]:
            counts[f][e] = counts[f].get(e, 0) + 1
    marks: list[list[int]] = []
    for f in (0, 1):
        end = len(equivs[f])
        many = 5 << (0 if end < 64 else (_floor_log2(end) >> 1) - 3)
        other = counts[1 - f]
        row = []
        for e in equivs[f]:
            nmatch = other.get(e, 0)
            row.append(1 if nmatch == 0 else 2 if nmatch > many else 0)
        marks.append(row)
    for f in (0, 1):
        d = marks[f]
        end = len(d)
        i = 0
        while i < end:
            if d[i] == 2:
                d[i] = 0
            elif d[i] != 0:
                provisional = 0
                j = i
                while j < end and d[j] != 0:
                    provisional += d[j] == 2
                    j += 1
                while j > i and d[j - 1] == 2:
                    j -= 1
                    d[j] = 0
                    provisional -= 1
                length = j - i
                if length >> 2 < provisional:
                    while j > i:
                        j -= 1
                        if d[j] == 2:
                            d[j] = 0
                else:
                    minimum = 2 if length < 4 else (1 << ((_floor_log2(length) >> 1) - 1)) + 1
                    consec = 0
                    j = 0
                    while j < length:
                        if d[i + j] != 2:
                            consec = 0
                        else:
                            consec += 1
                            if minimum == consec:
                                j -= consec  # back up to cancel the whole subrun
                            elif minimum < consec:
                                d[i + j] = 0
                        j += 1
                    consec = 0
                    for j in range(length):
                        if j >= 8 and d[i + j] == 1:
                            break
                        if d[i + j] == 2:
                            consec = 0
                            d[i + j] = 0
                        elif d[i + j] == 0:
                            consec = 0
                        else:
                            consec += 1
                        if consec == 3:
                            break
                    i += length - 1
                    consec = 0
                    for j in range(length):
                        if j >= 8 and d[i - j] == 1:
                            break
                        if d[i - j] == 2:
                            consec = 0
                            d[i - j] = 0
                        elif d[i - j] == 0:
                            consec = 0
                        else:
                            consec += 1
                        if consec == 3:
                            break
            i += 1
    return [[m != 0 for m in marks[f]] for f in (0, 1)]


class _Search:
    """gnulib diffseq.h compareseq/diag without --minimal and without -d."""

    def __init__(self, xv: list[int], yv: list[int], on_delete: list[int], on_insert: list[int]):
        self.xv, self.yv = xv, yv
        self.dels, self.ins = on_delete, on_insert
        diags = len(xv) + len(yv) + 3
        self.too_expensive = max(4096, 1 << ((_floor_log2(diags) >> 1) + 1))
        self.fd: dict[int, int] = {}
        self.bd: dict[int, int] = {}

    def compareseq(self, xoff: int, xlim: int, yoff: int, ylim: int) -> None:
        xv, yv = self.xv, self.yv
        stack = [(xoff, xlim, yoff, ylim)]
        while stack:
            xoff, xlim, yoff, ylim = stack.pop()
            while xoff < xlim and yoff < ylim and xv[xoff] == yv[yoff]:
                xoff += 1
                yoff += 1
            while xoff < xlim and yoff < ylim and xv[xlim - 1] == yv[ylim - 1]:
                xlim -= 1
                ylim -= 1
            if xoff == xlim:
                self.ins.extend(range(yoff, ylim))
            elif yoff == ylim:
                self.dels.extend(range(xoff, xlim))
            else:
                xmid, ymid = self._diag(xoff, xlim, yoff, ylim)
                # The low half is analysed first in diff; order does not
                # change the result, only the order of notes.
                stack.append((xmid, xlim, ymid, ylim))
                stack.append((xoff, xmid, yoff, ymid))

    def _diag(self, xoff: int, xlim: int, yoff: int, ylim: int) -> tuple[int, int]:
        fd, bd, xv, yv = self.fd, self.bd, self.xv, self.yv
        dmin, dmax = xoff - ylim, xlim - yoff
        fmid, bmid = xoff - yoff, xlim - ylim
        fmin = fmax = fmid
        bmin = bmax = bmid
        odd = (fmid - bmid) & 1
        fd[fmid] = xoff
        bd[bmid] = xlim
        c = 0
        while True:
            c += 1
            if fmin > dmin:
                fmin -= 1
                fd[fmin - 1] = -1
            else:
                fmin += 1
            if fmax < dmax:
                fmax += 1
                fd[fmax + 1] = -1
            else:
                fmax -= 1
            for d in range(fmax, fmin - 1, -2):
                tlo, thi = fd[d - 1], fd[d + 1]
                x = thi if tlo < thi else tlo + 1
                y = x - d
                while x < xlim and y < ylim and xv[x] == yv[y]:
                    x += 1
                    y += 1
                fd[d] = x
                if odd and bmin <= d <= bmax and bd[d] <= x:
                    return x, y
            big = 1 << 62
            if bmin > dmin:
                bmin -= 1
                bd[bmin - 1] = big
            else:
                bmin += 1
            if bmax < dmax:
                bmax += 1
                bd[bmax + 1] = big
            else:
                bmax -= 1
            for d in range(bmax, bmin - 1, -2):
                tlo, thi = bd[d - 1], bd[d + 1]
                x = tlo if tlo < thi else thi - 1
                y = x - d
                while xoff < x and yoff < y and xv[x - 1] == yv[y - 1]:
                    x -= 1
                    y -= 1
                bd[d] = x
                if not odd and fmin <= d <= fmax and x <= fd[d]:
                    return x, y
            if c >= self.too_expensive:
                return self._give_up(xoff, xlim, yoff, ylim, fmin, fmax, bmin, bmax)

    def _give_up(
        self, xoff: int, xlim: int, yoff: int, ylim: int, fmin: int, fmax: int, bmin: int, bmax: int
    ) -> tuple[int, int]:
        # "Gone well beyond the call of duty": halfway between the best so far.
        fxybest, fxbest = -1, 0
        for d in range(fmax, fmin - 1, -2):
            x = min(self.fd[d], xlim)
            y = x - d
            if ylim < y:
                x, y = ylim + d, ylim
            if fxybest < x + y:
                fxybest, fxbest = x + y, x
        bxybest, bxbest = 1 << 62, 0
        for d in range(bmax, bmin - 1, -2):
            x = max(xoff, self.bd[d])
            y = x - d
            if y < yoff:
                x, y = yoff + d, yoff
            if x + y < bxybest:
                bxybest, bxbest = x + y, x
        if (xlim + ylim) - bxybest < fxybest - (xoff + yoff):
            return fxbest, fxybest - fxbest
        return bxbest, bxybest - bxbest


def _shift_boundaries(changed: list[list[bool]], equivs: list[list[int]]) -> None:
    """analyze.c shift_boundaries on flag lists padded with False at both ends."""
    for f in (0, 1):
        ch = changed[f]  # ch[k + 1] is line k; ch[0] and ch[-1] are sentinels
        oc = changed[1 - f]
        eq = equivs[f]
        i_end = len(eq)
        i = j = 0
        while True:
            while i < i_end and not ch[i + 1]:
                while oc[j + 1]:
                    j += 1
                j += 1
                i += 1
            if i == i_end:
                break
            start = i
            i += 1
            while ch[i + 1]:
                i += 1
            while oc[j + 1]:
                j += 1
            while True:
                runlength = i - start
                while start and eq[start - 1] == eq[i - 1]:
                    start -= 1
                    ch[start + 1] = True
                    i -= 1
                    ch[i + 1] = False
                    while ch[start]:
                        start -= 1
                    j -= 1
                    while oc[j + 1]:
                        j -= 1
                corresponding = i if oc[j] else i_end
                while i != i_end and eq[start] == eq[i]:
                    ch[start + 1] = False
                    start += 1
                    ch[i + 1] = True
                    i += 1
                    while ch[i + 1]:
                        i += 1
                    j += 1
                    while oc[j + 1]:
                        j += 1
                        corresponding = i
                if runlength == i - start:
                    break
            while corresponding < i:
                start -= 1
                ch[start + 1] = True
                i -= 1
                ch[i + 1] = False
                j -= 1
                while oc[j + 1]:
                    j -= 1


def changed_lines(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[list[bool], list[bool]]:
    """Which lines of `a` (deleted) and of `b` (inserted) GNU diff marks as changed."""
    prefix, suffix = _trim_ends(a, b)
    body = (a[prefix : len(a) - suffix], b[prefix : len(b) - suffix])
    classes: dict[Hashable, int] = {}
    equivs = [[classes.setdefault(x, len(classes) + 1) for x in side] for side in body]
    changed = [[False] * (len(equivs[f]) + 2) for f in (0, 1)]
    discarded = _discards(equivs)
    kept: list[list[int]] = [[], []]
    real: list[list[int]] = [[], []]
    for f in (0, 1):
        for k, (e, gone) in enumerate(zip(equivs[f], discarded[f], strict=True)):
            if gone:
                changed[f][k + 1] = True
            else:
                kept[f].append(e)
                real[f].append(k)
    dels: list[int] = []
    ins: list[int] = []
    _Search(kept[0], kept[1], dels, ins).compareseq(0, len(kept[0]), 0, len(kept[1]))
    for x in dels:
        changed[0][real[0][x] + 1] = True
    for y in ins:
        changed[1][real[1][y] + 1] = True
    _shift_boundaries(changed, equivs)
    out: list[list[bool]] = []
    for f, side in enumerate((a, b)):
        out.append([False] * prefix + changed[f][1:-1] + [False] * suffix)
        assert len(out[f]) == len(side)
    return out[0], out[1]


@dataclass(frozen=True)
class SdiffRow:
    """One output row of ``diff -y``: its marker and the line indices shown."""

    marker: Marker
    left: int | None
    right: int | None


def sdiff_rows(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[SdiffRow]:
    """The rows ``diff -y`` prints for files holding lines `a` and `b`.

    Each change (a maximal run of changed lines on both sides) prints
    min(deleted, inserted) ``|`` rows, then ``>`` rows for the rest of the
    inserted lines or ``<`` rows for the rest of the deleted ones.
    """
    ca, cb = changed_lines(a, b)
    rows: list[SdiffRow] = []
    i = j = 0
    n, m = len(a), len(b)
    while i < n or j < m:
        if (i < n and ca[i]) or (j < m and cb[j]):
            i0, j0 = i, j
            while i < n and ca[i]:
                i += 1
            while j < m and cb[j]:
                j += 1
            both = min(i - i0, j - j0)
            rows.extend(SdiffRow("|", i0 + k, j0 + k) for k in range(both))
            rows.extend(SdiffRow(">", None, k) for k in range(j0 + both, j))
            rows.extend(SdiffRow("<", k, None) for k in range(i0 + both, i))
        else:
            rows.append(SdiffRow(" ", i, j))
            i += 1
            j += 1
    return rows


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _half_line(line: bytes) -> tuple[bytes, int]:
    """side.c print_half_line for a line without tabs, CRs or backspaces.

    Printable ASCII takes a column; a valid UTF-8 character takes its
    display width (as in a UTF-8 locale); other bytes take none. Text past
    the 61st column is cut. Returns the bytes shown and the end column.
    """
    shown = bytearray()
    in_pos = out_pos = 0
    k = 0
    while k < len(line):
        c = line[k]
        if 0x20 <= c < 0x7F:
            in_pos += 1
            if in_pos <= _HALF_WIDTH:
                out_pos = in_pos
                shown.append(c)
            k += 1
            continue
        size = 0
        if c >= 0xC2:
            size = 2 if c < 0xE0 else 3 if c < 0xF0 else 4 if c < 0xF5 else 0
        if size:
            try:
                ch = line[k : k + size].decode("utf-8")
            except UnicodeDecodeError:
                size = 0
        if size:
            in_pos += _char_width(ch)
            if in_pos <= _HALF_WIDTH:
                out_pos = in_pos
                shown += line[k : k + size]
            k += size
            continue
        if in_pos < _HALF_WIDTH:
            shown.append(c)
        k += 1
    return bytes(shown), out_pos


def _tab_from_to(start: int, to: int) -> tuple[bytes, int]:
    out = bytearray()
    col = start
    while (col + _TAB - col % _TAB) <= to:
        col += _TAB - col % _TAB
        out += b"\t"
    while col < to:
        col += 1
        out += b" "
    return bytes(out), col


def render_sdiff_row(marker: Marker, left: bytes | None, right: bytes | None) -> bytes:
    """The bytes ``diff -y`` prints for one row (with its newline).

    Meant for lines that hold no tab, CR or backspace (words never do: the
    script splits at whitespace, and backspace is out of scope).
    """
    out = bytearray()
    col = 0
    if left is not None:
        shown, col = _half_line(left)
        out += shown
    if marker != " ":
        pad, col = _tab_from_to(col, (_HALF_WIDTH + _COLUMN2 - 1) // 2)
        out += pad
        out += marker.encode()
        col += 1
    if right is not None and right != b"":
        pad, col = _tab_from_to(col, _COLUMN2)
        out += pad
        out += _half_line(right)[0]
    out += b"\n"
    return bytes(out)
