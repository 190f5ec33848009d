"""Embedded devices on a serial line: wire protocol, device-side agent, emulator.

- :mod:`devices.wire`: frames (COBS, CRC-32) and message payloads, as
  docs/device-protocol.md specifies them.
- :mod:`devices.host`: the controller's side of the protocol (:class:`DeviceLink`).
- :mod:`devices.agent_core`: the device's side; participants do not edit it.
- :mod:`devices.hooks`: the :class:`Recognizer` hooks participants fill in.
- :mod:`devices.emulator`: the agent behind a pty with an emulated line.
- :mod:`devices.ports`: port discovery and probing.

This package imports nothing else of the project but ``lazy_exports`` (a stand-alone
module beside it: a board that runs the agent from a copy needs both).
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

from .agent_core import AgentCore, AgentSettings, BytePort, SerialBytePort
from .hooks import Recognizer, RecognizerFactory, load_agent
from .host import Answer, DeviceLink, DeviceRefused, LinkCounters, LinkInterrupted, LinkLost
from .ports import PortInfo, PortProbe, list_ports, probe
from .wire import PROTOCOL_VERSION, ErrorCode, FrameType, JobKind, Ready

if TYPE_CHECKING:
    from .emulator import Emulator, LineStats, emulate

# The emulator loads on first use, so that `python -m devices.emulator` does not find its
# own module already imported by this package.
__getattr__, __dir__ = lazy_exports(
    __name__, dict.fromkeys(("Emulator", "LineStats", "emulate"), ".emulator")
)

__all__ = [
    "PROTOCOL_VERSION",
    "AgentCore",
    "AgentSettings",
    "Answer",
    "BytePort",
    "DeviceLink",
    "DeviceRefused",
    "Emulator",
    "ErrorCode",
    "FrameType",
    "JobKind",
    "LineStats",
    "LinkCounters",
    "LinkInterrupted",
    "LinkLost",
    "PortInfo",
    "PortProbe",
    "Ready",
    "Recognizer",
    "RecognizerFactory",
    "SerialBytePort",
    "emulate",
    "list_ports",
    "load_agent",
    "probe",
]
