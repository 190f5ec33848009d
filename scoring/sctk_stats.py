"""Significance tests between ASR systems, as SCTK's ``sc_stats`` runs them.

Four paired tests on the same references (SCTK ``sc_stats -t mapsswe sign wilc mcn``):

* ``mapsswe``: matched-pair sentence-segment word error. Each pair of aligned
  utterances is cut into segments bounded by two words both systems got right
  (``mtchprs.c``, minimum of 2 good words); the statistic is the Z of the mean
  per-segment difference in error counts (normal approximation).
* ``sign``: per-speaker word error rates; ties (|difference| <= 0.005 points)
  are split half to each side, an odd one to N(-) (``signtest.c``); binomial.
* ``wilcoxon``: per-speaker word error rates, signed ranks (mid-ranks for
  equal differences, near-zero differences alternately + and -), Z of the
  smaller-count side's rank sum (``wilcoxon.c``).
* ``mcnemar``: per-utterance "any error" against "no error"; binomial on the
  discordant utterances (``sentmcn.c``).

Two modes. The default computes correct values: binomial tails exactly and
normal tails from the exact normal distribution, decisions ``p < alpha``.
``sc_stats=True`` reproduces ``sc_stats`` to the last printed digit, including
``statdist.c``'s ``compute_acc_binomial``, whose normal approximation (used once
``n p (1 - p) > 5``, i.e. past 20 units) takes ``flip = R * 0.5`` where ``R + 0.5``
is meant, and its normal table looked up by rounding z down to 0.01.
"""

from __future__ import annotations

import math
import os
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

from .asr import score_asr
from .asr_formats import read_transcripts

__all__ = [
    "TESTS",
    "PairTest",
    "TestName",
    "UnitErrors",
    "compare_error_rates",
    "p_text",
    "sclite_speaker",
    "sclite_speakers",
    "unit_errors",
    "unit_errors_from_trn",
]

TestName = Literal["mapsswe", "sign", "wilcoxon", "mcnemar"]
TESTS: tuple[TestName, ...] = ("mapsswe", "sign", "wilcoxon", "mcnemar")

# sc_stats's MAPSSWE segments end after this many words both systems got right.
_MIN_GOOD = 2
# Differences of speaker percentages at most these are "equal" (signtest.c, wilcoxon.c).
_SIGN_EQUAL = 0.005
_WILCOXON_EQUAL = 0.005
# statdist.c's two-tailed critical z values (Z2tail), used by sc_stats's z-tests.
_SCTK_Z2TAIL = {
    0.01: 2.575,
    0.02: 2.329,
    0.03: 2.170,
    0.04: 2.055,
    0.05: 1.960,
    0.06: 1.881,
    0.07: 1.811,
    0.08: 1.751,
    0.09: 1.695,
    0.10: 1.645,
}


@dataclass(frozen=True)
class UnitErrors:
    """One utterance of one system: its speaker, reference words, errors and alignment.

    ``ops`` is sclite's alignment of the utterance as a string of ``C``, ``S``,
    ``D``, ``I`` in path order (MAPSSWE cuts segments from it); ``errors`` is
    S + D + I and ``ref_words`` C + S + D.
    """

    id: str
    speaker: str
    ref_words: int
    errors: int
    ops: str

    @classmethod
    def from_ops(cls, utt_id: str, speaker: str, ops: str) -> UnitErrors:
        """The unit whose counts are read off the alignment string `ops`."""
        bad = set(ops) - set("CSDI")
        if bad:
            raise ValueError(
                f"utterance {utt_id!r}: alignment ops {sorted(bad)} are not C/S/D/I; "
                "pass sclite's alignment as a string such as 'CCSDI'"
            )
        return cls(utt_id, speaker, len(ops) - ops.count("I"), len(ops) - ops.count("C"), ops)


@dataclass(frozen=True)
class PairTest:
    """One test between systems `a` and `b` (a before b in the input order).

    ``statistic``: the Z of MAPSSWE and Wilcoxon, the smaller of the two
    discordant counts for the sign test and McNemar. ``p``: two-tailed.
    ``better``: the significantly better system at alpha, or None.
    """

    a: str
    b: str
    test: TestName
    statistic: float
    p: float
    better: str | None


