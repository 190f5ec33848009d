"""Score files for the meta-evaluation (`onsite meta`): readers with line-exact errors.

Two shapes, each as CSV (comma- or tab-separated, chosen by the header) or JSON:

* **System level**, one row per system, one column per metric or human
  judgement::

      system,bleu,nist,adequacy,fluency
      sysA,0.2231,6.71,3.1,3.4

  JSON: ``{"sysA": {"bleu": 0.2231, ...}, ...}`` or a list of objects
  ``[{"system": "sysA", "bleu": 0.2231, ...}, ...]``.

* **Segment level**, one row per system and segment (``doc`` optional, for
  segment ids that repeat across documents)::

      system,doc,segment,bleu,adequacy
      sysA,d1,1,0.31,4

  JSON lines (``.jsonl``) of such objects, or a JSON list of them.

* **A run's report**: the CSV that ``onsite report RUN --csv FILE`` writes
  (columns task, system, verdict, metric, score, ...) is read as system
  level, one column per task named ``task:metric`` (e.g. ``asr-2x:wer``).
  A task not scored for every system is left out and said in `notes`.

Files are UTF-8 (a byte-order mark allowed) unless an encoding is named
(`onsite meta ... --encoding gbk`; scoring.charsets reads them).

Every row must give every column a finite number (an empty cell is an
error: the meta-evaluation needs complete tables); a system (or system and
segment) given twice is an error. Errors are `FormatError` naming the file
and line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .charsets import read_text
from .errors import FormatError

__all__ = ["ScoreTable", "read_score_table"]

_KEY_COLUMNS = ("system", "doc", "segment")


@dataclass(frozen=True)
class ScoreTable:
    """Scores keyed by system (system level) or (system, [doc,] segment) (segment level)."""

    path: Path
    level: str
    """"system" or "segment"."""
    columns: tuple[str, ...]
    """The score columns (metrics and human judgements), in file order."""
    rows: Mapping[tuple[str, ...], Mapping[str, float]]
    """Key -> column -> score; the key is (system,) or (system, doc, segment)."""
    notes: tuple[str, ...] = ()
    """What was left out while reading (report CSV tasks not scored for every system)."""

    def column(self, name: str) -> dict[tuple[str, ...], float]:
        """One column's scores by key; a `FormatError` names the columns if it is absent."""
        if name not in self.columns:
            raise FormatError(
                self.path,
                None,
                f"no column {name!r}",
                f"use one of {', '.join(self.columns)}",
            )
        return {k: v[name] for k, v in self.rows.items()}

    def systems(self) -> list[str]:
        """System names in first-seen order."""
        return list(dict.fromkeys(k[0] for k in self.rows))

    def by_system(self) -> dict[str, dict[str, float]]:
        """System level only: system -> column -> score."""
        if self.level != "system":
            raise FormatError(
                self.path, None, "segment-level scores given", "give one row per system"
            )
        return {k[0]: dict(v) for k, v in self.rows.items()}


def _number(path: Path, line: int | None, column: str, value: Any) -> float:
    if isinstance(value, bool) or value is None or value == "":
        raise FormatError(path, line, f"{column} is empty", "give every score as a number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise FormatError(
            path, line, f"{column} {value!r} is not a number", "give a number like 0.25"
        ) from None
    if not math.isfinite(x):
        raise FormatError(path, line, f"{column} is {value!r}", "give a finite number")
    return x


