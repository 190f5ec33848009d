"""Controller side of each transport: start a participant system, feed it items, stop it.

Every transport implements one interface, :class:`Runner`. Runners report
what happened and when, on the controller's monotonic clock; they never judge
budgets. This package may import ``devices`` and nothing else of the project.
"""

# Port discovery for `onsite devices`; the harness reaches devices/ only through runners.
from devices import PortInfo as SerialPortInfo  # noqa: E402
from devices import PortProbe as SerialPortProbe  # noqa: E402
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
from .local import LocalDevice, LocalExecRunner, LocalServeRunner
from .logcap import LogCap
from .proctree import TreeMeter, kill_tree
from .protocol import PARTICIPANT_PROTOCOL_VERSION, ProtocolError, parse_message
from .registry import (
    DeviceProblem,
    DeviceSettings,
    HostFacts,
    ProbeResult,
    Transport,
    device_kinds,
    open_runner,
    probe_device,
    register,
    transport,
    transports,
    unregister,
)
from .sandbox import check_available as check_sandbox
from .serial_runner import SerialDevice, SerialRunner
from .ssh import SshServeRunner, probe
from .ssh_link import SshDevice

__all__ = [
    "check_device_conformance",
    "DeviceProblem",
    "DeviceSettings",
    "DeviceUnreachable",
    "HostFacts",
    "LocalDevice",
    "PARTICIPANT_PROTOCOL_VERSION",
    "Transport",
    "probe_device",
    "transport",
    "transports",
    "unregister",
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
    "SerialDevice",
    "SerialPortInfo",
    "SerialPortProbe",
    "SerialRunner",
    "SshDevice",
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
