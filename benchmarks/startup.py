"""Start-up of the short commands, against a bare interpreter in the same run.

Peer: ``python -c pass`` (the interpreter's own start-up, the floor any command pays);
also shown: ``python -c "import harness"`` (the package's own top). Measured: ``onsite
--help``, ``onsite status RUN`` and ``onsite report RUN --json`` on a small finished run
(the null system over a few WAV items, made here), and ``onsite score asr --help``, the
scorer's own entry (which must not get slower). Each is started as a user starts it, a
fresh process ``python -m harness.cli ...`` with its output to a pipe.

How the comparison is kept fair:

- Rounds interleave every command, the order rotating from round to round, so that load
  from elsewhere on the machine falls on all alike; medians and p90 over the rounds.
- Wall time (what the operator waits for) and the process's CPU time (user + system,
  from the kernel's account of the child), which other load on the machine disturbs
  less; each also as a ratio to the peer's.
- Bytecode as installed: a pip-installed onsite has its modules compiled (.pyc). Where
  PYTHONDONTWRITEBYTECODE is set (as in some CI and sandboxes) every process would
  compile our modules from source again; by default the benchmark lets Python cache the
  bytecode under a temporary PYTHONPYCACHEPREFIX and warms it once. ``--no-bytecode``
  measures the uncached case instead.
- ``--tree DIR`` measures the same commands from another source tree (e.g. an earlier
  commit unpacked with ``git archive``) in the same rounds, for a before/after.

Goal (issue 18): ``onsite --help`` and ``onsite status`` under 0.3 s here.

Run: `.venv/bin/python benchmarks/startup.py [--rounds N] [--items N] [--tree DIR]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from harness_overhead import make_site  # noqa: E402

from harness import Controller, RunStore, load_site  # noqa: E402

GOAL_SECONDS = 0.3


def make_run(work: Path, items: int) -> Path:
    """A finished run of the null system over ``items`` tiny WAV items; its directory."""
    site = load_site(make_site(items, work))
    store = RunStore(site.run_dir, "bench", fsync_seconds=0)
    try:
        store.keep_site_copy(site.path, site.root)
        results = Controller(site, store).run()
    finally:
        store.close()
    failed = [r.failed for r in results if r.failed]
    if failed:
        raise SystemExit(f"the benchmark's run failed: {failed}")
    return site.run_dir


def timed(argv: list[str], tree: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process run from ``tree``; its exit status must be 0.

    The tree is the working directory as well as PYTHONPATH: ``python -m`` puts the
    working directory first on sys.path.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        argv, env={**env, "PYTHONPATH": str(tree)}, cwd=tree, capture_output=True, timeout=300
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every command")
    parser.add_argument("--items", type=int, default=20, help="items of the run measured")
    parser.add_argument("--tree", type=Path, help="also measure this source tree's onsite")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile our modules in every process"
    )
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="onsite-bench-startup-") as tmp:
        work = Path(tmp)
        run_dir = make_run(work, args.items)
        env = {**os.environ, "CI": "1"}
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        onsite = [py, "-m", "harness.cli"]
        commands: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], REPO, env),
            "python -c 'import harness'": ([py, "-c", "import harness"], REPO, env),
            "onsite --help": ([*onsite, "--help"], REPO, env),
            "onsite status RUN": ([*onsite, "status", str(run_dir)], REPO, env),
            "onsite report RUN --json": ([*onsite, "report", str(run_dir), "--json"], REPO, env),
            "onsite score asr --help": ([*onsite, "score", "asr", "--help"], REPO, env),
        }
        if args.tree is not None:
            for name in [n for n in commands if n.startswith("onsite")]:
                commands[f"{name} [--tree]"] = (commands[name][0], args.tree.resolve(), env)
        for tree in {REPO, *([args.tree.resolve()] if args.tree else [])}:
            where = subprocess.run(
                [py, "-c", "import harness; print(harness.__file__)"],
                env={**env, "PYTHONPATH": str(tree)},
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if not Path(where).is_relative_to(tree):
                raise SystemExit(f"from {tree}, harness is imported from {where}")
        for command in commands.values():  # warm the page cache (and the bytecode)
            timed(*command)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for round_no in range(args.rounds):
            shift = round_no % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = timed(*commands[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
    peer_wall = float(np.median(walls["python -c pass"]))
    peer_cpu = float(np.median(cpus["python -c pass"]))
    load = os.getloadavg()
    print(
        f"start-up over {args.rounds} rounds, a run of {args.items} items, bytecode "
        f"{'compiled in every process' if args.no_bytecode else 'cached'}; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"{'command':34} {'wall p50':>9} {'p90':>7} {'x peer':>7} {'CPU p50':>9} {'x peer':>7}")
    for name in names:
        wall = float(np.median(walls[name]))
        p90 = float(np.percentile(walls[name], 90))
        cpu = float(np.median(cpus[name]))
        print(
            f"{name:34} {wall:8.3f}s {p90:6.3f}s {wall / peer_wall:6.1f}x "
            f"{cpu:8.3f}s {cpu / peer_cpu:6.1f}x"
        )
    for name in ("onsite --help", "onsite status RUN"):
        wall = float(np.median(walls[name]))
        verdict = "met" if wall < GOAL_SECONDS else "NOT met"
        print(f"goal {name} < {GOAL_SECONDS} s: {verdict} ({wall:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
