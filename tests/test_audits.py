"""Integrity audits: secretly shuffled order and hidden repeated items, judged and not scored."""

from __future__ import annotations

from pathlib import Path

from harness import leaderboard, load_asr_testset, load_site, read_journal
from harness.engine.audits import audit_lines, plan
from harness.site import Audit
from tests.helpers import FAKE_SERVE, make_testset, read_outputs, run_site, write_site

ITEMS = [(f"u{i}", 1600 + i, f"word{i}") for i in range(6)]


def audited_site(tmp_path: Path, plan_env, behaviour: dict, **audit: object) -> Path:
    testset = make_testset(tmp_path / "set", ITEMS)
    env = plan_env({1600 + i: {"text": f"word{i}", **behaviour} for i in range(6)})
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"audit": {"repeats": 2, "shuffle": True, **audit}},
    )
    return site


def dispatched(run_dir: Path) -> list[str]:
    return [
        r["item"] for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "dispatched"
    ]


def test_repeats_agree_and_are_excluded_from_scores(tmp_path: Path, plan_env) -> None:
    site = audited_site(tmp_path, plan_env, {"delay": 0.05})
    run_dir, _ = run_site(site)
    order = dispatched(run_dir)
    repeats = [i for i in order if "#audit" in i]
    assert len(repeats) == 2 and len(order) == 8
    for repeat in repeats:
        original = repeat.split("#audit")[0]
        assert order.index(original) < order.index(repeat)
    rows = {r["id"]: r for r in read_outputs(run_dir, "asr", "fake")}
    assert all(rows[r]["audit_of"] == r.split("#")[0] for r in repeats)
    [row] = leaderboard(run_dir)
    assert row.completed == 6 and row.score == 0.0, "repeats are not scored"
    records = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    audit = load_site(site).config.tasks["asr"].audit
    lines = audit_lines(records, audit)
    assert [line.passed for line in lines] == [True, True], lines


def test_caching_system_is_caught(tmp_path: Path, plan_env) -> None:
    site = audited_site(tmp_path, plan_env, {"delay": 0.3, "do": "cache"})
    run_dir, _ = run_site(site)
    records = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    agree, faster = audit_lines(records, load_site(site).config.tasks["asr"].audit)
    assert agree.passed and not faster.passed
    assert "2/2 took less than 0.5x" in faster.figure


def test_inconsistent_answers_are_caught(tmp_path: Path, plan_env) -> None:
    site = audited_site(tmp_path, plan_env, {"do": "random"})
    run_dir, _ = run_site(site)
    records = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    agree, _ = audit_lines(records, load_site(site).config.tasks["asr"].audit)
    assert not agree.passed and "0/2 agree" in agree.figure


def test_perturbed_repeats_use_a_different_file(tmp_path: Path, plan_env) -> None:
    site = audited_site(tmp_path, plan_env, {}, perturb=True)
    run_dir, _ = run_site(site)
    perturbed = list((run_dir / "audit").iterdir())
    assert len(perturbed) == 2
    originals = {p.read_bytes() for p in (tmp_path / "set").glob("*.wav")}
    assert all(p.read_bytes() not in originals for p in perturbed)
    records = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    # The answers to the perturbed copies agree with the originals. (The "faster" line
    # compares times of a system with no delay: noise on a loaded machine, not checked here;
    # test_caching_system_is_caught checks it.)
    agree, _ = audit_lines(records, Audit(repeats=2, perturb=True))
    assert agree.passed, agree.figure


def test_the_seed_is_drawn_once_and_reused_on_resume(tmp_path: Path, plan_env) -> None:
    site = audited_site(tmp_path, plan_env, {})
    run_dir, _ = run_site(site, limit=3)
    run_dir, _ = run_site(site)
    seeds = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "audit_seed"]
    assert len(seeds) == 1


def test_the_plan_is_a_function_of_the_seed(tmp_path: Path) -> None:
    items = load_asr_testset(make_testset(tmp_path / "set", ITEMS)).items
    audit = Audit(repeats=2, shuffle=True)
    a = [i.id for i in plan(items, audit, 42, tmp_path / "w")]
    b = [i.id for i in plan(items, audit, 42, tmp_path / "w")]
    c = [i.id for i in plan(items, audit, 43, tmp_path / "w")]
    assert a == b and a != c
    assert sorted(i for i in a if "#" not in i) == [f"u{n}" for n in range(6)]
