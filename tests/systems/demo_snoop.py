"""A participant system that searches everything it can read for the demo's references.

Serve mode, any kind whose item has one input file. On its first item it walks the
whole file system it sees (everything but /proc and /sys, which are views of processes
and of the kernel, not files; /proc would also show its own environment, which holds
the strings it looks for) and answers what it found. DEMO_SNOOP (JSON) says what to
look for:

- ``needles``: label -> string; every regular file is read whole and searched, except
  under the operating system's trees and the interpreter's own installation, which every
  sealed system sees by design (docs/security.md); their names are still walked.
- ``names``: file names to look for anywhere (a canary planted in the run directory).
- ``paths``: paths that must not exist here (the run directory, the organizer's code).

The strings come in the environment rather than in this file because this file is bound
into the sandbox at its own path: it would find itself.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

_NOT_FILES = ("/proc", "/sys")
# Visible to every sealed system by design: the OS and the interpreter's own installation.
_OS_TREES = (
    "/usr",
    "/etc",
    "/opt",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    os.path.realpath(sys.base_prefix),
)
_CHUNK = 8 << 20
# An answer stays well under the asr kind's 256 KiB ceiling.
_MAX_LISTED = 200


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _scan(path: str, needles: dict[str, bytes], longest: int) -> list[str]:
    """The labels of the needles in one file, read in chunks that overlap by a needle."""
    found: set[str] = set()
    tail = b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            window = tail + chunk
            for label, needle in needles.items():
                if label not in found and needle in window:
                    found.add(label)
            tail = window[-longest:]
    return sorted(found)


def snoop(wanted: dict) -> dict:
    """Walk / and report every needle, name and path found."""
    needles = {label: text.encode("utf-8") for label, text in wanted["needles"].items()}
    longest = max((len(n) for n in needles.values()), default=1)
    names = set(wanted["names"])
    started = time.monotonic()
    hits: list[list[str]] = []
    named: list[str] = []
    files = scanned = unreadable = 0
    scanned_bytes = 0
    for dirpath, dirnames, filenames in os.walk("/"):
        dirnames[:] = [d for d in dirnames if not _under(os.path.join(dirpath, d), _NOT_FILES)]
        content = not _under(dirpath, _OS_TREES)
        for name in filenames + dirnames:
            if name in names:
                named.append(os.path.join(dirpath, name))
        for name in filenames:
            path = os.path.join(dirpath, name)
            files += 1
            if not content:
                continue
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    continue
                labels = _scan(path, needles, longest)
            except OSError:
                unreadable += 1
                continue
            scanned += 1
            scanned_bytes += info.st_size
            hits.extend([path, label] for label in labels)
    return {
        "hits": hits[:_MAX_LISTED],
        "hit_count": len(hits),
        "named": named[:_MAX_LISTED],
        "paths": [p for p in wanted["paths"] if os.path.lexists(p)],
        "files": files,
        "scanned": scanned,
        "scanned_bytes": scanned_bytes,
        "unreadable": unreadable,
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    """Answer the first item with what the search found, later ones with nothing."""
    wanted = json.loads(os.environ["DEMO_SNOOP"])
    done = False
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "demo-snoop", "version": "1"}), flush=True)
        elif message["op"] == "item":
            output = {"text": ""} if done else {"text": "", **snoop(wanted)}
            done = True
            print(json.dumps({"op": "result", "id": message["id"], "output": output}), flush=True)
        elif message["op"] == "bye":
            return


if __name__ == "__main__":
    main()
