"""Payload throughput of the serial protocol as a fraction of the line rate, under bit errors.

The reference agent (examples/devices/checksum.py) runs on the pty emulator,
which moves baud / 10 bytes per second each way and flips bits at the given
rate in both directions; the controller's DeviceLink sends random PCM items.
The peer is the line itself: payload bytes / (transfer time x baud / 10), the
transfer timed from BEGIN leaving to the device's confirmation that it holds
the input. The link keeps its chunk size across items (as in a run), so the
first item, which has to learn the error rate, is a warm-up and not counted.

Goals at 115200 baud: clean >= 0.97, bit error rate 1e-4 >= 0.70, 1e-3 >= 0.30.

`--window N` sets the device's READY window (the reference agent says 64)
and `--go-back-n` makes it a device without READY flag bit 1; the goals are
for the default device (docs/device-protocol.md section 8 has the table).

Run: `.venv/bin/python benchmarks/serial_throughput.py [--baud 115200]
[--rates 0 1e-4 1e-3] [--items 3] [--bytes 32000] [--window 64] [--go-back-n]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import serial

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devices import DeviceLink, Emulator, JobKind  # noqa: E402
from devices.agent_core import AgentSettings  # noqa: E402
from examples.devices.checksum import ChecksumRecognizer, expected_text  # noqa: E402

GOALS = {0.0: 0.97, 1e-4: 0.70, 1e-3: 0.30}


def measure(
    baud: int,
    ber: float,
    items: int,
    size: int,
    seed: int,
    settings: AgentSettings | None = None,
) -> tuple[float, int, int]:
    """(payload rate / line rate over the counted items, chunk size at the end, resent frames)."""
    settings = settings or AgentSettings(baud=baud)
    with Emulator(
        ChecksumRecognizer, baud=baud, bit_error_rate=ber, seed=seed, settings=settings
    ) as emu:
        port = serial.serial_for_url(emu.path, baudrate=baud)
        try:
            link = DeviceLink(port, baud)
            link.hello(time.monotonic() + 5)
            link.run_job(JobKind.SETUP, b"", 0, time.monotonic() + 5)
            payload = 0
            seconds = 0.0
            before = link.counters.copy()
            for n in range(items + 1):
                data = os.urandom(size)
                job = link.next_job()
                if n == 1:
                    before = link.counters.copy()
                t0 = time.monotonic()
                done = link.transfer(job, JobKind.ITEM, data, 8000)
                answer = link.wait_answer(job, time.monotonic() + 60)
                if answer.text != expected_text(data):
                    raise SystemExit("corrupt transfer accepted: the benchmark is void")
                if n > 0:
                    payload += size
                    seconds += done.complete_at - t0
            sizer = link.sizer_for(link.ready) if link.ready else None
            resent = link.counters.since(before).retransmitted_frames
            return payload / (seconds * baud / 10), sizer.chunk if sizer else 0, resent
        finally:
            port.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.0, 1e-4, 1e-3])
    parser.add_argument("--items", type=int, default=3, help="counted items after a warm-up")
    parser.add_argument("--bytes", type=int, default=32000, help="PCM bytes per item")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=AgentSettings().window)
    parser.add_argument("--go-back-n", action="store_true", help="a device without flag bit 1")
    args = parser.parse_args()
    settings = AgentSettings(baud=args.baud, window=args.window, selective=not args.go_back_n)
    mode = "go-back-N" if args.go_back_n else "selective retransmission"
    print(f"{args.baud} baud, {args.items} items of {args.bytes} bytes after one warm-up item")
    print(f"device: {mode}, window {args.window}")
    print(f"{'bit errors':>10} {'of baud/10':>11} {'goal':>6} {'chunk':>6} {'resent':>7}")
    failed = False
    for ber in args.rates:
        ratio, chunk, resent = measure(args.baud, ber, args.items, args.bytes, args.seed, settings)
        default = args.window == AgentSettings().window and not args.go_back_n
        goal = GOALS.get(ber) if default else None
        mark = "" if goal is None else ("ok" if ratio >= goal else "MISSED")
        failed |= mark == "MISSED"
        goal_text = f"{goal:.2f}" if goal is not None else "-"
        print(f"{ber:>10g} {ratio:>11.3f} {goal_text:>6} {chunk:>6} {resent:>7} {mark}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
