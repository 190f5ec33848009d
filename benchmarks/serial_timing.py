"""How exactly the serial runner records a device's processing time.

A device on the pty emulator processes each item for a known time (5 ms,
50 ms, 500 ms: the recognizer sleeps, in its own process). The runner records
processing time as it would in a run (clock started when the input reached
the device, stopped at the answer's arrival). The error is recorded minus
true time; its peer is one frame's line time: goal p99 of |error| <= line
time of the answer frame + 5 ms.

Run: `.venv/bin/python benchmarks/serial_timing.py [--baud 115200] [--items 30]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devices import Emulator, wire  # noqa: E402
from examples.devices.checksum import ChecksumRecognizer, expected_text  # noqa: E402
from runners import ItemRequest, SerialRunner, SystemSpec  # noqa: E402

RATE = 8000


def spec(root: Path) -> SystemSpec:
    return SystemSpec(
        name="timing",
        task="command",
        kind="command",
        mode="serve",
        command=(),
        workdir=Path(__file__).resolve().parents[1],
        log_path=root / "timing.log",
        stage_dir=root,
    )


def measure(baud: int, sleep: float, items: int, root: Path) -> list[float]:
    """Recorded minus true processing time for ``items`` items of 0.25 s of audio."""
    errors = []
    with Emulator(lambda: ChecksumRecognizer(sleep=sleep), baud=baud, seed=3) as emu:
        runner = SerialRunner(spec(root), {"port": emu.path, "baud": baud, "reset": "none"})
        runner.start()
        try:
            rng = np.random.default_rng(1)
            for n in range(items):
                wav = root / f"t{n}.wav"
                pcm = rng.integers(-3000, 3000, RATE // 4, dtype=np.int16)
                soundfile.write(wav, pcm, RATE, "PCM_16")
                got = runner.run_item(ItemRequest(f"t{n}", {"audio": wav}, {}, 30.0))
                if got.output != {"text": expected_text(pcm.astype("<i2").tobytes())}:
                    raise SystemExit(f"wrong answer: {got.outcome} {got.message}")
                errors.append(got.seconds - sleep)
        finally:
            runner.stop()
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--items", type=int, default=30)
    args = parser.parse_args()
    answer = len(expected_text(b"x" * 2000)) + 4
    frame_seconds = wire.encoded_size(answer) * 10 / args.baud
    goal = frame_seconds + 0.005
    print(f"{args.baud} baud; one answer frame = {1000 * frame_seconds:.2f} ms on the line")
    print(f"goal: p99 |error| <= {1000 * goal:.2f} ms")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs (scheduling delays show in p99)")
    print(f"{'device':>8} {'median':>9} {'p90 |err|':>10} {'p99 |err|':>10} {'min':>9} {'max':>9}")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for sleep in (0.005, 0.05, 0.5):
            errors = measure(args.baud, sleep, args.items, Path(tmp))
            worst = sorted(abs(e) for e in errors)
            p99 = worst[min(len(worst) - 1, int(0.99 * len(worst)))]
            p90 = worst[min(len(worst) - 1, int(0.90 * len(worst)))]
            failed |= p99 > goal
            print(
                f"{1000 * sleep:>6.0f}ms {1000 * statistics.median(errors):>7.2f}ms "
                f"{1000 * p90:>8.2f}ms {1000 * p99:>8.2f}ms "
                f"{1000 * min(errors):>7.2f}ms {1000 * max(errors):>7.2f}ms"
                f" {'ok' if p99 <= goal else 'MISSED'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
