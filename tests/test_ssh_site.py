"""Sites with `ssh` devices, run by the controller against a real sshd on 127.0.0.1."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

from harness import Controller, RunStore, load_site, read_journal
from harness.report import build_report, html_text
from tests.conftest import FAKE_SERVE, REPO, make_testset, read_outputs, toml_value
from tests.sshd import Sshd
from tests.test_cli import onsite

DEMO_SET = REPO / "site_config" / "data" / "demo-asr"
SPHINX_FAST = [sys.executable, "-m", "examples.systems.sphinx_asr", "--fast"]


def ssh_site(
    path: Path,
    sshd: Sshd,
    testset: Path,
    systems: dict[str, dict[str, Any]],
    devices: int = 1,
    budget: dict[str, Any] | None = None,
) -> Path:
    """A site with `devices` ssh devices (all this sshd), a local device, one ASR task."""
    lines = ["[site]", 'name = "ssh"', "", "[devices.local]", 'kind = "local"', ""]
    for n in range(devices):
        options = sshd.options(workdir=str(path.parent / f"remote{n}"))
        lines.append(f"[devices.team{n}]")
        lines.append('kind = "ssh"')
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


def test_connection_killed_mid_run_recovers_exactly_once(
    tmp_path: Path, sshd: Sshd, plan_env
) -> None:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "x") for i in range(8)])
    env = plan_env({1600 + i: {"delay": 0.25, "text": f"t{i}"} for i in range(8)})
    site = ssh_site(
        tmp_path / "site.toml",
        sshd,
        testset,
        {"fake": {"device": "team0", "command": FAKE_SERVE, "env": env}},
        budget={"seconds": 5, "hang_seconds": 10},
    )
    journal = tmp_path / "runs" / "ssh" / "journal.jsonl"

    def cut_when_busy() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = sum(1 for r in read_journal(journal) if r["event"] == "completed")
            if done >= 3:
                time.sleep(0.1)  # somewhere inside an item
                for proc in psutil.Process(sshd.process.pid).children():
                    proc.kill()  # every session's sshd: the link drops, the server stays
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
    assert any(r["attempt"] == 2 for r in rows), "the item in flight is sent again"


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
