"""Device kinds by name: the site file says `kind = "local"`, this finds the runner for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import Runner, SystemSpec
from .local import LocalExecRunner, LocalServeRunner
from .serial_runner import SerialRunner
from .ssh import SshServeRunner

RunnerFactory = Callable[[SystemSpec, Mapping[str, Any]], Runner]
_FACTORIES: dict[str, RunnerFactory] = {}


def register(kind: str) -> Callable[[RunnerFactory], RunnerFactory]:
    """Register the factory that opens runners for one device kind."""

    def decorate(factory: RunnerFactory) -> RunnerFactory:
        _FACTORIES[kind] = factory
        return factory

    return decorate


def device_kinds() -> list[str]:
    """The device kinds this installation can drive."""
    return sorted(_FACTORIES)


def open_runner(kind: str, options: Mapping[str, Any], spec: SystemSpec) -> Runner:
    """A runner for one system on one device; options are the device's settings."""
    try:
        factory = _FACTORIES[kind]
    except KeyError:
        raise ValueError(
            f"unknown device kind {kind!r}; known kinds: {', '.join(device_kinds())}"
        ) from None
    return factory(spec, options)


@register("local")
def _local(spec: SystemSpec, options: Mapping[str, Any]) -> Runner:
    cpus = options.get("cpus")
    if spec.mode == "exec":
        return LocalExecRunner(spec, cpus)
    return LocalServeRunner(spec, cpus)


@register("ssh")
def _ssh(spec: SystemSpec, options: Mapping[str, Any]) -> Runner:
    return SshServeRunner(spec, options)


@register("serial")
def _serial(spec: SystemSpec, options: Mapping[str, Any]) -> Runner:
    return SerialRunner(spec, options)
