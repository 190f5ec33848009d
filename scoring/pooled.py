"""Count records pooled: the per-item statistics of a pooled metric, summed.

A precision, recall or F that is computed from summed counts (word segmentation,
POS tagging, named-entity chunks) is the same over any selection of items as
the one computed from the selection's pooled counts: so a per-item record of
counts is the item's sufficient statistic, and `pooled` their aggregate.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

__all__ = ["pooled"]

T = TypeVar("T")


def _add(values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, bool) or isinstance(first, str):
        if any(v != first for v in values):
            raise ValueError(f"cannot pool differing values {sorted(set(values))[:3]}")
        return first
    if isinstance(first, tuple):
        return tuple(x for v in values for x in v)
    present = [v for v in values if v is not None]
    # A figure the records do not have (None: no word list) stays absent.
    return sum(present) if len(present) == len(values) else None


def pooled(records: Iterable[T]) -> T:
    """One record of the records' dataclass: numbers summed (None if any is None), tuples
    joined, text fields kept (they must agree). Raises ValueError for no record."""
    rows = list(records)
    if not rows:
        raise ValueError("nothing to pool")
    first = rows[0]
    if not is_dataclass(first) or isinstance(first, type):
        raise TypeError(f"pooled needs dataclass records, got {type(first).__name__}")
    return replace(
        first, **{f.name: _add([getattr(r, f.name) for r in rows]) for f in fields(first)}
    )
