"""Errors raised while reading scoring input files."""

from __future__ import annotations

import os

__all__ = ["FormatError"]


class FormatError(ValueError):
    """An input file cannot be scored as it stands.

    ``path`` names the file and ``line`` the 1-based line at fault (None when
    the problem is the file as a whole). The message reads
    ``path:line: problem; fix`` so it can be shown to the user unchanged.
    """

    def __init__(
        self, path: str | os.PathLike[str], line: int | None, problem: str, fix: str
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        self.fix = fix
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {problem}; {fix}")
