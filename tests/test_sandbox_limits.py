"""A sealed system's limits are its own (docs/security.md, "Limits"): its writable space is
a bounded RAM file system, never the run directory's disk; its memory and its processes
are capped by a control group of its own (or per-process limits where none can be made);
and a system that exhausts its own limits harms no other system."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import runners.cgroups as cgroups
from harness import load_site
from runners import LocalServeRunner, Sandbox
from runners.sandbox import AUTO_UID_BASE
from tests.helpers import REPO, make_testset, read_outputs, run_site, toml_value
from tests.test_sandbox import Venue

pytestmark = pytest.mark.sandbox

HOSTILE = [sys.executable, str(REPO / "tests" / "systems" / "hostile.py")]
MiB = 1 << 20


@pytest.fixture
def venue(tmp_path: Path) -> Venue:
    return Venue(tmp_path)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_filling_the_scratch_space_stops_at_its_limit_not_the_run_disk(venue: Venue) -> None:
    spec = venue.spec(
        {"HOSTILE": "fill", "HOSTILE_FILL_BYTES": str(64 * MiB)},
        Sandbox(scratch_bytes=8 * MiB),
    )
    before = shutil.disk_usage(venue.run_dir).used
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1"))
    assert attempt.outcome == "result", attempt.message
    assert attempt.output is not None
    written, errors = attempt.output["written"], attempt.output["errors"]
    for place in ("/onsite/home", "/onsite/tmp", "/tmp", "/onsite/out"):
        assert written[place] <= 8 * MiB, f"{place} took more than its limit"
        assert errors[place] == "No space left on device", errors
    # Nothing of it went to the run directory's disk.
    assert _du(venue.run_dir) < MiB
    assert shutil.disk_usage(venue.run_dir).used - before < 8 * MiB


def test_a_system_over_its_memory_limit_is_killed_and_told_so(venue: Venue) -> None:
    spec = venue.spec(
        {"HOSTILE": "hog", "HOSTILE_HOG_BYTES": str(1 << 30)},
        Sandbox(memory_bytes=96 * MiB),
    )
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1", hang=60))
    assert attempt.outcome == "crashed", attempt.message
    assert attempt.output is None
    if cgroups._parents() is not None:
        assert "out of memory" in attempt.message and "96 MiB" in attempt.message


def test_without_a_control_group_the_memory_limit_is_per_process(
    venue: Venue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cgroups, "_parents", lambda: None)
    spec = venue.spec(
        {"HOSTILE": "hog", "HOSTILE_HOG_BYTES": str(1 << 30)},
        Sandbox(memory_bytes=256 * MiB),
    )
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1", hang=60))
    # RLIMIT_AS: the allocation fails inside the system, which dies of it.
    assert attempt.outcome == "crashed", attempt.message
    assert "MemoryError" in attempt.message


def _two_device_site(tmp_path: Path, limits: dict[str, object]) -> Path:
    testset = make_testset(tmp_path / "set", [(f"u{n}", 1600, "x") for n in range(4)])
    (tmp_path / "sys").mkdir()
    device = {"transport": "local", **limits}
    lines = [
        "[site]",
        'name = "two"',
        'runs = "runs"',
        "[devices.a]",
        *(f"{k} = {toml_value(v)}" for k, v in device.items()),
        "[devices.b]",
        *(f"{k} = {toml_value(v)}" for k, v in device.items()),
        "[tasks.asr]",
        'kind = "asr"',
        f"testset = {json.dumps(str(testset))}",
        "budget = { seconds = 20.0, hang_seconds = 30.0 }",
    ]
    for name, device_name, env in (
        ("hoarder", "a", {"HOSTILE": "forkbomb", "HOSTILE_FORKS": "2000"}),
        ("victim", "b", {"HOSTILE": "helpers", "HOSTILE_HELPERS": "8"}),
    ):
        lines += [
            f"[systems.{name}]",
            f'device = "{device_name}"',
            'tasks = ["asr"]',
            'workdir = "sys"',
            f"command = {toml_value(HOSTILE)}",
            f"env = {toml_value(env)}",
        ]
    path = tmp_path / "site.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "rlimits"])
def test_one_system_exhausting_its_processes_does_not_harm_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: bool
) -> None:
    if os.geteuid() != 0:
        pytest.skip("users of their own are a root controller's")
    if not cgroup:
        monkeypatch.setattr(cgroups, "_parents", lambda: None)
    run_dir, results = run_site(_two_device_site(tmp_path, {"max_processes": 64}))
    assert [r.failed for r in results] == [None, None]
    hoarded = read_outputs(run_dir, "asr", "hoarder")
    assert hoarded[0]["output"]["refused"] > 0, "the hoarder met its own limit"
    victim = read_outputs(run_dir, "asr", "victim")
    assert [row["verdict"] for row in victim] == ["ok"] * 4, victim
    assert all(row["output"]["helpers"] == 8 for row in victim)
    # Each a user of its own: neither can signal the other or count against its limit.
    uids = {hoarded[0]["output"]["uid"], victim[0]["output"]["uid"]}
    assert len(uids) == 2 and min(uids) >= AUTO_UID_BASE


def test_limits_are_read_from_the_device(tmp_path: Path) -> None:
    site = load_site(
        _two_device_site(
            tmp_path, {"memory_limit": "512M", "scratch_limit": "64MiB", "max_processes": 100}
        )
    )
    sandbox = site.device("a").sandbox_settings((), 7)
    assert sandbox.memory_bytes == 512 * MiB
    assert sandbox.scratch_bytes == 64 * MiB
    assert sandbox.max_processes == 100
    assert sandbox.uid == 7 and sandbox.user is None


@pytest.mark.parametrize(
    ("value", "said"), [("lots", "cannot read 'lots' as a size"), ("1M", "at least 16 MiB")]
)
def test_a_bad_limit_names_the_key_and_the_fix(tmp_path: Path, value: str, said: str) -> None:
    from harness.errors import InputError

    with pytest.raises(InputError) as refused:
        load_site(_two_device_site(tmp_path, {"memory_limit": value}))
    text = str(refused.value)
    assert "memory_limit" in text and said in text
