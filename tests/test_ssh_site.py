"""Sites with `ssh` devices, run by the controller against a real sshd on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness import Controller, RunStore, load_site, read_journal
from harness.report import build_report, html_text
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, read_outputs, toml_value
from tests.netns import remote_machine
from tests.sshd import Sshd

pytestmark = pytest.mark.sshd

DEMO_SET = REPO / "site_config" / "data" / "demo-asr"
SPHINX_FAST = [sys.executable, "-m", "examples.systems.sphinx_asr", "--fast"]


def ssh_site(
    path: Path,
    sshd: Sshd,
    testset: Path,
    systems: dict[str, dict[str, Any]],
    devices: int = 1,
    budget: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A site with `devices` ssh devices (all this sshd), a local device, one ASR task."""
    lines = ["[site]", 'name = "ssh"', "", "[devices.local]", 'transport = "local"', ""]
    for n in range(devices):
        options = sshd.options(workdir=str(path.parent / f"remote{n}"), **(extra or {}))
        lines.append(f"[devices.team{n}]")
        lines.append('transport = "ssh"')
        lines.extend(f"{k} = {toml_value(v)}" for k, v in options.items())
        lines.append("")
    lines += [
        "[tasks.asr]",
        'kind = "asr"',
        f"testset = {toml_value(str(testset))}",
        f"budget = {toml_value(budget or {'realtime_factor': 20.0, 'hang_seconds': 60})}",
        "",
    ]
    for name, cfg in systems.items():
        lines.append(f"[systems.{name}]")
        lines.extend(f"{k} = {toml_value(v)}" for k, v in ({"tasks": ["asr"]} | cfg).items())
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run(site_path: Path, limit: int | None = None) -> Path:
    site = load_site(site_path)
    store = RunStore(site.run_dir, "t", 0)
    try:
        store.keep_site_copy(site.path, site.root)
        results = Controller(site, store, limit=limit).run()
    finally:
        store.close()
    assert all(r.failed is None for r in results), results
    return site.run_dir


def test_demo_asr_over_ssh_gives_the_local_outputs(tmp_path: Path, sshd: Sshd) -> None:
    env = {"PYTHONPATH": str(REPO)}
    site = ssh_site(
        tmp_path / "site.toml",
        sshd,
        DEMO_SET,
        {
            "here": {"device": "local", "command": SPHINX_FAST, "workdir": str(REPO)},
            "there": {"device": "team0", "command": SPHINX_FAST, "env": env},
        },
    )
    run_dir = run(site, limit=3)
    local = {r["id"]: r for r in read_outputs(run_dir, "asr", "here")}
    remote = {r["id"]: r for r in read_outputs(run_dir, "asr", "there")}
    assert list(local) == list(remote) == ["s01_clean", "s01_snr15", "s01_snr5"]
    for item in local:
        assert remote[item]["output"] == local[item]["output"]
        assert remote[item]["verdict"] == "ok"
        assert remote[item]["round_trip_seconds"] is not None
    assert not list((tmp_path / "remote0").glob("*.flac")), "staged inputs left on the remote"
    # The report shows the remote system's processing time beside the link's round trip.
    assert "link round trip measured around the items" in html_text(build_report(run_dir))


def test_cable_pulled_mid_run_recovers_exactly_once(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "x") for i in range(8)])
    env = plan_env({1600 + i: {"delay": 0.25, "text": f"t{i}"} for i in range(8)})
    journal = tmp_path / "runs" / "ssh" / "journal.jsonl"
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        site = ssh_site(
            tmp_path / "site.toml",
            machine.sshd,
            testset,
            {"fake": {"device": "team0", "command": FAKE_SERVE, "env": env}},
            budget={"seconds": 20, "hang_seconds": 30},
            extra={"link_timeout": 2.0},
        )

        def cut_when_busy() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = sum(1 for r in read_journal(journal) if r["event"] == "completed")
                if done >= 3:
                    time.sleep(0.1)  # somewhere inside an item
                    machine.pull_cable()
                    time.sleep(5.0)
                    machine.plug_cable()
                    return
                time.sleep(0.02)

        cutter = threading.Thread(target=cut_when_busy)
        cutter.start()
        run_dir = run(site)
        cutter.join()
    rows = read_outputs(run_dir, "asr", "fake")
    assert Counter(r["id"] for r in rows) == Counter(f"u{i}" for i in range(8))
    assert all(r["verdict"] == "ok" and r["output"] == {"text": f"t{r['id'][1:]}"} for r in rows)
    events = [r["event"] for r in read_journal(journal)]
    assert "link_lost" in events
    again = [r for r in rows if r["attempt"] == 2]
    assert again, "the item in flight is sent again"
    assert all(r["resent"] == 1 and r["lost_seconds"] > 0 for r in again)


