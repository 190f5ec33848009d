"""Effective payload throughput of the serial protocol as a fraction of the line rate.

The agent (examples/devices/checksum.py) runs on the pty emulator, which moves
baud / 10 bytes per second each way; the controller's DeviceLink sends random
PCM of several sizes. The peer is the line itself: payload bytes / (transfer
time x baud / 10), measured from BEGIN to COMPLETE. Goal: >= 0.85 for large
inputs. With --bit-error-rate the same figures show the cost of retransmission.

Run: `.venv/bin/python benchmarks/serial_throughput.py [--bauds 115200 921600]
[--sizes 4000 64000 320000] [--bit-error-rate 0]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import serial

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devices import DeviceLink, Emulator, JobKind, wire  # noqa: E402
from examples.devices.checksum import ChecksumRecognizer, expected_text  # noqa: E402


def measure(baud: int, size: int, ber: float, repeats: int) -> tuple[float, int]:
    """Best efficiency over ``repeats`` transfers of ``size`` bytes, and retransmitted frames."""
    with Emulator(ChecksumRecognizer, baud=baud, bit_error_rate=ber, seed=1) as emu:
        port = serial.serial_for_url(emu.path, baudrate=baud)
        try:
            link = DeviceLink(port, baud)
            link.hello(time.monotonic() + 5)
            link.run_job(JobKind.SETUP, b"", 0, time.monotonic() + 5)
            best = 0.0
            for _ in range(repeats):
                data = os.urandom(size)
                job = link.next_job()
                t0 = time.monotonic()
                done = link.transfer(job, JobKind.ITEM, data, 8000)
                answer = link.wait_answer(job, time.monotonic() + 30)
                if answer.text != expected_text(data):
                    raise SystemExit("corrupt transfer: the benchmark is void")
                best = max(best, size / ((done.complete_at - t0) * baud / 10))
            return best, link.counters.retransmitted_frames
        finally:
            port.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bauds", type=int, nargs="+", default=[115200, 921600])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 64000, 320000])
    parser.add_argument("--bit-error-rate", type=float, default=0.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"frame overhead: {wire.FRAME_OVERHEAD + 8 + 1} bytes + COBS per DATA frame")
    print(f"{'baud':>8} {'bytes':>8} {'of line rate':>13} {'retransmitted':>14}")
    for baud in args.bauds:
        for size in args.sizes:
            if baud < 200000 and size > 100000:
                size //= 4  # keep the slow line's run short; the ratio is what counts
            ratio, resent = measure(baud, size, args.bit_error_rate, args.repeats)
            print(f"{baud:>8} {size:>8} {ratio:>12.1%} {resent:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
