"""Controller side of each transport: start a participant system, feed it items, stop it.

Every transport implements one interface, :class:`Runner`. Runners report
what happened and when, on the controller's monotonic clock; they never judge
budgets. This package may import ``devices`` and nothing else of the project.

Public names load with their module on first use (PEP 562): reading a site file needs
the device models (runners/*_device.py), never paramiko, pyserial or psutil, which load
only with the runner that uses them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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
    from .serial_device import SerialDevice
    from .serial_runner import SerialRunner
    from .ssh import SshServeRunner, probe
    from .ssh_device import SshDevice

# Public name -> (module, its name there); a module starting with "." is one of ours.
_EXPORTS: dict[str, tuple[str, str]] = {
    "SerialPortInfo": ("devices", "PortInfo"),
    "SerialPortProbe": ("devices", "PortProbe"),
    "list_serial_ports": ("devices", "list_ports"),
    "probe_serial_port": ("devices", "probe"),
    "check_device_conformance": ("devices.conformance", "run_conformance"),
    **{
        name: (".base", name)
        for name in (
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
        )
    },
    "LocalExecRunner": (".local", "LocalExecRunner"),
    "LocalServeRunner": (".local", "LocalServeRunner"),
    "LocalDevice": (".local_device", "LocalDevice"),
    "LogCap": (".logcap", "LogCap"),
    "TreeMeter": (".proctree", "TreeMeter"),
    "kill_tree": (".proctree", "kill_tree"),
    "PARTICIPANT_PROTOCOL_VERSION": (".protocol", "PARTICIPANT_PROTOCOL_VERSION"),
    "ProtocolError": (".protocol", "ProtocolError"),
    "parse_message": (".protocol", "parse_message"),
    **{
        name: (".registry", name)
        for name in (
            "DeviceProblem",
            "DeviceSettings",
            "HostFacts",
            "ProbeResult",
            "Transport",
            "device_kinds",
            "open_runner",
            "probe_device",
            "register",
            "transport",
            "transports",
            "unregister",
        )
    },
    "check_sandbox": (".sandbox", "check_available"),
    "SerialDevice": (".serial_device", "SerialDevice"),
    "SerialRunner": (".serial_runner", "SerialRunner"),
    "SshServeRunner": (".ssh", "SshServeRunner"),
    "probe": (".ssh", "probe"),
    "SshDevice": (".ssh_device", "SshDevice"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
