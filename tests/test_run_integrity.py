"""A run stays what it was configured as: one controller, the same site and test set on
resume, outputs that are copies of the journal, a full disk that stops cleanly, and the
venue's failures kept apart from the participant's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness import Controller, RunStore, leaderboard, load_site, read_journal
from harness.engine import integrity
from harness.engine.integrity import HashCache, SiteChanged
from harness.report.verdicts import judge_job
from runners import ItemAttempt, ItemRequest, LocalServeRunner, Runner
from tests.helpers import FAKE_SERVE, REPO, make_testset, read_outputs, run_site, write_site

ITEMS = 6


def onsite(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "CI": "1"},
    )


def small_site(
    tmp_path: Path, plan_env, delay: float = 0.0, text: str = "out", repeat: int = 1, **keys
) -> Path:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "out") for i in range(ITEMS)])
    plan = {1600 + i: {"delay": delay, "text": text, "repeat": repeat} for i in range(ITEMS)}
    return write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
        **keys,
    )


def test_fresh_while_a_run_is_in_progress_is_refused(tmp_path: Path, plan_env) -> None:
    # Slow enough that the first controller is still at work whatever the machine's load.
    site = small_site(tmp_path, plan_env, delay=5.0)
    run_dir = tmp_path / "runs" / "t"
    first = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "CI": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        journal = run_dir / "journal.jsonl"
        while time.monotonic() < deadline:
            if journal.exists() and any(r["event"] == "dispatched" for r in read_journal(journal)):
                break
            time.sleep(0.05)
        second = onsite("run", str(site), "--fresh")
        assert second.returncode != 0
        assert "in use by another onsite controller" in second.stderr
        # Nothing was moved aside: the running controller's directory is where it was.
        assert sorted(p.name for p in run_dir.parent.iterdir()) == ["t"]
        assert first.poll() is None, "the first controller is still running, undisturbed"
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    assert first.returncode == 130


def test_fresh_after_a_run_moves_it_aside(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    assert onsite("run", str(site)).returncode == 0
    again = onsite("run", str(site), "--fresh")
    assert again.returncode == 0, again.stderr
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert names[0] == "t" and names[1].startswith("t-") and len(names) == 2


def test_changed_budget_is_refused_on_resume_unless_accepted(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    assert onsite("run", str(site), "--limit", "3").returncode == 0
    text = site.read_text(encoding="utf-8")
    site.write_text(text.replace("seconds = 5.0,", "seconds = 0.01,"), encoding="utf-8")
    refused = onsite("run", str(site))
    assert refused.returncode == 2
    assert "budget.seconds: 5.0 -> 0.01" in refused.stderr
    assert "--fresh" in refused.stderr and "--accept-site-change" in refused.stderr
    run_dir = tmp_path / "runs" / "t"
    # Nothing ran under the new budget.
    assert len(read_outputs(run_dir, "asr", "fake")) == 3
    accepted = onsite("run", str(site), "--accept-site-change")
    assert accepted.returncode == 0, accepted.stderr
    records = list(read_journal(run_dir / "journal.jsonl"))
    changes = [r for r in records if r["event"] == "site_change_accepted"]
    assert len(changes) == 1 and "budget.seconds: 5.0 -> 0.01" in changes[0]["changes"][0]
    assert len(read_outputs(run_dir, "asr", "fake")) == ITEMS
    # Accepted once: the next resume needs no flag.
    assert onsite("run", str(site)).returncode == 0


def test_a_changed_test_set_file_is_named_and_refused(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    assert onsite("run", str(site), "--limit", "2").returncode == 0
    # Same ids, different audio: the kind of change nobody would notice in the scores.
    soundfile.write(tmp_path / "set" / "u1.wav", np.ones(1601, dtype=np.int16), 16000, "PCM_16")
    refused = onsite("run", str(site))
    assert refused.returncode == 2
    assert "u1.wav" in refused.stderr and "test set changed" in refused.stderr


def test_outputs_of_finished_jobs_are_rebuilt_at_start(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    assert onsite("run", str(site)).returncode == 0
    out = tmp_path / "runs" / "t" / "outputs" / "asr" / "fake.jsonl"
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text(lines[0] + "\n" + lines[0] + "\n", encoding="utf-8")
    assert onsite("run", str(site)).returncode == 0
    rebuilt = read_outputs(tmp_path / "runs" / "t", "asr", "fake")
    assert sorted(r["id"] for r in rebuilt) == [f"u{i}" for i in range(ITEMS)]


def test_stage_is_emptied_at_start(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    stage = tmp_path / "runs" / "t" / "stage" / "fake"
    stage.mkdir(parents=True)
    (stage / "leftover-audio.wav").write_bytes(b"x")
    assert onsite("run", str(site)).returncode == 0
    assert not (stage / "leftover-audio.wav").exists()


def test_item_ids_and_paths_that_leave_the_test_set_are_refused(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env)
    soundfile.write(tmp_path / "outside.wav", np.zeros(1600, dtype=np.int16), 16000, "PCM_16")
    text = tmp_path / "set" / "text"
    text.write_text(text.read_text(encoding="utf-8") + "../outside secret\n", encoding="utf-8")
    store = RunStore(tmp_path / "runs" / "t", "s1")
    try:
        controller = Controller(load_site(site), store)
        testset = controller.testset("asr")
    finally:
        store.close()
    assert "../outside" not in {i.id for i in testset.items}
    assert any(bad.id == "../outside" for bad in testset.invalid)


@pytest.mark.parametrize(
    ("budget", "needle"),
    [
        ("budget = { seconds = 1.0, hang_seconds = inf }", "finite"),
        ("budget = { seconds = 1.0, hang_seconds = 5 }\nsample_rates = []", "at least one"),
    ],
)
def test_site_values_that_cannot_work_are_refused_with_a_fix(
    tmp_path: Path, plan_env, budget: str, needle: str
) -> None:
    site = small_site(tmp_path, plan_env)
    text = site.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.startswith("budget = ")]
    at = lines.index("[tasks.asr]") + 1
    lines[at:at] = budget.splitlines()
    site.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = onsite("check", str(site))
    assert result.returncode == 2
    assert needle in result.stderr and "Fix:" in result.stderr


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs as root)")
def test_a_full_disk_stops_the_run_cleanly_and_it_resumes(tmp_path: Path, plan_env) -> None:
    # 120 kB per answer: the journal and the outputs fill 1 MB after a few items.
    site = small_site(tmp_path, plan_env, text="w ", repeat=60_000)
    runs = tmp_path / "small-disk"
    _mount_tmpfs(runs, "1m")
    try:
        full = onsite("run", str(site), "--runs", str(runs))
        assert full.returncode == 1, full.stderr
        assert "disk is full" in full.stderr and "run the same command to resume" in full.stderr
        assert "Traceback" not in full.stderr
        subprocess.run(["mount", "-o", "remount,size=64m", str(runs)], check=True)
        resumed = onsite("run", str(site), "--runs", str(runs))
        assert resumed.returncode == 0, resumed.stderr
        outputs = read_outputs(runs / "t", "asr", "fake")
        assert Counter(r["id"] for r in outputs) == Counter(f"u{i}" for i in range(ITEMS))
        events = [r["event"] for r in read_journal(runs / "t" / "journal.jsonl")]
        assert "session_finished" in events
    finally:
        subprocess.run(["umount", "-l", str(runs)], check=False)


def test_sigint_while_systems_start_ends_without_a_traceback(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("u0", 1600, "x")])
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"slow": {"command": FAKE_SERVE, "env": plan_env({}, FAKE_SETUP_SECONDS="30")}},
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CI": "1"},
    )
    journal = tmp_path / "runs" / "t" / "journal.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
        journal.exists() and any(r["event"] == "session_started" for r in read_journal(journal))
    ):
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err
    events = [r["event"] for r in read_journal(journal)]
    assert events[-1] == "session_interrupted"


class _LinkFlaky(Runner):
    """A real local system whose link 'drops' on the first two sends (the venue's fault)."""

    def __init__(self, inner: LocalServeRunner) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.drops = 2

    def start(self):  # type: ignore[no-untyped-def]
        return self.inner.start()

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        if self.drops:
            self.drops -= 1
            now = time.monotonic()
            return ItemAttempt(
                request.anon_id, "crashed", now, now, 0.0, message="link lost", link_lost=True
            )
        return self.inner.run_item(request)

    def stop(self) -> None:
        self.inner.stop()

    def kill(self) -> None:
        self.inner.kill()


def test_lost_links_are_the_venues_failure_not_the_participants(
    tmp_path: Path, plan_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.engine.controller as controller_module

    real_open = controller_module.open_runner

    def flaky_open(kind, options, spec):  # type: ignore[no-untyped-def]
        runner = real_open(kind, options, spec)
        assert isinstance(runner, LocalServeRunner)
        return _LinkFlaky(runner)

    monkeypatch.setattr(controller_module, "open_runner", flaky_open)
    site_path = small_site(tmp_path, plan_env)
    site = load_site(site_path)
    store = RunStore(site.run_dir, "s1")
    try:
        store.keep_site_copy(site.path, site.root)
        Controller(site, store).run()
    finally:
        store.close()
    (row,) = leaderboard(site.run_dir)
    assert row.restarts == 0 and row.venue_failures == 2
    assert row.completed == ITEMS and row.crashes == 0
    verdict = judge_job(row)
    assert verdict.valid
    assert any(line.rule.startswith("venue failures: ") for line in verdict.lines)
    starts = [
        r for r in read_journal(site.run_dir / "journal.jsonl") if r["event"] == "system_started"
    ]
    assert [r.get("cause") for r in starts] == [None, "venue", "venue"]
    dispatches = [
        r["attempt"]
        for r in read_journal(site.run_dir / "journal.jsonl")
        if r["event"] == "dispatched" and r["item"] == "u0"
    ]
    assert dispatches == [1, 2, 3]
    assert json.loads((site.run_dir / "manifest.json").read_text())["testsets"]["asr"]["files"]


CHEATER = [sys.executable, str(REPO / "tests" / "systems" / "cheater.py")]


@pytest.mark.sandbox
@pytest.mark.parametrize("sealed", [True, False])
def test_a_system_hunting_for_references_earns_only_what_it_recognizes(
    tmp_path: Path, sealed: bool
) -> None:
    """Through `onsite run`, as a participant would try it: sealed, the cheater finds
    nothing and its WER is 100%; unsealed, the same system reads the journal and the
    test set and scores 0% (which is why `sandbox = false` marks a run unsealed)."""
    testset = make_testset(
        tmp_path / "set", [(f"u{i}", 1600 + i, f"word{i} other{i}") for i in range(4)]
    )
    device = {"transport": "local", "sandbox": sealed}
    site = write_site(
        tmp_path / "site.toml", testset, {"cheater": {"command": CHEATER}}, device=device
    )
    result = onsite("run", str(site))
    assert result.returncode == 0, result.stderr
    (row,) = leaderboard(tmp_path / "runs" / "t")
    assert row.completed == 4
    if sealed:
        assert row.score == 1.0, "the sealed cheater found references"
        assert not row.unsealed
    else:
        assert row.score == 0.0, "the unsealed cheater should have found the references"
        assert row.unsealed
        assert not judge_job(row).valid


def test_the_cached_test_set_check_sees_every_kind_of_change(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("a", 1600, "x"), ("b", 1601, "y")])
    cache = HashCache()
    first = integrity.testset_file_hashes(root, None, cache)
    assert first == integrity.testset_file_hashes(root, None)  # the cache changes no answer
    assert integrity.testset_file_hashes(root, None, cache) == first
    # Same size, same bytes count, modification time set back: the status-change time moved.
    wav = root / "a.wav"
    before = wav.stat()
    data = bytearray(wav.read_bytes())
    data[-1] ^= 0xFF
    wav.write_bytes(bytes(data))
    os.utime(wav, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = integrity.testset_file_hashes(root, None, cache)
    assert changed["a.wav"] != first["a.wav"] and changed["b.wav"] == first["b.wav"]
    # Replaced by another file (a new inode) with the first one's bytes: the same hash again.
    other = tmp_path / "other.wav"
    other.write_bytes(bytes(data[:-1]) + bytes([data[-1] ^ 0xFF]))
    os.replace(other, wav)
    assert integrity.testset_file_hashes(root, None, cache) == first
    (root / "c.txt").write_text("new")
    assert "c.txt" in integrity.testset_file_hashes(root, None, cache)


def test_a_test_set_changed_during_a_job_stops_the_run(tmp_path: Path, plan_env) -> None:
    site = small_site(tmp_path, plan_env, delay=0.3)
    wav = tmp_path / "set" / "u3.wav"

    def tamper() -> None:
        deadline = time.monotonic() + 60
        journal = tmp_path / "runs" / "t" / "journal.jsonl"
        while time.monotonic() < deadline:
            if journal.exists() and any(r["event"] == "dispatched" for r in read_journal(journal)):
                break
            time.sleep(0.02)
        data = bytearray(wav.read_bytes())
        data[-1] ^= 0xFF
        wav.write_bytes(bytes(data))

    thread = threading.Thread(target=tamper)
    thread.start()
    try:
        with pytest.raises(SiteChanged) as stopped:
            run_site(site)
    finally:
        thread.join()
    assert "u3.wav" in str(stopped.value) and "content changed" in str(stopped.value)
    records = read_journal(tmp_path / "runs" / "t" / "journal.jsonl")
    changed = [r for r in records if r["event"] == "testset_changed"]
    assert len(changed) == 1 and "content changed" in changed[0]["changes"][0], changed
