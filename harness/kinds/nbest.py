"""The optional n-best list an MT system may send with its translation.

CWMT collects these lists for the system-combination track, so they are
validated when they arrive (a malformed list found only when the combination
set is built would be too late to tell the participant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.kinds.base import score_problem

MAX_NBEST = 200
"""At most this many candidates per segment: CWMT asks for up to 200."""

_EXAMPLE = '"nbest": [{"text": "a translation", "score": -1.5}, ...]'


def check_nbest(output: Mapping[str, Any]) -> str | None:
    """Return why `output["nbest"]` is not a valid n-best list, or None.

    Absent is valid. Present, it must be a non-empty list of at most
    MAX_NBEST objects, each with a "text" string and a finite number
    "score", sorted by score from best (highest) to worst.
    """
    if "nbest" not in output:
        return None
    nbest = output["nbest"]
    if not isinstance(nbest, list):
        return f"output.nbest must be a list, e.g. {_EXAMPLE}"
    if not nbest:
        return "output.nbest is empty: leave it out or send at least one candidate"
    if len(nbest) > MAX_NBEST:
        return f"output.nbest has {len(nbest)} candidates; at most {MAX_NBEST} are allowed"
    previous: float | None = None
    for i, cand in enumerate(nbest):
        if not isinstance(cand, dict):
            return f"output.nbest[{i}] must be an object, e.g. {_EXAMPLE}"
        if not isinstance(cand.get("text"), str):
            return f'output.nbest[{i}] needs a "text" string'
        problem = score_problem(cand.get("score"), f"output.nbest[{i}]")
        if problem:
            return problem
        score = cand["score"]
        if previous is not None and score > previous:
            return (
                f"output.nbest is not sorted by score, best first: candidate {i} "
                f"scores {score} after {previous}"
            )
        previous = float(score)
    return None
