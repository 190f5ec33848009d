"""Run a device agent on a real serial port (on a Python-capable device).

    python -m devices.agent --agent examples.devices.sphinx_command --port /dev/ttyS0 \
        --baud 115200
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence

import serial

from .agent_core import AgentCore, AgentSettings, SerialBytePort
from .hooks import load_agent


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the protocol on ``--port`` until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m devices.agent")
    parser.add_argument("--agent", required=True, help="agent module with make_recognizer()")
    parser.add_argument("--port", required=True, help="serial device or pyserial URL")
    parser.add_argument("--baud", type=int, default=115200)
    args = parser.parse_args(argv)
    try:
        factory = load_agent(args.agent)
        port = serial.serial_for_url(args.port, baudrate=args.baud, timeout=0.05)
    except (ValueError, serial.SerialException) as exc:
        parser.error(str(exc))
    core = AgentCore(SerialBytePort(port), factory(), AgentSettings(baud=args.baud))
    try:
        core.run(threading.Event())
    except KeyboardInterrupt:
        pass
    finally:
        port.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
