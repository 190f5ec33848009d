"""Two operator stations against one on the same PostgreSQL run: items per second.

Peer: one station (`onsite run SITE --station one`, one job per device at once) runs
the whole site into a fresh database. Measured: two stations (`--station a` and
`--station b`, each `--max-jobs` half the devices) run the same site into another
fresh database at the same time. Both use the same real PostgreSQL server (tests/pg.py:
a temporary cluster on 127.0.0.1, fsync off) and the same null system
(examples/systems/null_system.py), each system on a device of its own.

Throughput is counted from the records themselves: completed items divided by the
time from the first dispatch to the last completion (the stations' start-up, which
is the same for both, is left out). The goal is a ratio of at least 1.7.

Run: `.venv/bin/python benchmarks/pg_stations.py [--items 4000] [--systems 4] [--rounds 2]`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.store.postgres import PgRunStore  # noqa: E402
from tests.pg import start_postgres  # noqa: E402


def make_site(work: Path, per_system: int, systems: int, dsn: str, name: str) -> Path:
    """A site of ``systems`` null systems, each on its own local device, into ``dsn``."""
    testset = work / "set"
    if not testset.exists():
        testset.mkdir()
        silence = np.zeros(160, dtype=np.int16)
        lines = []
        for i in range(per_system):
            soundfile.write(testset / f"u{i:05d}.wav", silence, 16000, "PCM_16")
            lines.append(f"u{i:05d} x")
        (testset / "text").write_text("\n".join(lines) + "\n")
    parts = [
        f'[site]\nname = "{name}"\nruns = "runs"\nstore = {json.dumps(dsn)}\n',
        '[tasks.t]\nkind = "asr"\ntestset = "set"\nbudget = { seconds = 10 }\n',
    ]
    for n in range(systems):
        parts.append(f'[devices.d{n}]\ntransport = "local"\n')
        parts.append(
            f'[systems.null{n}]\ndevice = "d{n}"\ntasks = ["t"]\n'
            f"workdir = {json.dumps(str(REPO))}\n"
            'command = ["python", "-m", "examples.systems.null_system"]\n'
        )
    site = work / f"{name}.toml"
    site.write_text("\n".join(parts))
    return site


def stations(site: Path, names: list[str], max_jobs: int) -> None:
    """Run the stations at once and wait for all of them."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(site),
                "--station",
                name,
                "--max-jobs",
                str(max_jobs),
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "CI": "1"},
        )
        for name in names
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"station failed ({proc.returncode}): {err.decode()[-2000:]}")


def throughput(dsn: str, run: str, expected: int) -> float:
    """Completed items per second between the first dispatch and the last completion."""
    with PgRunStore(dsn, run) as store:
        records = list(store.records())
    first = min(r["wall"] for r in records if r["event"] == "dispatched")
    done = [r for r in records if r["event"] == "completed"]
    items = {(r["system"], r["item"]) for r in done}
    if len(items) != expected or len(done) != expected:
        raise SystemExit(f"{len(done)} completions of {len(items)} items, expected {expected}")
    if {r["verdict"] for r in done} != {"ok"}:
        raise SystemExit("a null system's item was not ok")
    return len(done) / (max(r["wall"] for r in done) - first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4000, help="items in the site, all systems")
    parser.add_argument("--systems", type=int, default=4, help="systems, one device each")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each")
    args = parser.parse_args()
    per_system = args.items // args.systems
    total = per_system * args.systems
    server = start_postgres()
    ratios = []
    try:
        with tempfile.TemporaryDirectory(prefix="onsite-bench-") as tmp:
            work = Path(tmp)
            for round_no in range(1, args.rounds + 1):
                rates = {}
                # Alternate which goes first, so load from elsewhere hits both alike.
                order = ("one", "two") if round_no % 2 else ("two", "one")
                for mode in order:
                    dsn = server.new_database()
                    name = f"bench{round_no}{mode}"
                    site = make_site(work, per_system, args.systems, dsn, name)
                    if mode == "one":
                        stations(site, ["one"], args.systems)
                    else:
                        stations(site, ["a", "b"], max(1, args.systems // 2))
                    rates[mode] = throughput(dsn, name, total)
                ratio = rates["two"] / rates["one"]
                ratios.append(ratio)
                print(
                    f"round {round_no}: one station {rates['one']:.0f} items/s, "
                    f"two stations {rates['two']:.0f} items/s, ratio {ratio:.2f} "
                    f"(load average {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    finally:
        server.destroy()
    best = max(ratios)
    print(
        f"two stations / one station on {total} items, {args.systems} systems on their own "
        f"devices: median ratio {float(np.median(ratios)):.2f}, best {best:.2f} (goal >= 1.7)"
    )
    return 0


if __name__ == "__main__":
    start = time.monotonic()
    code = main()
    print(f"({time.monotonic() - start:.0f} s)")
    sys.exit(code)
