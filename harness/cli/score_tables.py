"""Tables for people from an `onsite score` (or `onsite meta`) result without --json.

Every family returns one JSON-ready dict. Without --json it is shown as:

* one "figure / value" table of the top-level numbers and strings;
* one table per list of records (e.g. systems, documents, problems), a column
  per key, nested breakdowns left to --json;
* one table per mapping of records (e.g. per topic, per condition, per
  category), the mapping's key as the first column;
* one "figure / value" table per mapping of plain values (e.g. per tag).

So no family prints an empty screen: whatever the scorer computed at the top
two levels is on it, and --json has the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(value: Any) -> Any:
    # Six significant digits keep wide tables readable; --json has the full values.
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and all(_scalar(v) for v in value):
        return " ".join("-" if v is None else str(_cell(v)) for v in value)
    return value


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_scalar(v) for v in value)


def _names(values: list[Any], shown: int = 20) -> str:
    text = str(_cell(values[:shown]))
    return text if len(values) <= shown else f"{text} ... ({len(values) - shown} more)"


def _record_columns(records: Sequence[Mapping[str, Any]], skip: Iterable[str]) -> list[str]:
    skipped = set(skip)
    columns: dict[str, None] = {}
    for record in records:
        for key, value in record.items():
            # A short list of plain values fits a cell; nested records are for --json.
            flat = _scalar(value) or (
                isinstance(value, list) and len(value) <= 12 and all(_scalar(v) for v in value)
            )
            if key not in skipped and flat:
                columns.setdefault(key)
    return list(columns)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _is_keyed_records(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(v, Mapping) for v in value.values())
        and any(_scalar(x) for v in value.values() for x in v.values())
    )


def _is_plain_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(_scalar(v) for v in value.values())


def result_tables(
    title: str, result: Mapping[str, Any], order: Sequence[str] = ()
) -> list[tuple[str, list[str], list[list[Any]]]]:
    """The (title, columns, rows) tables that show `result`, in display order.

    `order` names keys to show first (a family's main tables); the other
    nested keys follow in the result's own order.
    """
    out: list[tuple[str, list[str], list[list[Any]]]] = []
    figures = [[k, _cell(v)] for k, v in result.items() if _scalar(v)]
    # Short lists of names (missing documents, a leaf order) fit one cell.
    figures += [[k, _names(v)] for k, v in result.items() if _is_names(v)]
    if figures:
        out.append((f"{title} scores", ["figure", "value"], figures))
    keys = [k for k in order if k in result] + [k for k in result if k not in order]
    for key in keys:
        value = result[key]
        if _is_records(value):
            # A setting shown above (unit, task) and equal in every row is not repeated;
            # numbers are, since a row may equal the mean by chance.
            same = [
                k
                for k, v in result.items()
                if isinstance(v, str | bool) and all(r.get(k) == v for r in value)
            ]
            columns = _record_columns(value, same)
            if columns:
                out.append((key, columns, [[_cell(r.get(c)) for c in columns] for r in value]))
        elif _is_keyed_records(value):
            records = list(value.values())
            columns = _record_columns(records, ())
            if columns:
                name = "key" if key in columns else key.split("_")[-1]
                head = [name, *columns]
                rows = [[k, *(_cell(r.get(c)) for c in columns)] for k, r in value.items()]
                out.append((key, head, rows))
        elif _is_plain_mapping(value):
            out.append((key, ["figure", "value"], [[k, _cell(v)] for k, v in value.items()]))
    return out


def print_result(
    console: Console, title: str, result: Mapping[str, Any], order: Sequence[str] = ()
) -> None:
    """Print `result` as the tables `result_tables` makes (a line if there are none)."""
    from harness.cli.terminal import table

    tables = result_tables(title, result, order)
    for name, columns, rows in tables:
        console.print(table(name, columns, rows))
    if not tables:
        console.print(f"{title}: nothing to show; --json prints the whole result", markup=False)
