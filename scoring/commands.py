"""Isolated command word recognition scoring (correct command rate).

Correct command rate = correct commands / reference commands (HTRDP 2004,
embedded-device task). Conventions:

* A command is correct when the normalised output equals the normalised
  reference exactly (see `normalize_command`); there is no partial credit.
* Missing outputs (absent id or None) count as wrong and are also counted
  in ``missing``; outputs for ids not in the references are an error.
* Case is folded (``str.casefold``) unless asked to keep it: the field's
  convention, as sclite folds case unless told otherwise, and the same live
  (the `command` task's ``case_sensitive = false``) and offline (`onsite score
  command`, ``--case-sensitive`` to keep case).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .asr_align import is_cjk_char
from .ocr import read_jsonl
from .widths import to_halfwidth

__all__ = [
    "CommandReport",
    "CommandScore",
    "normalize_command",
    "read_command_file",
    "score_commands",
    "to_halfwidth",
]

_WS = re.compile(r"\s+")


def normalize_command(text: str, case_sensitive: bool = False) -> str:
    """Full-width to half-width ASCII, then whitespace normalisation.

    Leading/trailing whitespace is dropped; a whitespace run next to a CJK
    character is removed (Chinese has no word spaces, so "打开 文件" is
    "打开文件"); any other run becomes one space ("open  file" is "open file").
    Unless `case_sensitive`, the result is casefolded.
    """
    text = to_halfwidth(text).strip()

    def _join(m: re.Match[str]) -> str:
        before = text[m.start() - 1]
        after = text[m.end()]
        return "" if is_cjk_char(before) or is_cjk_char(after) else " "

    text = _WS.sub(_join, text)
    return text if case_sensitive else text.casefold()


@dataclass(frozen=True)
class CommandScore:
    """Counts and correct command rate (fraction) for a set of commands."""

    commands: int
    correct: int
    missing: int

    @property
    def correct_rate(self) -> float:
        """Correct / reference commands (0.0 when there are none)."""
        return self.correct / self.commands if self.commands else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rate."""
        return {
            "commands": self.commands,
            "correct": self.correct,
            "missing": self.missing,
            "correct_rate": self.correct_rate,
        }


@dataclass(frozen=True)
class CommandReport:
    """Overall score, per-condition scores and the ids judged wrong."""

    overall: CommandScore
    by_condition: Mapping[str, CommandScore]
    wrong_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report."""
        return {
            "overall": self.overall.to_dict(),
            "by_condition": {k: v.to_dict() for k, v in self.by_condition.items()},
            "wrong_ids": list(self.wrong_ids),
        }


def read_command_file(path: str | Path, encoding: str | None = None) -> dict[str, str]:
    """Read JSONL lines ``{"id", "text"}`` (references or outputs) into id -> text.

    A file whose first non-blank character is not ``{`` is a transcript file
    (sclite ``trn`` or Kaldi ``text``, `scoring.asr_formats.read_transcripts`),
    as a command test set's ``text`` file is, read in ``encoding`` (None: UTF-8);
    JSON lines are UTF-8.
    """
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        head = fh.read(4096).lstrip()
    if head and not head.startswith("{"):
        from .asr_formats import read_transcripts

        return read_transcripts(path, encoding)
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(path):
        where = f"{path}:{lineno}"
        for key in ("id", "text"):
            if key not in obj:
                raise ValueError(f"{where}: missing key {key!r}")
            if not isinstance(obj[key], str):
                raise ValueError(f"{where}: {key!r} must be a string")
        if obj["id"] in seen:
            raise ValueError(
                f"{where}: duplicate id {obj['id']!r} (first on line {seen[obj['id']]})"
            )
        seen[obj["id"]] = lineno
        out[obj["id"]] = obj["text"]
    return out


def score_commands(
    refs: Mapping[str, str],
    hyps: Mapping[str, str | None],
    conditions: Mapping[str, str] | None = None,
    case_sensitive: bool = False,
) -> CommandReport:
    """Exact-match scoring of command outputs against references, keyed by id.

    Raises ValueError if `hyps` or `conditions` name unknown ids, or if
    `conditions` does not cover every reference.
    """
    for kind, ids in (("outputs", hyps), ("conditions", conditions or {})):
        unknown = sorted(k for k in ids if k not in refs)
        if unknown:
            raise ValueError(
                f"{kind} for ids not in references: {', '.join(map(repr, unknown[:10]))}"
            )
    if conditions is not None:
        uncovered = sorted(k for k in refs if k not in conditions)
        if uncovered:
            raise ValueError(f"no condition given for ids: {', '.join(map(repr, uncovered[:10]))}")

    results: list[tuple[str, bool, bool]] = []  # (id, correct, missing)
    for cid, ref in refs.items():
        hyp = hyps.get(cid)
        ok = hyp is not None and normalize_command(hyp, case_sensitive) == normalize_command(
            ref, case_sensitive
        )
        results.append((cid, ok, hyp is None))

    def _score(rows: list[tuple[str, bool, bool]]) -> CommandScore:
        return CommandScore(len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows))

    by_condition: dict[str, CommandScore] = {}
    if conditions is not None:
        for cond in sorted(set(conditions.values())):
            by_condition[cond] = _score([r for r in results if conditions[r[0]] == cond])
    wrong = tuple(r[0] for r in results if not r[1])
    return CommandReport(_score(results), by_condition, wrong)
