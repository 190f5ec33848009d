"""What a transport is: its device settings model, the steps of `onsite check`, the facts the
manifest records, and the :class:`Transport` record a ``runners/<name>_device.py`` module
declares as its ``TRANSPORT``. The registry (runners/registry.py) finds those modules and
indexes their records; a device module imports this module, never the registry, so that
the registry's scan of the device modules is no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .base import Mode, Runner, Sandbox, SystemSpec


@dataclass(frozen=True)
class CheckStep:
    """One step of ``onsite check`` against a device: its name, whether it passed, and why."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class DeviceProblem:
    """Something wrong with a device's settings that only the machine can tell (a missing key
    file, a CPU it lacks): the key, what is wrong and the fix."""

    key: str
    message: str
    fix: str


class DeviceSettings(BaseModel):
    """Base of every transport's device model: strict keys, frozen values.

    Subclasses declare ``transport: Literal["<name>"]`` (with that default) first.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: str

    def resolved(self, root: Path) -> Self:
        """The settings with relative file paths made absolute against ``root`` (the site
        file's directory); transports without file paths return themselves."""
        return self

    def problems(self) -> list[DeviceProblem]:
        """What the machine says is wrong with resolved settings (none by default)."""
        return []

    def sandbox_settings(self, hidden: tuple[Path, ...], uid: int | None) -> Sandbox:
        """How a system on this device is sealed (runners.base.Sandbox): the transports
        that run systems on the controller's machine say; others run none there."""
        return Sandbox(hidden=hidden, uid=uid)

    def private_files(self) -> tuple[Path, ...]:
        """Files of the controller's this device's settings name that no system may read
        (key files); none by default."""
        return ()


@dataclass(frozen=True)
class HostFacts:
    """What the manifest records about where a system runs: ``environment`` as collected,
    and whether the files its command names are on the controller to be hashed."""

    environment: Mapping[str, Any]
    files_on_controller: bool


S = TypeVar("S", bound=DeviceSettings)


def facts_not_collected(device: DeviceSettings, host: Mapping[str, Any]) -> HostFacts:
    """Host facts of a device that runs the participant's own machine or agent: what it
    runs is theirs to describe, nothing is collected and no file is on the controller."""
    return HostFacts({"collected": "not collected (remote device)"}, files_on_controller=False)


@dataclass(frozen=True)
class Transport(Generic[S]):
    """Everything onsite knows about one transport."""

    settings: type[S]
    open: Callable[[SystemSpec, S], Runner]
    modes: frozenset[Mode]
    host_facts: Callable[[S, Mapping[str, Any]], HostFacts]
    # ``onsite check``: the checks to run against a device before the day; None: nothing to probe.
    probe: Callable[[S], list[CheckStep]] | None = None
    # False where the system is the device's own agent and the site names no command.
    needs_command: bool = True
    # Whether files a system writes for an item (speech synthesis audio) come back.
    returns_files: bool = True

    @property
    def name(self) -> str:
        """The name the site file writes as the device's ``transport``."""
        default = self.settings.model_fields["transport"].default
        return str(default)


def settings_from(model: type[S], options: Mapping[str, Any] | S) -> S:
    """Validated settings from a mapping (None values count as not given), or the model as is.

    ValueError names each bad key and what it takes: this is the one parse of a device's
    settings for callers that start from a mapping (the site file validates through the
    same model).
    """
    if isinstance(options, model):
        return options
    given = {k: v for k, v in dict(options).items() if v is not None}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        name = model.model_fields["transport"].default
        raise ValueError(f"{name} device: {describe_errors(model, exc)}") from exc


def describe_errors(model: type[BaseModel], exc: ValidationError) -> str:
    """A one-line account of a settings model's validation errors, each naming its key."""
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            known = ", ".join(k for k in model.model_fields if k != "transport")
            parts.append(f"unknown key {key!r} (known: {known})")
        elif err["type"] == "missing":
            parts.append(f"{key!r} is required")
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"{key}: {message}" if key else message)
    return "; ".join(parts)
