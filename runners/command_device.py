"""The ``command`` transport's settings and registration: a device reached through any command
that gives a shell on it (docs/command.md), such as ``["ssh", "-T", "eval@10.0.0.9"]``,
``["docker", "exec", "-i", "ctr", "sh"]``, ``["adb", "shell"]`` or
``["kubectl", "exec", "-i", "pod", "--", "sh"]``.

Kept apart from runners/command.py so that reading a site file or a run directory does not
load the runner: ``open`` and ``probe`` import it when a system is started or a device is
checked. The runner takes these settings and imports nothing of this module at run time.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PositiveFloat

from .base import Runner, SystemSpec
from .transport import (
    CheckStep,
    DeviceProblem,
    DeviceSettings,
    Transport,
    facts_not_collected,
)


class CommandDevice(DeviceSettings):
    """A device reached through a command that gives a shell on it: the site file's
    ``[devices.NAME]`` with ``transport = "command"`` (docs/command.md)."""

    transport: Literal["command"] = "command"
    # The program and its arguments; run on the controller, it must give a POSIX shell on
    # the device that reads commands from its stdin, bytes unchanged (no terminal).
    command: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    # Where the command runs on the controller (relative to the site file); its relative
    # paths are relative to it. Default: the site file's directory.
    cwd: str | None = None
    # Files of the controller's the command reads without naming them (an ssh config, a
    # kubeconfig), hidden from local systems like the files it names.
    hidden_files: list[str] = []
    workdir: str = "/tmp/onsite"
    # Seconds for each run of the command to give a shell: at a job's first contact (tried
    # once; the controller waits for a device that gives none), and for every operation.
    connect_timeout: PositiveFloat = 10.0
    # Seconds a new run of the command has to give a shell when the controller checks,
    # right after a session died mid-item, whether the device is up.
    evidence_seconds: Annotated[float, Field(ge=0.5, le=60.0)] = 3.0
    # Nothing back through the command's keep-alive for this long: the link is dead.
    link_timeout: Annotated[float, Field(ge=1.0, le=600.0)] = 5.0
    rtt_interval: PositiveFloat = 30.0

    @property
    def directory(self) -> Path:
        """Where the command runs (the site file's directory once resolved)."""
        return Path(self.cwd).expanduser() if self.cwd else Path.cwd()

    def resolved(self, root: Path) -> CommandDevice:
        """``cwd`` and ``hidden_files`` made absolute against the site file's directory."""
        cwd = (root / Path(self.cwd or ".").expanduser()).resolve()
        hidden = [str((root / Path(p).expanduser()).resolve()) for p in self.hidden_files]
        return self.model_copy(update={"cwd": str(cwd), "hidden_files": hidden})

    def private_files_named(self) -> tuple[Path, ...]:
        """The files the command names: every argument after the program, and the value of
        every ``NAME=VALUE`` argument, that is a file on the controller (relative ones
        against ``cwd``): an ssh ``-i`` key, a ``UserKnownHostsFile``, a ``-F`` config."""
        found: list[Path] = []
        for arg in self.command[1:]:
            for text in {arg, arg.partition("=")[2]} - {""}:
                path = self.directory / Path(text).expanduser()
                if path.is_file() and path.resolve() not in found:
                    found.append(path.resolve())
        return tuple(found)

    def private_files(self) -> tuple[Path, ...]:
        """The files the command names and ``hidden_files``: no sealed system may read them."""
        return (*self.private_files_named(), *(Path(p).expanduser() for p in self.hidden_files))

    def problems(self) -> list[DeviceProblem]:
        """A program that is not on the controller (checked before the day)."""
        found: list[DeviceProblem] = []
        program = self.command[0]
        if "/" in program:
            present = (self.directory / Path(program).expanduser()).is_file()
        else:
            present = shutil.which(program) is not None
        if not present:
            found.append(
                DeviceProblem(
                    "command",
                    f"the program {program!r} is not on this machine",
                    "install it, or give its path (relative to the site file)",
                )
            )
        return found


def _open_command(spec: SystemSpec, device: CommandDevice) -> Runner:
    from .command import CommandServeRunner

    return CommandServeRunner(spec, device)


def _probe_command(device: CommandDevice) -> list[CheckStep]:
    from .command import probe

    return probe(device)


TRANSPORT = (
    Transport(
        settings=CommandDevice,
        open=_open_command,
        modes=frozenset({"serve"}),
        host_facts=facts_not_collected,
        probe=_probe_command,
    )
)
