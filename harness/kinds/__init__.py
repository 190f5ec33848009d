"""Task kinds: one module per kind or family of kinds, found by the registry.

Each module owns everything about its kinds (site-file options, test-set
loader, output checks, scorer and headline with its per-item statistics,
speed unit, export writers, `onsite score` families and how they read a run)
and lists them in ``KINDS``; docs/task-kinds.md says how to add one.
"""

from typing import TYPE_CHECKING

from harness.kinds.base import (
    FromRun,
    Headline,
    ItemStatistics,
    JobData,
    Scored,
    ScoreFamily,
    SpeedUnit,
    TaskKind,
)
from harness.kinds.registry import (
    RegistryError,
    metric_label,
    run_kinds,
    score_families,
    speed_unit,
    speed_units,
    task_kind,
    task_kinds,
)
from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.kinds.options import KindOptions

# KindOptions is pydantic's: loaded when asked for, so the kinds stay light.
__getattr__, __dir__ = lazy_exports(__name__, {"KindOptions": ".options"})

__all__ = [
    "FromRun",
    "Headline",
    "ItemStatistics",
    "JobData",
    "KindOptions",
    "RegistryError",
    "ScoreFamily",
    "Scored",
    "SpeedUnit",
    "TaskKind",
    "metric_label",
    "run_kinds",
    "score_families",
    "speed_unit",
    "speed_units",
    "task_kind",
    "task_kinds",
]
