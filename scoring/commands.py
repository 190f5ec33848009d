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
* By default both sides are normalised (`normalize_command`): full-width ASCII
  and U+3000 become ASCII, and whitespace next to a CJK character is removed.
  sclite, the field's reference scorer, does neither: its sentence-correct
  count on the same trn files compares the words split at C's whitespace with
  ASCII case folded. ``literal=True`` (``--literal``, a task's ``literal =
  true``) scores as sclite does; by default the report's ``warnings`` say when
  the normalisation changed a verdict, and for which items.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .asr_align import is_cjk_char, tokenize
from .charsets import codec_of
from .ocr import read_jsonl
from .widths import to_halfwidth

__all__ = [
    "CommandReport",
    "CommandScore",
    "literal_words",
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


def literal_words(text: str, case_sensitive: bool = False) -> list[str]:
    """The words sclite compares (``-e utf-8``): split at C's whitespace only, ASCII
    letters folded unless `case_sensitive`, no width or CJK-space change.

    Two commands are the same for sclite (a correct sentence, no error in its
    alignment) exactly when their word lists are equal.
    """
    return tokenize(text, "word", case_sensitive)


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
    # True when scored as sclite compares (`literal_words`), False when normalised.
    literal: bool = False
    # Where the normalisation changed a verdict (empty under ``literal``).
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report."""
        return {
            "overall": self.overall.to_dict(),
            "by_condition": {k: v.to_dict() for k, v in self.by_condition.items()},
            "wrong_ids": list(self.wrong_ids),
            "matching": "literal" if self.literal else "normalised",
            "warnings": list(self.warnings),
        }


def read_command_file(path: str | Path, encoding: str | None = None) -> dict[str, str]:
    """Read JSONL lines ``{"id", "text"}`` (references or outputs) into id -> text.

    A file whose first non-blank character is not ``{`` is a transcript file
    (sclite ``trn`` or Kaldi ``text``, `scoring.asr_formats.read_transcripts`),
    as a command test set's ``text`` file is. Either is read in ``encoding``
    (scoring.charsets: gbk, big5, utf-16le ...; None: UTF-8, a BOM allowed).
    """
    with open(path, "rb") as fh:
        # Whole UTF-16 code units, so that the first character decodes as itself.
        head = fh.read(4096)
    text = head.decode(codec_of(encoding), errors="replace").lstrip("\ufeff").lstrip()
    if text and not text.startswith("{"):
        from .asr_formats import read_transcripts

        return read_transcripts(path, encoding)
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(path, encoding):
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


# How many item ids a warning names before "...".
_NAMED_IDS = 5


def _ids(ids: list[str]) -> str:
    named = ", ".join(ids[:_NAMED_IDS])
    return named + (f" and {len(ids) - _NAMED_IDS} more" if len(ids) > _NAMED_IDS else "")


def _normalisation_warnings(
    changed_to_right: list[str], changed_to_wrong: list[str], commands: int, case_sensitive: bool
) -> tuple[str, ...]:
    """What the normalisation did to the verdicts, against sclite's sentence-correct count."""
    out: list[str] = []
    if changed_to_right:
        steps = "full-width forms to ASCII, spaces next to CJK characters removed"
        steps += "" if case_sensitive else ", case folded beyond A-Z"
        out.append(
            f"{len(changed_to_right)} of {commands} commands counted correct only after "
            f"normalisation ({steps}): {_ids(changed_to_right)}; sclite counts them as sentence "
            "errors, and --literal (a task's `literal = true`) gives sclite's sentence-correct "
            "figure"
        )
    if changed_to_wrong:
        out.append(
            f"{len(changed_to_wrong)} of {commands} commands counted wrong that sclite counts "
            f"correct (it drops a word's trailing `*`): {_ids(changed_to_wrong)}; --literal "
            "(a task's `literal = true`) gives sclite's sentence-correct figure"
        )
    return tuple(out)


def score_commands(
    refs: Mapping[str, str],
    hyps: Mapping[str, str | None],
    conditions: Mapping[str, str] | None = None,
    case_sensitive: bool = False,
    literal: bool = False,
) -> CommandReport:
    """Exact-match scoring of command outputs against references, keyed by id.

    ``literal``: compare as sclite does (`literal_words`), so the correct count is
    sclite's sentence-correct count on the same trn files. Otherwise both sides are
    normalised (`normalize_command`), and the report's ``warnings`` name the items
    whose verdict that changed. Raises ValueError if `hyps` or `conditions` name
    unknown ids, or if `conditions` does not cover every reference.
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
    to_right: list[str] = []
    to_wrong: list[str] = []
    for cid, ref in refs.items():
        hyp = hyps.get(cid)
        sclite = hyp is not None and literal_words(hyp, case_sensitive) == literal_words(
            ref, case_sensitive
        )
        if literal:
            ok = sclite
        else:
            ok = hyp is not None and normalize_command(hyp, case_sensitive) == normalize_command(
                ref, case_sensitive
            )
            if ok and not sclite:
                to_right.append(cid)
            elif sclite and not ok:
                to_wrong.append(cid)
        results.append((cid, ok, hyp is None))

    def _score(rows: list[tuple[str, bool, bool]]) -> CommandScore:
        return CommandScore(len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows))

    by_condition: dict[str, CommandScore] = {}
    if conditions is not None:
        for cond in sorted(set(conditions.values())):
            by_condition[cond] = _score([r for r in results if conditions[r[0]] == cond])
    wrong = tuple(r[0] for r in results if not r[1])
    warnings = _normalisation_warnings(to_right, to_wrong, len(results), case_sensitive)
    return CommandReport(_score(results), by_condition, wrong, literal, warnings)
