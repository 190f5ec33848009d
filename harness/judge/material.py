"""What a run gives the judges: the systems' outputs per item, read from the run directory.

Only outputs the controller accepted (verdict ok or over_budget) are judged, and
only items every system answered, so that every system is judged on the same
items; the items left out are listed as warnings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.kinds.registry import task_kind
from harness.kinds.tts import SusItem
from harness.store.directory_source import site_of_run
from scoring.cws import diff_pieces, split_words

JUDGED_VERDICTS = ("ok", "over_budget")
# Which task kinds each test judges.
TEST_KINDS: dict[str, tuple[str, ...]] = {
    "sus": ("tts",),
    "pair": ("tts",),
    "mos": ("tts",),
    "mt-adequacy-fluency": ("mt",),
    # Summaries of a summarization task; an mt task has the same shape (text in, text out).
    "summary": ("summarization", "mt"),
    "cws-review": ("cws",),
}

_CONTEXT = 12  # characters of the reference shown either side of a disputed piece


@dataclass(frozen=True)
class Output:
    """One system's output for one item: an audio file, or a text."""

    audio: Path | None = None
    text: str | None = None


@dataclass(frozen=True)
class ReviewPiece:
    """A disputed segmentation piece, pooled over systems (survey 3.2.1.1)."""

    gold: tuple[str, ...]
    test: tuple[str, ...]
    before: str
    after: str


@dataclass(frozen=True)
class Material:
    """Everything a plan and the panel need from a run, for one task."""

    task: str
    kind: str
    systems: tuple[str, ...]
    items: tuple[str, ...]
    texts: Mapping[str, str] = field(default_factory=dict)  # sentence, source or document
    outputs: Mapping[tuple[str, str], Output] = field(default_factory=dict)  # (system, item)
    sus: Mapping[str, SusItem] = field(default_factory=dict)
    places: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # MT: (doc, seg)
    pieces: Mapping[str, ReviewPiece] = field(default_factory=dict)  # cws-review
    warnings: tuple[str, ...] = ()


def read_job_outputs(path: Path) -> dict[str, dict[str, Any]]:
    """outputs/<task>/<system>.jsonl: item id -> the line (the last line per id wins)."""
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[str(row["id"])] = row
    return out


def _judged(row: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not row or row.get("verdict") not in JUDGED_VERDICTS or row.get("output") is None:
        return None
    output = row["output"]
    return output if isinstance(output, Mapping) else None


def load_material(run_dir: Path, task: str, test: str, category: str | None = None) -> Material:
    """The material of one task of a run for one test (see TEST_KINDS).

    ``category`` keeps only the items of that category (categories.tsv of a tts set,
    conditions.tsv of others), e.g. the paragraphs for a naturalness test.
    """
    site = site_of_run(run_dir)
    if task not in site.config.tasks:
        raise ValueError(f"the run has no task {task!r}; tasks: {', '.join(site.config.tasks)}")
    cfg = site.config.tasks[task]
    kinds = TEST_KINDS.get(test, ())
    if cfg.kind not in kinds:
        raise ValueError(
            f"the {test} test judges {' or '.join(kinds)} tasks; task {task!r} is {cfg.kind}"
        )
    testset = task_kind(cfg.kind).load_testset(site.testset_path(task), cfg)
    systems = tuple(s for s, sc in site.config.systems.items() if task in sc.tasks)
    rows = {s: read_job_outputs(run_dir / "outputs" / task / f"{s}.jsonl") for s in systems}
    items: list[str] = []
    outputs: dict[tuple[str, str], Output] = {}
    warnings: list[str] = []
    texts: dict[str, str] = {}
    chosen = [i for i in testset.items if category is None or i.condition == category]
    if not chosen:
        found = sorted({i.condition for i in testset.items if i.condition})
        raise ValueError(
            f"task {task!r} has no item of category {category!r}; categories: "
            f"{', '.join(found) or 'none (give categories.tsv in the test set)'}"
        )
    for item in chosen:
        text = item.fields.get("text")
        if isinstance(text, str):
            texts[item.id] = text
        got = {s: _judged(rows[s].get(item.id)) for s in systems}
        missing = sorted(s for s, o in got.items() if o is None)
        if missing and test != "cws-review":
            warnings.append(f"item {item.id} left out: no judged output from {', '.join(missing)}")
            continue
        kept: dict[str, Output] = {}
        for system, output in got.items():
            if output is None:
                continue
            if cfg.kind == "tts":
                kept[system] = Output(audio=run_dir / str(output["audio"]))
            else:
                kept[system] = Output(text=str(output.get("text", "")))
        outputs.update({(s, item.id): o for s, o in kept.items()})
        items.append(item.id)
    sus: dict[str, SusItem] = {}
    places: dict[str, tuple[str, str]] = {}
    by_id = {i.id: i for i in testset.items}
    if test == "sus":
        sus = {i: by_id[i].reference for i in items if by_id[i].reference is not None}
        if not sus:
            raise ValueError(
                f"task {task!r} has no SUS items: give sus.jsonl in its test set (docs/judging.md)"
            )
        items = [i for i in items if i in sus]
    if test == "mt-adequacy-fluency":
        places = {i: (by_id[i].reference.doc_id, by_id[i].reference.seg_id) for i in items}
    pieces: dict[str, ReviewPiece] = {}
    if test == "cws-review":
        pieces = _pieces(testset, systems, outputs, warnings)
        items = list(pieces)
    return Material(
        task=task,
        kind=cfg.kind,
        systems=systems,
        items=tuple(items),
        texts=texts,
        outputs=outputs,
        sus=sus,
        places=places,
        pieces=pieces,
        warnings=tuple(warnings),
    )


def _pieces(
    testset: Any,
    systems: tuple[str, ...],
    outputs: Mapping[tuple[str, str], Output],
    warnings: list[str],
) -> dict[str, ReviewPiece]:
    """Every distinct disputed piece over all systems, as `write_cws_review` pools them."""
    found: dict[tuple[tuple[str, ...], tuple[str, ...]], ReviewPiece] = {}
    for item in testset.items:
        gold = list(item.reference.words)
        for system in systems:
            out = outputs.get((system, item.id))
            if out is None or out.text is None:
                continue
            pieces = diff_pieces(gold, split_words(out.text))
            if pieces is None:
                warnings.append(f"line {item.id}: a system changed the text; not reviewable")
                continue
            for p in pieces:
                key = (p.gold, p.test)
                if key not in found:
                    before = "".join(gold[: p.start])[-_CONTEXT:]
                    after = "".join(gold[p.end :])[:_CONTEXT]
                    found[key] = ReviewPiece(p.gold, p.test, before, after)
    # The key is the piece itself (never served): results need nothing but the store.
    return {piece_key(p.gold, p.test): p for p in found.values()}


def piece_key(gold: tuple[str, ...], test: tuple[str, ...]) -> str:
    """A disputed piece's item id: reference and system words, tab-separated."""
    return f"{' '.join(gold)}\t{' '.join(test)}"
