"""A participant's machine whose SFTP server hangs while its SSH sessions still work: the
staging failure names the cause, is the venue's (the item is sent again, nothing is
charged to the system), and inputs go through exec channels from then on (docs/ssh.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FAKE_SERVE, REPO, make_testset
from tests.sshd import start_sshd
from tests.test_ssh_site import ssh_site

pytestmark = pytest.mark.sshd

HUNG_SFTP = REPO / "tests" / "systems" / "hung_sftp.py"
FRAMES = [1600 + 160 * i for i in range(5)]


def test_a_hung_sftp_server_is_the_venues_failure_and_named(tmp_path: Path) -> None:
    flag = tmp_path / "hang-now"
    # sshd's own sftp-server behind a relay that stops answering once the flag exists.
    sshd = start_sshd(
        tmp_path / "sshd",
        sftp=False,
        extra=(f"Subsystem sftp {sys.executable} {HUNG_SFTP} {flag}",),
    )
    try:
        testset = make_testset(
            tmp_path / "set", [(f"u{i}", f, "hello") for i, f in enumerate(FRAMES)]
        )
        plan = {str(f): {"text": "hello", "delay": 0.2} for f in FRAMES}
        site = ssh_site(
            tmp_path / "site.toml",
            sshd,
            testset,
            {
                "fake": {
                    "device": "team0",
                    "command": FAKE_SERVE,
                    "env": {"FAKE_PLAN": json.dumps(plan)},
                }
            },
            budget={"seconds": 20, "hang_seconds": 30},
        )
        run = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", str(site)],
            cwd=REPO,
            env={**os.environ, "CI": "1", "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert run.stdout is not None
        lines = []
        for line in run.stdout:
            lines.append(line)
            # The server hangs once the system has answered its second item.
            if " u1: ok" in line:
                flag.write_text("hang\n")
        assert run.wait(timeout=120) == 0, "".join(lines)
    finally:
        sshd.stop()
    out = "".join(lines)
    assert "staging failed: the SFTP server at" in out, out
    assert "did not answer within 10 s while its SSH sessions did" in out, out
    assert "the venue's failure" in out, out

    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "ssh" / "journal.jsonl").read_text().splitlines()
    ]
    lost = [r for r in records if r["event"] == "link_lost"]
    assert len(lost) == 1 and lost[0]["item"] == "u2", lost
    assert lost[0]["failure_class"].startswith("venue"), lost[0]
    assert "SFTP server" in lost[0]["reason"], lost[0]
    # Nothing charged to the system: every item ok, the lost one sent again once; the
    # items after it staged through exec channels without waiting on the hung server.
    completed = [r for r in records if r["event"] == "completed"]
    assert {r["item"]: r["verdict"] for r in completed} == {f"u{i}": "ok" for i in range(5)}
    assert {r["item"]: r["attempt"] for r in completed}["u2"] == 2
    assert all(r["stage_seconds"] < 5 for r in completed), completed
