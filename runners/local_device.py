"""The ``local`` transport's device model and registration: a process on the controller's
own machine.

Kept apart from runners/local.py (the runners, psutil, the sandbox) so that reading a
site file or a run directory does not load them: ``open`` imports the runner when a
system is started.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from .base import Runner, Sandbox, SystemSpec
from .transport import DeviceProblem, DeviceSettings, HostFacts, Transport

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any) -> int:
    """Bytes from a whole number or a text such as "512M", "4G", "1.5GiB" (binary units)."""
    if isinstance(value, bool):
        raise ValueError("give a size such as 4G or 512M, or a number of bytes")
    if isinstance(value, int):
        return value
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"cannot read {value!r} as a size; give e.g. 4G, 512M or 1073741824")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _size(low: int) -> Any:
    def check(value: Any) -> int:
        size = parse_size(value)
        if size < low:
            raise ValueError(f"at least {low >> 20} MiB")
        return size

    return BeforeValidator(check)


class LocalDevice(DeviceSettings):
    """A process on the controller's own machine: the site file's ``[devices.NAME]`` with
    ``transport = "local"``."""

    transport: Literal["local"] = "local"
    cpus: list[Annotated[int, Field(ge=0)]] | None = None
    # Sealing (docs/security.md): off only for a system that needs what the sandbox hides;
    # the report then marks the system unsealed.
    sandbox: bool = True
    network: bool = False
    # An existing unprivileged account; left out, each system runs as a user of its own.
    user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]*$")] | None = None
    # Each system's own limits (docs/security.md, "Limits").
    memory_limit: Annotated[int, _size(16 << 20)] = 4 << 30
    scratch_limit: Annotated[int, _size(1 << 20)] = 1 << 30
    max_processes: Annotated[int, Field(ge=8, le=1 << 22)] = 1024

    def sandbox_settings(self, hidden: tuple[Path, ...], uid: int | None) -> Sandbox:
        """How a system on this device is sealed (runners.base.Sandbox)."""
        return Sandbox(
            enabled=self.sandbox,
            network=self.network,
            user=self.user,
            uid=uid,
            hidden=hidden,
            max_processes=self.max_processes,
            memory_bytes=self.memory_limit,
            scratch_bytes=self.scratch_limit,
        )

    def problems(self) -> list[DeviceProblem]:
        """CPUs to pin to that this machine does not have (or this process may not use)."""
        if not self.cpus:
            return []
        available = os.sched_getaffinity(0)
        missing = sorted(set(self.cpus) - available)
        if not missing:
            return []
        return [
            DeviceProblem(
                "cpus",
                f"CPUs {missing} are not available here (have {sorted(available)})",
                "list only CPUs this machine has",
            )
        ]


def _open_local(spec: SystemSpec, device: LocalDevice) -> Runner:
    from .local import LocalExecRunner, LocalServeRunner

    if spec.mode == "exec":
        return LocalExecRunner(spec, device.cpus)
    return LocalServeRunner(spec, device.cpus)


def _controller_facts(device: LocalDevice, host: Mapping[str, Any]) -> HostFacts:
    # The system runs here: the controller describes the machine, and the CPUs it may use.
    cpus = list(device.cpus) if device.cpus else None
    return HostFacts(
        {
            "collected": "automatically, on the controller",
            "os": host["os"],
            "cpu_model": host["cpu_model"],
            "cpu_count": len(cpus) if cpus else host["cpu_count"],
            "cpus": cpus,
            "memory_bytes": host["memory_bytes"],
        },
        files_on_controller=True,
    )


TRANSPORT = (
    Transport(
        settings=LocalDevice,
        open=_open_local,
        modes=frozenset({"serve", "exec"}),
        host_facts=_controller_facts,
    )
)
