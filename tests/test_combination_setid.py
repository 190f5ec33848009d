"""A combination job is a task of its own under the CWMT naming rule: its set, its export and
its `mt-check` carry zh_en_news_combi, not the MT task's zh_en_news_trans (issue 29, item 8)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.combination_set import build_combination_set
from harness.errors import InputError
from scoring.cwmt_xml import combination_task_id, load_mt_file, read_xml, task_id
from tests.helpers import REPO, onsite, run_site, write_site

NBEST_MT = [sys.executable, "-m", "examples.systems.nbest_mt"]
BASELINE = [sys.executable, "-m", "examples.systems.text_baselines"]
CONSENSUS = [sys.executable, "-m", "examples.systems.consensus_combination"]
DOCS = {"d1": ["你好世界", "我们喜欢北京"], "d2": ["我们在北京", "你好上海"]}
REFS = {"d1": ["hello world", "we like beijing"], "d2": ["we are in beijing", "hello shanghai"]}
BUDGET = {"seconds": 20.0, "hang_seconds": 30.0}


def _xml(tag: str, docs: dict[str, list[str]], extra: str = "") -> str:
    body = "".join(
        f'<doc docid="{d}"{extra}>'
        + "".join(f'<s id="{n}">{t}</s>' for n, t in enumerate(segs, 1))
        + "</doc>\n"
        for d, segs in docs.items()
    )
    # The CWMT 2008 set id of the news translation task, as its source files carry it.
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{tag} setid="zh_en_news_trans" srclang="zh" tgtlang="en">\n{body}</{tag}>\n'
    )


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("mt")
    root = tmp / "set"
    root.mkdir()
    (root / "source.xml").write_text(_xml("srcset", DOCS), "utf-8")
    (root / "ref1.xml").write_text(_xml("refset", REFS, ' sysid="ref1"'), "utf-8")
    where = {"workdir": str(REPO)}
    site = write_site(
        tmp / "mt.toml",
        root,
        {"acme": {"command": NBEST_MT, **where}, "plainco": {"command": BASELINE, **where}},
        name="mtrun",
        task="zh_en_news_trans",
        task_keys={"kind": "mt"},
        budget=BUDGET,
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None, None]
    return run_dir


def test_task_ids_of_the_naming_rule() -> None:
    assert combination_task_id("zh_en_news_trans") == "zh_en_news_combi"
    assert combination_task_id("t1", "zh", "en") == "zh_en_t_combi"
    assert task_id("combo", "zh", "en", "combi") == "zh_en_combo_combi"
    assert task_id("zh_en_news_combi", "zh", "en") == "zh_en_news_combi"


def test_combination_export_passes_mt_check_under_its_own_task(
    mt_run: Path, tmp_path: Path
) -> None:
    combo = tmp_path / "combo"
    made = onsite("combination-set", str(mt_run), "--task", "zh_en_news_trans", "-o", str(combo))
    assert made.returncode == 0, made.stderr
    assert "set id zh_en_news_combi" in made.stdout
    key = json.loads((tmp_path / "combo.key.json").read_text("utf-8"))
    assert key["setid"] == "zh_en_news_combi"
    # Source and references as the MT set has them, apart from the set id.
    mt_set = mt_run.parent.parent / "set"
    for name in ("source.xml", "ref1.xml"):
        original = (mt_set / name).read_text("utf-8")
        assert (combo / name).read_text("utf-8") == original.replace(
            "zh_en_news_trans", "zh_en_news_combi"
        )
    for path in (combo / "candidates").iterdir():
        assert read_xml(path, "target").setid == "zh_en_news_combi"

    site = write_site(
        tmp_path / "combo.toml",
        combo,
        {"consensus": {"command": CONSENSUS, "workdir": str(REPO)}},
        name="comborun",
        task="zh_en_news_combi",
        task_keys={"kind": "combination"},
        budget=BUDGET,
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]

    # As a combination participant (or the organizer) submits it: named by the rule.
    named = tmp_path / "zh_en_news_combi-consensus-primary-consensus.xml"
    exported = onsite(
        "export", str(run_dir), "--task", "zh_en_news_combi", "--format", "cwmt-xml",
        "-o", str(named),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert load_mt_file(named, "target").setid == "zh_en_news_combi"
    check = onsite(
        "score", "mt-check", "--src", str(combo / "source.xml"), "--hyp", str(named), "--json"
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["ok"] is True
    by_run = onsite("score", "mt-check", "--run", str(run_dir), "--json")
    assert by_run.returncode == 0, by_run.stdout + by_run.stderr
    assert json.loads(by_run.stdout)["ok"] is True

    # Under the MT task's name the same file is refused, the name against the set id.
    wrong = tmp_path / "zh_en_news_trans-consensus-primary-consensus.xml"
    wrong.write_bytes(named.read_bytes())
    refused = onsite(
        "score", "mt-check", "--src", str(combo / "source.xml"), "--hyp", str(wrong), "--json"
    )
    assert refused.returncode == 1
    problems = [p["problem"] for p in json.loads(refused.stdout)["problems"]]
    assert any("file name says task 'zh_en_news_trans'" in p for p in problems), problems

    # The combination's references score it: BLEU from the file equals the live one.
    scored = onsite(
        "score", "mt", "--hyp", str(named), "--ref", str(combo / "ref1.xml"),
        "--src", str(combo / "source.xml"), "--metrics", "bleu", "--json",
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    live = onsite("score", "mt", "--run", str(run_dir), "--json")
    assert live.returncode == 0, live.stderr
    assert json.loads(scored.stdout)["bleu"] == pytest.approx(json.loads(live.stdout)["bleu"])


def test_setid_option(mt_run: Path, tmp_path: Path) -> None:
    made = build_combination_set(
        mt_run, "zh_en_news_trans", tmp_path / "a", seed=1, setid="zh_en_news_combo"
    )
    assert made.setid == "zh_en_news_combo"
    assert load_mt_file(tmp_path / "a" / "source.xml", "source").setid == "zh_en_news_combo"
    with pytest.raises(InputError, match="not a CWMT task id"):
        build_combination_set(mt_run, "zh_en_news_trans", tmp_path / "b", setid="Combi-1")
    assert not (tmp_path / "b").exists()


def test_plain_text_combination_export_is_named_as_a_combination(tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    (root / "source.txt").write_text("你好世界\n我们喜欢北京\n", "utf-8")
    (root / "ref1.txt").write_text("hello world\nwe like beijing\n", "utf-8")
    (root / "lang").write_text("en\n", "utf-8")
    where = {"workdir": str(REPO)}
    mt_site = write_site(
        tmp_path / "mt.toml",
        root,
        {"acme": {"command": NBEST_MT, **where}},
        name="mtplain",
        task="mt",
        task_keys={"kind": "mt"},
        budget=BUDGET,
    )
    mt_dir, _ = run_site(mt_site)
    combo = tmp_path / "combo"
    build_combination_set(mt_dir, "mt", combo, seed=0)
    assert (combo / "source.txt").read_bytes() == (root / "source.txt").read_bytes()
    site = write_site(
        tmp_path / "combo.toml",
        combo,
        {"consensus": {"command": CONSENSUS, **where}},
        name="comboplain",
        task="combo",
        task_keys={"kind": "combination"},
        budget=BUDGET,
    )
    run_dir, _ = run_site(site)
    by_run = onsite("score", "mt-check", "--run", str(run_dir), "--json")
    assert by_run.returncode == 0, by_run.stdout + by_run.stderr
    report = json.loads(by_run.stdout)
    assert report["ok"] is True
    [checked] = report["files"]
    assert Path(checked["path"]).name.startswith("xx_en_combo_combi-consensus-primary-")
