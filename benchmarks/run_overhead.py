"""End-to-end per-item cost of `onsite run`, against a bare pipe, on the path a user takes.

Harness: `onsite run SITE` started as a subprocess (python -m harness.cli), the null
system (examples/systems/null_system.py, serve mode) as the participant, the output
not a terminal (plain progress). Per-item cost = (wall time of a run of N items -
wall time of a run of FEW items) / (N - FEW), so start-up, test-set loading, the
system's start and the closing leaderboard cancel out, except for the part of them
that grows with the items.

Peer: a bare loop that starts the same null system and pipes N item lines through
it, one line written and one line read per item, measured the same way:
(wall(N) - wall(FEW)) / (N - FEW).

Both are also given as CPU time per item (user + system, the harness or the loop
together with the null system it ran), the same difference: on a loaded machine
the wall times move with the load, the CPU times much less.

The bare pipe's own time is bimodal on a machine with few cores: about 0.01 ms
per item when the scheduler keeps the loop and the system on one core, about 0.05
ms when each wakes the other across cores; rounds say which they got.

Goal (issue 18): harness per item at most 3x the bare per item, and at most 0.15 ms.

Run: `.venv/bin/python benchmarks/run_overhead.py [--items N] [--kind asr|mt]`;
`--bare-gap 0 50 100` shows what spending that long between items does to the bare
pipe's own write-to-answer time (docs/scale.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from null_runs import REPO, null_site, onsite_cli

NULL = [sys.executable, "-m", "examples.systems.null_system"]
FEW = 20


def make_site(items: int, work: Path, kind: str) -> Path:
    """A test set of N items and a site file running the null system on it.

    asr: one tiny WAV file per item (each is staged, as a copy, for the system);
    mt: one line of source text per item (no file to stage).
    """
    testset = work / "set"
    testset.mkdir()
    if kind == "asr":
        # A valid 10 ms PCM WAV, written by hand: no audio library needed here.
        data = b"\0\0" * 160
        header = (
            b"RIFF"
            + (36 + len(data)).to_bytes(4, "little")
            + b"WAVEfmt "
            + (16).to_bytes(4, "little")
            + (1).to_bytes(2, "little")
            + (1).to_bytes(2, "little")
            + (16000).to_bytes(4, "little")
            + (32000).to_bytes(4, "little")
            + (2).to_bytes(2, "little")
            + (16).to_bytes(2, "little")
            + b"data"
            + len(data).to_bytes(4, "little")
        )
        for i in range(items):
            (testset / f"u{i:06d}.wav").write_bytes(header + data)
        (testset / "text").write_text("".join(f"u{i:06d} x\n" for i in range(items)))
    else:
        (testset / "source.txt").write_text("".join(f"s{i} w\n" for i in range(items)))
        (testset / "ref1.txt").write_text("".join(f"r{i} w\n" for i in range(items)))
    return null_site(work, kind)


def onsite_run(site: Path, runs: Path, limit: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (onsite and its system) of `onsite run SITE --limit N`."""
    wall, usage, _ = onsite_cli(
        "run", str(site), "--runs", str(runs), "--limit", str(limit), columns=100
    )
    # The child's own time and that of the children it waited for (the system).
    return wall, usage.ru_utime + usage.ru_stime


