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

from harness.judge.pooling import DEFAULT_DEPTH, Pool, read_document, top_documents
from harness.judge.qrels import pool_key
from harness.judge.subset import Drawn, Subset, draw
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
    "pos-review": ("pos",),
    "relevance": ("ir",),
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
class ReviewTag:
    """A disputed POS tag, pooled over systems and lines: the word at its first
    occurrence, with the reference text either side."""

    word: str
    gold_tag: str
    test_tag: str
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
    tags: Mapping[str, ReviewTag] = field(default_factory=dict)  # pos-review
    warnings: tuple[str, ...] = ()
    subset: Drawn | None = None  # the items drawn for a subset panel (None: every item)
    # relevance: each topic's statement, the pooled documents' texts, the pool's figures
    topics: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    documents: Mapping[str, str] = field(default_factory=dict)  # docno -> text
    pool: Mapping[str, Any] | None = None


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


def load_material(
    run_dir: Path,
    task: str,
    test: str,
    category: str | None = None,
    subset: Subset | None = None,
    pool_depth: int | None = None,
) -> Material:
    """The material of one task of a run for one test (see TEST_KINDS).

    ``category`` keeps only the items of that category (categories.tsv of a tts or mt
    set, conditions.tsv of others), e.g. the paragraphs for a naturalness test;
    ``subset`` then keeps a seeded fraction of them or the ids of a file (subset.py).
    For cws-review the subset is of lines, whose disputed pieces are then pooled. For
    relevance (an ``ir`` task) the items are each topic's pool of ``pool_depth``
    documents per run (pooling.py), a subset being one of topics.
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
    if test == "sus":
        # SUS judges the sentences that have blanks: the subset is drawn from those.
        chosen = [i for i in chosen if i.reference is not None]
    drawn = None
    if subset is not None:
        drawn = draw(subset, [i.id for i in chosen])
        keep = set(drawn.items)
        chosen = [i for i in chosen if i.id in keep]
    if test == "relevance":
        collection = getattr(cfg, "collection", None)
        if not collection:
            raise ValueError(
                f'task {task!r} names no collection: add collection = "DIR" (the '
                "organizer's <docno>.txt files) to its [tasks] table so assessors can read "
                "the pooled documents"
            )
        depth = DEFAULT_DEPTH if pool_depth is None else pool_depth
        return _relevance(
            task, systems, rows, chosen, (site.root / collection).resolve(), depth, drawn
        )
    if pool_depth is not None:
        raise ValueError(f"--pool-depth is for the relevance test, not {test}")
    for item in chosen:
        text = item.fields.get("text")
        if isinstance(text, str):
            texts[item.id] = text
        got = {s: _judged(rows[s].get(item.id)) for s in systems}
        missing = sorted(s for s, o in got.items() if o is None)
        if missing and test not in ("cws-review", "pos-review"):
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
    tags: dict[str, ReviewTag] = {}
    if test == "pos-review":
        tags = _tags(testset, systems, outputs, {i.id for i in chosen})
        items = list(tags)
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
        tags=tags,
        warnings=tuple(warnings),
        subset=drawn,
    )


def _relevance(
    task: str,
    systems: tuple[str, ...],
    rows: Mapping[str, Mapping[str, dict[str, Any]]],
    topics: list[Any],
    collection: Path,
    depth: int,
    drawn: Drawn | None,
) -> Material:
    """Each topic's pool (the top ``depth`` of every run that answered it) to be judged."""
    if depth < 1:
        raise ValueError(f"--pool-depth must be at least 1, got {depth}")
    if not collection.is_dir():
        raise ValueError(f"the collection {collection} is not a directory of <docno>.txt files")
    runs: dict[str, dict[str, tuple[str, ...]]] = {}
    warnings: list[str] = []
    for topic in topics:
        tops = {}
        for system in systems:
            output = _judged(rows[system].get(topic.id))
            if output is not None:
                tops[system] = top_documents(output, depth)
        if not any(tops.values()):
            warnings.append(f"topic {topic.id} left out: no run retrieved a document for it")
            continue
        runs[topic.id] = tops
    pool = Pool(depth, runs)
    items: list[str] = []
    documents: dict[str, str] = {}
    for topic_id in runs:
        for docno in pool.documents(topic_id):
            items.append(pool_key(topic_id, docno))
            if docno not in documents:
                documents[docno], warning = read_document(collection, docno)
                if warning:
                    warnings.append(warning)
    statements = {
        t.id: {
            "title": str(t.fields.get("query") or ""),
            "description": str(t.fields.get("description") or ""),
            "narrative": str(t.fields.get("narrative") or ""),
        }
        for t in topics
        if t.id in runs
    }
    return Material(
        task=task,
        kind="ir",
        systems=systems,
        items=tuple(items),
        warnings=tuple(warnings),
        subset=drawn,
        topics=statements,
        documents=documents,
        pool=pool.statistics(systems),
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


def _tags(
    testset: Any,
    systems: tuple[str, ...],
    outputs: Mapping[tuple[str, str], Output],
    lines: set[str],
) -> dict[str, ReviewTag]:
    """Every distinct disputed tag over all systems (`scoring.pos_review.disputed_tags`).

    Only the ``lines`` chosen (a subset, a category) are pooled; a line a system did not
    answer has no disputes of that system (its words count as missed, not as disputed).
    """
    from harness.kinds.text import parse_tagged
    from scoring.pos_review import disputed_tags

    found: dict[tuple[str, str, str], ReviewTag] = {}
    for item in testset.items:
        if item.id not in lines:
            continue
        gold = list(item.reference.tokens)
        words = [w for w, _ in gold]
        for system in systems:
            out = outputs.get((system, item.id))
            tagged = None if out is None or out.text is None else parse_tagged(out.text)
            for d in disputed_tags(gold, tagged or []):
                if d.key not in found:
                    before = "".join(words[: d.position])[-_CONTEXT:]
                    after = "".join(words[d.position + 1 :])[:_CONTEXT]
                    found[d.key] = ReviewTag(d.word, d.gold_tag, d.test_tag, before, after)
    # The key is the triple itself (never served): results need nothing but the store.
    return {tag_key(t.word, t.gold_tag, t.test_tag): t for t in found.values()}


def tag_key(word: str, gold_tag: str, test_tag: str) -> str:
    """A disputed tag's item id: word, reference tag and system tag, tab-separated."""
    return f"{word}\t{gold_tag}\t{test_tag}"


def piece_key(gold: tuple[str, ...], test: tuple[str, ...]) -> str:
    """A disputed piece's item id: reference and system words, tab-separated."""
    return f"{' '.join(gold)}\t{' '.join(test)}"
