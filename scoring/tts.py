"""Speech synthesis scoring: pair comparison, listening plans, SUS and MOS.

Conventions:

* Pair comparison (HTRDP 2003/2004 naturalness): a listener hears a sentence
  from two systems, played as A then B, and scores -2..+2 (+2: A is better).
  For the ordered pair (X, Y) a presentation played X-then-Y contributes its
  score as is, one played Y-then-X contributes the negated score, so both
  presentation orders measure "how much X is preferred to Y". (Y, X) is
  therefore the exact negation of (X, Y), as in the survey's tables.
* Statistics: mean, sample standard deviation (n - 1) and a two-sided
  confidence interval mean +- t * sd / sqrt(n), with t the Student t
  quantile at (1 + confidence) / 2 with n - 1 degrees of freedom. With
  fewer than two values sd and the interval are None.
* The sample unit is one listener by default (``unit="listener"``): each
  listener's mean score is one value, as in the survey's Table 56 (its means
  are multiples of 1/256, e.g. 413/256 = 1.61328, while its interval
  half-widths equal t(15) * sd / 4, i.e. n = 16 listeners; and its sd
  0.25538 at mean 1.61328 is impossible for integer ratings, whose sd there
  is at least sqrt(0.613 * 0.387) = 0.49). ``unit="rating"`` takes each
  rating as one value (n = ratings: a narrower interval that treats one
  listener's ratings as independent).
* SUS intelligibility = correctly filled blanks / all blanks, comparing
  answers after full-width to half-width, whitespace and case normalisation
  (`normalize_sus`); a blank left unanswered (None) is wrong.
* MOS: ratings must be real numbers in 1..5; anything else is an error.
* Intervals are reported as computed, as the survey's tables give them: with
  few MOS ratings near an end of the scale, mean - t * sd / sqrt(n) can fall
  outside 1..5 (e.g. -2.85). ``score_mos(..., clip=True)`` clips MOS
  intervals to 1..5; the judging report clips pair intervals for display.

File readers (JSON lines, errors ``file:line: problem; fix``):
`read_pair_judgements`, `read_sus_responses`, `read_mos_ratings`, and
`read_sentence_ids` for a listening plan's sentence list.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .commands import normalize_command
from .encoded_text import check_named, read_named_lines
from .errors import FormatError
from .kws import _records

__all__ = [
    "MosScore",
    "PairJudgement",
    "PairStats",
    "PlanTrial",
    "SusResponse",
    "SusScore",
    "listening_plan",
    "mean_ci",
    "normalize_sus",
    "pair_comparison",
    "read_mos_ratings",
    "read_pair_judgements",
    "read_sentence_ids",
    "read_sus_responses",
    "regularized_incomplete_beta",
    "score_mos",
    "score_sus",
    "t_cdf",
    "t_ppf",
]

# --- Student t distribution -------------------------------------------------

_EPS = 1e-15
_TINY = 1e-300


def _beta_cf(a: float, b: float, x: float) -> float:
    # Continued fraction for the incomplete beta (modified Lentz method);
    # converges quickly for x < (a + 1) / (a + b + 2).
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if a <= 0 or b <= 0 or not 0.0 <= x <= 1.0:
        raise ValueError(f"need a, b > 0 and 0 <= x <= 1, got a={a}, b={b}, x={x}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    # Symmetry I_x(a, b) = 1 - I_{1-x}(b, a) keeps the fraction convergent.
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def _t_upper_tail(t: float, df: float) -> float:
    # P(T > t) for t >= 0, computed directly so tiny tails keep precision.
    return 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    """Student t cumulative distribution function with `df` > 0 degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    tail = _t_upper_tail(abs(t), df)
    return 1.0 - tail if t >= 0 else tail


def t_ppf(p: float, df: float) -> float:
    """Student t quantile: the t with ``t_cdf(t, df) == p``, by bisection."""
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)  # search on the upper tail, then mirror
    hi = 1.0
    while _t_upper_tail(hi, df) > tail:
        hi *= 2.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_upper_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(1.0, hi):
            break
    q = 0.5 * (lo + hi)
    return q if p > 0.5 else -q


@dataclass(frozen=True)
class _Summary:
    n: int
    mean: float
    sd: float | None
    ci_low: float | None
    ci_high: float | None


def mean_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    scale: tuple[float, float] | None = None,
) -> tuple[float, float | None, float | None, float | None]:
    """Mean, sample sd (n - 1) and Student t interval (n - 1 df) of `values`.

    sd and the interval are None for fewer than two values. With ``scale``
    (lowest, highest score) the interval is clipped to it.
    """
    s = _summary(values, confidence, scale)
    return s.mean, s.sd, s.ci_low, s.ci_high


