"""MT n-best lists collected from a finished run into a combination set, and a combination run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import leaderboard, load_site, task_kind
from harness.combination_set import build_combination_set
from harness.errors import InputError
from scoring.cwmt_write import TargetCandidate, TargetEntry, tgtset_xml
from scoring.cwmt_xml import load_mt_file, read_xml
from tests.helpers import REPO, onsite, read_outputs, run_site, write_site

NBEST_MT = [sys.executable, "-m", "examples.systems.nbest_mt"]
BASELINE = [sys.executable, "-m", "examples.systems.text_baselines"]
CONSENSUS = [sys.executable, "-m", "examples.systems.consensus_combination"]
DOCS = {
    "d1": ["你好世界", "我们喜欢北京", "他在上海"],
    "d2": ["我们在北京", "你好上海"],
}
REFS = {
    "d1": ["hello world", "we like beijing", "he is in shanghai"],
    "d2": ["we are in beijing", "hello shanghai"],
}
# The names the run gives the systems, and what they call themselves: none may
# appear in the combination set.
NAMES = ("acme-good", "plainco", "brokenco", "nbest-mt", "text-baselines")


def xml_set(root: Path, tag: str, docs: dict[str, list[str]], extra: str = "") -> str:
    body = "".join(
        f'<doc docid="{d}"{extra}>'
        + "".join(f'<s id="{n}">{t}</s>' for n, t in enumerate(segs, 1))
        + "</doc>\n"
        for d, segs in docs.items()
    )
    return f'<{tag} setid="t1" srclang="zh" tgtlang="en">\n{body}</{tag}>\n'


def mt_set(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "source.xml").write_text(xml_set(root, "srcset", DOCS), "utf-8")
    (root / "ref1.xml").write_text(xml_set(root, "refset", REFS, ' sysid="ref1"'), "utf-8")
    return root


def mt_site(tmp_path: Path, root: Path) -> Path:
    where = {"workdir": str(REPO)}
    return write_site(
        tmp_path / "mt.toml",
        root,
        {
            "acme-good": {"command": NBEST_MT, **where},
            "plainco": {"command": BASELINE, **where},
            "brokenco": {"command": NBEST_MT, "env": {"NBEST_MT_UNSORTED": "1"}, **where},
        },
        name="mtrun",
        task="mt",
        task_keys={"kind": "mt"},
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("mt")
    run_dir, results = run_site(mt_site(tmp, mt_set(tmp / "set")))
    assert [r.failed for r in results] == [None, None, None]
    return run_dir


def test_nbest_is_kept_in_the_run_outputs(mt_run: Path) -> None:
    good = read_outputs(mt_run, "mt", "acme-good")
    assert {r["verdict"] for r in good} == {"ok"}
    assert all(len(r["output"]["nbest"]) == 3 for r in good)


def test_combination_set_then_a_combination_run_scored_by_bleu(
    mt_run: Path, tmp_path: Path
) -> None:
    combo = tmp_path / "combo"
    made = onsite("combination-set", str(mt_run), "--task", "mt", "-o", str(combo), "--seed", "7")
    assert made.returncode == 0, made.stderr
    key = json.loads((tmp_path / "combo.key.json").read_text("utf-8"))
    assert sorted(key["systems"]) == ["sys01", "sys02", "sys03"]
    assert sorted(key["systems"].values()) == ["acme-good", "brokenco", "plainco"]
    assert not (combo / "combo.key.json").exists()
    # The MT test set's source and references, unchanged but for the combination's set
    # id (the MT set's "t1" has no CWMT form: zh_en_t_combi), apart from the candidates.
    for name in ("source.xml", "ref1.xml"):
        original = (mt_run.parent.parent / "set" / name).read_text("utf-8")
        copied = (combo / name).read_text("utf-8")
        assert copied == original.replace('setid="t1"', 'setid="zh_en_t_combi"')
    anon = {real: a for a, real in key["systems"].items()}
    for path in sorted((combo / "candidates").iterdir()):
        text = path.read_text("utf-8")
        assert not any(name in text for name in NAMES), path
        target = read_xml(path, "target")
        assert target.system is not None and target.system.sysid == path.stem
        assert [(s.doc_id, s.seg_id) for s in target.segments] == [
            ("d1", "1"),
            ("d1", "2"),
            ("d1", "3"),
            ("d2", "1"),
            ("d2", "2"),
        ]
    good = read_xml(combo / "candidates" / f"{anon['acme-good']}.xml", "target")
    for seg in good.segments:
        scores = [c.score for c in seg.candidates]
        assert scores == [-1.0, -2.5, -9.0] and seg.score == -1.0
        assert seg.candidates[0].text == seg.text
    # No n-best list: the 1-best alone, as a single candidate with no score.
    plain = read_xml(combo / "candidates" / f"{anon['plainco']}.xml", "target")
    assert [len(s.candidates) for s in plain.segments] == [1] * 5
    assert all(
        s.candidates[0].text == s.text and s.candidates[0].score is None for s in plain.segments
    )
    assert plain.segments[0].text == "hello world"
    # Every answer invalid: empty segments, and the system is left out of the input.
    broken = read_xml(combo / "candidates" / f"{anon['brokenco']}.xml", "target")
    assert all(s.text == "" and not s.candidates for s in broken.segments)

    site = write_site(
        tmp_path / "combo.toml",
        combo,
        {"consensus": {"command": CONSENSUS, "workdir": str(REPO)}},
        name="comborun",
        task="combo",
        task_keys={"kind": "combination"},
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )
    testset = task_kind("combination").load(combo, load_site(site).config.tasks["combo"])
    first = testset.items[0]
    assert first.id == "d1:1" and first.fields["text"] == "你好世界"
    # The input is the source and the candidates: no reference goes to the system.
    assert set(first.fields) == {"text", "lang", "candidates"}
    assert [c["system"] for c in first.fields["candidates"]] == sorted(
        [anon["acme-good"], anon["plainco"]]
    )

    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    outputs = {r["id"]: r for r in read_outputs(run_dir, "combo", "consensus")}
    assert {r["verdict"] for r in outputs.values()} == {"ok"}
    for item in testset.items:
        offered = {c["text"] for s in item.fields["candidates"] for c in s["nbest"]}
        assert outputs[item.id]["output"]["text"] in offered
    [row] = leaderboard(run_dir)
    assert row.metric == "bleu" and row.score is not None
    assert set(row.scores) <= {
        "bleu",
        "bleu_precisions",
        "hyp_len",
        "ref_len",
        "lang",
        "n_refs",
        "n_segments",
    }

    # The same outputs scored offline by `onsite score mt`: the same BLEU.
    source = load_mt_file(combo / "source.xml", "source")
    hyp = tgtset_xml(
        [
            TargetEntry(s.doc_id, s.seg_id, outputs[f"{s.doc_id}:{s.seg_id}"]["output"]["text"])
            for s in source.segments
        ],
        setid="zh_en_t_combi",
        srclang="zh",
        tgtlang="en",
        site="consensus",
        sysid="consensus",
        description="consensus pick",
    )
    (tmp_path / "hyp.xml").write_text(hyp, "utf-8")
    offline = onsite(
        "score",
        "mt",
        "--hyp",
        str(tmp_path / "hyp.xml"),
        "--ref",
        str(combo / "ref1.xml"),
        "--src",
        str(combo / "source.xml"),
        "--json",
    )
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["bleu"] == pytest.approx(row.score, abs=1e-12)


def test_an_unfinished_mt_run_is_refused(tmp_path: Path) -> None:
    site = mt_site(tmp_path, mt_set(tmp_path / "set"))
    run_dir, _ = run_site(site, limit=2)
    with pytest.raises(InputError) as err:
        build_combination_set(run_dir, "mt", tmp_path / "combo")
    message = str(err.value)
    assert "not finished" in message and "acme-good (2 of 5 items)" in message
    assert not (tmp_path / "combo").exists()
    failed = onsite("combination-set", str(run_dir), "--task", "mt", "-o", str(tmp_path / "c"))
    assert failed.returncode == 2 and "onsite run SITE" in failed.stderr


def test_wrong_task_and_a_used_directory_are_refused(mt_run: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no task 'nope'"):
        build_combination_set(mt_run, "nope", tmp_path / "a")
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("keep me", "utf-8")
    with pytest.raises(InputError, match="not empty"):
        build_combination_set(mt_run, "mt", used)
    with pytest.raises(InputError, match="inside the set"):
        build_combination_set(mt_run, "mt", tmp_path / "b", key_path=tmp_path / "b" / "key.json")


def test_the_anonymous_order_is_random_unless_seeded(mt_run: Path, tmp_path: Path) -> None:
    a = build_combination_set(mt_run, "mt", tmp_path / "a", seed=1).systems
    b = build_combination_set(mt_run, "mt", tmp_path / "b", seed=1).systems
    assert a == b
    orders = {
        tuple(build_combination_set(mt_run, "mt", tmp_path / f"r{n}").systems.values())
        for n in range(12)
    }
    assert len(orders) > 1


def test_tgtset_writer_escapes_and_reads_back(tmp_path: Path) -> None:
    entries = [
        TargetEntry(
            "d<1>",
            "1",
            "a & b < c",
            0.5,
            (TargetCandidate("a & b < c", 0.5), TargetCandidate('"q"', -1e-300)),
        ),
        TargetEntry("d<1>", "2", ""),
    ]
    path = tmp_path / "t.xml"
    path.write_text(
        tgtset_xml(
            entries, setid="s", srclang="zh", tgtlang="en", site="x", sysid="x", description="d"
        ),
        "utf-8",
    )
    read = read_xml(path, "target")
    first = read.segments[0]
    assert (first.doc_id, first.text, first.score) == ("d<1>", "a & b < c", 0.5)
    assert [(c.text, c.score) for c in first.candidates] == [("a & b < c", 0.5), ('"q"', -1e-300)]
    assert read.segments[1].text == "" and not read.segments[1].candidates


def test_combination_test_set_errors(tmp_path: Path, mt_run: Path) -> None:
    combo = tmp_path / "combo"
    build_combination_set(mt_run, "mt", combo, seed=3)
    site = write_site(
        tmp_path / "s.toml",
        combo,
        {"c": {"command": CONSENSUS}},
        task="c",
        task_keys={"kind": "combination"},
    )
    cfg = load_site(site).config.tasks["c"]
    first = sorted((combo / "candidates").iterdir())[0]
    first.write_text(first.read_text("utf-8").replace('docid="d2"', 'docid="d9"'), "utf-8")
    from harness import TestSetError

    with pytest.raises(TestSetError, match="d9"):
        task_kind("combination").load(combo, cfg)
    for path in (combo / "candidates").iterdir():
        path.unlink()
    with pytest.raises(TestSetError, match="no candidate lists"):
        task_kind("combination").load(combo, cfg)


def test_check_output() -> None:
    check = task_kind("combination").check_output
    assert check({"text": "x"}) is None
    problem: Any = check({"candidates": []})
    assert problem and '"text" string' in problem


def test_a_plain_text_mt_set_and_a_single_system(tmp_path: Path) -> None:
    """A plain source.txt: the candidates mirror it as the reader numbers it (document
    "source.txt", segments by line), and one system's list combines to its translation."""
    demo_mt = REPO / "site_config" / "data" / "demo-text" / "mt"
    site = write_site(
        tmp_path / "mt.toml",
        demo_mt,
        {"only": {"command": NBEST_MT, "workdir": str(REPO)}},
        task="mt",
        task_keys={"kind": "mt"},
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )
    run_dir, _ = run_site(site)
    made = build_combination_set(run_dir, "mt", tmp_path / "combo", seed=0)
    assert made.systems == {"sys01": "only"} and made.segments == 2
    assert sorted(p.name for p in (tmp_path / "combo").iterdir()) == [
        "candidates",
        "lang",
        "ref1.txt",
        "source.txt",
    ]
    target = read_xml(tmp_path / "combo" / "candidates" / "sys01.xml", "target")
    assert [(s.doc_id, s.seg_id) for s in target.segments] == [
        ("source.txt", "1"),
        ("source.txt", "2"),
    ]
    combo_site = write_site(
        tmp_path / "combo.toml",
        tmp_path / "combo",
        {"consensus": {"command": CONSENSUS, "workdir": str(REPO)}},
        name="c",
        task="combo",
        task_keys={"kind": "combination"},
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )
    combo_run, _ = run_site(combo_site)
    mt_out = {r["id"]: r["output"]["text"] for r in read_outputs(run_dir, "mt", "only")}
    combined = {r["id"]: r["output"]["text"] for r in read_outputs(combo_run, "combo", "consensus")}
    assert combined == mt_out
    [mt_row] = leaderboard(run_dir)
    [combo_row] = leaderboard(combo_run)
    assert combo_row.score == mt_row.score
