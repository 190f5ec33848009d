"""The ``local`` transport's device model and registration: a process on the controller's
own machine.

Kept apart from runners/local.py (the runners, psutil, the sandbox) so that reading a
site file or a run directory does not load them: ``open`` imports the runner when a
system is started.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from .base import Runner, SystemSpec
from .registry import DeviceProblem, DeviceSettings, HostFacts, Transport, register


class LocalDevice(DeviceSettings):
    """A process on the controller's own machine: the site file's ``[devices.NAME]`` with
    ``kind = "local"``."""

    kind: Literal["local"] = "local"
    cpus: list[Annotated[int, Field(ge=0)]] | None = None
    # Sealing (docs/security.md): off only for a system that needs what the sandbox hides;
    # the report then marks the system unsealed.
    sandbox: bool = True
    network: bool = False
    user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]*$")] = "nobody"

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


TRANSPORT = register(
    Transport(
        settings=LocalDevice,
        open=_open_local,
        modes=frozenset({"serve", "exec"}),
        host_facts=_controller_facts,
    )
)
