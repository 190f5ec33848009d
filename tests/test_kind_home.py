"""The kind is the one home of everything about it: nothing outside harness/kinds/ (and
the metric code in scoring/) knows a kind by name, and docs/task-kinds.md says so truly."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from harness.kinds.registry import run_kinds, score_families, task_kinds
from tests.helpers import REPO

# The modules that still know kinds by name, and why (docs/task-kinds.md names them).
KNOWN = {
    # Which kinds a listening or review test takes, and tts's audio: the judging
    # panel's own table of its tests.
    "harness/judge/material.py",
    # `onsite combination-set` builds the combination kind's test set from an mt run.
    "harness/combination_set.py",
    # The offline inputs of `onsite compare` and `onsite meta` (--ref/--hyp): mt and asr
    # files read into per-item statistics (a run's task gets them from its kind).
    "harness/cli/compare.py",
    "harness/cli/meta.py",
}


def _kindish(node: ast.expr) -> bool:
    """``kind``, ``x.kind``, ``x.kind.name``, ``task_kind``: what holds a task's kind."""
    if isinstance(node, ast.Attribute):
        if node.attr == "name":
            return _kindish(node.value)
        return node.attr == "kind" or node.attr.endswith("_kind")
    return isinstance(node, ast.Name) and (node.id == "kind" or node.id.endswith("_kind"))


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return [e.value for e in node.elts]  # type: ignore[union-attr]
    return []


def kind_switches(source: str, kinds: set[str]) -> Iterator[tuple[int, str]]:
    """Where code branches on a kind's name: a kind compared with one, or kinds listed."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = {s for side in sides for s in _strings(side)} & kinds
            if named and any(_kindish(side) for side in sides):
                yield node.lineno, f"compares a kind with {sorted(named)}"
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            listed = _strings(node)
            if listed and set(listed) <= kinds:
                yield node.lineno, f"lists kinds {listed}"


def _modules() -> Iterator[Path]:
    for package in ("harness", "runners", "devices"):
        for path in sorted((REPO / package).rglob("*.py")):
            if not path.is_relative_to(REPO / "harness" / "kinds"):
                yield path


def test_the_check_sees_a_switchboard() -> None:
    kinds = {"asr", "lid", "mt", "combination"}
    source = (
        "if job.kind.name == 'lid':\n    pass\n"
        "FAMILIES = {'mt': Family(('mt', 'combination'), f)}\n"
        "ok = cfg.kind in ('asr',)\n"
        "fine = {'command': ['python', 'x.py']}\n"
    )
    found = list(kind_switches(source, kinds))
    assert sorted({line for line, _ in found}) == [1, 3, 4], found


def test_no_module_outside_the_kinds_names_a_kind() -> None:
    kinds = set(task_kinds())
    found = {
        str(path.relative_to(REPO)): list(kind_switches(path.read_text("utf-8"), kinds))
        for path in _modules()
    }
    offenders = {path: hits for path, hits in found.items() if hits and path not in KNOWN}
    assert not offenders, offenders
    # An exception that no longer applies is taken off the list.
    assert all(found.get(path) for path in KNOWN), KNOWN


def test_a_kind_with_a_page_of_its_own_is_named_only_in_its_files() -> None:
    # The kinds added as docs/task-kinds.md says: module, scorer, test and page. No code
    # outside harness/kinds/ and scoring/ (the tests aside) names them, even in a comment.
    own = [k for k in task_kinds() if (REPO / "docs" / f"kind-{k}.md").is_file()]
    assert own
    for kind in own:
        word = re.compile(rf"\b{re.escape(kind)}\b")
        named = [
            str(p.relative_to(REPO))
            for package in ("harness", "runners", "devices", "examples")
            for p in sorted((REPO / package).rglob("*.py"))
            if not p.is_relative_to(REPO / "harness" / "kinds") and word.search(p.read_text())
        ]
        assert named == [], (kind, named)


def test_task_kinds_doc_names_paths_that_exist() -> None:
    text = (REPO / "docs" / "task-kinds.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:harness|scoring|tests|docs)/[\w./-]+\.(?:py|md))`", text))
    paths |= {f"harness/kinds/{m}" for m in re.findall(r"`(\w+\.py)`", text)}
    assert len(paths) > 15
    missing = sorted(p for p in paths if not (REPO / p).is_file())
    assert not missing, missing
    # The record's fields as the doc's table gives them.
    from harness.kinds.base import TaskKind

    table = text[text.index("| field | what it is |") :]
    rows = re.findall(r"^\| ([^|]+) \|", table, re.M)
    fields = {n for row in rows for n in re.findall(r"`(\w+)`", row)}
    assert fields == set(TaskKind.__dataclass_fields__), fields


def test_families_without_run_are_the_docs() -> None:
    # docs/scoring.md: every family takes --run but the judging panel's and these.
    without = {name for name in score_families() if not run_kinds(name)}
    assert without == {
        "tts-pair",
        "tts-sus",
        "tts-mos",
        "tts-plan",
        "mt-human",
        "summarization",
        "mt-align",
        "cesta-rank",
    }