def p_text(p: float) -> str:
    """A p-value as sc_stats prints it in its unified report: ``<0.001`` or ``%.3f``."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def sclite_speaker(utt_id: str) -> str | None:
    """The speaker sclite (``-i spu_id``) takes from an utterance id: the id in lower
    case (sclite folds ids) up to the first ``-``, or if there is none up to the first
    ``_``; None for an id with neither (see `sclite_speakers`)."""
    folded = utt_id.lower()
    for sep in ("-", "_"):
        if sep in folded:
            return folded.split(sep, 1)[0]
    return None


def sclite_speakers(ids: Iterable[str]) -> dict[str, str]:
    """Each id's speaker as sclite assigns them reading the ids in this order (its
    hypothesis file's): `sclite_speaker`, and an id without ``-`` or ``_`` joins the
    speaker of the id before it (sclite keeps its last speaker), ``""`` if first."""
    out: dict[str, str] = {}
    last = ""
    for utt_id in ids:
        spk = sclite_speaker(utt_id)
        last = last if spk is None else spk
        out[utt_id] = last
    return out


def unit_errors(
    refs: Mapping[str, str],
    hyps: Mapping[str, str | None],
    speaker_of: Mapping[str, str] | None = None,
    case_sensitive: bool = False,
) -> list[UnitErrors]:
    """Each reference utterance's `UnitErrors` as onsite's ASR scorer (sclite's
    alignment) scores it; a missing hypothesis is empty. Speakers come from
    `speaker_of` (utterance id -> speaker) or else `sclite_speakers` of the references
    ids in their order."""
    report = score_asr(refs, hyps, case_sensitive=case_sensitive)
    speakers = speaker_of if speaker_of is not None else sclite_speakers(refs)
    out = []
    for utt in report.utterances:
        ops = "".join(p.op for p in utt.alignment.pairs)
        out.append(UnitErrors(utt.id, speakers[utt.id], utt.ref_tokens, utt.errors, ops))
    return out


def unit_errors_from_trn(
    ref_path: str | os.PathLike[str],
    hyp_path: str | os.PathLike[str],
    encoding: str | None = None,
) -> list[UnitErrors]:
    """`unit_errors` of a trn (or Kaldi text) reference and hypothesis file, speakers as
    ``sclite -i spu_id`` takes them from the ids; both files in ``encoding``
    (scoring.charsets; None: UTF-8). Raises FormatError naming the file and line for a
    malformed file, ValueError for hypothesis ids not in the reference."""
    refs = read_transcripts(ref_path, encoding)
    hyps = read_transcripts(hyp_path, encoding)
    # sclite reads speakers and utterances in the hypothesis file's order, and the
    # order of speakers matters to sc_stats's Wilcoxon (near-zero differences alternate).
    order = list(hyps) + [utt_id for utt_id in refs if utt_id not in hyps]
    place = {utt_id: k for k, utt_id in enumerate(order)}
    units = unit_errors(refs, hyps, speaker_of=sclite_speakers(order))
    return sorted(units, key=lambda u: place[u.id])


# --- distributions ---------------------------------------------------------------


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


# statdist.c's normprob: a table of the standard normal CDF at z = 0.00 .. 5.14 by
# 0.01 (seven significant digits), looked up by rounding z down. Its grid has two
# entries typed as 0.09999999 and 0.9899999; the table's values (Winkler and Hays)
# differ from the true CDF by at most 3e-7, far below sc_stats's printed 0.001.
_ZNORM = [i / 100 for i in range(515)]
_ZNORM[10], _ZNORM[99] = 0.09999999, 0.9899999
_FNORM = [float(f"{_phi(i / 100):.7g}") for i in range(515)]


def _normprob(z: float) -> float:
    """sc_stats's table CDF of |z| (z past the table gives its last entry)."""
    zx = abs(z)
    return _FNORM[min(bisect_right(_ZNORM, zx) - 1, len(_FNORM) - 1)]


