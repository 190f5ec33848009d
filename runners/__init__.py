"""Controller side of each transport: start a participant system, feed it items, stop it.

Every transport implements one interface, :class:`Runner`. Runners report
what happened and when, on the controller's monotonic clock; they never judge
budgets. This package may import ``devices`` and nothing else of the project.
"""

from .base import (
    ItemAttempt,
    ItemRequest,
    Mode,
    Outcome,
    Runner,
    StartError,
    StartInfo,
    SystemSpec,
)
from .local import LocalExecRunner, LocalServeRunner
from .proctree import TreeMeter, kill_tree
from .protocol import PROTOCOL_VERSION, ProtocolError, parse_message
from .registry import device_kinds, open_runner, register
from .ssh import ProbeResult, SshServeRunner, probe
from .ssh_link import SshOptions

__all__ = [
    "PROTOCOL_VERSION",
    "ItemAttempt",
    "ItemRequest",
    "LocalExecRunner",
    "LocalServeRunner",
    "Mode",
    "Outcome",
    "ProbeResult",
    "ProtocolError",
    "Runner",
    "StartError",
    "StartInfo",
    "SshOptions",
    "SshServeRunner",
    "SystemSpec",
    "TreeMeter",
    "device_kinds",
    "kill_tree",
    "open_runner",
    "parse_message",
    "probe",
    "register",
]
