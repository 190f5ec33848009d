"""A CTM's words paired with an STM's segments, as sclite (``-h ctm -r stm stm``) pairs them.

sclite (SCTK ``stm2ctm.c``, ``align_ctm_to_stm_dp``) works one waveform channel at
a time: the STM's segments of a file and channel, and the CTM's words of the
same file and channel. It walks the segments in order and gives each the
words not yet taken whose mid time (begin + duration / 2) is before the
segment's end; the channel's last segment takes every word left. So:

* a word in a gap between segments goes to the next segment, a word before the
  first segment to the first one, a word after the last to the last one;
* a word across a segment edge goes where its middle is: to the first segment
  when the middle is before that segment's end, else on. sclite stores STM
  times in single precision (CTM times in double), so a middle that equals the
  end in decimals falls on the side the rounding of the end puts it: a tie with
  no right answer, settled as sclite settles it (`single`);
* the words given to an ``IGNORE_TIME_SEGMENT_IN_SCORING`` segment are dropped
  (not scored anywhere), and so is that segment;
* a file or channel of the STM that the CTM lacks is scored against nothing
  (all deletions); sclite refuses words on a file or channel the STM lacks, and
  so does onsite (FormatError naming the CTM line).

Each segment is one utterance, named as sclite names it, ``<speaker>-<n>``
with ``n`` counting that speaker's scored segments from 000; speakers, files and
channels are compared with ASCII case folded unless scoring is case sensitive,
as sclite lowercases whole lines by default.

sclite takes both files in their line order and needs them sorted by file,
channel and begin time; onsite sorts each channel's segments and words by begin
time (stably) and pairs channels by name, which gives sclite's figures on
sorted files. On a file that is not so sorted, `PairedSegments.warnings`
says so: sclite would pair its words differently.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .asr_formats import CtmWord, StmSegment, read_ctm_words, read_stm_segments
from .errors import FormatError

__all__ = ["PairedSegments", "fold_name", "pair_ctm_stm", "read_paired_ctm_stm", "single"]

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def single(value: float) -> float:
    """`value` rounded to single precision, as sclite stores an STM time (its
    ``TEXT_atof`` returns a C float)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def fold_name(name: str, case_sensitive: bool = False) -> str:
    """A file, channel or speaker name as sclite compares it: ASCII letters
    lowercased unless `case_sensitive` (sclite lowercases whole lines)."""
    return name if case_sensitive else name.translate(_ASCII_LOWER)


@dataclass(frozen=True)
class PairedSegments:
    """Scored segments keyed by sclite's utterance id, in sclite's order.

    `refs` and `hyps` are the texts to align (a hypothesis is its words joined
    by spaces); `speakers`, `files` and `channels` name each segment's.
    `warnings` are lines about input that sclite would pair otherwise.
    """

    refs: Mapping[str, str]
    hyps: Mapping[str, str]
    speakers: Mapping[str, str]
    files: Mapping[str, str]
    channels: Mapping[str, str]
    warnings: tuple[str, ...] = ()


def _out_of_order(
    keys: Sequence[tuple[str, str]], begins: Sequence[float], stm_order: Sequence[tuple[str, str]]
) -> int | None:
    """Index of the first entry that breaks sclite's order (channels in runs, in the
    STM's order, begin times rising within a run), or None."""
    rank = {key: k for k, key in enumerate(stm_order)}
    done: set[tuple[str, str]] = set()
    for k in range(1, len(keys)):
        if keys[k] == keys[k - 1]:
            if begins[k] < begins[k - 1]:
                return k
            continue
        done.add(keys[k - 1])
        if keys[k] in done or rank.get(keys[k], -1) < rank.get(keys[k - 1], -1):
            return k
    return None