def _sctk_acc_binomial(r: int, n: int) -> float:
    """statdist.c's compute_acc_binomial(r, n, 0.5), its flip = R * 0.5 included."""
    p = 0.5
    if n * p * (1.0 - p) <= 5.0:
        total = 0.0
        for k in range(r + 1):
            # n_CHOOSE_r as SCTK computes it: two float products.
            choose = math.prod(float(i) for i in range(k + 1, n + 1)) / math.prod(
                float(i) for i in range(1, n - k + 1)
            )
            total += choose * p**k * (1.0 - p) ** (n - k)
        return total
    mean = n * p
    stdev = math.sqrt(n * p * (1.0 - p))
    flip = r * 0.5  # sic: SCTK's bug, R + 0.5 (continuity correction) is meant
    zstat = (flip - mean) / stdev
    acc = _normprob(abs(zstat))
    return 1.0 - acc if zstat < 0.0 else acc


def _binomial_two_tailed(r: int, n: int, sc_stats: bool) -> float:
    """Two-tailed p of r or fewer successes in n fair trials (r <= n / 2)."""
    if sc_stats:
        return 2.0 * _sctk_acc_binomial(r, n)
    tail = Fraction(sum(math.comb(n, k) for k in range(r + 1)), 2**n)
    return min(1.0, float(2 * tail))


def _z_two_tailed(z: float, sc_stats: bool) -> float:
    if sc_stats:
        return 1.0 - 2.0 * (_normprob(abs(z)) - 0.5)
    return math.erfc(abs(z) / math.sqrt(2.0))


def _z_critical(alpha: float) -> float:
    """sc_stats's critical |z| at alpha (its table; the normal quantile elsewhere)."""
    for a, z in _SCTK_Z2TAIL.items():
        if abs(a - alpha) < 1e-12:
            return z
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


# --- the tests -------------------------------------------------------------------


