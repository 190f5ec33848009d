"""harness.engine.manifest: hashes, seeds, controller and system descriptions."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import psutil

from harness import load_site
from harness.engine.manifest import MANIFEST_NAME, read_manifest, write_manifest
from tests.helpers import FAKE_SERVE, REPO, make_testset, write_site


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_site(tmp_path: Path) -> Path:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "a"), ("u2", 3200, "b")])
    path = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "local-sys": {"command": FAKE_SERVE},
            "module-sys": {
                "command": ["python", "-m", "tests.systems.fake_system", "--flag"],
                "workdir": str(REPO),
            },
        },
        device={"transport": "local", "cpus": [0]},
    )
    # A participant's machine: nothing there is collected by the controller.
    path.write_text(
        path.read_text()
        + '\n[devices.team]\ntransport = "ssh"\nhost = "10.0.0.7"\nuser = "eval"\n'
        + '\n[systems.remote]\ndevice = "team"\ntasks = ["asr"]\ncommand = ["/opt/r/run"]\n',
        encoding="utf-8",
    )
    return path


def test_manifest_hashes_seeds_and_descriptions(tmp_path: Path) -> None:
    site = load_site(make_site(tmp_path))
    run_dir = tmp_path / "run"
    # The controller hands its audit seed over; the manifest never reads the journal.
    path = write_manifest(
        run_dir, site, None, {"seeds": {"shuffle": 7}, "operator": "Li"}, audit_seed=1234
    )
    assert path == run_dir / MANIFEST_NAME
    manifest = read_manifest(run_dir)
    assert manifest == json.loads(path.read_text())

    assert manifest["schema"] == 1
    assert manifest["harness_version"]
    assert manifest["site"]["sha256"] == sha(site.path)
    files = manifest["testsets"]["asr"]["files"]
    root = tmp_path / "set"
    assert files == {name: sha(root / name) for name in ("text", "u1.wav", "u2.wav")}
    assert len(manifest["testsets"]["asr"]["sha256"]) == 64
    assert manifest["seeds"] == {"audit_seed": 1234, "shuffle": 7}
    assert manifest["extra"] == {"operator": "Li"}

    host = manifest["controller"]
    assert host["python"] == platform.python_version()
    assert host["memory_bytes"] == psutil.virtual_memory().total
    assert host["cpu_count"] >= 1 and host["cpu_model"]
    assert host["packages"]["numpy"] and host["packages"]["pydantic"]

    local = manifest["systems"]["local-sys"]
    command_sha = hashlib.sha256(json.dumps(FAKE_SERVE).encode()).hexdigest()
    assert local["command_sha256"] == command_sha
    script = REPO / "tests" / "systems" / "fake_system.py"
    assert local["files_sha256"][str(script)] == sha(script)
    assert local["files_sha256"][sys.executable] == sha(Path(sys.executable))
    env = local["environment"]
    assert env["cpus"] == [0] and env["cpu_count"] == 1, "pinned CPUs are the system's CPUs"
    assert env["os"] == host["os"] and env["memory_bytes"] == host["memory_bytes"]

    module = manifest["systems"]["module-sys"]
    assert module["files_sha256"] == {"tests.systems.fake_system": sha(script)}

    remote = manifest["systems"]["remote"]
    assert remote["transport"] == "ssh" and remote["files_sha256"] == {}
    assert remote["environment"] == {"collected": "not collected (remote device)"}


def test_manifest_is_the_same_when_nothing_changed_and_tracks_edits(tmp_path: Path) -> None:
    site = load_site(make_site(tmp_path))
    first = write_manifest(tmp_path / "run", site).read_bytes()
    assert write_manifest(tmp_path / "run", site).read_bytes() == first
    (tmp_path / "set" / "text").write_text("u1 changed\nu2 b\n")
    again = read_manifest(tmp_path / "run")
    write_manifest(tmp_path / "run", site)
    changed = read_manifest(tmp_path / "run")
    assert changed["testsets"]["asr"]["sha256"] != again["testsets"]["asr"]["sha256"]


def test_read_manifest_of_a_run_without_one(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None
