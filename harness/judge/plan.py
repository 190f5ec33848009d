"""Judging plans: who judges what, in which order, with the systems hidden.

A plan is built once from the material of a run (`material.Material`), a number
of judges and a seed, then stored (`store.JudgeStore`); the panel only ever
reads it back, so a restarted panel serves exactly the same plan.

Designs (docs/judging.md):

* ``pair`` (HTRDP 2003/2004 paragraph naturalness, survey section 6.2.2):
  every judge hears every pair of systems on every sentence once; per pair
  half of the sentences are played in each order; trials are shuffled per judge
  (`scoring.tts.listening_plan`).
* ``sus`` (sentence intelligibility): a judge may hear a sentence only once, so
  sentences are spread over systems in a Latin square: judge j hears sentence s
  from system ``(rank(s) + j) mod k``. Each judge hears each system equally often
  (within one when the sentences do not divide), and over k judges every
  sentence is heard from every system.
* ``mos``: every judge rates every (system, sentence) once, shuffled.
* ``mt-adequacy-fluency`` (Tables 18-19): every judge sees every segment once with
  all systems' translations in a fresh random order.
* ``summary`` (Tables 58-59): every judge rates every (system, document), shuffled.
* ``cws-review`` (the error-tolerance procedure, survey section 3.2.1.1): every judge
  sees every distinct disputed piece, pooled over systems, shuffled.
* ``pos-review`` (the same procedure for POS tags): every judge sees every distinct
  disputed tag (word, reference tag, system tag), pooled over systems, shuffled.
* ``relevance`` (TREC pooling): each topic goes to one assessor, who judges its whole
  pool, topic after topic; the topics are dealt in a seeded random order, each to the
  assessor with the fewest documents so far, and each pool is shown in random order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.judge.material import Material
from scoring.tts import listening_plan

TestName = Literal[
    "sus", "pair", "mos", "mt-adequacy-fluency", "summary", "cws-review", "pos-review",
    "relevance"
]  # fmt: skip
TESTS: tuple[TestName, ...] = (
    "sus", "pair", "mos", "mt-adequacy-fluency", "summary", "cws-review", "pos-review",
    "relevance"
)  # fmt: skip
# Tests of pooled disputes: no system is shown, so none is needed.
POOLED = ("cws-review", "pos-review")


class PlanError(ValueError):
    """A plan cannot be built from this material (the message says what to change)."""


@dataclass(frozen=True)
class Trial:
    """One trial: what one judge is shown at one position of their session.

    ``systems`` are the systems whose outputs appear, in the order shown: the
    pair's A then B, the shuffled translations of a segment, the one system of
    a SUS, MOS or summary trial, none for a pooled segmentation piece.
    """

    judge: str
    position: int
    item: str
    systems: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Every judge's trials, in order, and the settings that made them."""

    test: TestName
    task: str
    seed: int
    judges: tuple[str, ...]
    trials: tuple[Trial, ...]

    def of(self, judge: str) -> tuple[Trial, ...]:
        """One judge's trials in order."""
        return tuple(t for t in self.trials if t.judge == judge)


def judge_names(n: int) -> tuple[str, ...]:
    """J1..Jn, zero-padded so that they sort in order."""
    if n < 1:
        raise PlanError(f"--judges must be at least 1, got {n}")
    width = len(str(n))
    return tuple(f"J{i:0{width}d}" for i in range(1, n + 1))


def _shuffled(
    rng: np.random.Generator, judge: str, pairs: Sequence[tuple[str, tuple[str, ...]]]
) -> list[Trial]:
    order = rng.permutation(len(pairs))
    return [Trial(judge, pos, pairs[k][0], pairs[k][1]) for pos, k in enumerate(order)]


