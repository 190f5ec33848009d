"""Harness overhead per item, against a bare subprocess pipe round trip in the same run.

Peer: the same null system (examples/systems/null_system.py) driven by a bare
loop that writes one item line to its stdin and reads one line back, with
nothing else. Harness: the full controller (staging a fresh read-only copy, journal
records, output lines, resource measurement, verdicts) over the same number of
items.

Figures:
- items/s through the controller (goal: at least 2,000);
- per-item cycle: time between consecutive dispatches on the controller's clock;
- per-item overhead: cycle minus the round trip the runner measured for that
  item, i.e. what the harness adds around the system (goal: p50 no more than
  2x the bare round trip's p50).

Run: `make bench` or `.venv/bin/python benchmarks/harness_overhead.py [--items N]`.
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
from null_runs import REPO, null_site

sys.path.insert(0, str(REPO))

from harness import Controller, RunStore, load_site, read_journal  # noqa: E402

NULL = [sys.executable, "-m", "examples.systems.null_system"]


def bare_round_trips(items: int, audio: Path) -> np.ndarray:
    """Seconds per item for a bare write-line/read-line loop with the null system."""
    proc = subprocess.Popen(
        NULL, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert proc.stdin is not None and proc.stdout is not None
    reader = proc.stdout
    proc.stdin.write(b'{"op":"hello","protocol":1,"task":"t","kind":"asr"}\n')
    reader.readline()
    times = np.empty(items)
    fd = proc.stdin.fileno()
    for i in range(items):
        line = (
            json.dumps(
                {
                    "op": "item",
                    "id": f"{i:016x}",
                    "input": {"audio": str(audio), "sample_rate": 16000},
                }
            ).encode()
            + b"\n"
        )
        t0 = time.perf_counter()
        os.write(fd, line)
        reader.readline()
        times[i] = time.perf_counter() - t0
    proc.stdin.write(b'{"op":"bye"}\n')
    proc.wait()
    return times


def make_site(items: int, work: Path) -> Path:
    """A test set of tiny WAV files and a site file running the null system on it."""
    testset = work / "set"
    testset.mkdir()
    lines = []
    silence = np.zeros(160, dtype=np.int16)
    for i in range(items):
        soundfile.write(testset / f"u{i:05d}.wav", silence, 16000, "PCM_16")
        lines.append(f"u{i:05d} x")
    (testset / "text").write_text("\n".join(lines) + "\n")
    return null_site(work, "asr")


def harness_run(site_path: Path, runs: Path) -> tuple[float, np.ndarray, np.ndarray]:
    """Total seconds, per-item cycle times and runner round trips, through the controller."""
    site = load_site(site_path)
    store = RunStore(runs / site.name, "bench", site.config.site.fsync_seconds)
    controller = Controller(site, store)
    controller.load_testsets()
    t0 = time.perf_counter()
    controller.run()
    total = time.perf_counter() - t0
    store.close()
    records = list(read_journal(runs / site.name / "journal.jsonl"))
    dispatched = np.array([r["mono"] for r in records if r["event"] == "dispatched"])
    seconds = np.array([r["seconds"] for r in records if r["event"] == "completed"])
    verdicts = {r["verdict"] for r in records if r["event"] == "completed"}
    assert verdicts == {"ok"}, verdicts
    return total, np.diff(dispatched), seconds[:-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="items per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each")
    args = parser.parse_args()
    p = np.percentile
    rates, over_ratios, p99_ratios = [], [], []
    with tempfile.TemporaryDirectory(prefix="onsite-bench-") as tmp:
        work = Path(tmp)
        site_path = make_site(args.items, work)
        audio = work / "set" / "u00000.wav"
        # Alternate the two so that load from elsewhere on the machine hits both alike.
        for round_no in range(1, args.rounds + 1):
            total, cycles, inner = harness_run(site_path, work / f"runs{round_no}")
            bare = bare_round_trips(args.items, audio)
            overhead = cycles - inner
            rate = args.items / total
            bare50, bare99 = p(bare, 50) * 1e6, p(bare, 99) * 1e6
            over50, over99 = p(overhead, 50) * 1e6, p(overhead, 99) * 1e6
            cyc50 = p(cycles, 50) * 1e6
            rates.append(rate)
            over_ratios.append(over50 / bare50)
            p99_ratios.append(over99 / bare99)
            print(
                f"round {round_no}: harness {rate:,.0f} items/s; bare round trip p50 "
                f"{bare50:.1f} us p99 {bare99:.1f} us; harness cycle p50 {cyc50:.1f} us; "
                f"overhead p50 {over50:.1f} us p99 {over99:.1f} us"
            )
    print(f"harness throughput (median of rounds): {np.median(rates):,.0f} items/s (goal >= 2,000)")
    print(
        f"overhead / bare pipe round trip (median of rounds): p50 {np.median(over_ratios):.2f}x, "
        f"p99 {np.median(p99_ratios):.2f}x (goal <= 2x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
