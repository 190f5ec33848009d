"""Task kinds: one module per kind or family of kinds, found by the registry.

Each module owns everything about its kinds (site-file options, test-set
loader, output checks, scorer and headline, speed unit, `onsite score`
families) and lists them in ``KINDS``; docs/task-kinds.md says how to add one.
"""

from .base import (
    Headline,
    KindOptions,
    Scored,
    ScoreFamily,
    SpeedUnit,
    TaskKind,
)
from .registry import (
    RegistryError,
    metric_label,
    score_families,
    speed_unit,
    speed_units,
    task_kind,
    task_kinds,
)

__all__ = [
    "Headline",
    "KindOptions",
    "RegistryError",
    "ScoreFamily",
    "Scored",
    "SpeedUnit",
    "TaskKind",
    "metric_label",
    "score_families",
    "speed_unit",
    "speed_units",
    "task_kind",
    "task_kinds",
]
