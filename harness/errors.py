"""Errors that reach an operator: each names the file, the key or line, and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file."""

    file: Path
    where: str  # a dotted key such as "tasks.asr-2x.budget", or "" for the whole file
    message: str
    fix: str = ""
    line: int | None = None

    def __str__(self) -> str:
        place = str(self.file) + (f":{self.line}" if self.line else "")
        key = f" [{self.where}]" if self.where else ""
        fix = f" Fix: {self.fix}" if self.fix else ""
        return f"{place}{key}: {self.message}.{fix}"


class SiteDeprecationWarning(FutureWarning):
    """An old spelling in a site file that is still read (``problem`` names the file, the
    line and the fix). A FutureWarning, shown by default: it is for the operator who wrote
    the file, not for a programmer (the CLI prints it as one ``warning:`` line)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class ControlConflict(Exception):
    """An operator control that the run's present state does not allow (say why and what to do)."""


class LeaseLost(RuntimeError):
    """A station wrote about a job it no longer holds (its lease ran out and another
    station claimed it): nothing was written, and the station must stop that job."""

    def __init__(self, station: str, task: str, system: str) -> None:
        super().__init__(
            f"station {station} no longer holds job {task}/{system}: its lease ran out "
            "and another station took the job over"
        )
        self.task = task
        self.system = system


class InputError(Exception):
    """Bad operator input (a site file, a test set): nothing was started."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class SiteError(InputError):
    """The site file is malformed or points at something that is not there."""


class TestSetError(InputError):
    """A test set cannot be read as a whole (a single bad item is recorded, not raised)."""

    __test__ = False  # not a pytest test class
