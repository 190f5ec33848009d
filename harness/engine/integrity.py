"""What keeps a run honest across sessions: the test set is what it was, and each job runs
under the settings its completed items ran under.

The first session journals the SHA-256 of every test-set file (``testset_hashes``) and
each job's effective settings (``job_settings``). Every later session start, and the end
of every job, checks the files again; a resumed session compares each job's settings.
A difference stops the run with the list of what changed, unless the operator accepts it
(``--accept-site-change``), which is journaled and shown in the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import InputError, Problem
from harness.kinds.registry import task_kind
from harness.media import frames_cache_root
from harness.site import Site
from harness.testsets import InvalidItem, TestSet

_CHUNK = 1 << 20


class SiteChanged(InputError):
    """A resumed run's site or test set differs from what its completed items ran under."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    return _sha256_read(os.fspath(path), os.stat(path).st_size)


# What identifies one version of a file without reading it: device, inode, size, and the
# modification and status-change times in nanoseconds. Any write changes the status-change
# time, which no unprivileged program can set back.
Signature = tuple[int, int, int, int, int]


class HashCache:
    """SHA-256 of files already read, reused while a file's stat signature is unchanged.

    The controller hashes every test-set file at the start and checks them again at the
    end of every job; with this cache the check reads only files whose signature moved
    (as git's index and rsync decide what changed), so its cost is a stat per file, not a
    read of the whole set for every job.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[Signature, str]] = {}

    def sha256(self, path: str) -> str | None:
        """The file's hex SHA-256, or None when it is not a regular file."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None  # never opened: a FIFO or a device is no test data
        signature = _signature(st)
        known = self._known.get(path)
        if known is not None and known[0] == signature:
            return known[1]
        try:
            digest = _sha256_read(path, st.st_size)
        except OSError:
            return None
        self._known[path] = (signature, digest)
        return digest


def _sha256_read(path: str, size: int) -> str:
    """Hex SHA-256 of a file through a bare descriptor, ``size`` being what its stat said:
    a set of small files is then read with one read each (a file object costs four more
    system calls per file, and one more read to find the end)."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        while True:
            # A byte past the size: a file that grew since its stat is read to its end.
            want = min(size + 1, _CHUNK)
            chunk = os.read(fd, want)
            digest.update(chunk)
            if len(chunk) < want:
                break  # a short read of a regular file is its end
            size = max(size - len(chunk), 0)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def testset_file_hashes(
    root: Path, testset: TestSet | None, cache: HashCache | None = None
) -> dict[str, str]:
    """SHA-256 of every file under the test-set directory, plus item files kept elsewhere.

    Keys are paths relative to the test-set directory where they lie inside it. Paths are
    handled as strings: a set of 100,000 files would otherwise spend most of the time
    parsing them.
    """
    cache = cache if cache is not None else HashCache()
    top = str(root)
    files: dict[str, None] = {}
    if os.path.isdir(top):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in filenames:
                files[os.path.join(dirpath, name)] = None
    if testset is not None:
        for item in testset.items:
            for item_file in item.files.values():
                files[_normal(item_file)] = None
        for setup_file in testset.setup_files.values():
            files[_normal(setup_file)] = None
    inside = top.rstrip(os.sep) + os.sep
    out = {}
    for path in sorted(files):
        digest = cache.sha256(path)
        if digest is None:
            continue
        key = path[len(inside) :] if path.startswith(inside) else path
        out[key] = digest
    return out


def _normal(path: Path | str) -> str:
    # A Path's str is cached and already normal; anything else is normalized as Path does.
    return str(path) if isinstance(path, Path) else str(Path(path))


def combined_digest(hashes: Mapping[str, str]) -> str:
    """One digest for a whole set of file hashes: stable under order, sensitive to names."""
    text = "".join(f"{name}\0{digest}\n" for name, digest in sorted(hashes.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def testset_changes(reference: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Human lines naming each file added, removed or changed since the reference hashes."""
    lines = []
    for name in sorted(set(reference) | set(current)):
        if name not in current:
            lines.append(f"{name}: removed")
        elif name not in reference:
            lines.append(f"{name}: added")
        elif reference[name] != current[name]:
            lines.append(f"{name}: content changed")
    return lines


def testset_problems(
    site: Site, task: str, reference: Mapping[str, str], current: Mapping[str, str]
) -> list[Problem]:
    """A Problem per changed file of one task's test set, naming the file and the way out."""
    root = site.testset_path(task)
    return [
        Problem(
            root / line.partition(":")[0],
            f"tasks.{task}.testset",
            f"the test set changed since this run's first session ({line.partition(': ')[2]})",
            "restore the file (the manifest of the first session has its SHA-256), or start "
            "a new run with --fresh, or accept the change with --accept-site-change",
        )
        for line in testset_changes(reference, current)
    ]


