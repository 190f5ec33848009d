"""Port discovery and a quick look at whatever answers on a port (for `onsite devices`)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import serial
from serial.tools import list_ports as _list_ports

from .host import DeviceLink, LinkLost
from .wire import Ready


@dataclass(frozen=True)
class PortInfo:
    """One serial port the operating system knows."""

    device: str
    description: str
    hwid: str


@dataclass(frozen=True)
class PortProbe:
    """What HELLO on a port found: the device's READY and a PING round trip, or why not."""

    port: str
    baud: int
    ready: Ready | None
    round_trip_seconds: float | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.ready is not None


def list_ports() -> list[PortInfo]:
    """Serial ports present on this machine, sorted by device path."""
    found = [PortInfo(p.device, p.description or "", p.hwid or "") for p in _list_ports.comports()]
    return sorted(found, key=lambda p: p.device)


def probe(port: str, baud: int = 115200, timeout: float = 3.0) -> PortProbe:
    """Send HELLO on ``port`` (a path or pyserial URL) and report the device's READY.

    HELLO ends any session the device had, as the protocol says; do not probe a
    port a run is using.
    """
    try:
        handle = serial.serial_for_url(port, baudrate=baud, timeout=0.02, write_timeout=timeout)
    except (serial.SerialException, ValueError, OSError) as exc:
        return PortProbe(port, baud, None, None, f"cannot open {port}: {exc}")
    try:
        link = DeviceLink(handle, baud)
        try:
            ready = link.hello(time.monotonic() + timeout)
        except LinkLost:
            return PortProbe(
                port, baud, None, None, f"no READY within {timeout:g} s (wrong baud rate?)"
            )
        except (serial.SerialException, OSError) as exc:
            return PortProbe(port, baud, None, None, f"I/O error on {port}: {exc}")
        rtt = link.ping(timeout=1.0)
        return PortProbe(port, baud, ready, rtt)
    finally:
        with contextlib.suppress(Exception):
            handle.close()
