"""The transport registry: each transport module registers what it is, once, and the rest of
onsite asks here instead of branching on the device kind.

A transport owns its device settings (a pydantic model whose ``kind`` field is the tag
the site file writes), how a runner is opened on such a device, how ``onsite check``
probes it, what the manifest says about where its systems run, and which modes it
drives. The site validator builds its ``[devices]`` union from :func:`transports`.

A transport's device model and registration live in a small module named
``runners/<name>_device.py`` that imports neither its runner nor what the runner needs
(paramiko, pyserial, psutil): the registry imports every such module on the first look-up,
so that reading a site file or a run directory stays cheap, and the runner is imported by
``open`` (and ``probe``) when a system is started.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .base import Mode, Runner, Sandbox, SystemSpec


@dataclass(frozen=True)
class ProbeResult:
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

    Subclasses declare ``kind: Literal["<name>"]`` (with that default) first.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str

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
    probe: Callable[[S], list[ProbeResult]] | None = None
    # False where the system is the device's own agent and the site names no command.
    needs_command: bool = True
    # Whether files a system writes for an item (speech synthesis audio) come back.
    returns_files: bool = True

    @property
    def kind(self) -> str:
        """The name the site file writes as the device's ``kind``."""
        default = self.settings.model_fields["kind"].default
        return str(default)


_TRANSPORTS: dict[str, Transport[Any]] = {}
# The kinds of runners/*_device.py in module-name order, once they are loaded: listed
# first, in that order, whichever of them some caller happened to import first.
_DEVICE_MODULE_KINDS: list[str] | None = None


def _load_device_modules() -> None:
    """Import every runners/*_device.py once: each registers its transport."""
    global _DEVICE_MODULE_KINDS
    if _DEVICE_MODULE_KINDS is not None:
        return
    here = str(Path(__file__).parent)
    names = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.endswith("_device"))
    kinds = []
    for name in names:
        found = getattr(import_module(f"{__package__}.{name}"), "TRANSPORT", None)
        if isinstance(found, Transport):
            kinds.append(found.kind)
    _DEVICE_MODULE_KINDS = kinds


def register(transport: Transport[Any]) -> Transport[Any]:
    """Make a transport known under its kind (each transport module calls this once)."""
    kind = transport.kind
    if kind in _TRANSPORTS and _TRANSPORTS[kind] is not transport:
        raise ValueError(f"device kind {kind!r} is registered twice")
    _TRANSPORTS[kind] = transport
    return transport


def unregister(kind: str) -> None:
    """Forget a transport (a test's, or a plug-in's that goes away); unknown kinds are ignored."""
    _TRANSPORTS.pop(kind, None)


def transports() -> list[Transport[Any]]:
    """Every registered transport: runners/*_device.py's in module-name order, then the
    others in registration order."""
    _load_device_modules()
    first = [_TRANSPORTS[k] for k in _DEVICE_MODULE_KINDS or () if k in _TRANSPORTS]
    return first + [t for t in _TRANSPORTS.values() if t not in first]


def device_kinds() -> list[str]:
    """The device kinds this installation can drive."""
    _load_device_modules()
    return sorted(_TRANSPORTS)


def transport(kind: str) -> Transport[Any]:
    """The transport registered under ``kind``; ValueError naming the known kinds otherwise."""
    _load_device_modules()
    try:
        return _TRANSPORTS[kind]
    except KeyError:
        raise ValueError(
            f"unknown device kind {kind!r}; known kinds: {', '.join(device_kinds())}"
        ) from None


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
        kind = model.model_fields["kind"].default
        raise ValueError(f"{kind} device: {describe_errors(model, exc)}") from exc


def describe_errors(model: type[BaseModel], exc: ValidationError) -> str:
    """A one-line account of a settings model's validation errors, each naming its key."""
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            known = ", ".join(k for k in model.model_fields if k != "kind")
            parts.append(f"unknown key {key!r} (known: {known})")
        elif err["type"] == "missing":
            parts.append(f"{key!r} is required")
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"{key}: {message}" if key else message)
    return "; ".join(parts)


def open_runner(
    device_kind: str, options: Mapping[str, Any] | DeviceSettings, spec: SystemSpec
) -> Runner:
    """A runner for one system on one device of ``device_kind`` (its validated settings, or a
    mapping validated here by the transport's model)."""
    found = transport(device_kind)
    return found.open(spec, settings_from(found.settings, options))


def probe_device(settings: DeviceSettings) -> list[ProbeResult] | None:
    """``onsite check``'s steps for one device, or None when its transport has nothing to probe."""
    found = transport(settings.kind)
    return None if found.probe is None else found.probe(settings)
