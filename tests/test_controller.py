"""The controller with scripted fake systems: protocol, verdicts, hangs, crashes, exec mode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from harness import read_journal
from tests.helpers import FAKE_EXEC, FAKE_SERVE, make_testset, read_outputs, run_site, write_site

# For the fakes that write what they saw to a file of the test's (the sandbox hides it).
UNSEALED = {"transport": "local", "sandbox": False}


def by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["id"]: row for row in rows}


def test_handshake_and_every_message(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "hello world"), ("u2", 3200, "b")])
    log = tmp_path / "messages.jsonl"
    env = plan_env({1600: {"text": "hello world"}, 3200: {"text": "x"}}, FAKE_LOG=str(log))
    # Unsealed: the fake reports what it received in a file the sandbox would hide.
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        device=UNSEALED,
    )
    run_dir, results = run_site(site)

    assert [r.failed for r in results] == [None]
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    ops = [m.get("op") for m in messages if "op" in m]
    assert ops == ["hello", "item", "item", "bye"]
    hello = next(m for m in messages if "op" in m)
    assert hello == {"op": "hello", "protocol": 1, "task": "asr", "kind": "asr"}
    items = [m for m in messages if m.get("op") == "item"]
    for item in items:
        audio = Path(item["input"]["audio"])
        assert audio.is_absolute()
        assert item["input"]["sample_rate"] == 16000
        # Anonymous: neither the item id nor the staged name reveals the test set's own names.
        assert "u1" not in item["id"] and "u2" not in item["id"]
        assert "u1" not in audio.name and "u2" not in audio.name
        assert not audio.exists(), "staged inputs are removed after the item"
    assert items[0]["id"] != items[1]["id"]

    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert outputs["u1"]["output"] == {"text": "hello world"}
    assert outputs["u1"]["verdict"] == "ok"
    assert outputs["u1"]["attempt"] == 1
    assert outputs["u1"]["budget_seconds"] == 5.0
    assert outputs["u1"]["rtf"] == pytest.approx(outputs["u1"]["seconds"] / 0.1)
    started = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "system_started"]
    assert started[0]["name"] == "fake" and started[0]["version"] == "1.0"
    assert started[0]["setup_seconds"] >= 0


def test_budget_verdicts_from_controllable_delays(tmp_path: Path, plan_env) -> None:
    testset = make_testset(
        tmp_path / "set", [("fast", 1600, "a"), ("slow", 3200, "a"), ("stuck", 4800, "a")]
    )
    env = plan_env({1600: {"delay": 0}, 3200: {"delay": 0.6}, 4800: {"do": "hang"}})
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        budget={"seconds": 0.3, "hang_seconds": 2.0},
    )
    run_dir, _ = run_site(site)
    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert outputs["fast"]["verdict"] == "ok"
    assert outputs["slow"]["verdict"] == "over_budget"
    assert outputs["slow"]["output"] == {"text": ""}, "late answers are kept and scored"
    assert outputs["stuck"]["verdict"] == "timeout"
    assert outputs["stuck"]["output"] is None


def test_realtime_factor_budget_scales_with_audio(tmp_path: Path, plan_env) -> None:
    # 0.5 s of audio at 2x real time allows 1.0 s; 0.1 s of audio allows 0.2 s.
    testset = make_testset(tmp_path / "set", [("long", 8000, "a"), ("short", 1600, "a")])
    env = plan_env({8000: {"delay": 0.5}, 1600: {"delay": 0.5}})
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        budget={"realtime_factor": 2.0, "hang_seconds": 10.0},
    )
    run_dir, _ = run_site(site)
    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert outputs["long"]["budget_seconds"] == pytest.approx(1.0)
    assert outputs["long"]["verdict"] == "ok"
    assert outputs["short"]["budget_seconds"] == pytest.approx(0.2)
    assert outputs["short"]["verdict"] == "over_budget"


def test_hung_system_and_its_children_are_killed_then_restarted(tmp_path: Path, plan_env) -> None:
    testset = make_testset(
        tmp_path / "set", [("a1", 1600, "x"), ("a2", 3200, "x"), ("a3", 4800, "x")]
    )
    pids = tmp_path / "pids"
    env = plan_env({3200: {"do": "hang"}, 4800: {"text": "after"}}, FAKE_CHILD_PID=str(pids))
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        budget={"seconds": 1.0, "hang_seconds": 1.5},
        device=UNSEALED,
    )
    run_dir, results = run_site(site)
    assert results[0].failed is None
    parent, child = (int(p) for p in pids.read_text().split())
    for pid in (parent, child):
        alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        assert not alive, f"process {pid} of the hung system survived"
    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert [outputs[i]["verdict"] for i in ("a1", "a2", "a3")] == ["ok", "timeout", "ok"]
    assert outputs["a3"]["output"] == {"text": "after"}
    events = [r["event"] for r in read_journal(run_dir / "journal.jsonl")]
    assert events.count("system_started") == 2
    assert "system_lost" in events


def test_crash_is_recorded_and_the_system_restarted(tmp_path: Path, plan_env) -> None:
    testset = make_testset(
        tmp_path / "set", [("c1", 1600, "x"), ("c2", 3200, "x"), ("c3", 4800, "x")]
    )
    env = plan_env({3200: {"do": "crash"}, 4800: {"text": "fine"}})
    site = write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE, "env": env}}
    )
    run_dir, _ = run_site(site)
    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert outputs["c2"]["verdict"] == "crashed"
    assert "exited with code 7" in outputs["c2"]["message"]
    assert "crashing on purpose" in outputs["c2"]["message"], "stderr tail is in the record"
    assert outputs["c3"]["verdict"] == "ok"
    log = (run_dir / "logs" / "asr" / "fake.log").read_text()
    assert "crashing on purpose" in log
    restarts = [
        r
        for r in read_journal(run_dir / "journal.jsonl")
        if r["event"] == "system_started" and r["restart"]
    ]
    assert len(restarts) == 1


@pytest.mark.parametrize(
    ("action", "verdict", "restarted"),
    [
        ("garbage", "invalid_output", True),
        ("wrong_id", "invalid_output", True),
        ("bad_output", "invalid_output", False),
        ("error", "error", False),
    ],
)
def test_bad_answers(tmp_path: Path, plan_env, action: str, verdict: str, restarted: bool) -> None:
    testset = make_testset(tmp_path / "set", [("b1", 1600, "x"), ("b2", 3200, "x")])
    env = plan_env({1600: {"do": action}, 3200: {"text": "next"}})
    site = write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE, "env": env}}
    )
    run_dir, _ = run_site(site)
    outputs = by_id(read_outputs(run_dir, "asr", "fake"))
    assert outputs["b1"]["verdict"] == verdict
    assert outputs["b1"]["message"]
    assert outputs["b2"] == outputs["b2"] | {"verdict": "ok", "output": {"text": "next"}}
    starts = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "system_started"]
    assert len(starts) == (2 if restarted else 1)


def test_system_that_cannot_start_fails_the_job_not_the_run(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("s1", 1600, "x")])
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "broken": {"command": FAKE_SERVE, "env": {"FAKE_START": "crash"}},
            "chatty": {"command": FAKE_SERVE, "env": {"FAKE_START": "garbage"}},
            "good": {"command": FAKE_SERVE},
        },
    )
    run_dir, results = run_site(site)
    failed = {r.system: r.failed for r in results}
    assert "fake: failing at start-up" in failed["broken"]
    assert "not a JSON line" in failed["chatty"]
    assert failed["good"] is None
    assert read_outputs(run_dir, "asr", "good")[0]["verdict"] == "ok"
    # Nothing was recorded for the broken systems' items: a re-run after a fix sends them.
    assert not (run_dir / "outputs" / "asr" / "broken.jsonl").read_text()


def test_setup_time_is_not_charged_to_items(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("s1", 1600, "x")])
    env = plan_env({}, FAKE_SETUP_SECONDS="0.5")
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        budget={"seconds": 0.3, "hang_seconds": 5, "setup_seconds": 10},
    )
    run_dir, _ = run_site(site)
    assert read_outputs(run_dir, "asr", "fake")[0]["verdict"] == "ok"
    start = next(
        r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "system_started"
    )
    assert start["setup_seconds"] >= 0.5


def test_setup_budget_is_enforced(tmp_path: Path) -> None:
    testset = make_testset(tmp_path / "set", [("s1", 1600, "x")])
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"slow": {"command": FAKE_SERVE, "env": {"FAKE_START": "hang"}}},
        budget={"seconds": 1, "setup_seconds": 0.5},
    )
    _, results = run_site(site)
    assert "setup_seconds=0.5" in (results[0].failed or "")


def test_exec_mode(tmp_path: Path, plan_env) -> None:
    testset = make_testset(
        tmp_path / "set",
        [
            ("e1", 1600, "x"),
            ("e2", 3200, "x"),
            ("e3", 4800, "x"),
            ("e4", 6400, "x"),
            ("e5", 8000, "x"),
            ("e6", 9600, "x"),
        ],
    )
    env = plan_env(
        {
            1600: {"text": "json answer"},
            3200: {"text": "plain answer", "do": "plain"},
            4800: {"do": "crash"},
            6400: {"do": "hang"},
            8000: {"do": "no_output"},
            9600: {"do": "latin1"},
        }
    )
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"once": {"command": FAKE_EXEC, "mode": "exec", "env": env}},
        budget={"seconds": 5, "hang_seconds": 1.5},
    )
    run_dir, results = run_site(site)
    assert results[0].failed is None
    outputs = by_id(read_outputs(run_dir, "asr", "once"))
    assert outputs["e1"]["output"] == {"text": "json answer"}
    assert outputs["e2"]["output"] == {"text": "plain answer"}
    assert outputs["e3"]["verdict"] == "crashed"
    assert "exited with code 4" in outputs["e3"]["message"]
    assert outputs["e4"]["verdict"] == "timeout"
    assert outputs["e5"]["verdict"] == "invalid_output"
    assert "no output file" in outputs["e5"]["message"]
    assert outputs["e6"]["verdict"] == "invalid_output"
    assert "not UTF-8" in outputs["e6"]["message"]
    assert outputs["e1"]["cpu_seconds"] > 0
    assert outputs["e1"]["peak_rss_bytes"] > 0


def test_resource_use_and_cpu_pinning(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("r1", 1600, "x")])
    log = tmp_path / "log.jsonl"
    # Longer than one clock tick: CPU time is read when such an item ends.
    env = plan_env({1600: {"delay": 0.05}}, FAKE_LOG=str(log))
    cpu = min(os.sched_getaffinity(0))
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        device={**UNSEALED, "cpus": [cpu]},
    )
    run_dir, _ = run_site(site)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"affinity": [cpu]} in logged
    row = read_outputs(run_dir, "asr", "fake")[0]
    assert row["cpu_seconds"] is not None and row["cpu_seconds"] >= 0
    assert row["peak_rss_bytes"] > 1_000_000


def test_limit_and_order(tmp_path: Path) -> None:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "x") for i in range(5)])
    site = write_site(tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE}})
    run_dir, results = run_site(site, limit=2)
    assert [r["id"] for r in read_outputs(run_dir, "asr", "fake")] == ["u0", "u1"]
    run_dir, _ = run_site(site)
    assert [r["id"] for r in read_outputs(run_dir, "asr", "fake")] == [f"u{i}" for i in range(5)]
