"""An SSH device that does not answer: the job waits for it (live in the console and in
`onsite status`) while other devices go on, resumes when it comes up, or is skipped."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from harness import Controller, RunStore, load_site
from harness.engine.controller import DEVICE_DOWN
from tests.console_run import (
    TOKEN,
    call,
    fake,
    job_status,
    journal,
    start_run,
    two_device_site,
    wait_for,
)
from tests.helpers import REPO, read_outputs
from tests.sshd import Sshd, start_sshd

pytestmark = pytest.mark.sshd

ENDS = ("start_failed", "job_failed", "job_skipped", "job_finished")


def _down_machine(root: Path) -> Sshd:
    """An sshd's keys and port, with the server stopped: a participant machine that is off."""
    server = start_sshd(root)
    server.stop()
    return server


def _waiting(url: str, system: str, tries: int = 1) -> dict:
    return wait_for(
        lambda: (
            (j := job_status(url, system))["state"] == "waiting_for_device"
            and j["device_wait"]["tries"] >= tries
            and j
        ),
        timeout=60,
    )


def test_waits_for_a_device_that_does_not_answer_and_resumes_when_it_comes_up(
    tmp_path: Path, plan_env
) -> None:
    machine = _down_machine(tmp_path / "box")
    items = 10
    site = two_device_site(
        tmp_path,
        {
            "alpha": fake(plan_env, delay=0.02, device="box"),
            "beta": fake(plan_env, delay=0.3, device="local"),
        },
        box=machine.options(workdir=str(tmp_path / "remote"), first_connect_timeout=1.0),
        items=items,
    )
    run = start_run(site)
    server: Sshd | None = None
    try:
        job = _waiting(run.url, "alpha", tries=2)
        wait = job["device_wait"]
        assert f"cannot reach 127.0.0.1:{machine.port}" in wait["last_error"]
        assert 0 <= wait["next_try_in_seconds"] <= 30 and wait["down_seconds"] >= 0
        assert job["completed"] == 0 and job["in_flight"] is None
        # A device that is down blocks nobody else: the local job goes on meanwhile.
        wait_for(lambda: job_status(run.url, "beta")["completed"] >= 2, timeout=60)
        assert job_status(run.url, "alpha")["state"] == "waiting_for_device"
        shown = subprocess.run(
            [sys.executable, "-m", "harness.cli", "status", str(run.run_dir)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CI": "1", "COLUMNS": "400"},
        )
        row = next(line for line in shown.stdout.splitlines() if "alpha" in line)
        assert "waiting_for_device (next try in" in row and "cannot reach" in row, shown.stdout
        # The machine comes back (same keys, same port): the job resumes by itself.
        server = start_sshd(tmp_path / "box", port=machine.port)
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
        if server is not None:
            server.stop()
    records = journal(run.run_dir)
    waits = [r for r in records if r["event"] == "device_waiting"]
    assert len(waits) >= 2
    assert [w["tries"] for w in waits] == list(range(1, len(waits) + 1))
    assert [w["next_try_seconds"] for w in waits[:2]] == [1.0, 2.0]
    assert all(w["device"] == "box" and w["failure_class"] == "venue" for w in waits)
    assert all(w["next_try_wall"] > w["wall"] for w in waits)
    # Waiting is nobody's start failure: no start try was used, nothing failed.
    alpha = [r["event"] for r in records if r.get("system") == "alpha" and r["event"] in ENDS]
    assert alpha == ["job_finished"]
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    sent = Counter(
        r["item"] for r in records if r["event"] == "dispatched" and r["system"] == "alpha"
    )
    assert set(sent.values()) == {1}


def test_the_operator_skips_a_device_that_stays_down(tmp_path: Path, plan_env) -> None:
    machine = _down_machine(tmp_path / "box")
    site = two_device_site(
        tmp_path,
        {
            "alpha": fake(plan_env, delay=0.02, device="box"),
            "beta": fake(plan_env, delay=0.2, device="local"),
        },
        box=machine.options(workdir=str(tmp_path / "remote"), first_connect_timeout=1.0),
        items=8,
    )
    run = start_run(site)
    try:
        _waiting(run.url, "alpha")
        skip = run.url + "/api/devices/box/skip"
        assert call(skip, "POST")[0] == 401
        assert not [r for r in journal(run.run_dir) if r["event"] == "operator_action"]
        # A job that is waiting has not failed: there is nothing to retry.
        status, body = call(run.url + "/api/jobs/asr/alpha/retry", "POST", TOKEN)
        assert status == 409 and "has not failed" in body["error"]
        assert call(skip, "POST", TOKEN)[0] == 200
        wait_for(lambda: job_status(run.url, "alpha")["state"] == "skipped", timeout=30)
        assert run.wait() == 1
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert "job asr / alpha skipped by the operator" in "\n".join(run.lines)
    records = journal(run.run_dir)
    alpha = [r for r in records if r.get("system") == "alpha" and r["event"] in ENDS]
    assert [(r["event"], r["reason"]) for r in alpha] == [("job_skipped", "operator")]
    beta = [r["event"] for r in records if r.get("system") == "beta" and r["event"] in ENDS]
    assert beta == ["job_finished"]
    assert not [r for r in records if r["event"] == "dispatched" and r["system"] == "alpha"]


def test_a_device_down_past_device_wait_seconds_leaves_its_jobs_for_the_next_session(
    tmp_path: Path, plan_env
) -> None:
    machine = _down_machine(tmp_path / "box")
    site_path = two_device_site(
        tmp_path,
        {
            "alpha": fake(plan_env, delay=0.0, device="box"),
            "gamma": fake(plan_env, delay=0.0, device="box"),
        },
        box=machine.options(workdir=str(tmp_path / "remote"), first_connect_timeout=1.0),
        items=3,
        site_keys={"device_wait_seconds": 2.5},
    )

    def session() -> list:
        site = load_site(site_path)
        store = RunStore(site.run_dir, "t", 0)
        try:
            return Controller(site, store).run()
        finally:
            store.close()

    results = session()
    assert [(r.system, r.failed) for r in results] == [
        ("alpha", DEVICE_DOWN),
        ("gamma", DEVICE_DOWN),
    ]
    records = journal(site_path.parent / "runs" / "t")
    downs = [r for r in records if r["event"] == "device_down"]
    assert [d["system"] for d in downs] == ["alpha", "gamma"]
    assert downs[0]["down_seconds"] >= 2.5 - 0.2 and downs[0]["tries"] >= 3
    # The next job on a device already given up is not waited for again.
    assert downs[1]["tries"] == 1
    ends = [(r["system"], r["event"], r.get("reason")) for r in records if r["event"] in ENDS]
    assert ends == [
        ("alpha", "job_skipped", "device_down"),
        ("gamma", "job_skipped", "device_down"),
    ]
    assert all(r["failure_class"] == "venue" for r in records if r["event"] == "job_skipped")

    # The next session, with the machine up, runs both jobs whole.
    server = start_sshd(tmp_path / "box", port=machine.port)
    try:
        results = session()
    finally:
        server.stop()
    assert [(r.system, r.failed) for r in results] == [("alpha", None), ("gamma", None)]
    for system in ("alpha", "gamma"):
        outputs = read_outputs(site_path.parent / "runs" / "t", "asr", system)
        assert sorted(o["id"] for o in outputs) == ["u00", "u01", "u02"]


def test_a_session_stopped_while_waiting_leaves_the_job_as_it_was(tmp_path: Path, plan_env) -> None:
    machine = _down_machine(tmp_path / "box")
    site_path = two_device_site(
        tmp_path,
        {"alpha": fake(plan_env, delay=0.0, device="box")},
        box=machine.options(workdir=str(tmp_path / "remote"), first_connect_timeout=1.0),
        items=2,
    )
    site = load_site(site_path)
    store = RunStore(site.run_dir, "t", 0)
    controller = Controller(site, store)
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            controller.run()
        except BaseException as exc:  # noqa: BLE001 - the main thread looks at it
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        wait_for(lambda: any(r["event"] == "device_waiting" for r in journal(site.run_dir)))
        controller.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "a waiting job ends at once when the session stops"
    finally:
        controller.stop()
        thread.join(timeout=30)
        store.close()
    assert [type(e) for e in outcome] == [KeyboardInterrupt]
    records = journal(site.run_dir)
    assert not [r for r in records if r["event"] in ENDS], "neither failed nor skipped"
