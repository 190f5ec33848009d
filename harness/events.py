"""What the controller tells its listener (the CLI's progress display) as a run goes on.

The controller never prints; a listener decides how (or whether) to show these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobStarted:
    """A (task, system) job begins; ``done`` items were completed by earlier sessions."""

    task: str
    system: str
    total: int
    done: int


@dataclass(frozen=True)
class SystemStarted:
    """The system answered ready."""

    task: str
    system: str
    name: str
    version: str
    setup_seconds: float
    restart: bool


@dataclass(frozen=True)
class ItemFinished:
    """One item got its verdict."""

    task: str
    system: str
    item: str
    attempt: int
    verdict: str
    seconds: float
    budget_seconds: float | None
    message: str
    # In the task kind's speed unit (None when the item got no answer), and the answer,
    # so a display can show speed and quality so far.
    speed: float | None = None
    output: dict[str, Any] | None = None
    audit: bool = False


@dataclass(frozen=True)
class SystemLost:
    """The system was killed or died and will be restarted."""

    task: str
    system: str
    reason: str


@dataclass(frozen=True)
class JobFinished:
    """A job ended; ``failed`` carries the reason when it could not complete."""

    task: str
    system: str
    completed: int
    total: int
    failed: str | None = None


@dataclass(frozen=True)
class Notice:
    """Something the operator should read: an invalid test item, a warning."""

    task: str
    message: str


Event = JobStarted | SystemStarted | ItemFinished | SystemLost | JobFinished | Notice
Listener = Callable[[Event], None]