def test_eight_concurrent_ssh_systems(tmp_path: Path, sshd: Sshd, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "x") for i in range(4)])
    env = plan_env({1600 + i: {"delay": 0.1, "text": "ok"} for i in range(4)})
    systems = {
        f"team{n}-sys": {"device": f"team{n}", "command": FAKE_SERVE, "env": env} for n in range(8)
    }
    site = ssh_site(tmp_path / "site.toml", sshd, testset, systems, devices=8)
    run_dir = run(site)
    spans = []
    for name in systems:
        rows = read_outputs(run_dir, "asr", name)
        assert sorted(r["id"] for r in rows) == [f"u{i}" for i in range(4)]
        assert all(r["verdict"] == "ok" for r in rows)
    for r in read_journal(run_dir / "journal.jsonl"):
        if r["event"] == "completed":
            spans.append((r["sent"], r["done"]))
    # Concurrency, shown by behaviour: some items of different systems were in flight together.
    assert any(a0 < b1 and b0 < a1 for i, (a0, a1) in enumerate(spans) for b0, b1 in spans[i + 1 :])


def test_check_probes_ssh_devices(tmp_path: Path, sshd: Sshd) -> None:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x")])
    site = ssh_site(
        tmp_path / "site.toml",
        sshd,
        testset,
        {"fake": {"device": "team0", "command": FAKE_SERVE}},
    )
    check = onsite("check", str(site), "--items", "1")
    assert check.returncode == 0, check.stdout + check.stderr
    for probe in ("reachable", "host key", "authentication", "remote command", "free disk"):
        assert probe in check.stdout
    text = site.read_text().replace(sshd.host_key_line, sshd.host_key_line[:-8] + "AAAAAAAA")
    site.write_text(text)
    check = onsite("check", str(site), "--items", "1")
    assert check.returncode == 1
    assert "host key" in check.stdout and "FAILED" in check.stdout


def test_check_fails_when_the_remote_workdir_is_not_writable(tmp_path: Path, sshd: Sshd) -> None:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x")])
    site = ssh_site(
        tmp_path / "site.toml",
        sshd,
        testset,
        {"fake": {"device": "team0", "command": FAKE_SERVE}},
    )
    # Root ignores permission bits; a directory under a regular file cannot be made by anyone.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    workdir = blocker / "onsite"
    site.write_text(site.read_text().replace(str(tmp_path / "remote0"), str(workdir)))
    check = onsite("check", str(site), "--items", "1")
    assert check.returncode == 1, check.stdout + check.stderr
    flat = " ".join(check.stdout.split())
    assert "workdir" in flat and "FAILED" in flat
    assert "not writable" in flat


def test_kill9_of_onsite_run_then_resume_leaves_nothing_of_the_old_session(
    tmp_path: Path, sshd: Sshd
) -> None:
    """A real `onsite run` is killed with SIGKILL while its SSH system runs an item, with the
    link frozen so that sshd on the machine keeps the old channel open; the resumed run kills
    the old system (and its child) and removes its staged input before sending anything."""
    testset = make_testset(tmp_path / "set", [("a", 1600, "x"), ("b", 3200, "y")])
    pids = tmp_path / "pids"
    env = {
        "FAKE_PLAN": json.dumps({"1600": {"do": "hang"}, "3200": {"text": "y"}}),
        "FAKE_CHILD_PID": str(pids),
    }
    site = ssh_site(
        tmp_path / "site.toml",
        sshd,
        testset,
        {"fake": {"device": "team0", "command": FAKE_SERVE, "env": env}},
        budget={"realtime_factor": 1000.0, "hang_seconds": 8},
    )
    remote = tmp_path / "remote0"
    first = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "CI": "1"},
    )
    frozen: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text().strip()):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        system_pid, child_pid = (int(p) for p in pids.read_text().split())
        staged = list(remote.glob(".onsite/*/*/*-audio.wav"))
        assert len(staged) == 1
        ports = [
            c.laddr.port
            for c in psutil.Process(first.pid).net_connections(kind="tcp")
            if c.raddr and c.raddr.port == sshd.port
        ]
        frozen = [p for port in ports for p in sshd.session_processes(port)]
        assert frozen
        for proc in frozen:
            proc.suspend()
        first.kill()
        first.wait()
        time.sleep(3.0)  # past the wrapper's grace: the frozen channel keeps everything alive
        assert psutil.pid_exists(system_pid) and psutil.pid_exists(child_pid)
        assert staged[0].exists()

        resumed = onsite("run", str(site))
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    finally:
        first.kill()
        for proc in frozen:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    for pid in (system_pid, child_pid):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert not staged[0].exists()
    records = read_journal(load_site(site).run_dir / "journal.jsonl")
    starts = [r for r in records if r["event"] == "system_started"]
    assert starts[0]["pid"] == system_pid, "the remote session id is journaled"
    assert all(isinstance(r["pid"], int) for r in starts)
    assert not list(remote.rglob("*.wav")), "nothing staged is left on the machine"
