"""manifest.json: what a run ran on and with, so its numbers can be traced and checked.

Written by the controller at the start of each session (a resumed run rewrites
it). It holds the harness version; the SHA-256 of the site file, of every file
in each test set, of each system's command line and of the local files that
command names; seeds; the controller's hardware and software; and, per system,
the CWMT-style description (operating system, CPUs, memory) collected on the
controller for local systems. Execution time is not known at session start: the
report adds it from the journal.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import psutil

from harness.engine.integrity import combined_digest, sha256_file, testset_file_hashes
from harness.site import Site, transport
from harness.testsets import TestSet

MANIFEST_NAME = "manifest.json"
SCHEMA = 1
KEY_PACKAGES = (
    "onsite-eval",
    "numpy",
    "numba",
    "matplotlib",
    "pydantic",
    "psutil",
    "rich",
    "orjson",
    "soundfile",
    "paramiko",
    "pyserial",
)


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in KEY_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def controller_info() -> dict[str, Any]:
    """The controller machine's hardware and software."""
    return {
        "platform": platform.platform(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_count_physical": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": _package_versions(),
    }


def _command_files(command: list[str], workdir: Path) -> dict[str, str]:
    """Hashes of the local files a command line names: paths that exist, and `-m` modules.

    Cheap on purpose: only the arguments themselves are looked at, never what they import.
    """
    found: dict[str, str] = {}
    for i, arg in enumerate(command):
        candidates = []
        if i > 0 and command[i - 1] == "-m":
            module = Path(*arg.split("."))
            candidates = [workdir / f"{module}.py", workdir / module / "__main__.py"]
        elif "{" not in arg and not arg.startswith("-"):
            candidates = [workdir / Path(arg).expanduser()]
        for path in candidates:
            if path.is_file():
                found[arg] = sha256_file(path)
                break
    return found


def _system_info(site: Site, name: str, host: Mapping[str, Any]) -> dict[str, Any]:
    cfg = site.config.systems[name]
    device = site.config.devices[cfg.device]
    workdir = site.workdir(name)
    info: dict[str, Any] = {
        "device": cfg.device,
        "transport": device.transport,
        "description": cfg.description,
        "tasks": list(cfg.tasks),
        "mode": cfg.mode,
        "command": list(cfg.command),
        "command_sha256": sha256_text(json.dumps(cfg.command, ensure_ascii=False)),
    }
    facts = transport(device.transport).host_facts(site.device(cfg.device), host)
    files = _command_files(list(cfg.command), workdir) if facts.files_on_controller else {}
    info["files_sha256"] = files
    info["environment"] = dict(facts.environment)
    return info


def build_manifest(
    run_dir: Path,
    site: Site,
    testsets: Mapping[str, TestSet] | None = None,
    extra: Mapping[str, Any] | None = None,
    testset_hashes: Mapping[str, Mapping[str, str]] | None = None,
    audit_seed: int | None = None,
) -> dict[str, Any]:
    """The manifest as a dict (what `write_manifest` writes).

    ``testset_hashes`` (task -> file -> SHA-256) saves hashing the sets again when the
    controller has just done it; ``audit_seed`` is the run's audit seed, from the
    controller that drew (or replayed) it.
    """
    # Imported here: harness/__init__ may one day import this package.
    from harness import __version__

    extra = dict(extra or {})
    testsets = testsets or {}
    host = controller_info()
    sets: dict[str, Any] = {}
    for task in site.config.tasks:
        root = site.testset_path(task)
        if testset_hashes is not None and task in testset_hashes:
            files = dict(testset_hashes[task])
        else:
            files = testset_file_hashes(root, testsets.get(task))
        sets[task] = {"root": str(root), "sha256": combined_digest(files), "files": files}
    seeds = {"audit_seed": audit_seed} if audit_seed is not None else {}
    seeds |= dict(extra.pop("seeds", {}) or {})
    return {
        "schema": SCHEMA,
        "harness_version": __version__,
        "site": {"name": site.name, "path": str(site.path), "sha256": site.digest},
        "testsets": sets,
        "seeds": seeds,
        "controller": host,
        "systems": {name: _system_info(site, name, host) for name in site.config.systems},
        "extra": extra,
    }


def write_manifest(
    run_dir: Path,
    site: Site,
    testsets: Mapping[str, TestSet] | None = None,
    extra: Mapping[str, Any] | None = None,
    testset_hashes: Mapping[str, Mapping[str, str]] | None = None,
    audit_seed: int | None = None,
) -> Path:
    """Write ``<run_dir>/manifest.json`` (atomically) and return its path.

    ``extra`` is kept under "extra", except its "seeds" mapping, which joins the audit
    seed the controller gives.
    """
    run_dir = Path(run_dir)
    data = build_manifest(run_dir, site, testsets, extra, testset_hashes, audit_seed)
    path = run_dir / MANIFEST_NAME
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The run's manifest, or None when the run has none (written before manifests existed)."""
    path = Path(run_dir) / MANIFEST_NAME
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(
            f"{path}: not an onsite manifest of schema {SCHEMA}; "
            "rewrite it by resuming the run with this version of onsite"
        )
    return data


__all__ = [
    "MANIFEST_NAME",
    "build_manifest",
    "controller_info",
    "read_manifest",
    "sha256_file",
    "write_manifest",
]
