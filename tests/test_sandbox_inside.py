"""What a sealed system finds inside its sandbox (docs/security.md): a private writable
/dev/shm, so that multiprocessing works; and a sealed system its own user could never
start is refused by `onsite check` and `onsite run` before any system starts."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from runners import LocalServeRunner, Sandbox
from tests.helpers import REPO, make_testset, onsite, write_site
from tests.test_sandbox import Venue

pytestmark = pytest.mark.sandbox

HOSTILE = [sys.executable, str(REPO / "tests" / "systems" / "hostile.py")]


def test_a_sealed_system_can_use_multiprocessing_locks_in_its_own_dev_shm(
    tmp_path: Path,
) -> None:
    venue = Venue(tmp_path)
    # Something of the host's /dev/shm that the system must not see in its own.
    planted = Path("/dev/shm") / f"onsite-test-planted-{os.getpid()}"
    planted.write_text("host's\n")
    try:
        spec = venue.spec({"HOSTILE": "shm"}, Sandbox(scratch_bytes=8 << 20))
        with LocalServeRunner(spec) as runner:
            runner.start()
            attempt = runner.run_item(venue.request("u1", "a1"))
    finally:
        planted.unlink()
    assert attempt.outcome == "result", attempt.message
    assert attempt.output is not None
    shm = attempt.output["shm"]
    assert shm["lock"] == "ok", shm
    assert shm["queue"] == [1, 2, 3], shm
    # Private: empty at start (nothing of the host's), and bounded like its other RAM space.
    assert shm["seen"] == [], shm
    assert shm["fill_error"] == "No space left on device", shm
    assert shm["filled"] <= 8 << 20


def test_mountinfo_inside_names_no_host_path_of_the_site_the_run_or_the_system(
    tmp_path: Path,
) -> None:
    venue = Venue(tmp_path)
    spec = venue.spec({"HOSTILE": "mountinfo"})
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1"))
    assert attempt.outcome == "result", attempt.message
    assert attempt.output is not None
    mountinfo = attempt.output["mountinfo"]
    # The places that name the site, the run and the system: the workdir (the venue's
    # repository here, holding the site file and the runs), the site's directory, the
    # run directory and the system's stage directory, and the system's name.
    named = [venue.workdir, venue.site_dir, venue.run_dir, spec.stage_dir, venue.other]
    for path in named:
        assert str(path) not in mountinfo, (path, mountinfo)
    assert str(tmp_path) not in mountinfo, mountinfo
    assert spec.name not in mountinfo, mountinfo
    # The workdir is there all the same, at a neutral path, its hidden paths still hidden.
    lines = mountinfo.splitlines()
    assert any(line.split()[4] == "/onsite/work" for line in lines), mountinfo
    assert any(line.split()[4] == "/onsite/in" for line in lines), mountinfo


def test_the_workdir_is_at_a_neutral_path_with_its_hidden_paths_still_hidden(
    tmp_path: Path,
) -> None:
    venue = Venue(tmp_path)
    (venue.workdir / "model.bin").write_text("weights\n")
    spec = venue.spec({"HOSTILE": "snoop", "HOSTILE_WANTED": "model.bin"})
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1"))
    assert attempt.outcome == "result", attempt.message
    assert attempt.output is not None
    found = attempt.output["found"]
    # Its own files are there; the run and the site, inside the same directory, are not.
    assert "/onsite/work/model.bin" in found, found
    assert not [p for p in found if p.endswith(("journal.jsonl", "site.toml", "run.json"))]
    assert attempt.output["cwd"] == "/onsite/work", attempt.output


def _sealed_site(tmp_path: Path, workdir: Path) -> Path:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "hello"), ("u2", 3200, "world")])
    return write_site(
        tmp_path / "site.toml",
        testset,
        {"alpha": {"command": ["python", "fake_system.py"], "workdir": str(workdir)}},
        device={"transport": "local", "sandbox": True},
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root controller runs systems as others")
@pytest.mark.parametrize("unreadable", ["workdir", "command"])
def test_an_unreadable_workdir_is_refused_before_any_system_starts(
    tmp_path: Path, unreadable: str
) -> None:
    workdir = tmp_path / "systems" / "alpha"
    workdir.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "systems" / "fake_system.py", workdir)
    site = _sealed_site(tmp_path, workdir)
    target = workdir if unreadable == "workdir" else workdir / "fake_system.py"
    target.chmod(0o750 if unreadable == "workdir" else 0o600)

    for command in ("check", "run"):
        began = time.monotonic()
        done = onsite(command, str(site))
        took = time.monotonic() - began
        out = done.stdout + done.stderr
        assert done.returncode == 2, out
        assert f"[systems.alpha.{unreadable}]" in out, out
        assert str(target) in out and "not readable by others" in out, out
        fix = "chmod -R o+rX" if unreadable == "workdir" else "chmod o+r"
        assert f"Fix: {fix} {target}" in out, out
        # Refused at once: no start tried, nothing restarted.
        assert "system lost" not in out and "restarting" not in out, out
        assert "ready" not in out, out
        assert took < 60
    # `onsite run` refused before it made the run: no journal, so nothing to resume.
    assert not (tmp_path / "runs" / "t" / "journal.jsonl").exists()

    # Fixed as told, both run.
    target.chmod(0o755 if unreadable == "workdir" else 0o644)
    done = onsite("run", str(site))
    assert done.returncode == 0, done.stdout + done.stderr
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "t" / "journal.jsonl").read_text().splitlines()
    ]
    assert sum(r["event"] == "completed" for r in records) == 2
