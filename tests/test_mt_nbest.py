"""output.nbest for mt: validated on arrival, kept in the run's outputs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from harness.kinds.nbest import MAX_NBEST
from harness.kinds.registry import task_kind
from tests.helpers import REPO, read_outputs, write_site
from tests.test_controller import run_site

DEMO_MT = REPO / "site_config" / "data" / "demo-text" / "mt"


def cand(text: str, score: Any) -> dict[str, Any]:
    return {"text": text, "score": score}


@pytest.mark.parametrize(
    "nbest",
    [
        [cand("a", 0)],
        [cand("a", -1.0), cand("b", -1.0), cand("c", -7)],
        [cand("", 3.5)],
        [cand(str(n), -n) for n in range(MAX_NBEST)],
    ],
)
def test_valid_nbest(nbest: list[dict[str, Any]]) -> None:
    assert task_kind("mt").check_output({"text": "a", "nbest": nbest}) is None


def test_nbest_is_optional() -> None:
    assert task_kind("mt").check_output({"text": "a"}) is None


@pytest.mark.parametrize(
    ("nbest", "says"),
    [
        ("a b", "must be a list"),
        ({"text": "a", "score": 1}, "must be a list"),
        ([], "is empty"),
        ([cand(str(n), -n) for n in range(MAX_NBEST + 1)], f"at most {MAX_NBEST}"),
        (["a"], "nbest[0] must be an object"),
        ([cand("a", 1), {"score": 0}], 'nbest[1] needs a "text" string'),
        ([cand("a", "1")], 'nbest[0] needs a number "score"'),
        ([cand("a", True)], 'nbest[0] needs a number "score"'),
        ([cand("a", None)], 'nbest[0] needs a number "score"'),
        ([cand("a", float("nan"))], "must be finite"),
        ([cand("a", float("inf"))], "must be finite"),
        ([cand("a", -2), cand("b", -1)], "not sorted by score, best first: candidate 1"),
    ],
)
def test_invalid_nbest_says_what_is_wrong(nbest: Any, says: str) -> None:
    problem = task_kind("mt").check_output({"text": "a", "nbest": nbest})
    assert problem is not None and says in problem


def test_missing_text_is_reported_before_the_nbest() -> None:
    problem = task_kind("mt").check_output({"nbest": "junk"})
    assert problem is not None and '"text" string' in problem


def test_live_run_keeps_the_nbest_and_rejects_an_unsorted_one(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "examples.systems.nbest_mt"]
    site_path = write_site(
        tmp_path / "site.toml",
        DEMO_MT,
        {
            "good": {"command": command, "workdir": str(REPO)},
            "unsorted": {
                "command": command,
                "workdir": str(REPO),
                "env": {"NBEST_MT_UNSORTED": "1"},
            },
        },
        task="mt",
        task_keys={"kind": "mt"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site_path)
    assert [r.failed for r in results] == [None, None]
    good = read_outputs(run_dir, "mt", "good")
    assert good and {r["verdict"] for r in good} == {"ok"}
    for record in good:
        nbest = record["output"]["nbest"]
        assert len(nbest) == 3 and nbest[0]["text"] == record["output"]["text"]
        assert [c["score"] for c in nbest] == [-1.0, -2.5, -9.0]
    bad = read_outputs(run_dir, "mt", "unsorted")
    assert bad and {r["verdict"] for r in bad} == {"invalid_output"}
    assert all("not sorted by score" in str(r) for r in bad)
