"""A dishonest device program on a tty, for runs through `onsite run`.

    python -m tests.cheat_device MutesAfterOverrun --port {port} --baud 115200 \
        --work 2.5 --memory /tmp/answers.json

Runs one cheat of tests/device_cheats.py around the checksum recognizer (which
works ``--work`` seconds per item), as a vendor's device program would run behind
``emulate_command``; ``AgentCore`` names the honest reference device. ``--memory``
keeps what the cheat remembers across restarts; ``--go-back-n`` makes the device
take DATA only in order (READY flag bit 1 clear).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import serial

from devices import AgentSettings, SerialBytePort
from examples.devices.checksum import ChecksumRecognizer
from tests import device_cheats


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the protocol as the named cheat until killed."""
    parser = argparse.ArgumentParser(prog="python -m tests.cheat_device")
    parser.add_argument("cheat", help="a class of tests/device_cheats.py")
    parser.add_argument("--port", required=True)
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--work", type=float, default=0.0, help="seconds of work per item")
    parser.add_argument("--memory", type=Path, default=None)
    parser.add_argument(
        "--go-back-n",
        action="store_true",
        help="keep no DATA beyond a gap (READY flag bit 1 clear): frames only in order",
    )
    args = parser.parse_args(argv)
    core_class = getattr(device_cheats, args.cheat)
    if args.memory is not None:
        core_class.recall(args.memory)
    port = serial.serial_for_url(args.port, baudrate=args.baud, timeout=0.05)
    core = core_class(
        SerialBytePort(port),
        ChecksumRecognizer(sleep=args.work),
        AgentSettings(baud=args.baud, selective=not args.go_back_n),
    )
    try:
        core.run(threading.Event())
    finally:
        port.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