def bare_loop(
    items: int, item_input: dict[str, object], gap_us: float = 0.0
) -> tuple[float, float, float]:
    """Wall and CPU seconds (this loop and the system) of piping N item lines through the
    null system, start-up included, and the mean seconds from an item's write to its
    answer. With ``gap_us`` the loop first works that long before each item (Python
    objects made and dropped), as a harness does its bookkeeping between items."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0, t0 = time.process_time(), time.perf_counter()
    proc = subprocess.Popen(NULL, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    fd, reader = proc.stdin.fileno(), proc.stdout
    os.write(fd, b'{"op":"hello","protocol":1,"task":"t","kind":"asr"}\n')
    reader.readline()
    exchange = 0.0
    for i in range(items):
        if gap_us:
            # Python work, as bookkeeping is: small dicts made and dropped.
            until, scratch = time.perf_counter() + gap_us * 1e-6, []
            while time.perf_counter() < until:
                scratch.append({"item": i, "text": str(i)})
        line = {"op": "item", "id": f"{i:016x}", "input": item_input}
        data = json.dumps(line).encode() + b"\n"
        sent = time.perf_counter()
        os.write(fd, data)
        reader.readline()
        exchange += time.perf_counter() - sent
    os.write(fd, b'{"op":"bye"}\n')
    proc.wait()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, exchange / max(items, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20000, help="items of the long run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each")
    parser.add_argument("--kind", choices=["asr", "mt"], default="asr")
    parser.add_argument(
        "--dir",
        default=str(REPO),
        help="where the test set and the run directories go (default: the repository; "
        "on some machines /tmp is far slower at creating files, and staging creates one per item)",
    )
    parser.add_argument(
        "--bare-gap",
        type=float,
        nargs="+",
        metavar="US",
        help="instead: the bare loop alone, working US microseconds in Python before each "
        "item (as a harness's bookkeeping does), and what its write-to-answer time becomes",
    )
    args = parser.parse_args()
    n = args.items
    if args.bare_gap:
        item_input = {"audio": "/nonexistent.wav", "sample_rate": 16000}
        for gap in args.bare_gap:
            wall, _, exchange = bare_loop(n, item_input, gap)
            print(
                f"bare pipe working {gap:g} us before each item: {wall / n * 1e6:.1f} us "
                f"per item, of which {exchange * 1e6:.1f} us from the write to the answer"
            )
        return 0
    harness, bare, harness_cpu, bare_cpu = [], [], [], []
    with tempfile.TemporaryDirectory(prefix=".onsite-bench-", dir=args.dir) as tmp:
        work = Path(tmp)
        site = make_site(n, work, args.kind)
        item_input: dict[str, object] = (
            {"audio": str(work / "set" / "u000000.wav"), "sample_rate": 16000}
            if args.kind == "asr"
            else {"text": "w"}
        )
        # Alternate, so that load from elsewhere on the machine hits both alike.
        for round_no in range(1, args.rounds + 1):
            few, few_cpu = onsite_run(site, work / f"few{round_no}", FEW)
            full, full_cpu = onsite_run(site, work / f"full{round_no}", n)
            bare_few, bare_few_cpu, _ = bare_loop(FEW, item_input)
            bare_full, bare_full_cpu, _ = bare_loop(n, item_input)
            h, hc = (full - few) / (n - FEW), (full_cpu - few_cpu) / (n - FEW)
            b, bc = (bare_full - bare_few) / (n - FEW), (bare_full_cpu - bare_few_cpu) / (n - FEW)
            harness.append(h)
            bare.append(b)
            harness_cpu.append(hc)
            bare_cpu.append(bc)
            print(
                f"round {round_no}: onsite run {FEW} items {few:.2f} s, {n} items {full:.2f} s "
                f"-> {h * 1e3:.3f} ms/item (CPU {hc * 1e3:.3f}); bare pipe {b * 1e3:.3f} ms/item "
                f"(CPU {bc * 1e3:.3f}); ratio {h / b:.2f}x (CPU {hc / bc:.2f}x)"
            )
    h, b = statistics.median(harness), statistics.median(bare)
    hc, bc = statistics.median(harness_cpu), statistics.median(bare_cpu)
    print(
        f"onsite run per item (median of rounds): {h * 1e3:.3f} ms (goal <= 0.15 ms); "
        f"bare pipe {b * 1e3:.3f} ms; ratio {h / b:.2f}x (goal <= 3x); "
        f"CPU per item {hc * 1e3:.3f} ms against {bc * 1e3:.3f} ms, {hc / bc:.2f}x; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