def _json_lines(path: Path, text: str) -> list[tuple[int | None, Any]]:
    out: list[tuple[int | None, Any]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                out.append((n, json.loads(raw)))
            except json.JSONDecodeError as exc:
                raise FormatError(
                    path, n, f"invalid JSON ({exc.msg})", "one object per line"
                ) from None
    return out


def _records(path: Path, text: str) -> list[tuple[int | None, Any]]:
    stripped = text.lstrip()
    if path.suffix.lower() == ".jsonl":
        return _json_lines(path, text)
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg == "Extra data":
                return _json_lines(path, text)  # JSON lines under another suffix
            raise FormatError(
                path, exc.lineno, f"invalid JSON ({exc.msg})", "fix the JSON"
            ) from None
        if isinstance(data, dict):
            # {"sysA": {"bleu": ...}}: the system-level mapping form.
            return [
                (None, {"system": k, **v} if isinstance(v, dict) else v) for k, v in data.items()
            ]
        if isinstance(data, list):
            return [(None, r) for r in data]
        raise FormatError(path, None, "JSON is neither an object nor a list", "see docs")
    lines = text.splitlines()
    header = next((h for h in lines if h.strip() and not h.startswith("#")), "")
    delimiter = "\t" if "\t" in header else ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows: list[tuple[int | None, Any]] = []
    names: list[str] | None = None
    for n, cells in enumerate(reader, 1):
        if not cells or not "".join(cells).strip() or cells[0].startswith("#"):
            continue
        if names is None:
            names = [c.strip() for c in cells]
            continue
        if len(cells) != len(names):
            raise FormatError(
                path, n, f"{len(cells)} cells, the header has {len(names)}", "one cell per column"
            )
        rows.append((n, dict(zip(names, (c.strip() for c in cells), strict=True))))
    return rows


_REPORT_COLUMNS = {"task", "system", "verdict", "metric", "score", "higher_is_better"}


def _from_report(path: Path, records: list[tuple[int | None, Any]]) -> ScoreTable:
    """`onsite report --csv`: one column per task (its leaderboard metric), one row per system."""
    scores: dict[str, dict[str, float]] = {}
    names: dict[str, str] = {}
    for line, record in records:
        if record.get("score", "") == "":
            continue  # not scored (yet): the task is left out below if a system lacks it
        column = f"{record['task']}:{record['metric']}"
        names.setdefault(record["task"], column)
        scores.setdefault(str(record["system"]), {})[column] = _number(
            path, line, column, record["score"]
        )
    systems = list(dict.fromkeys(str(r["system"]) for _, r in records))
    columns = [c for c in names.values() if all(c in scores.get(s, {}) for s in systems)]
    notes = tuple(
        f"task {t} left out: not scored for every system"
        for t, c in names.items()
        if c not in columns
    )
    if not columns:
        raise FormatError(
            path, None, "no task is scored for every system", "finish the run or score it first"
        )
    rows: dict[tuple[str, ...], dict[str, float]] = {
        (s,): {c: scores[s][c] for c in columns} for s in systems
    }
    return ScoreTable(path, "system", tuple(columns), rows, notes)


def read_score_table(path: str | Path, encoding: str | None = None) -> ScoreTable:
    """Read a system- or segment-level score file (module docstring) in ``encoding``
    (scoring.charsets: gbk, big5, utf-16le ...; None: UTF-8, a BOM allowed). A file
    not in that encoding is a `FormatError` naming its first bad line and the
    encoding it reads as."""
    path = Path(path)
    text = read_text(path, encoding)
    records = _records(path, text)
    if not records:
        raise FormatError(path, None, "no scores", "give a header and one row per system")
    first_line, first = records[0]
    if isinstance(first, dict) and _REPORT_COLUMNS <= set(first):
        return _from_report(path, records)
    if not isinstance(first, dict) or "system" not in first:
        raise FormatError(path, first_line, "no 'system' column", "name the systems in 'system'")
    level = "segment" if "segment" in first else "system"
    keys = tuple(k for k in _KEY_COLUMNS if k in first)
    columns = tuple(k for k in first if k not in _KEY_COLUMNS)
    if not columns:
        raise FormatError(path, first_line, "no score columns", "add e.g. bleu,adequacy")
    rows: dict[tuple[str, ...], dict[str, float]] = {}
    for line, record in records:
        if not isinstance(record, dict):
            raise FormatError(path, line, "not an object", "give one object per row")
        if set(record) != set(keys) | set(columns):
            diff = sorted(set(record) ^ (set(keys) | set(columns)))
            raise FormatError(
                path,
                line,
                f"columns differ from the first row ({', '.join(diff)})",
                "give every row the same columns",
            )
        key = tuple(str(record[k]).strip() for k in keys)
        if any(not k for k in key):
            raise FormatError(path, line, f"empty {'/'.join(keys)}", "name every row")
        if key in rows:
            raise FormatError(path, line, f"{'/'.join(key)} given twice", "one row per key")
        rows[key] = {c: _number(path, line, c, record[c]) for c in columns}
    return ScoreTable(path, level, columns, rows)