def build_plan(test: TestName, material: Material, judges: int, seed: int) -> Plan:
    """The seeded, balanced plan of one test over a run's material."""
    if test not in TESTS:
        raise PlanError(f"unknown test {test!r}; use one of {', '.join(TESTS)}")
    names = judge_names(judges)
    systems = list(material.systems)
    items = list(material.items)
    if not items:
        raise PlanError(
            f"task {material.task!r} has nothing to judge: no item was answered by every system"
        )
    need = 2 if test == "pair" else 1
    if test not in (*POOLED, "relevance") and len(systems) < need:
        raise PlanError(f"the {test} test needs at least {need} systems, the run has {systems}")
    rng = np.random.default_rng(seed)
    trials: list[Trial] = []
    if test == "pair":
        for t in listening_plan(systems, items, names, seed):
            trials.append(Trial(t.listener, t.position, t.sentence, (t.first, t.second)))
    elif test == "sus":
        rank = rng.permutation(len(items))
        for j, judge in enumerate(names):
            pairs = [(s, (systems[(rank[i] + j) % len(systems)],)) for i, s in enumerate(items)]
            trials += _shuffled(rng, judge, pairs)
    elif test in ("mos", "summary"):
        for judge in names:
            pairs = [(s, (system,)) for s in items for system in systems]
            trials += _shuffled(rng, judge, pairs)
    elif test == "mt-adequacy-fluency":
        for judge in names:
            pairs = [(s, tuple(systems[k] for k in rng.permutation(len(systems)))) for s in items]
            trials += _shuffled(rng, judge, pairs)
    elif test == "relevance":
        trials = _relevance_trials(rng, names, items)
    else:  # cws-review, pos-review: disputes are pooled, no system is shown or judged apart
        for judge in names:
            trials += _shuffled(rng, judge, [(s, ()) for s in items])
    return Plan(test, material.task, seed, names, tuple(trials))


def _relevance_trials(
    rng: np.random.Generator, names: Sequence[str], items: Sequence[str]
) -> list[Trial]:
    """One assessor per topic (as TREC's), topics dealt to balance the documents read."""
    pools: dict[str, list[str]] = {}
    for item in items:
        pools.setdefault(item.partition("\t")[0], []).append(item)
    topics = list(pools)
    load = dict.fromkeys(names, 0)
    dealt: dict[str, list[str]] = {judge: [] for judge in names}
    for k in rng.permutation(len(topics)):
        topic = topics[k]
        judge = min(names, key=lambda j: load[j])  # the first of the least loaded
        dealt[judge].append(topic)
        load[judge] += len(pools[topic])
    trials: list[Trial] = []
    for judge in names:
        position = 0
        for topic in dealt[judge]:
            for k in rng.permutation(len(pools[topic])):
                trials.append(Trial(judge, position, pools[topic][k], ()))
                position += 1
    return trials


@dataclass(frozen=True)
class Balance:
    """Counts that show whether a (possibly partly answered) plan is balanced."""

    per_judge_system: dict[tuple[str, str], int]
    per_judge_item: dict[tuple[str, str], int]
    per_side: dict[tuple[str, int], int]  # (system, 0 for A / 1 for B) -> presentations
    per_pair_order: dict[tuple[str, str], int]  # ordered (first, second) -> presentations
    warnings: tuple[str, ...]


def balance(plan: Plan, answered: set[tuple[str, int]] | None = None) -> Balance:
    """Counts per judge and system, per side and order; warnings where they are uneven.

    ``answered`` ((judge, position) pairs) restricts the counts to answered trials, so
    a judge who stopped halfway shows up as an unbalanced plan.
    """
    trials = [t for t in plan.trials if answered is None or (t.judge, t.position) in answered]
    per_js: Counter[tuple[str, str]] = Counter()
    per_ji: Counter[tuple[str, str]] = Counter()
    side: Counter[tuple[str, int]] = Counter()
    order: Counter[tuple[str, ...]] = Counter()
    for t in trials:
        per_ji[(t.judge, t.item)] += 1
        for pos, system in enumerate(t.systems):
            per_js[(t.judge, system)] += 1
            side[(system, pos)] += 1
        if plan.test == "pair":
            order[t.systems] += 1
    warnings: list[str] = []
    if answered is not None:
        total = Counter(t.judge for t in plan.trials)
        done = Counter(t.judge for t in trials)
        for judge in plan.judges:
            if done[judge] < total[judge]:
                warnings.append(
                    f"judge {judge} answered {done[judge]} of {total[judge]} trials: "
                    "the plan is unbalanced (systems were not judged equally often)"
                )
    systems = sorted({s for t in plan.trials for s in t.systems})
    for judge in plan.judges:
        counts = [per_js[(judge, s)] for s in systems]
        if counts and max(counts) - min(counts) > 1 and answered is None:
            warnings.append(f"judge {judge} sees the systems unequally often: {counts}")
    if plan.test == "pair":
        for (a, b), n in sorted(order.items()):
            if a < b and abs(n - order[(b, a)]) > 1:
                warnings.append(f"pair {a}/{b} played {n} times AB and {order[(b, a)]} times BA")
    pairs = {(a, b): n for (a, b), n in order.items()}
    return Balance(dict(per_js), dict(per_ji), dict(side), pairs, tuple(warnings))
