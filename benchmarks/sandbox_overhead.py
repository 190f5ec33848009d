"""What the bubblewrap sandbox costs, against an unsandboxed run of the same system in the
same run.

System: the null system (examples/systems/null_system.py, workdir the repository root,
as in the demo), driven through LocalServeRunner sealed (the default) and unsealed
(``Sandbox(enabled=False)``), starts and items interleaved so both see the same load.

Figures:
- start-up: from the start request to the ready message, and the whole ``start()``
  (which also empties the stage directories); goal: sealed at most 50 ms more (p50);
- per item: the whole ``run_item`` (staging a copy of the input, the exchange, unstaging)
  and the exchange alone; goal: sealed at most 20% more (p50).

The controller and both systems are pinned to one CPU (``--cpu``): sub-millisecond pipe
round trips otherwise mostly measure where the scheduler happened to wake each process.

Run: `.venv/bin/python benchmarks/sandbox_overhead.py [--starts N] [--items N]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runners import ItemRequest, LocalServeRunner, Sandbox, SystemSpec  # noqa: E402

NULL = (sys.executable, "-m", "examples.systems.null_system")


def spec(scratch: Path, sealed: bool) -> SystemSpec:
    label = "sealed" if sealed else "unsealed"
    return SystemSpec(
        name="null",
        task="t",
        kind="asr",
        mode="serve",
        command=NULL,
        workdir=REPO,
        log_path=scratch / label / "log",
        stage_dir=scratch / label / "stage",
        sandbox=Sandbox(enabled=sealed, hidden=(REPO / "runs", REPO / "site_config" / "data")),
    )


def p50(values: list[float]) -> float:
    return float(np.percentile(np.array(values) * 1000.0, 50))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    cpus = [args.cpu]
    os.sched_setaffinity(0, cpus)
    scratch = Path(tempfile.mkdtemp(prefix="onsite-sandbox-bench-"))
    audio = scratch / "item.wav"
    soundfile.write(audio, np.zeros(16000, dtype=np.int16), 16000, "PCM_16")

    handshake: dict[bool, list[float]] = {True: [], False: []}
    whole_start: dict[bool, list[float]] = {True: [], False: []}
    for n in range(args.starts):
        for sealed in (True, False) if n % 2 else (False, True):
            runner = LocalServeRunner(spec(scratch, sealed), cpus)
            began = time.monotonic()
            info = runner.start()
            whole_start[sealed].append(time.monotonic() - began)
            handshake[sealed].append(info.setup_seconds)
            runner.stop()

    runners = {s: LocalServeRunner(spec(scratch, s), cpus) for s in (True, False)}
    for runner in runners.values():
        runner.start()
    cycle: dict[bool, list[float]] = {True: [], False: []}
    exchange: dict[bool, list[float]] = {True: [], False: []}
    try:
        for i in range(args.items):
            # Alternate which goes first, so neither always runs right after the other.
            order = (True, False) if i % 2 else (False, True)
            for sealed in order:
                runner = runners[sealed]
                request = ItemRequest(f"{i:016x}", {"audio": audio}, {"sample_rate": 16000}, 30)
                began = time.monotonic()
                attempt = runner.run_item(request)
                cycle[sealed].append(time.monotonic() - began)
                exchange[sealed].append(attempt.seconds)
                if attempt.outcome != "result":
                    raise SystemExit(f"item failed: {attempt.message}")
    finally:
        for runner in runners.values():
            runner.stop()

    print(f"{'figure (p50, ms)':<34}{'sealed':>10}{'unsealed':>10}{'diff':>10}{'ratio':>8}")
    rows = [
        ("start-up to ready", handshake),
        ("start() whole", whole_start),
        ("item: run_item whole", cycle),
        ("item: exchange", exchange),
    ]
    for name, data in rows:
        s, u = p50(data[True]), p50(data[False])
        print(f"{name:<34}{s:>10.3f}{u:>10.3f}{s - u:>10.3f}{s / u:>8.2f}")
    start_extra = p50(whole_start[True]) - p50(whole_start[False])
    item_ratio = p50(cycle[True]) / p50(cycle[False])
    print(
        f"start-up: sealed costs {start_extra:.1f} ms more (goal <= 50 ms): "
        f"{'ok' if start_extra <= 50 else 'MISSED'}"
    )
    print(
        f"per item: sealed/unsealed = {item_ratio:.2f} (goal <= 1.20): "
        f"{'ok' if item_ratio <= 1.2 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