def _summary(
    values: Sequence[float], confidence: float, scale: tuple[float, float] | None = None
) -> _Summary:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = math.fsum(values) / n
    if n < 2:
        return _Summary(n, mean, None, None, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_ppf((1.0 + confidence) / 2.0, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if scale is not None:
        # No score lies outside the scale, so neither does a sensible interval for the mean.
        low, high = max(low, scale[0]), min(high, scale[1])
    return _Summary(n, mean, sd, low, high)


# --- Pair comparison --------------------------------------------------------

PAIR_SCORES = (-2, -1, 0, 1, 2)


@dataclass(frozen=True)
class PairJudgement:
    """One rating: `score` says how much `first` (played as A) beats `second` (B)."""

    listener: str
    sentence: str
    first: str
    second: str
    score: int


@dataclass(frozen=True)
class PairStats:
    """Preference of `system_a` over `system_b`, both presentation orders combined."""

    system_a: str
    system_b: str
    ratings: int
    played_ab: int
    played_ba: int
    n: int
    mean: float
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    unit: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready statistics (scores on the -2..+2 scale)."""
        return {
            "system_a": self.system_a,
            "system_b": self.system_b,
            "ratings": self.ratings,
            "played_ab": self.played_ab,
            "played_ba": self.played_ba,
            "n": self.n,
            "mean": self.mean,
            "sd": self.sd,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "unit": self.unit,
        }


def _check_pair_score(j: PairJudgement, index: int) -> None:
    s = j.score
    if isinstance(s, bool) or not isinstance(s, int) or s not in PAIR_SCORES:
        raise ValueError(f"judgement #{index}: score {s!r} is not one of -2, -1, 0, 1, 2")
    if j.first == j.second:
        raise ValueError(f"judgement #{index}: system {j.first!r} compared with itself")


def pair_comparison(
    judgements: Iterable[PairJudgement],
    confidence: float = 0.95,
    unit: Literal["rating", "listener"] = "listener",
) -> tuple[PairStats, ...]:
    """Statistics for every ordered pair (X, Y) of compared systems, sorted.

    Y-then-X presentations are negated so every value says how much X is
    preferred to Y. One value per listener (their mean) by default, as the
    survey's Table 56; ``unit="rating"``: one per rating. Raises ValueError
    for scores outside -2..+2 (integers).
    """
    if unit not in ("rating", "listener"):
        raise ValueError(f"unit must be 'rating' or 'listener', got {unit!r}")
    js = list(judgements)
    for i, j in enumerate(js):
        _check_pair_score(j, i)
    ordered = sorted({(j.first, j.second) for j in js} | {(j.second, j.first) for j in js})
    out: list[PairStats] = []
    for x, y in ordered:
        oriented: list[tuple[str, int]] = []  # (listener, score for x over y)
        ab = ba = 0
        for j in js:
            if (j.first, j.second) == (x, y):
                oriented.append((j.listener, j.score))
                ab += 1
            elif (j.first, j.second) == (y, x):
                oriented.append((j.listener, -j.score))
                ba += 1
        if unit == "listener":
            per: dict[str, list[int]] = {}
            for listener, s in oriented:
                per.setdefault(listener, []).append(s)
            values = [math.fsum(v) / len(v) for _, v in sorted(per.items())]
        else:
            values = [float(s) for _, s in oriented]
        st = _summary(values, confidence)
        out.append(
            PairStats(
                system_a=x,
                system_b=y,
                ratings=len(oriented),
                played_ab=ab,
                played_ba=ba,
                n=st.n,
                mean=st.mean,
                sd=st.sd,
                ci_low=st.ci_low,
                ci_high=st.ci_high,
                confidence=confidence,
                unit=unit,
            )
        )
    return tuple(out)


# --- Listening plan ---------------------------------------------------------


@dataclass(frozen=True)
class PlanTrial:
    """One trial of a listener's session: play `first` then `second` on `sentence`."""

    listener: str
    position: int
    sentence: str
    first: str
    second: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready trial."""
        return {
            "listener": self.listener,
            "position": self.position,
            "sentence": self.sentence,
            "first": self.first,
            "second": self.second,
        }


def _unique(kind: str, names: Sequence[str], minimum: int) -> list[str]:
    names = list(names)
    if len(names) < minimum:
        raise ValueError(f"need at least {minimum} {kind}, got {len(names)}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate {kind}: {', '.join(map(repr, dup))}")
    return names


def listening_plan(
    systems: Sequence[str],
    sentences: Sequence[str],
    listeners: Sequence[str],
    seed: int,
) -> tuple[PlanTrial, ...]:
    """A balanced, randomised pair-comparison plan.

    Every listener hears every unordered pair of systems on every sentence
    once. For each pair the order (AB or BA) follows the parity of a random
    sentence rank plus a random listener rank plus a random bit, so per pair:
    each listener hears half the sentences in each order (one extra either
    way when the number of sentences is odd), each sentence is heard in each
    order by half the listeners (likewise), and overall the two orders
    differ by at most one, exactly equal when sentences x listeners is even.
    Each listener's trials are then shuffled. Same seed, same plan
    (``numpy.random.default_rng(seed)``).
    """
    systems = _unique("systems", systems, 2)
    sentences = _unique("sentences", sentences, 1)
    listeners = _unique("listeners", listeners, 1)
    rng = np.random.default_rng(seed)
    pairs = list(itertools.combinations(systems, 2))
    # swap[p][l][s]: pair p is played second-system-first for listener l, sentence s.
    swap = []
    for _ in pairs:
        s_rank = rng.permutation(len(sentences))
        l_rank = rng.permutation(len(listeners))
        bit = int(rng.integers(2))
        swap.append((l_rank[:, None] + s_rank[None, :] + bit) % 2 == 1)
    trials: list[PlanTrial] = []
    for li, listener in enumerate(listeners):
        items = [(si, pi) for pi in range(len(pairs)) for si in range(len(sentences))]
        for pos, k in enumerate(rng.permutation(len(items))):
            si, pi = items[k]
            a, b = pairs[pi]
            if swap[pi][li, si]:
                a, b = b, a
            trials.append(PlanTrial(listener, pos, sentences[si], a, b))
    return tuple(trials)


# --- SUS intelligibility ----------------------------------------------------


def normalize_sus(text: str) -> str:
    """Full-width to half-width, whitespace normalisation, casefold."""
    return normalize_command(text, case_sensitive=False)


@dataclass(frozen=True)
class SusResponse:
    """One filled blank: what the listener wrote (None if left empty)."""

    system: str
    listener: str
    sentence: str
    expected: str
    answer: str | None


@dataclass(frozen=True)
class SusScore:
    """Blank counts and intelligibility (fraction correct) for one system."""

    system: str
    blanks: int
    correct: int
    unanswered: int

    @property
    def intelligibility(self) -> float:
        """Correct / all blanks (0.0 with no blanks)."""
        return self.correct / self.blanks if self.blanks else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rate."""
        return {
            "system": self.system,
            "blanks": self.blanks,
            "correct": self.correct,
            "unanswered": self.unanswered,
            "intelligibility": self.intelligibility,
        }


def score_sus(responses: Iterable[SusResponse]) -> dict[str, SusScore]:
    """SUS intelligibility per system (sorted by system name)."""
    counts: dict[str, list[int]] = {}
    for r in responses:
        c = counts.setdefault(r.system, [0, 0, 0])
        c[0] += 1
        if r.answer is None:
            c[2] += 1
        elif normalize_sus(r.answer) == normalize_sus(r.expected):
            c[1] += 1
    return {s: SusScore(s, *counts[s]) for s in sorted(counts)}


# --- MOS --------------------------------------------------------------------

MOS_MIN, MOS_MAX = 1, 5


@dataclass(frozen=True)
class MosScore:
    """Mean opinion score of one system with sd and Student t interval."""

    system: str
    n: int
    mean: float
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready statistics (scores on the 1..5 scale)."""
        return {
            "system": self.system,
            "n": self.n,
            "mean": self.mean,
            "sd": self.sd,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
        }


def score_mos(
    ratings: Iterable[tuple[str, float]], confidence: float = 0.95, clip: bool = False
) -> dict[str, MosScore]:
    """MOS per system from ``(system, rating)`` pairs, sorted by system name.

    The interval is the t interval as computed (the survey's way); with `clip`
    it is clipped to 1..5. Raises ValueError naming the rating's position for
    a value that is not a real number in 1..5 (booleans and NaN included).
    """
    per: dict[str, list[float]] = {}
    for i, (system, value) in enumerate(ratings):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not MOS_MIN <= value <= MOS_MAX:  # NaN fails the range test
            raise ValueError(
                f"rating #{i} for system {system!r} is {value!r}, not a number in "
                f"{MOS_MIN}..{MOS_MAX}"
            )
        per.setdefault(system, []).append(float(value))
    out: dict[str, MosScore] = {}
    for system in sorted(per):
        st = _summary(per[system], confidence, (MOS_MIN, MOS_MAX) if clip else None)
        out[system] = MosScore(system, st.n, st.mean, st.sd, st.ci_low, st.ci_high, confidence)
    return out


# --- File readers -----------------------------------------------------------


def _jsonl(path: str | Path, what: str, encoding: str | None) -> list[Any]:
    """The JSON lines of a listening-test file in ``encoding``: UTF-16 named for an 8-bit
    file, or Big5 for a GBK one, is refused before its bytes decode to nonsense
    (scoring.encoded_text)."""
    check_named(path, encoding)
    return _records(path, what, encoding)


def read_pair_judgements(path: str | Path, encoding: str | None = None) -> list[PairJudgement]:
    """Read ``{"listener", "sentence", "first", "second", "score"}`` lines.

    `score` is an integer in -2..+2 (2.0 is taken as 2); extra keys such as a
    plan's ``position`` are ignored, so a filled-in plan file reads as is.
    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed).
    """
    out: list[PairJudgement] = []
    seen: dict[Any, int] = {}
    for rec in _jsonl(path, "judgements", encoding):
        listener = rec.text("listener", '"listener": "L01"')
        sentence = rec.text("sentence", '"sentence": "s017"')
        first = rec.text("first", '"first": "sysA"')
        second = rec.text("second", '"second": "sysB"')
        if first == second:
            raise rec.error(f"system {first!r} compared with itself", "name two systems")
        score = rec.number("score", '"score": 1')
        if score not in PAIR_SCORES:  # 1.0 == 1, so integral floats pass
            raise rec.error(
                f"'score' {score!r} is not on the pair scale",
                "use -2, -1, 0, 1 or 2 (+2: first is much better)",
            )
        rec.once(seen, (listener, sentence, first, second), "presentation")
        out.append(PairJudgement(listener, sentence, first, second, int(score)))
    return out


def read_sus_responses(path: str | Path, encoding: str | None = None) -> list[SusResponse]:
    """Read ``{"system", "listener", "sentence", "expected": [...], "answer": [...]}`` lines.

    One line per listener and played sentence; ``answer[i]`` is what was
    written in blank i (null if left empty). Returns one `SusResponse` per blank.
    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed): the
    answers are what listeners typed, in the site's encoding.
    """
    out: list[SusResponse] = []
    seen: dict[Any, int] = {}
    blank_ex = '"expected": ["red", "cat"], "answer": ["red", null]'
    for rec in _jsonl(path, "responses", encoding):
        system = rec.text("system", '"system": "sysA"')
        listener = rec.text("listener", '"listener": "L01"')
        sentence = rec.text("sentence", '"sentence": "sus03"')
        expected = rec.get("expected", blank_ex)
        answer = rec.get("answer", blank_ex)
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            raise rec.error("'expected' must be a list of strings", blank_ex)
        if not isinstance(answer, list) or not all(isinstance(a, str | None) for a in answer):
            raise rec.error("'answer' must be a list of strings or null", blank_ex)
        if len(answer) != len(expected):
            raise rec.error(
                f"{len(answer)} answers for {len(expected)} blanks",
                "give one answer per blank, null for a blank left empty",
            )
        rec.once(seen, (system, listener, sentence), "(system, listener, sentence)")
        out.extend(
            SusResponse(system, listener, sentence, e, a)
            for e, a in zip(expected, answer, strict=True)
        )
    return out


def read_mos_ratings(path: str | Path, encoding: str | None = None) -> list[tuple[str, float]]:
    """Read ``{"system", "listener", "sentence", "score"}`` lines as (system, score) pairs,
    in ``encoding`` (None: UTF-8)."""
    out: list[tuple[str, float]] = []
    seen: dict[Any, int] = {}
    for rec in _jsonl(path, "ratings", encoding):
        system = rec.text("system", '"system": "sysA"')
        listener = rec.text("listener", '"listener": "L01"')
        sentence = rec.text("sentence", '"sentence": "s017"')
        score = rec.number("score", '"score": 4')
        if not MOS_MIN <= score <= MOS_MAX:
            raise rec.error(
                f"'score' {score!r} is outside {MOS_MIN}..{MOS_MAX}",
                f"rate from {MOS_MIN} (bad) to {MOS_MAX} (excellent)",
            )
        rec.once(seen, (system, listener, sentence), "(system, listener, sentence)")
        out.append((system, float(score)))
    return out


def read_sentence_ids(path: str | Path, encoding: str | None = None) -> list[str]:
    """Read a plan's sentence list: one id per line, blank lines skipped.

    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed).
    """
    out: list[str] = []
    seen: dict[str, int] = {}
    # Split at "\n" only, not splitlines(): line numbers must match an editor's.
    lines = read_named_lines(path, encoding)
    for lineno, line in enumerate(lines, start=1):
        sid = line.strip()
        if not sid:
            continue
        if sid in seen:
            raise FormatError(
                path,
                lineno,
                f"duplicate sentence {sid!r} (first on line {seen[sid]})",
                "list each sentence once",
            )
        seen[sid] = lineno
        out.append(sid)
    if not out:
        raise FormatError(path, None, "no sentences", "write one sentence id per line")
    return out
