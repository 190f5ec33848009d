"""The POS error tolerance at the judging panel (`--test pos-review`).

Two real taggers (tests/systems/pos_table.py) run a pos task; their disputed tags are
pooled and reviewed by three simulated reviewers over the panel's HTTP API; the
accepted tags then count as correct in `onsite score pos --accepted`, `onsite judge
--results` and `onsite report`, with the figures before the review beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.judge.material import load_material
from harness.judge.plan import build_plan
from scoring.errors import FormatError
from scoring.pos import score_pos
from scoring.pos_review import accept_tags, disputed_tags, read_accepted_tags
from tests.helpers import REPO, run_site, write_site
from tests.judge_helpers import call, copy_run, onsite, serving

GOLD = [
    "我们/r 喜欢/v 北京/ns",
    "他/r 在/p 北京/ns 学习/v",
    "我们/r 在/p 上海/ns 工作/v",
    "他们/r 喜欢/v 学习/v",
]
COMMON = {"我们": "r", "他": "r", "在": "p", "上海": "ns"}
TAGGERS = {
    "acme-tagger": COMMON | {"喜欢": "v", "北京": "ns", "学习": "vn", "工作": "vn", "他们": "r"},
    "zenith-tagger": COMMON | {"喜欢": "vt", "北京": "nr", "学习": "v", "工作": "v", "他们": "rr"},
}
# What the reviewers think of each disputed (word, reference tag, system tag): how many of
# the three accept it. A majority (2 or 3) accepts.
ACCEPTS = {
    ("学习", "v", "vn"): 3,
    ("工作", "v", "vn"): 2,
    ("喜欢", "v", "vt"): 3,
    ("北京", "ns", "nr"): 1,
    ("他们", "r", "rr"): 0,
}


def make_pos_run(root: Path) -> Path:
    """A finished run of the two taggers over GOLD; returns the run directory."""
    testset = root / "tagged-corpus"
    testset.mkdir()
    (testset / "gold.pos").write_text("\n".join(GOLD) + "\n", encoding="utf-8")
    systems = {
        name: {
            "command": [sys.executable, "-m", "tests.systems.pos_table"]
            + [f"{w}={t}" for w, t in table.items()],
            "workdir": str(REPO),
        }
        for name, table in TAGGERS.items()
    }
    site = write_site(
        root / "site.toml",
        testset,
        systems,
        task="pos",
        task_keys={"kind": "pos"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


@pytest.fixture(scope="module")
def pos_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pos_run(tmp_path_factory.mktemp("pos"))


def _reviewer(judge: int, view: dict[str, Any]) -> bool:
    """Judge 1..3 accepts a tag when it is among the first ACCEPTS[...] judges."""
    text = view["text"]
    return judge <= ACCEPTS[(text["word"], text["reference"], text["system"])]


def _tagged(line: str) -> list[tuple[str, str]]:
    return [tuple(t.rsplit("/", 1)) for t in line.split()]  # type: ignore[misc]


def test_disputes_and_acceptance_in_scoring() -> None:
    gold = _tagged("他/r 在/p 北京/ns 学习/v")
    test = _tagged("他/r 在/p 北京/nr 学/v 习/v")
    disputes = list(disputed_tags(gold, test))
    # 学习 is segmented differently: a segmentation error, not a disputed tag.
    assert [d.key for d in disputes] == [("北京", "ns", "nr")]
    fixed, used = accept_tags(gold, test, {("北京", "ns", "nr")})
    assert used == 1 and fixed[2] == ("北京", "ns")
    assert score_pos([gold], [fixed]).tagged == score_pos([gold], [test]).tagged + 1


def test_review_file_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "review.tsv"
    path.write_text("#verdict\tword\treference\tsystem\ny\t学习\tv\tvn\nn\t北京\tns\tnr\n")
    assert read_accepted_tags(path) == {("学习", "v", "vn")}
    for bad in ("y\t学习\tv\n", "maybe\t学习\tv\tvn\n", "y\t学习\tv\tv\n"):
        path.write_text(bad)
        with pytest.raises(FormatError) as err:
            read_accepted_tags(path)
        assert "review.tsv:1" in str(err.value) or ":1" in str(err.value)


def test_plan_pools_every_disputed_tag_once(pos_run: Path) -> None:
    material = load_material(pos_run, "pos", "pos-review")
    keys = {tuple(k.split("\t")) for k in material.items}
    assert keys == set(ACCEPTS)
    plan = build_plan("pos-review", material, 3, 0)
    for judge in plan.judges:
        assert sorted(t.item for t in plan.of(judge)) == sorted(material.items)
        assert all(t.systems == () for t in plan.of(judge))
    shown = material.tags["学习\tv\tvn"]
    assert (shown.before, shown.after) == ("他在北京", "")  # the line's own text only


def test_reviewers_over_http_then_scores_before_and_after(pos_run: Path, tmp_path: Path) -> None:
    run = copy_run(pos_run, tmp_path)
    with serving(run, "pos", "pos-review", judges=3, seed=2) as (base, store):
        for n, token in enumerate(store.tokens().values(), 1):
            while True:
                status, view = call(base, "GET", f"/api/judge/{token}/next")
                assert status == 200
                if view["done"]:
                    break
                served = json.dumps(view, ensure_ascii=False)
                assert "tagger" not in served and "tagged-corpus" not in served
                assert view["test"] == "pos-review" and view["media"] == []
                # A malformed answer is refused with its reason, nothing stored.
                status, reply = call(
                    base, "POST", f"/api/judge/{token}/answer",
                    {"trial": view["trial"], "answer": {"accept": "yes"}},
                )  # fmt: skip
                assert status == 400 and "boolean" in reply["error"]
                body = {"trial": view["trial"], "answer": {"accept": _reviewer(n, view)}}
                status, reply = call(base, "POST", f"/api/judge/{token}/answer", body)
                assert status == 200, reply
        assert len(store.answers()) == 3 * len(ACCEPTS)

    review = tmp_path / "review.tsv"
    args = ("judge", str(run), "--test", "pos-review", "--task", "pos")
    assert onsite(*args, "--export", str(review))[0] == 0
    verdicts = {
        tuple(cols[1:4]): (cols[0], int(cols[4]), int(cols[5]))
        for cols in (line.split("\t") for line in review.read_text("utf-8").splitlines())
        if not cols[0].startswith("#")
    }
    assert verdicts == {k: ("y" if n >= 2 else "n", n, 3) for k, n in ACCEPTS.items()}

    # The panel's results: F before and after the review per system.
    code, out = onsite(*args, "--results", "--json")
    assert code == 0
    result = json.loads(out)
    rows = {r["system"]: r for r in result["tables"]["systems"]}
    # acme: 14 words, 3 tags disputed, all accepted; zenith: 5 disputed, 2 accepted.
    assert rows["acme-tagger"]["f"] == pytest.approx(11 / 14)
    assert rows["acme-tagger"]["f_tolerant"] == pytest.approx(1.0)
    assert rows["acme-tagger"]["accepted_tags"] == 3
    assert rows["zenith-tagger"]["f"] == pytest.approx(9 / 14)
    assert rows["zenith-tagger"]["f_tolerant"] == pytest.approx(11 / 14)
    assert rows["zenith-tagger"]["accepted_tags"] == 2
    assert result["agreement"][0]["measure"] == "accept"
    assert result["agreement"][0]["units"] == len(ACCEPTS)

    # `onsite score pos` over the run's job with the export equals the panel's figures,
    # and the strict figures equal the leaderboard's (`onsite score pos --run`, no review).
    for system, row in rows.items():
        job = ("score", "pos", "--run", str(run), "--task", "pos", "--system", system, "--json")
        code, strict = onsite(*job)
        assert code == 0
        code, tolerant = onsite(*job[:-1], "--accepted", str(review), "--json")
        assert code == 0
        strict_d, tolerant_d = json.loads(strict), json.loads(tolerant)
        assert strict_d["f"] == pytest.approx(row["f"])
        assert tolerant_d["f"] == pytest.approx(row["f_tolerant"])
        assert tolerant_d["f_before_review"] == pytest.approx(strict_d["f"])
        assert tolerant_d["accepted_tags"] == row["accepted_tags"]
        # Without --json both figures are printed.
        code, table = onsite(*job[:-1], "--accepted", str(review))
        assert code == 0 and "f_before_review" in table and "accepted_tags" in table

    # From files, as a reviewer's organizer would: the gold file and a system's output.
    test_file = tmp_path / "acme.pos"
    outputs = [
        json.loads(line)
        for line in (run / "outputs/pos/acme-tagger.jsonl").read_text("utf-8").splitlines()
    ]
    by_id = {o["id"]: o["output"]["text"] for o in outputs}
    test_file.write_text("".join(by_id[str(k)] + "\n" for k in range(1, 5)), "utf-8")
    gold_file = tmp_path / "gold.pos"
    gold_file.write_text("\n".join(GOLD) + "\n", encoding="utf-8")
    code, by_file = onsite(
        "score", "pos", "--gold", str(gold_file), "--test", str(test_file),
        "--accepted", str(review), "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(by_file)["f"] == pytest.approx(1.0)
    assert json.loads(by_file)["f_before_review"] == pytest.approx(11 / 14)

    # `onsite report` shows the panel with both figures.
    code, report = onsite("report", str(run))
    assert code == 0
    assert "pos / pos-review" in report and "f_tolerant" in report
