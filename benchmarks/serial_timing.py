"""How exactly the serial runner records a device's processing time.

A device on the pty emulator processes each item for a known time (5 ms,
50 ms, 500 ms: the recognizer sleeps, in its own process). The runner records
processing time as it would in a run (clock started when the input reached
the device, stopped at the answer's arrival). The error is recorded minus
true time; its peer is one frame's line time: goal p99 of |error| <= line
time of the answer frame + 5 ms. The p99 is over every item (nearest rank:
with 200 items the third worst, not the maximum), and the verdict is on it.

The emulated device is software on this machine: the pipe to the
recognizer's process, its threads' wake-ups, the emulated line's threads all
wait for a CPU. So the device also notes, on its own clock, when it had read
the whole input and when it handed its answer to the line. The columns after
the verdict split each item's error: "device" is that span less the sleep
(the emulated device's own overhead, which a real device's time would be);
"clock" is the recorded time less that span (what the host's clock got
wrong: line model, line threads, the host's own wake-up). On a loaded
machine the first grows; the second is the protocol's.

Run: `.venv/bin/python benchmarks/serial_timing.py [--baud 115200] [--items 200]`.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devices import wire  # noqa: E402
from devices.agent_core import AgentCore  # noqa: E402
from devices.emulator import Emulator  # noqa: E402
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


class TimedCore(AgentCore):
    """The reference agent core, noting on the device's side when each job's input was
    complete and when its answer went to the line (monotonic clock, shared with the host)."""

    spans: dict[int, list[float]] = {}

    def _complete(self) -> None:
        TimedCore.spans[self._job] = [time.monotonic()]
        super()._complete()

    def _finish(self, ftype: int, payload: bytes) -> None:
        span = TimedCore.spans.get(self._job)
        if span is not None and len(span) == 1:
            span.append(time.monotonic())
        super()._finish(ftype, payload)


@dataclass(frozen=True)
class Timed:
    """One item: recorded minus true time, and the device's own input-to-answer span."""

    error: float
    device_span: float


def measure(baud: int, sleep: float, items: int, root: Path) -> list[Timed]:
    """Every item of 0.25 s of audio sent to a device that sleeps ``sleep`` seconds."""
    timed = []
    factory = functools.partial(ChecksumRecognizer, sleep=sleep)
    with Emulator(factory, baud=baud, seed=3, core=TimedCore) as emu:
        runner = SerialRunner(spec(root), {"port": emu.path, "baud": baud, "reset": "none"})
        runner.start()
        try:
            rng = np.random.default_rng(1)
            for n in range(items):
                wav = root / f"t{n}.wav"
                pcm = rng.integers(-3000, 3000, RATE // 4, dtype=np.int16)
                soundfile.write(wav, pcm, RATE, "PCM_16")
                TimedCore.spans.clear()
                got = runner.run_item(ItemRequest(f"t{n}", {"audio": wav}, {}, 30.0))
                if got.output != {"text": expected_text(pcm.astype("<i2").tobytes())}:
                    raise SystemExit(f"wrong answer: {got.outcome} {got.message}")
                (span,) = TimedCore.spans.values()
                timed.append(Timed(got.seconds - sleep, span[1] - span[0]))
        finally:
            runner.stop()
    return timed


def percentile(values: list[float], q: float) -> float:
    """The value below which a share ``q`` of ``values`` lie (nearest rank, no interpolation)."""
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, math.ceil(q * len(ranked)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--items", type=int, default=200)
    args = parser.parse_args()
    answer = len(expected_text(b"x" * 2000)) + 4
    frame_seconds = wire.encoded_size(answer) * 10 / args.baud
    goal = frame_seconds + 0.005
    print(f"{args.baud} baud; one answer frame = {1000 * frame_seconds:.2f} ms on the line")
    print(f"goal: p99 |error| <= {1000 * goal:.2f} ms")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs (scheduling delays show in p99)")
    print(
        f"{'device':>8} {'median':>9} {'p90 |err|':>10} {'p99 |err|':>10} {'min':>9} "
        f"{'max':>9} {'':>6} {'device p99':>11} {'clock p99':>10}"
    )
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for sleep in (0.005, 0.05, 0.5):
            timed = measure(args.baud, sleep, args.items, Path(tmp))
            errors = [t.error for t in timed]
            p99 = percentile([abs(e) for e in errors], 0.99)
            p90 = percentile([abs(e) for e in errors], 0.90)
            device = percentile([abs(t.device_span - sleep) for t in timed], 0.99)
            clock = percentile([abs(t.error + sleep - t.device_span) for t in timed], 0.99)
            failed |= p99 > goal
            print(
                f"{1000 * sleep:>6.0f}ms {1000 * statistics.median(errors):>7.2f}ms "
                f"{1000 * p90:>8.2f}ms {1000 * p99:>8.2f}ms "
                f"{1000 * min(errors):>7.2f}ms {1000 * max(errors):>7.2f}ms"
                f" {'ok' if p99 <= goal else 'MISSED':>6} {1000 * device:>9.2f}ms "
                f"{1000 * clock:>8.2f}ms"
            )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the end {load}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