def job_settings(site: Site, task: str, system: str, testset_sha256: str) -> dict[str, Any]:
    """Every setting of one job that changes what its items mean or how they are judged."""
    cfg = site.config
    task_cfg = cfg.tasks[task]
    sys_cfg = cfg.systems[system]
    device = cfg.devices[sys_cfg.device]
    settings = {
        "kind": task_cfg.kind,
        "testset": task_cfg.testset,
        "testset_sha256": testset_sha256,
        # The kind's own options (unit, sample_rates, stream ...), as each kind defines them.
        **task_cfg.model_dump(include=set(task_kind(task_cfg.kind).options.model_fields)),
        "budget": task_cfg.budget.model_dump(),
        "audit": task_cfg.audit.model_dump(),
        "max_output_bytes": task_cfg.max_output_bytes,
        "command": list(sys_cfg.command),
        "mode": sys_cfg.mode,
        "workdir": sys_cfg.workdir,
        "env": dict(sys_cfg.env),
        "device": sys_cfg.device,
        # Who a sealed system runs as seals it; it changes nothing of how it is judged.
        "device_settings": device.model_dump(exclude={"user"}),
    }
    # Round-tripped through JSON so it compares equal to what the journal gives back.
    return dict(json.loads(json.dumps(settings)))


def settings_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``key: old -> new`` for each setting that differs (nested tables by dotted key)."""
    lines: list[str] = []

    def walk(prefix: str, a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(f"{prefix}.{key}" if prefix else key, a.get(key), b.get(key))
        elif a != b:
            lines.append(f"{prefix}: {json.dumps(a)} -> {json.dumps(b)}")

    # A key the new settings lack is an option the task's kind no longer has (runs journaled
    # before the kinds owned their options carry every kind's keys, e.g. `stream` for asr):
    # it cannot change how items are judged, so it is not a change. Likewise a device
    # setting only one side has is one that one version of onsite does not know (a run
    # begun before `memory_limit` existed resumes under its default).
    old_kept = {k: v for k, v in old.items() if k in new}
    new_kept = dict(new)
    old_device, new_device = old_kept.get("device_settings"), new_kept.get("device_settings")
    if isinstance(old_device, dict) and isinstance(new_device, dict):
        if "kind" in old_device and "transport" not in old_device:
            # Journaled before a device's transport had its own name: the same setting.
            old_device = {("transport" if k == "kind" else k): v for k, v in old_device.items()}
        both = set(old_device) & set(new_device)
        old_kept["device_settings"] = {k: old_device[k] for k in both}
        new_kept["device_settings"] = {k: new_device[k] for k in both}
    walk("", old_kept, new_kept)
    return lines


def site_change_problem(site: Site, task: str, system: str, changes: list[str]) -> Problem:
    """The refusal for one job whose settings changed after items completed under them."""
    return Problem(
        site.path,
        f"tasks.{task} / systems.{system}",
        "changed since items of this job completed: " + "; ".join(changes),
        "undo the change to resume; or start a new run with `onsite run --fresh`; or keep "
        "the completed items and go on under the new settings with --accept-site-change "
        "(journaled, and shown in the report)",
    )


def _escapes(root: str, path: str) -> bool:
    # Lexical: a test set may link its files elsewhere on purpose; "../" in a listing may not.
    # Strings, not Paths: this runs for every file of every item at every start.
    normal = os.path.normpath(os.path.join(root, path))
    return normal != root and not normal.startswith(root.rstrip(os.sep) + os.sep)


def contain_testset(testset: TestSet) -> TestSet:
    """The test set with every item whose id or file leaves the test-set directory refused.

    Ids become file names (audit copies, staged names) and paths are opened on the
    controller: neither may point outside the directory the organizer named.
    """
    root = os.path.normpath(testset.root)
    # Frames the harness decoded from the set's own videos live in its cache.
    cache = os.path.normpath(frames_cache_root())
    keep = []
    refused = []
    for item in testset.items:
        bad_id = (
            item.id in ("", ".", "..")
            or any(c in item.id for c in "/\\\0")
            or any(ord(c) < 32 for c in item.id)
        )
        outside = [
            str(p)
            for p in item.files.values()
            if _escapes(root, str(p)) and _escapes(cache, str(p))
        ]
        if bad_id:
            refused.append(
                InvalidItem(item.id, None, "the item id is not a plain name (no '/', '..')")
            )
        elif outside:
            refused.append(
                InvalidItem(
                    item.id,
                    Path(outside[0]),
                    f"its file {outside[0]} is outside the test-set directory {root}",
                )
            )
        else:
            keep.append(item)
    if not refused:
        return testset
    return replace(testset, items=tuple(keep), invalid=testset.invalid + tuple(refused))


__all__ = [
    "HashCache",
    "SiteChanged",
    "combined_digest",
    "contain_testset",
    "job_settings",
    "settings_changes",
    "sha256_file",
    "site_change_problem",
    "testset_changes",
    "testset_file_hashes",
    "testset_problems",
]
