"""`onsite score rouge | cesta | cesta-rank`: the scorers behind the three families.

Kept apart from score_cmd.py (which only lists them), and each imports its
scorer when it runs, so `onsite score ir` loads none of this.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["read_rankings", "read_item_scores", "score_cesta", "score_cesta_rank", "score_rouge"]


def score_rouge(args: argparse.Namespace) -> dict[str, Any]:
    """ROUGE-1/2/L of one system's summaries against reference summaries."""
    from scoring.rouge import score_rouge_files

    result = score_rouge_files(
        args.hyp,
        args.ref,
        lang=args.lang,
        formula=args.formula,
        alpha=args.alpha,
        length_limit=args.length_limit,
        length_unit=args.length_unit,
    )
    if not args.details:
        result.pop("per_document")
    return result


def _texts(path: str, role: str) -> dict[str, str]:
    """Text id -> text: JSON lines {"id", "text"}, or CWMT XML with one text per document.

    A reference file holding several references (CWMT XML, or JSON lines
    repeating an id) gives its first: the significant-word score compares with
    one reference corpus.
    """
    from scoring.rouge import read_summaries

    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(200).lstrip("\ufeff \t\r\n")
    if head.startswith("<"):
        from scoring.cwmt_xml import load_mt_file

        mt_file = load_mt_file(path, role)  # type: ignore[arg-type]
        texts: dict[str, list[str]] = {}
        for seg in mt_file.split_references()[0].segments:
            texts.setdefault(seg.doc_id, []).append(seg.text)
        return {doc: "\n".join(lines) for doc, lines in texts.items()}
    # A reference file may repeat an id (one line per reference): its first is taken.
    return {d: t[0] for d, t in read_summaries(path, several=role == "reference").items()}


def score_cesta(args: argparse.Namespace) -> dict[str, Any]:
    """CESTA o, u and o&u significant-word scores of one system's texts."""
    from scoring.cesta import score_significant_words
    from scoring.errors import FormatError

    mt = _texts(args.hyp, "target")
    refs = _texts(args.ref, "reference")
    try:
        result = score_significant_words(mt, refs, lang=args.lang, threshold=args.threshold)
    except ValueError as exc:
        raise FormatError(args.hyp, None, str(exc), f"give one text per id of {args.ref}") from None
    if not args.details:
        result.pop("per_text")
    return result


def _tsv_lines(path: Path) -> list[tuple[int, list[str]]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.strip() and not line.lstrip().startswith("#"):
                out.append((n, line.split("\t")))
    return out


def read_rankings(path: str | Path) -> dict[str, dict[str, float]]:
    """``name<TAB>ranking`` lines (ranking like ``4 [1 2] 6 [3 5]``) -> name -> item -> rank."""
    from scoring.cesta import parse_ranking
    from scoring.errors import FormatError

    path = Path(path)
    out: dict[str, dict[str, float]] = {}
    for n, cells in _tsv_lines(path):
        if len(cells) != 2:
            raise FormatError(
                path, n, f"{len(cells)} tab-separated fields", "write name<TAB>4 [1 2] 6 [3 5]"
            )
        name, ranking = cells[0].strip(), cells[1]
        if name in out:
            raise FormatError(path, n, f"ranking {name!r} repeated", "one line per ranking")
        try:
            out[name] = parse_ranking(ranking)
        except ValueError as exc:
            raise FormatError(path, n, str(exc), "best first, ties as [a b], no nesting") from None
    if not out:
        raise FormatError(path, None, "no rankings", "write name<TAB>4 [1 2] 6 [3 5] lines")
    return out


def read_item_scores(path: str | Path) -> dict[str, float]:
    """``item<TAB>score`` lines -> item -> score."""
    import math

    from scoring.errors import FormatError

    path = Path(path)
    out: dict[str, float] = {}
    for n, cells in _tsv_lines(path):
        try:
            if len(cells) != 2:
                raise ValueError
            value = float(cells[1])
        except ValueError:
            raise FormatError(path, n, "not item<TAB>number", "write e.g. 3<TAB>0.42") from None
        if not math.isfinite(value):
            raise FormatError(path, n, f"score {cells[1]!r} is not finite", "give a number")
        item = cells[0].strip()
        if item in out:
            raise FormatError(path, n, f"item {item!r} repeated", "one score per item")
        out[item] = value
    if not out:
        raise FormatError(path, None, "no scores", "write item<TAB>score lines")
    return out


def score_cesta_rank(args: argparse.Namespace) -> dict[str, Any]:
    """Each human ranking (with ties) correlated with a metric over the ranked items."""
    from scoring.cesta import ranking_correlation
    from scoring.errors import FormatError

    rankings = read_rankings(args.rankings)
    scores = read_item_scores(args.scores)
    rows = []
    for name, ranks in rankings.items():
        missing = [i for i in ranks if i not in scores]
        if missing:
            raise FormatError(
                args.scores,
                None,
                f"no score for item {missing[0]!r} of ranking {name!r}",
                "score every ranked item",
            )
        corr = ranking_correlation(
            ranks, {i: scores[i] for i in ranks}, higher_is_better=not args.lower_is_better
        )
        rows.append({"ranking": name, **corr})
    rhos = [r["spearman"] for r in rows if r["spearman"] is not None]
    return {
        "rankings": len(rows),
        "mean_spearman": sum(rhos) / len(rhos) if rhos else None,
        "per_ranking": rows,
    }
