"""A trial kind's job that completed trials of one class only (stopped after the first
few, all genuine) has no EER yet: the leaderboard shows none and says why, instead of
the scorer's "need at least one genuine and one impostor pair" ending the report."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.kinds.registry import task_kind


@pytest.mark.parametrize("kind", ["face-verify", "spkv"])
def test_one_class_gives_no_eer_and_a_reason(kind: str) -> None:
    refs = {f"t{i}": ((f"a{i}.x", f"b{i}.x"), True) for i in range(3)}
    testset: Any = SimpleNamespace(references=lambda: refs)
    outputs = {k: {"score": 0.5 + i / 10} for i, k in enumerate(refs)}
    scored = task_kind(kind).evaluate(testset, None, outputs, {})  # type: ignore[arg-type]
    assert scored.headline.value is None
    assert scored.figures["note"].startswith("no EER: 3 target and 0 non-target")
    # Both classes: the EER is back.
    refs["t9"] = (("a9.x", "b9.x"), False)
    outputs["t9"] = {"score": 0.1}
    assert task_kind(kind).evaluate(testset, None, outputs, {}).headline.value == 0.0  # type: ignore[arg-type]
