"""Live keyword spotting: the keyword list in hello, scored detections, the DET curve."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import TestSetError, leaderboard, load_site, task_kind
from harness.kinds.keywords import MAX_DETECTIONS, KwsTruth
from scoring.kws import Detection, det_curve
from tests.helpers import REPO, make_testset, read_outputs, run_site, write_site

KWS_FAKE = [sys.executable, str(REPO / "tests" / "systems" / "kws_fake.py")]
CITIES = ["boston", "denver", "dallas"]
KEYWORDS = {
    "settings": {
        "transportation": {"from": CITIES, "to": CITIES, "date": ["monday", "friday"]},
        "weather": {"city": CITIES, "day": ["today", "tomorrow"]},
    }
}
FRAMES = [
    {"id": "k1", "setting": "transportation", "slots": {"from": ["boston"], "to": ["denver"]}},
    {"id": "k2", "setting": "weather", "slots": {"city": ["dallas"], "day": ["today"]}},
    {"id": "k3", "setting": "transportation", "slots": {"from": ["dallas"], "date": ["friday"]}},
]


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def kws_set(root: Path, keywords: dict[str, Any] | None = KEYWORDS) -> Path:
    make_testset(root, [("k1", 1600, ""), ("k2", 1700, ""), ("k3", 1800, "")])
    (root / "text").unlink()
    jsonl(root / "slots.jsonl", FRAMES)
    if keywords is not None:
        (root / "keywords.json").write_text(json.dumps(keywords), "utf-8")
    return root


# Scores per item: k1 proposes its two true keywords and a false one; k2 one true
# keyword (the other is never proposed) and a false one; k3 nothing scored.
PLAN = {
    1600: {
        "slots": {"from": ["boston"], "to": ["denver"]},
        "scores": {"boston": 0.9, "denver": 0.6, "dallas": 0.7},
    },
    1700: {"slots": {"city": ["dallas"]}, "scores": {"dallas": 0.8, "tomorrow": 0.6}},
    1800: {"slots": {"from": ["dallas"], "date": ["friday"]}},
}


def site_for(tmp_path: Path, root: Path, plan: dict[int, Any], **env: str) -> Path:
    env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()}), **env}
    return write_site(
        tmp_path / "site.toml",
        root,
        {"spotter": {"command": KWS_FAKE, "env": env}},
        task="kws",
        task_keys={"kind": "kws"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )


def test_live_kws_gives_slot_rates_and_the_det_curve_from_the_test_set(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    site = site_for(tmp_path, root, PLAN, KWS_PEEK=str(root / "slots.jsonl"))
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    outputs = {r["id"]: r for r in read_outputs(run_dir, "kws", "spotter")}
    assert {r["verdict"] for r in outputs.values()} == {"ok"}
    # The keyword list reached the system (each setting's keywords, per item) ...
    assert [outputs[i]["output"]["listed"] for i in ("k1", "k2", "k3")] == [5, 5, 5]
    # ... and the references did not: the sandbox hides the test set.
    assert not any(r["output"]["peeked"] for r in outputs.values())

    [row] = [r.to_dict() for r in leaderboard(run_dir)]
    scores = row["scores"]
    # Slots: k1 2/2, k2 1/2, k3 2/2 -> 5 of 6; sentences: k1 and k3.
    assert row["slot_rate"] == pytest.approx(5 / 6)
    assert scores["overall"]["sentence_rate"] == pytest.approx(2 / 3)

    # The same detections scored by scoring/kws.py with counts taken from the test set:
    # true pairs k1: boston, denver; k2: dallas, today; k3: dallas, friday = 6;
    # trials: 5 keywords per setting x 3 utterances = 15, so 9 non-target.
    detections = [
        Detection("boston", "k1", 0.9, True),
        Detection("denver", "k1", 0.6, True),
        Detection("dallas", "k1", 0.7, False),
        Detection("dallas", "k2", 0.8, True),
        Detection("tomorrow", "k2", 0.6, False),
    ]
    expected = det_curve(detections, n_true=6, n_nontarget=9).to_dict()
    det = scores["det"]
    assert (det["n_true"], det["n_nontarget"]) == (6, 9)
    assert (det["detections"], det["true_detections"]) == (5, 3)
    assert det["points"] == expected["points"]
    # Three of six true pairs are never accepted: P_miss stays >= 1/2 > P_fa, no EER.
    assert det["eer"] is None and expected["eer"] is None
    assert "sentences 66.7%, EER -" in row["detail"]


def test_eer_when_the_curve_crosses(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    plan = {
        1600: {"scores": {"boston": 0.9, "denver": 0.8, "dallas": 0.85}},
        1700: {"scores": {"dallas": 0.7, "today": 0.6, "tomorrow": 0.2}},
        1800: {"scores": {"dallas": 0.5, "friday": 0.4, "monday": 0.1}},
    }
    run_dir, _ = run_site(site_for(tmp_path, root, plan))
    [row] = leaderboard(run_dir)
    det = row.scores["det"]
    # Every true pair is proposed, so P_miss reaches 0 and the curve crosses P_fa.
    truth = {
        ("k1", "boston"),
        ("k1", "denver"),
        ("k2", "dallas"),
        ("k2", "today"),
        ("k3", "dallas"),
        ("k3", "friday"),
    }
    detections = [
        Detection(k, u, s, (u, k) in truth)
        for u, scores in zip(("k1", "k2", "k3"), plan.values(), strict=True)
        for k, s in scores["scores"].items()
    ]
    curve = det_curve(detections, 6, 9)
    assert det["eer"] == pytest.approx(curve.eer) and curve.eer is not None
    assert 0 < det["eer"] < 0.5


def test_the_best_score_of_a_repeated_keyword_is_the_trial_s(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    plan = {1600: {"scores": {"boston": 0.2}, "extra": [{"keyword": "boston", "score": 0.9}]}}
    run_dir, _ = run_site(site_for(tmp_path, root, plan))
    [row] = leaderboard(run_dir)
    det = row.scores["det"]
    assert (det["detections"], det["true_detections"]) == (1, 1)
    assert det["points"][1]["threshold"] == 0.9


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([{"keyword": "paris", "score": 0.5}], "'paris' is not in the keyword list"),
        ([{"keyword": "today", "score": 0.5}], "'today' is not in the keyword list"),
    ],
)
def test_unknown_keywords_are_invalid_output(tmp_path: Path, extra: Any, says: str) -> None:
    root = kws_set(tmp_path / "set")
    # "today" is a weather keyword: not one of k1's (transportation) setting.
    run_dir, _ = run_site(site_for(tmp_path, root, {1600: {"extra": extra}}))
    outputs = {r["id"]: r for r in read_outputs(run_dir, "kws", "spotter")}
    assert outputs["k1"]["verdict"] == "invalid_output" and says in outputs["k1"]["message"]
    assert outputs["k2"]["verdict"] == "ok"


def test_a_nan_score_is_invalid_output_live(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    plan = {1600: {"scores": {"boston": math.nan}}, 1700: {"scores": {"dallas": math.inf}}}
    run_dir, _ = run_site(site_for(tmp_path, root, plan))
    outputs = {r["id"]: r for r in read_outputs(run_dir, "kws", "spotter")}
    assert outputs["k1"]["verdict"] == "invalid_output"
    assert outputs["k2"]["verdict"] == "invalid_output"
    assert outputs["k3"]["verdict"] == "ok"


def truth(vocabulary: dict[str, list[str]] | None = None) -> Any:
    from harness.testsets import TestItem

    vocab = {k: frozenset(v) for k, v in (vocabulary or {"from": CITIES}).items()}
    return TestItem("k1", {}, {}, KwsTruth("k1", "transportation", {"from": ("boston",)}, vocab))


def det(keyword: Any = "boston", score: Any = 0.5) -> dict[str, Any]:
    return {"keyword": keyword, "score": score}


@pytest.mark.parametrize(
    ("output", "says"),
    [
        ({"slots": {}, "detections": "boston"}, "must be a list"),
        ({"slots": {}, "detections": [det()] * (MAX_DETECTIONS + 1)}, f"at most {MAX_DETECTIONS}"),
        ({"slots": {}, "detections": ["boston"]}, "detections[0] must be an object"),
        ({"slots": {}, "detections": [det(keyword="")]}, '"keyword" string'),
        ({"slots": {}, "detections": [det(keyword=3)]}, '"keyword" string'),
        ({"slots": {}, "detections": [det(score=float("nan"))]}, "must be finite"),
        ({"slots": {}, "detections": [det(score=float("-inf"))]}, "must be finite"),
        ({"slots": {}, "detections": [det(score=True)]}, 'number "score"'),
        ({"slots": {}, "detections": [det(score="0.5")]}, 'number "score"'),
        ({"slots": {}, "detections": [{"keyword": "boston"}]}, 'number "score"'),
        ({"slots": {"from": "boston"}}, "list of keyword strings"),
        ({"detections": []}, '"slots" object'),
    ],
)
def test_hostile_outputs_say_what_is_wrong(output: dict[str, Any], says: str) -> None:
    problem = task_kind("kws").check_output(output)
    assert problem is not None and says in problem


def test_slots_are_checked_against_the_setting() -> None:
    kind = task_kind("kws")
    check = kind.check_item
    assert check is not None
    assert check(truth(), {"slots": {"from": ["boston"]}, "detections": [det()]}) is None
    problem = check(truth(), {"slots": {"to": ["boston"]}})
    assert problem and "slot 'to' is not a slot of setting 'transportation'" in problem
    problem = check(truth(), {"slots": {"from": ["paris"]}})
    assert problem and "['paris'] are not listed for slot 'from'" in problem
    assert kind.check_output({"slots": {}, "detections": [det()] * MAX_DETECTIONS}) is None


def test_hello_carries_the_list_and_items_their_setting(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    cfg = load_site(site_for(tmp_path, root, {})).config.tasks["kws"]
    testset = task_kind("kws").load(root, cfg)
    assert testset.setup_files == {"keywords": root / "keywords.json"}
    assert [i.fields["setting"] for i in testset.items] == [
        "transportation",
        "weather",
        "transportation",
    ]


def test_without_a_keyword_list_no_det_and_a_warning(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set", keywords=None)
    site = site_for(tmp_path, root, PLAN)
    testset = task_kind("kws").load(root, load_site(site).config.tasks["kws"])
    assert not testset.setup_files and "no keyword list" in testset.warnings[-1]
    assert "setting" not in testset.items[0].fields
    run_dir, _ = run_site(site)
    [row] = leaderboard(run_dir)
    assert row.score == pytest.approx(5 / 6) and "det" not in row.scores


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"settings": {"weather": KEYWORDS["settings"]["weather"]}}, "'transportation' is not in"),
        (
            {"settings": {**KEYWORDS["settings"], "transportation": {"from": ["boston"]}}},
            "not listed for setting 'transportation'",
        ),
        ({"settings": {}}, "settings"),
        ({"settings": {"weather": {"city": []}}}, "lists no keyword"),
        ({"settings": {"weather": {"city": ["x"]}}, "extra": 1}, "extra"),
    ],
)
def test_bad_keyword_lists_name_the_file(tmp_path: Path, keywords: Any, says: str) -> None:
    root = kws_set(tmp_path / "set", keywords=keywords)
    cfg = load_site(site_for(tmp_path, root, {})).config.tasks["kws"]
    with pytest.raises(TestSetError) as err:
        task_kind("kws").load(root, cfg)
    assert says in str(err.value)
    assert "keywords.json" in str(err.value)


def test_keyword_list_that_is_not_json(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set")
    (root / "keywords.json").write_text('{"settings": ', "utf-8")
    cfg = load_site(site_for(tmp_path, root, {})).config.tasks["kws"]
    with pytest.raises(TestSetError, match=r"keywords.json:1: not JSON"):
        task_kind("kws").load(root, cfg)


def test_the_pocketsphinx_spotter_on_the_demo_set(tmp_path: Path) -> None:
    """The real example: it spots only what hello's list names; the live figures are
    scoring/kws.py's on its outputs, with the trials counted from the test set."""
    from scoring import score_slots
    from scoring.kws import SlotFrame, read_slot_file

    root = REPO / "site_config" / "data" / "demo-kws"
    site = write_site(
        tmp_path / "site.toml",
        root,
        {
            "sphinx-kws": {
                "command": [sys.executable, "-m", "examples.systems.sphinx_kws"],
                "workdir": str(REPO),
            }
        },
        task="kws",
        task_keys={"kind": "kws"},
        budget={"seconds": 30.0, "hang_seconds": 60.0, "setup_seconds": 120.0},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    outputs = {r["id"]: r["output"] for r in read_outputs(run_dir, "kws", "sphinx-kws")}
    assert set(outputs) == {f"kw0{n}" for n in range(1, 7)}
    settings = json.loads((root / "keywords.json").read_text("utf-8"))["settings"]
    refs = read_slot_file(root / "slots.jsonl")
    detections: list[Detection] = []
    n_true = n_nontarget = 0
    for utt, ref in refs.items():
        listed = {w for words in settings[ref.setting].values() for w in words}
        true = {w for words in ref.slots.values() for w in words}
        n_true += len(true)
        n_nontarget += len(listed) - len(true)
        best: dict[str, float] = {}
        for d in outputs[utt]["detections"]:
            assert d["keyword"] in listed  # only its setting's keywords, from hello's list
            best[d["keyword"]] = max(d["score"], best.get(d["keyword"], d["score"]))
        detections += [Detection(k, utt, s, k in true) for k, s in best.items()]
    assert any(d.is_true for d in detections), "pocketsphinx spotted no keyword"
    [row] = leaderboard(run_dir)
    expected = det_curve(detections, n_true, n_nontarget).to_dict()
    assert row.scores["det"]["points"] == expected["points"]
    assert row.scores["det"]["eer"] == expected["eer"]
    hyps = {
        u: SlotFrame(u, "", {k: tuple(v) for k, v in o["slots"].items()})
        for u, o in outputs.items()
    }
    assert row.scores["overall"] == score_slots(refs, hyps).to_dict()["overall"]


def test_a_keyword_list_for_another_set_is_refused_briefly(tmp_path: Path) -> None:
    root = kws_set(tmp_path / "set", keywords={"settings": {"other": {"x": ["y"]}}})
    jsonl(root / "slots.jsonl", [{**FRAMES[0], "id": f"k{n}"} for n in range(1, 60)])
    cfg = load_site(site_for(tmp_path, root, {})).config.tasks["kws"]
    with pytest.raises(TestSetError) as err:
        task_kind("kws").load(root, cfg)
    problems = err.value.problems
    assert len(problems) == 21 and "and 39 more lines like these" in str(problems[-1])
