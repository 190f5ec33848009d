"""The task-kind registry: every kind module in this package, found and indexed.

A kind lives in a module of harness/kinds/ that lists its `TaskKind` objects in
a module-level ``KINDS``. The registry imports every module of the package
(except the shared ones: base, registry, options, formats) on first use, so
adding a kind means adding its module: the site validator, the controller,
`onsite score` and `onsite export`, the terminal render, the console and the
HTML report all look kinds up here.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Mapping
from functools import cache
from importlib import import_module
from pathlib import Path
from types import MappingProxyType

from harness.kinds.base import ScoreFamily, SpeedUnit, TaskKind

# What every kind shares: the record, the registry, the options models, the writers.
_NOT_KINDS = frozenset({"base", "registry", "options", "formats"})
# The order kinds are listed in (errors, docs): the established ones first, then
# any other module alphabetically.
_FIRST = ("speech", "ocr", "faces", "text", "tts")


class RegistryError(Exception):
    """Two kind modules disagree: a name or a speed unit defined twice, differently."""


def _module_names() -> list[str]:
    here = [Path(__file__).parent]
    found = sorted(m.name for m in pkgutil.iter_modules([str(p) for p in here]))
    found = [name for name in found if name not in _NOT_KINDS and not name.startswith("_")]
    return [n for n in _FIRST if n in found] + [n for n in found if n not in _FIRST]


@cache
def task_kinds() -> Mapping[str, TaskKind]:
    """Every task kind a site file may name, by name, in listing order."""
    kinds: dict[str, TaskKind] = {}
    units: dict[str, SpeedUnit] = {}
    for module_name in _module_names():
        module = import_module(f"{__package__}.{module_name}")
        for kind in getattr(module, "KINDS", ()):
            if not isinstance(kind, TaskKind):
                raise RegistryError(f"{module.__name__}.KINDS holds {kind!r}, not a TaskKind")
            if kind.name in kinds:
                raise RegistryError(f"task kind {kind.name!r} is defined twice")
            unit = units.setdefault(kind.unit.name, kind.unit)
            if unit != kind.unit:
                raise RegistryError(
                    f"speed unit {unit.name!r} of kind {kind.name!r} differs from another "
                    "kind's: define the unit once and share it"
                )
            kinds[kind.name] = kind
    return MappingProxyType(kinds)


def task_kind(name: str) -> TaskKind:
    """The TaskKind registered under a site file's `kind`."""
    return task_kinds()[name]


@cache
def speed_units() -> Mapping[str, SpeedUnit]:
    """Every speed unit a kind uses, by the name the journal and leaderboard carry."""
    return MappingProxyType({k.unit.name: k.unit for k in task_kinds().values()})


def speed_unit(name: str) -> SpeedUnit:
    """The speed unit of that name; an unknown name is shown as it is."""
    return speed_units().get(name) or SpeedUnit(name, name, name, "{:.3f}")


@cache
def _metric_labels() -> Mapping[str, str]:
    labels: dict[str, str] = {}
    for kind in task_kinds().values():
        labels.update(kind.metric_labels)
    return MappingProxyType(labels)


def metric_label(metric: str) -> str:
    """The name people read for a headline metric's JSON name ("cer" -> "CER")."""
    return _metric_labels().get(metric, metric)


@cache
def score_families() -> Mapping[str, ScoreFamily]:
    """The `onsite score` families the kinds bring, by family name.

    A family object listed by two kinds is one family; two different families
    of one name stop it with an error.
    """
    families: dict[str, ScoreFamily] = {}
    for kind in task_kinds().values():
        for name, family in kind.score_families.items():
            if families.setdefault(name, family) is not family:
                raise RegistryError(f"`onsite score {name}` is defined twice")
    return MappingProxyType(families)


def run_kinds(family: str) -> tuple[TaskKind, ...]:
    """The kinds whose jobs `onsite score FAMILY --run` reads (their ``from_run``)."""
    return tuple(k for k in task_kinds().values() if family in k.from_run)