def pair_ctm_stm(
    segments: Sequence[StmSegment],
    words: Sequence[CtmWord],
    case_sensitive: bool = False,
    ref_path: str | os.PathLike[str] = "reference",
    hyp_path: str | os.PathLike[str] = "hypothesis",
) -> PairedSegments:
    """Give each CTM word to its STM segment by sclite's rule (module docstring).

    `segments` and `words` in file order (`read_stm_segments`, `read_ctm_words`).
    Raises FormatError (naming `hyp_path` and the line) for a word on a file and
    channel the STM does not have.
    """
    seg_keys = [
        (fold_name(s.file, case_sensitive), fold_name(s.channel, case_sensitive)) for s in segments
    ]
    word_keys = [
        (fold_name(w.file, case_sensitive), fold_name(w.channel, case_sensitive)) for w in words
    ]
    channels: dict[tuple[str, str], list[StmSegment]] = {}
    for key, seg in zip(seg_keys, segments, strict=True):
        channels.setdefault(key, []).append(seg)
    said: dict[tuple[str, str], list[CtmWord]] = {}
    for key, word in zip(word_keys, words, strict=True):
        if key not in channels:
            raise FormatError(
                hyp_path,
                word.line,
                f"file {word.file!r} channel {word.channel!r} is not in {os.fspath(ref_path)}",
                "give words only for the files and channels of the reference STM "
                "(sclite stops on such a word too)",
            )
        said.setdefault(key, []).append(word)

    warnings = []
    order = list(channels)
    for path, keys, begins, lines in (
        (ref_path, seg_keys, [s.begin for s in segments], [s.line for s in segments]),
        (hyp_path, word_keys, [w.begin for w in words], [w.line for w in words]),
    ):
        bad = _out_of_order(keys, begins, order)
        if bad is not None:
            warnings.append(
                f"{os.fspath(path)}: line {lines[bad]} is out of order; sclite reads the STM "
                "and the CTM in their line order and needs both sorted by file, channel and "
                "begin time (channels in the same order in both), so it would pair words "
                "with other segments than onsite, which sorts them (no flag pairs in line "
                "order). Sort the files (`sort -k1,1 -k2,2 -k3,3n` for a CTM, "
                "`sort -k1,1 -k2,2 -k4,4n` for an STM) to get the same figures from both."
            )

    refs: dict[str, str] = {}
    hyps: dict[str, str] = {}
    speakers: dict[str, str] = {}
    files: dict[str, str] = {}
    chans: dict[str, str] = {}
    count: dict[str, int] = {}
    for key, segs in channels.items():
        segs = sorted(segs, key=lambda s: single(s.begin))
        todo = sorted(said.get(key, []), key=lambda w: w.begin)
        taken = 0
        for k, seg in enumerate(segs):
            if k == len(segs) - 1:
                end = len(todo)
            else:
                end, seg_end = taken, single(seg.end)
                while end < len(todo) and todo[end].middle < seg_end:
                    end += 1
            mine, taken = todo[taken:end], end
            if seg.ignored:
                continue
            speaker = fold_name(seg.speaker, case_sensitive)
            n = count.get(speaker, 0)
            count[speaker] = n + 1
            utt_id = f"{speaker}-{n:03d}"
            if utt_id in refs:
                # Speakers "a" and "a-000" could meet; sclite would print both ids alike.
                utt_id = f"{utt_id}@{seg.line}"
            refs[utt_id] = seg.text
            hyps[utt_id] = " ".join(w.word for w in mine)
            speakers[utt_id] = speaker
            files[utt_id], chans[utt_id] = key
    return PairedSegments(refs, hyps, speakers, files, chans, tuple(warnings))


def read_paired_ctm_stm(
    ref_path: str | os.PathLike[str],
    hyp_path: str | os.PathLike[str],
    case_sensitive: bool = False,
    encoding: str | None = None,
) -> PairedSegments:
    """`pair_ctm_stm` of an STM file and a CTM file (both in ``encoding``)."""
    return pair_ctm_stm(
        read_stm_segments(ref_path, encoding),
        read_ctm_words(hyp_path, encoding),
        case_sensitive,
        ref_path,
        hyp_path,
    )
