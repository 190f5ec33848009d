"""Scores of a panel, from its export file through scoring/'s readers and scorers.

Every interval is a Student t interval (`scoring.tts.mean_ci`) clipped to the
test's scale: 0..1 for SUS intelligibility, -2..+2 for pairs, 0..5 for
adequacy, fluency and summaries; MOS intervals are `onsite score tts-mos`'s,
as computed (the survey's way). Pairs take one sample per listener, as the
survey's Table 56 and `onsite score tts-pair` do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.judge.material import read_job_outputs
from harness.judge.results import SCORE_FAMILY, ExportFile, export_text
from harness.judge.store import JudgeStore
from harness.judge.subset import stored_subset
from harness.kinds.registry import task_kind
from harness.store.directory_source import site_of_run
from scoring.cws import score_cws, split_words
from scoring.errors import FormatError
from scoring.mt_human import read_human_sheet
from scoring.summarization import read_expert_ratings, score_summarization
from scoring.tts import (
    mean_ci,
    normalize_sus,
    pair_comparison,
    read_mos_ratings,
    read_pair_judgements,
    read_sus_responses,
    score_mos,
    score_sus,
)


def _ci(values: list[float], scale: tuple[float, float]) -> dict[str, Any]:
    mean, sd, low, high = mean_ci(values, 0.95, scale)
    return {"mean": mean, "sd": sd, "ci_low": low, "ci_high": high}


def _clip(value: float | None, scale: tuple[float, float]) -> float | None:
    return None if value is None else min(max(value, scale[0]), scale[1])


def panel_scores(store: JudgeStore, run_dir: Path) -> dict[str, Any]:
    """Tables of the panel's scores (``tables``: name -> rows), with 95% intervals."""
    meta = store.meta()
    test = meta["test"]
    out: dict[str, Any] = {
        "task": meta["task"],
        "test": test,
        "family": SCORE_FAMILY[test],
        "judgements": len(store.answers()),
        # Which items were judged: None for all of them, else how the subset was made.
        "subset": stored_subset(meta),
        "category": meta.get("category") or None,
        "tables": {},
    }
    if meta.get("pool"):
        out["pool"] = pool_summary(json.loads(meta["pool"]))
    if not export_text(store, run_dir).strip():
        return out
    with ExportFile(store, run_dir) as path:
        try:
            out["tables"] = _tables(test, path, store, run_dir)
        except (FormatError, ValueError) as exc:
            out["error"] = str(exc)
    return out


def _tables(test: str, path: Path, store: JudgeStore, run_dir: Path) -> dict[str, list[Any]]:
    if test == "sus":
        responses = read_sus_responses(path)
        rows = []
        for system, s in score_sus(responses).items():
            right = [
                float(r.answer is not None and normalize_sus(r.answer) == normalize_sus(r.expected))
                for r in responses
                if r.system == system
            ]
            ci = _ci(right, (0.0, 1.0))
            rows.append({**s.to_dict(), "ci_low": ci["ci_low"], "ci_high": ci["ci_high"]})
        return {"systems": rows}
    if test == "pair":
        scale = (-2.0, 2.0)
        pairs = []
        for p in pair_comparison(read_pair_judgements(path)):
            d = p.to_dict()
            d["ci_low"], d["ci_high"] = _clip(p.ci_low, scale), _clip(p.ci_high, scale)
            pairs.append(d)
        return {"pairs": pairs}
    if test == "mos":
        return {"systems": [s.to_dict() for s in score_mos(read_mos_ratings(path)).values()]}
    if test == "mt-adequacy-fluency":
        sheet = read_human_sheet(path)
        rows = []
        for system in dict.fromkeys(j.system for j in sheet):
            mine = [j for j in sheet if j.system == system]
            adequacy = _ci([j.adequacy for j in mine], (0.0, 5.0))
            fluency = _ci([j.fluency for j in mine], (0.0, 5.0))
            rows.append(
                {
                    "system": system,
                    "judgements": len(mine),
                    "adequacy": adequacy["mean"],
                    "adequacy_ci_low": adequacy["ci_low"],
                    "adequacy_ci_high": adequacy["ci_high"],
                    "fluency": fluency["mean"],
                    "fluency_ci_low": fluency["ci_low"],
                    "fluency_ci_high": fluency["ci_high"],
                }
            )
        return {"systems": rows}
    if test == "summary":
        ratings = read_expert_ratings(path)
        # A judge who did not finish leaves cells missing: scored anyway, with a warning.
        report = score_summarization(ratings, allow_missing=True)
        rows = []
        for summary in report.tasks["summary"]:
            ci = _ci([r.score for r in ratings if r.system == summary.system], (0.0, 5.0))
            rows.append({**summary.to_dict(), "ci_low": ci["ci_low"], "ci_high": ci["ci_high"]})
        return {"systems": rows}
    if test == "relevance":
        return _relevance_tables(store, run_dir, path)
    if test == "pos-review":
        return {"systems": _pos_rows(store, run_dir, path)}
    return {"systems": _cws_rows(store, run_dir, path)}


