"""Controller side of each transport: start a participant system, feed it items, stop it.

Every transport implements one interface, :class:`Runner`. Runners report
what happened and when, on the controller's monotonic clock; they never judge
budgets. This package may import ``devices`` and nothing else of the project.

Public names load with their module on first use (PEP 562): reading a site file needs
the device models (runners/*_device.py), never paramiko, pyserial or psutil, which load
only with the runner that uses them.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    # Port discovery for `onsite devices`; the harness reaches devices/ only through runners.
    from devices import PortInfo as SerialPortInfo
    from devices import PortProbe as SerialPortProbe
    from devices import list_ports as list_serial_ports
    from devices import probe as probe_serial_port
    from devices.conformance import run_conformance as check_device_conformance

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
    from .local_device import LocalDevice
    from .logcap import LogCap
    from .proctree import TreeMeter, kill_tree
    from .protocol import PARTICIPANT_PROTOCOL_VERSION, ProtocolError, parse_message
    from .registry import (
        open_runner,
        probe_device,
        register,
        transport,
        transport_names,
        transports,
        unregister,
    )
    from .sandbox import check_available as check_sandbox
    from .serial_device import SerialDevice
    from .serial_runner import SerialRunner
    from .ssh import SshServeRunner, probe
    from .ssh_device import SshDevice
    from .transport import CheckStep, DeviceProblem, DeviceSettings, HostFacts, Transport

# Where each public name lives: "module" or "module:its name there" (a module starting
# with "." is one of this package's).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SerialPortInfo": "devices:PortInfo",
        "SerialPortProbe": "devices:PortProbe",
        "list_serial_ports": "devices:list_ports",
        "probe_serial_port": "devices:probe",
        "check_device_conformance": "devices.conformance:run_conformance",
        **dict.fromkeys(
            (
                "DeviceUnreachable",
                "ItemAttempt",
                "ItemRequest",
                "Mode",
                "Outcome",
                "OutputFile",
                "Runner",
                "Sandbox",
                "StartError",
                "StartInfo",
                "SystemSpec",
            ),
            ".base",
        ),
        "LocalExecRunner": ".local",
        "LocalServeRunner": ".local",
        "LocalDevice": ".local_device",
        "LogCap": ".logcap",
        "TreeMeter": ".proctree",
        "kill_tree": ".proctree",
        "PARTICIPANT_PROTOCOL_VERSION": ".protocol",
        "ProtocolError": ".protocol",
        "parse_message": ".protocol",
        **dict.fromkeys(
            ("DeviceProblem", "DeviceSettings", "HostFacts", "CheckStep", "Transport"),
            ".transport",
        ),
        **dict.fromkeys(
            (
                "transport_names",
                "open_runner",
                "probe_device",
                "register",
                "transport",
                "transports",
                "unregister",
            ),
            ".registry",
        ),
        "check_sandbox": ".sandbox:check_available",
        "SerialDevice": ".serial_device",
        "SerialRunner": ".serial_runner",
        "SshServeRunner": ".ssh",
        "probe": ".ssh",
        "SshDevice": ".ssh_device",
    },
)


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
    "CheckStep",
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
    "transport_names",
    "check_sandbox",
    "kill_tree",
    "list_serial_ports",
    "open_runner",
    "probe_serial_port",
    "parse_message",
    "probe",
    "register",
]
