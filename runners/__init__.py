"""Controller side of each transport: start a participant system, feed it items, stop it.

Every transport implements one interface, :class:`Runner`. Runners report
what happened and when, on the controller's monotonic clock; they never judge
budgets. This package may import ``devices`` and nothing else of the project.
"""

# Port discovery for `onsite devices`; the harness reaches devices/ only through runners.
from devices import PortInfo as SerialPortInfo  # noqa: E402
from devices import ProbeResult as SerialProbeResult  # noqa: E402
from devices import list_ports as list_serial_ports  # noqa: E402
from devices import probe as probe_serial_port  # noqa: E402
from devices.conformance import run_conformance as check_device_conformance  # noqa: E402

from .base import (
    DeviceUnreachable,
    ItemAttempt,
    ItemRequest,
    Mode,
    Outcome,
    OutputFile,
    Runner,
    Sandbox,
    StartError,
    StartInfo,
    SystemSpec,
)
from .local import LocalExecRunner, LocalServeRunner
from .logcap import LogCap
from .proctree import TreeMeter, kill_tree
from .protocol import PROTOCOL_VERSION, ProtocolError, parse_message
from .registry import device_kinds, open_runner, register
from .sandbox import check_available as check_sandbox
from .serial_runner import SerialOptions, SerialRunner
from .ssh import ProbeResult, SshServeRunner, probe
from .ssh_link import SshOptions

__all__ = [
    "check_device_conformance",
    "DeviceUnreachable",
    "PROTOCOL_VERSION",
    "ItemAttempt",
    "ItemRequest",
    "LocalExecRunner",
    "LocalServeRunner",
    "LogCap",
    "Mode",
    "Outcome",
    "OutputFile",
    "ProbeResult",
    "ProtocolError",
    "Runner",
    "Sandbox",
    "StartError",
    "StartInfo",
    "SerialOptions",
    "SerialPortInfo",
    "SerialProbeResult",
    "SerialRunner",
    "SshOptions",
    "SshServeRunner",
    "SystemSpec",
    "TreeMeter",
    "device_kinds",
    "check_sandbox",
    "kill_tree",
    "list_serial_ports",
    "open_runner",
    "probe_serial_port",
    "parse_message",
    "probe",
    "register",
]
