"""What the end-to-end benchmarks share: a site running the null participant, and `onsite`
run the way a user runs it (a subprocess of `python -m harness.cli`).

Imported by the benchmark scripts from their own directory (``python benchmarks/X.py`` puts
it first on the path).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def bench_site(work: Path, kind: str, system: str, command: list[str]) -> Path:
    """``work/site.toml``: one task ``t`` of ``kind`` over ``work/set`` (budget 10 s), answered
    by one local system of that name, started by ``command`` from the repository."""
    site = work / "site.toml"
    site.write_text(
        f"""
[site]
name = "bench"
runs = "runs"
[devices.local]
transport = "local"
[tasks.t]
kind = "{kind}"
testset = "set"
budget = {{ seconds = 10 }}
[systems.{system}]
device = "local"
tasks = ["t"]
workdir = {json.dumps(str(REPO))}
command = {json.dumps(command)}
"""
    )
    return site


def null_site(work: Path, kind: str) -> Path:
    """`bench_site` answered by the null system (examples/systems/null_system.py, serve mode)."""
    return bench_site(work, kind, "null", ["python", "-m", "examples.systems.null_system"])


def onsite_cli(*args: str, columns: int = 120) -> tuple[float, resource.struct_rusage, str]:
    """Run ``onsite ARGS`` as a user does, output not a terminal: wall seconds, the
    resources of the process and the children it waited for (the system), its output.
    A failed command ends the benchmark with its output."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS=str(columns))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(out.decode(errors="replace"))
        raise SystemExit(f"onsite {args[0]} failed ({code})")
    return wall, usage, out.decode(errors="replace")