def _segments(o1: str, o2: str, min_good: int = _MIN_GOOD) -> list[tuple[int, int, int]]:
    """MAPSSWE's segments of one utterance aligned by two systems, as
    (reference words, errors of system 1, errors of system 2): mtchprs.c's
    test_comp_sents on two alignments of the same reference (no re-synchronisation
    is needed then: both walk the reference words in step)."""
    n1, n2 = len(o1), len(o2)
    segs: list[tuple[int, int, int]] = []

    def count(beg1: int, beg2: int, end1: int, end2: int) -> None:
        s1, s2 = o1[max(beg1, 0) : end1 + 1], o2[max(beg2, 0) : end2 + 1]
        e1, e2 = len(s1) - s1.count("C"), len(s2) - s2.count("C")
        r1, r2 = len(s1) - s1.count("I"), len(s2) - s2.count("I")
        if e1 or e2:  # sc_stats drops (and warns about) an error-free segment
            segs.append(((r1 + r2) // 2, e1, e2))

    i1 = i2 = eog1 = eog2 = num_good = 0
    state = "b"
    while i1 < n1:
        while i1 < n1 and o1[i1] == "I":
            i1, state = i1 + 1, "e"
        while i2 < n2 and o2[i2] == "I":
            i2, state = i2 + 1, "e"
        both = i1 < n1 and o1[i1] == "C" and i2 < n2 and o2[i2] == "C"
        if state == "b":
            if both:
                eog1, eog2 = i1, i2
            else:
                state = "e"
        elif both:
            num_good = 1 if state == "e" else num_good + 1
            if num_good == min_good:
                count(eog1 - (min_good - 1), eog2 - (min_good - 1), i1, i2)
                eog1, eog2, state = i1, i2, "b"
            else:
                state = "g"
        else:
            state = "e"
        if i1 < n1:
            i1 += 1
        if i2 < n2:
            i2 += 1
    if state != "b" or n2 > i2:
        count(eog1 - (min_good - 1), eog2 - (min_good - 1), n1 - 1, n2 - 1)
    return segs


def _mean_z(diffs: Sequence[int]) -> tuple[float, float]:
    """(mean, Z) of the differences as statdist.c's calc_mean_var_std_dev_Zstat computes
    them. With no differences the mean is SCTK's 0 / 0 and Z is 0 (its sum of squares is 0)."""
    n = len(diffs)
    if n == 0:
        return math.nan, 0.0
    mean = sum(diffs) / n
    ss = sum((d - mean) * (d - mean) for d in diffs)
    if ss == 0.0:
        return mean, 0.0
    return mean, mean / (math.sqrt(ss / (n - 1)) / math.sqrt(n))


def _mapsswe(
    u1: Sequence[UnitErrors],
    u2: Sequence[UnitErrors],
    names: tuple[str, str],
    alpha: float,
    sc_stats: bool,
) -> PairTest:
    diffs: list[int] = []
    # sc_stats walks speaker by speaker (each in order of first appearance); the order
    # of the segments changes its sum of squares in the last bits only, but keep it.
    for k in _by_speaker(u1):
        diffs.extend(e1 - e2 for _, e1, e2 in _segments(u1[k].ops, u2[k].ops))
    mean, z = _mean_z(diffs)
    p = _z_two_tailed(z, sc_stats)
    significant = abs(z) > _z_critical(alpha) if sc_stats else p < alpha
    better = (names[0] if mean < 0.0 else names[1]) if significant else None
    return PairTest(names[0], names[1], "mapsswe", z, p, better)


def _by_speaker(units: Sequence[UnitErrors]) -> list[int]:
    """Indexes of `units` grouped by speaker, speakers in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for k, u in enumerate(units):
        groups.setdefault(u.speaker, []).append(k)
    return [k for ks in groups.values() for k in ks]


def _speaker_pcts(units: Sequence[UnitErrors]) -> list[float]:
    """Each speaker's word error percentage, speakers in order of first appearance."""
    sums: dict[str, list[int]] = {}
    for u in units:
        acc = sums.setdefault(u.speaker, [0, 0])
        acc[0] += u.errors
        acc[1] += u.ref_words
    return [0.0 if ref == 0 else err / ref * 100.0 for err, ref in sums.values()]


def _ordered(p1: list[float], p2: list[float]) -> tuple[list[float], list[float], bool]:
    """The pair with the higher summed percentage first, as sc_stats orders it; the flag
    says whether the first is system 1."""
    if sum(p1) > sum(p2):
        return p1, p2, True
    return p2, p1, False


def _sign(
    p1: list[float], p2: list[float], names: tuple[str, str], alpha: float, sc_stats: bool
) -> PairTest:
    hi, lo, first_is_1 = _ordered(p1, p2)
    plus = minus = equal = 0
    for x, y in zip(hi, lo, strict=True):
        if abs(x - y) <= _SIGN_EQUAL:
            equal += 1
        elif x < y:
            minus += 1
        else:
            plus += 1
    # sc_stats gives half the ties to each side, the odd one to N(-).
    num_b = minus + equal // 2 + equal % 2
    num_a = plus + equal // 2
    r = min(num_a, num_b)
    p = 1.0 if num_a == num_b else _binomial_two_tailed(r, num_a + num_b, sc_stats)
    better = None
    if p < alpha:
        hi_name, lo_name = names if first_is_1 else names[::-1]
        # sc_stats names the lower summed rate; the correct verdict follows the counts.
        better = lo_name if sc_stats or num_a > num_b else hi_name
    return PairTest(names[0], names[1], "sign", float(r), p, better)


def _midranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    j = 0
    while j < len(order):
        k = j
        while k + 1 < len(order) and values[order[k + 1]] == values[order[j]]:
            k += 1
        for m in range(j, k + 1):
            ranks[order[m]] = (j + k) / 2 + 1.0
        j = k + 1
    return ranks


def _wilcoxon(
    p1: list[float], p2: list[float], names: tuple[str, str], alpha: float, sc_stats: bool
) -> PairTest:
    hi, lo, first_is_1 = _ordered(p1, p2)
    diffs = [x - y for x, y in zip(hi, lo, strict=True)]
    ranks = _midranks([abs(d) for d in diffs])
    num_a = num_b = alternate = 0
    sum_a = sum_b = 0.0
    for d, rk in zip(diffs, ranks, strict=True):
        if abs(d) > _WILCOXON_EQUAL:
            positive = d > 0.0
        else:
            # sc_stats puts near-zero differences alternately on the + and - side.
            positive = alternate % 2 == 0
            alternate += 1
        if positive:
            num_a, sum_a = num_a + 1, sum_a + rk
        else:
            num_b, sum_b = num_b + 1, sum_b + rk
    n = num_a + num_b
    w = sum_a if num_a < num_b else sum_b
    z = (w - n * (n + 1) / 4.0) / math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    p = _z_two_tailed(z, sc_stats)
    significant = abs(z) > _z_critical(alpha) if sc_stats else p < alpha
    better = None
    if significant:
        hi_name, lo_name = names if first_is_1 else names[::-1]
        better = hi_name if num_a < num_b else lo_name
    return PairTest(names[0], names[1], "wilcoxon", z, p, better)


def _mcnemar(
    u1: Sequence[UnitErrors],
    u2: Sequence[UnitErrors],
    names: tuple[str, str],
    alpha: float,
    sc_stats: bool,
) -> PairTest:
    # An utterance is wrong if its alignment has anything but C (an insertion too).
    only_1 = sum(1 for x, y in zip(u1, u2, strict=True) if x.errors and not y.errors)
    only_2 = sum(1 for x, y in zip(u1, u2, strict=True) if y.errors and not x.errors)
    r = min(only_1, only_2)
    p = 1.0 if only_1 == only_2 else _binomial_two_tailed(r, only_1 + only_2, sc_stats)
    better = (names[1] if only_1 > only_2 else names[0]) if p < alpha else None
    return PairTest(names[0], names[1], "mcnemar", float(r), p, better)


def _paired(systems: Mapping[str, Sequence[UnitErrors]]) -> dict[str, list[UnitErrors]]:
    """Every system's units in the first system's utterance order; refuses systems
    whose utterances or speakers differ."""
    names = list(systems)
    first = list(systems[names[0]])
    if not first:
        raise ValueError(f"system {names[0]!r} has no utterances; pass at least one")
    ids = [u.id for u in first]
    if len(set(ids)) != len(ids):
        raise ValueError(f"system {names[0]!r} repeats utterance ids; keep one unit per id")
    out = {names[0]: first}
    for name in names[1:]:
        by_id = {u.id: u for u in systems[name]}
        if set(by_id) != set(ids) or len(by_id) != len(systems[name]):
            missing = sorted(set(ids) - set(by_id))[:5]
            extra = sorted(set(by_id) - set(ids))[:5]
            raise ValueError(
                f"system {name!r} is not scored on the utterances of {names[0]!r} "
                f"(missing {missing}, extra {extra}); score every system on the same references"
            )
        units = [by_id[i] for i in ids]
        for a, b in zip(first, units, strict=True):
            if a.speaker != b.speaker or a.ref_words != b.ref_words:
                raise ValueError(
                    f"utterance {a.id!r}: systems {names[0]!r} and {name!r} disagree on its "
                    "speaker or reference length; score both against the same reference file"
                )
        out[name] = units
    return out


def compare_error_rates(
    systems: Mapping[str, Sequence[UnitErrors]],
    tests: Iterable[TestName] = TESTS,
    alpha: float = 0.05,
    sc_stats: bool = False,
) -> list[PairTest]:
    """Every pair of systems (in the mapping's order, a before b) under each test.

    Results are ordered pair by pair, tests in the order asked. With `sc_stats`
    the p-values and verdicts are sc_stats's (its binomial bug, its normal table,
    its |z| > 1.960 rule for MAPSSWE and Wilcoxon); otherwise they are exact.
    Raises ValueError for fewer than two systems, an unknown test, or systems not
    scored on the same utterances.
    """
    tests = list(tests)
    unknown = [t for t in tests if t not in TESTS]
    if unknown:
        raise ValueError(f"unknown test(s) {unknown}; choose from {list(TESTS)}")
    if len(systems) < 2:
        raise ValueError("compare_error_rates needs at least two systems")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha} is not between 0 and 1")
    units = _paired(systems)
    names = list(units)
    pcts = {name: _speaker_pcts(units[name]) for name in names}
    out: list[PairTest] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pair = (a, b)
            for test in tests:
                if test == "mapsswe":
                    out.append(_mapsswe(units[a], units[b], pair, alpha, sc_stats))
                elif test == "sign":
                    out.append(_sign(pcts[a], pcts[b], pair, alpha, sc_stats))
                elif test == "wilcoxon":
                    out.append(_wilcoxon(pcts[a], pcts[b], pair, alpha, sc_stats))
                else:
                    out.append(_mcnemar(units[a], units[b], pair, alpha, sc_stats))
    return out
