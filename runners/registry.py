"""The transport registry: each transport module registers what it is, once, and the rest of
onsite asks here instead of branching on the transport.

A transport owns its device settings (a pydantic model whose ``transport`` field is the
tag the site file writes), how a runner is opened on such a device, how ``onsite check``
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
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

from .base import Runner, SystemSpec
from .transport import CheckStep, DeviceSettings, Transport, settings_from

_TRANSPORTS: dict[str, Transport[Any]] = {}
# The names of runners/*_device.py's transports in module-name order, once they are loaded:
# listed first, in that order, whichever of them some caller happened to import first.
_DEVICE_MODULE_NAMES: list[str] | None = None


def _load_device_modules() -> None:
    """Import every runners/*_device.py once and register the ``TRANSPORT`` it declares."""
    global _DEVICE_MODULE_NAMES
    if _DEVICE_MODULE_NAMES is not None:
        return
    here = str(Path(__file__).parent)
    names = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.endswith("_device"))
    found_names = []
    for name in names:
        found = getattr(import_module(f"{__package__}.{name}"), "TRANSPORT", None)
        if isinstance(found, Transport):
            register(found)
            found_names.append(found.name)
    _DEVICE_MODULE_NAMES = found_names


def register(transport: Transport[Any]) -> Transport[Any]:
    """Make a transport known under its name (the device modules' are registered by the scan;
    a test's or a plug-in's transport calls this)."""
    name = transport.name
    if name in _TRANSPORTS and _TRANSPORTS[name] is not transport:
        raise ValueError(f"transport {name!r} is registered twice")
    _TRANSPORTS[name] = transport
    return transport


def unregister(name: str) -> None:
    """Forget a transport (a test's, or a plug-in's that goes away); unknown names are ignored."""
    _TRANSPORTS.pop(name, None)


def transports() -> list[Transport[Any]]:
    """Every registered transport: runners/*_device.py's in module-name order, then the
    others in registration order."""
    _load_device_modules()
    first = [_TRANSPORTS[k] for k in _DEVICE_MODULE_NAMES or () if k in _TRANSPORTS]
    return first + [t for t in _TRANSPORTS.values() if t not in first]


def transport_names() -> list[str]:
    """The transports this installation can drive, by name."""
    _load_device_modules()
    return sorted(_TRANSPORTS)


def transport(name: str) -> Transport[Any]:
    """The transport registered under ``name``; ValueError naming the known ones otherwise."""
    _load_device_modules()
    try:
        return _TRANSPORTS[name]
    except KeyError:
        raise ValueError(
            f"unknown transport {name!r}; known transports: {', '.join(transport_names())}"
        ) from None


def open_runner(
    transport_name: str, options: Mapping[str, Any] | DeviceSettings, spec: SystemSpec
) -> Runner:
    """A runner for one system on a device of the transport ``transport_name`` (its validated
    settings, or a mapping validated here by the transport's model)."""
    found = transport(transport_name)
    return found.open(spec, settings_from(found.settings, options))


def probe_device(settings: DeviceSettings) -> list[CheckStep] | None:
    """``onsite check``'s steps for one device, or None when its transport has nothing to probe."""
    found = transport(settings.transport)
    return None if found.probe is None else found.probe(settings)