def pool_summary(pool: dict[str, Any]) -> dict[str, Any]:
    """The pool's figures without the per-topic detail (that is the ``pool`` table)."""
    return {k: v for k, v in pool.items() if k != "topics"}


def _relevance_tables(store: JudgeStore, run_dir: Path, qrels_path: Path) -> dict[str, list[Any]]:
    """Per topic: the pool and its judgements; per run: its contribution to the pool and
    its scores against the judgements so far (trec_eval's measures, -c over judged topics)."""
    from scoring.ir import read_qrels, score_ir

    meta = store.meta()
    pool = json.loads(meta["pool"])
    qrels = read_qrels(qrels_path)  # the export, read as `onsite score ir --qrels` reads it
    topics = []
    for topic, figures in pool["topics"].items():
        grades = list(qrels.get(topic, {}).values())
        topics.append(
            {
                "topic": topic,
                "pooled": figures["pooled"],
                "judged": len(grades),
                "relevant": sum(1 for g in grades if g >= 1),
                "highly_relevant": sum(1 for g in grades if g >= 2),
            }
        )
    runs = []
    task = meta["task"]
    for system in json.loads(meta["systems"]):
        outputs = read_job_outputs(run_dir / "outputs" / task / f"{system}.jsonl")
        run = {
            topic: {str(d): float(sc) for d, sc in row["output"]["results"]}
            for topic, row in outputs.items()
            if row.get("verdict") in ("ok", "over_budget") and row.get("output")
        }
        report = score_ir(qrels, run, complete=True, max_docs=1000)
        runs.append(
            {
                "system": system,
                "contributed": pool["runs"][system]["contributed"],
                "unique": pool["runs"][system]["unique"],
                "map": report.map,
                "rprec": report.rprec,
                "p10": report.p10,
            }
        )
    return {"pool": topics, "runs": runs}


def _texts(run_dir: Path, task: str, system: str, testset: Any) -> list[str | None]:
    """Each item's answered text in test-set order; None where the item has no answer
    (a failure, or never sent), as the leaderboard scores it."""
    outputs = read_job_outputs(run_dir / "outputs" / task / f"{system}.jsonl")
    texts: list[str | None] = []
    for item in testset.items:
        row = outputs.get(item.id) or {}
        answer = row.get("output") if row.get("verdict") in ("ok", "over_budget") else None
        texts.append(str(answer["text"]) if answer else None)
    return texts


def _cws_rows(store: JudgeStore, run_dir: Path, review: Path) -> list[dict[str, Any]]:
    from scoring.cws import read_accepted_pieces

    task = store.meta()["task"]
    site = site_of_run(run_dir)
    cfg = site.config.tasks[task]
    testset = task_kind(cfg.kind).load_testset(site.testset_path(task), cfg)
    accepted = read_accepted_pieces(review)
    gold = [list(item.reference.words) for item in testset.items]
    lexicon = testset.items[0].reference.lexicon if testset.items else None
    rows = []
    for system in (s for s, sc in site.config.systems.items() if task in sc.tasks):
        test = [
            split_words(t) if t is not None else [] for t in _texts(run_dir, task, system, testset)
        ]
        before = score_cws(gold, test, lexicon)
        after = score_cws(gold, test, lexicon, accepted)
        rows.append(
            {
                "system": system,
                "f": before.f,
                "f_tolerant": after.f,
                "precision_tolerant": after.precision,
                "recall_tolerant": after.recall,
                "accepted_pieces": after.accepted_pieces,
            }
        )
    return rows


def _pos_rows(store: JudgeStore, run_dir: Path, review: Path) -> list[dict[str, Any]]:
    """Per system: POS F, precision and recall before and after the accepted tags, scored
    over every line as `onsite score pos --accepted` scores the export (an unanswered
    line has no words, as the leaderboard scores it)."""
    from harness.kinds.text import parse_tagged
    from scoring.pos_review import read_accepted_tags, score_pos_reviewed

    task = store.meta()["task"]
    site = site_of_run(run_dir)
    cfg = site.config.tasks[task]
    testset = task_kind(cfg.kind).load_testset(site.testset_path(task), cfg)
    accepted = read_accepted_tags(review)
    gold = [list(item.reference.tokens) for item in testset.items]
    training = testset.items[0].reference.training if testset.items else None
    rows = []
    for system in (s for s, sc in site.config.systems.items() if task in sc.tasks):
        test = [
            (parse_tagged(t) or []) if t is not None else []
            for t in _texts(run_dir, task, system, testset)
        ]
        figures = score_pos_reviewed(gold, test, accepted, training)
        rows.append(
            {
                "system": system,
                "f": figures["f_before_review"],
                "f_tolerant": figures["f"],
                "precision_tolerant": figures["precision"],
                "recall_tolerant": figures["recall"],
                "accepted_tags": figures["accepted_tags"],
            }
        )
    return rows
