"""CESTA: the statistically-significant-word score and human ranking with ties.

**Significant-word score** (the CESTA seed, section 7.3, quoting Babych,
Hartley and Atwell 2003, "Statistical modelling of MT output corpora for
Information Extraction"). The seed quotes the words; its equations were lost
in the text extraction, so they are written out here from the quoted
definitions and the cited paper:

1. "The score of statistical significance is computed for each word (with
   absolute frequency >= 2 in the particular text) for each text in the
   corpus"::

       S_word[text] = (P_word[text] - P_word[rest-corp]) * N_word[txt-not-found]
                      / P_word[all-corp]

   where P_word[text] is the word's relative frequency in the text,
   P_word[rest-corp] "the relative frequency of the same word in the rest of
   the corpus, without this text", N_word[txt-not-found] "the proportion of
   texts in the corpus, where this word is not found (number of texts, where
   it is not found divided by number of texts in the corpus)" and
   P_word[all-corp] "the relative frequency of the word in the whole corpus,
   including this particular text". A word is statistically significant for
   a text when S > `threshold` (1.0 by default, the cut-off of Babych and
   Hartley's later papers; the seed does not give one). The MT output of one
   system and the human references are two separate corpora.

2. "For all words which are present in lists of statistically significant
   words both in the human reference translation and in the MT output, we
   compute the sum of changes of their S scores", plus the S scores of the
   "over-generated" words (significant in the MT text only)::

       S_o.text = sum_{w in both} |S_w[MT] - S_w[ref]| + sum_{w in MT only} S_w[MT]
       S_u.text = sum_{w in both} |S_w[MT] - S_w[ref]| + sum_{w in ref only} S_w[ref]

   "For the o text score we divide S_o.text by the number of statistically
   significant words in the MT text, for the u text score we divide S_u.text
   by the number ... in the human reference translation": the averages
   ``over = S_o.text / n_MT`` and ``under = S_u.text / n_ref`` (0 is perfect).
   Their reciprocals ``o = 1 / over`` and ``u = 1 / under`` "could be
   interpreted as scores for ability to avoid over-generation and
   under-generation", and "the combined (o&u) score is computed similarly to
   the F-measure, where Precision and Recall are equally important"::

       o&u = 2 * o * u / (o + u)

   A text with nothing to penalise (``over`` = 0) has o = infinity, reported
   as null, and o&u = u (the F-measure's limit); both zero gives null.

3. "The general performance of an MT system ... could be characterised by
   the average o-score, u-score and u&o-score for all texts in the corpus":
   the system figures are means over the texts where the score is finite;
   texts with no significant word on a side have no score and are counted
   in `texts_without_score`.

Texts are tokenized as `scoring.rouge.tokenize` does (``lang="zh"``: one
token per Chinese character). The same procedure scores summaries against
reference summaries.

**Human ranking with ties**: a CESTA evaluator ranks texts best to worst
and groups those they cannot separate in brackets: ``4 [1 2] 6 [3 5]``.
`parse_ranking` turns that into ranks, tied texts sharing the mean of the
places they take (4 -> 1, 1 and 2 -> 2.5, 6 -> 4, 3 and 5 -> 5.5), and
`ranking_correlation` correlates the ranks with a metric (Spearman, signed
so that +1 means the metric orders the texts as the evaluator did).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .encoded_text import iter_named_lines
from .errors import FormatError
from .meta import pearson, spearman
from .rouge import Lang, tokenize

__all__ = [
    "SignificantWordScore",
    "parse_ranking",
    "ranking_correlation",
    "read_item_scores",
    "read_rankings",
    "read_texts",
    "score_significant_words",
    "significance_scores",
    "significant_words",
]


def _tokens(text: str, lang: Lang) -> list[str]:
    return [t for line in text.splitlines() for t in tokenize(line, lang)]


def significance_scores(
    corpus: Mapping[str, str], lang: Lang = "en"
) -> dict[str, dict[str, float]]:
    """S_word[text] for every word with frequency >= 2 in each text (step 1 above).

    `corpus` maps text id -> text; the result maps text id -> word -> S.
    """
    counts = {t: Counter(_tokens(text, lang)) for t, text in corpus.items()}
    total = Counter[str]()
    for c in counts.values():
        total.update(c)
    n_all = sum(total.values())
    n_texts = len(counts)
    found_in = Counter[str]()
    for c in counts.values():
        found_in.update(c.keys())
    out: dict[str, dict[str, float]] = {}
    for t, c in counts.items():
        n_text = sum(c.values())
        n_rest = n_all - n_text
        scores: dict[str, float] = {}
        for word, k in c.items():
            if k < 2:
                continue
            p_text = k / n_text
            p_rest = (total[word] - k) / n_rest if n_rest else 0.0
            p_all = total[word] / n_all
            not_found = (n_texts - found_in[word]) / n_texts
            scores[word] = (p_text - p_rest) * not_found / p_all
        out[t] = scores
    return out


def significant_words(
    corpus: Mapping[str, str], lang: Lang = "en", threshold: float = 1.0
) -> dict[str, dict[str, float]]:
    """The statistically significant words of each text (S > threshold) with their S."""
    return {
        t: {w: s for w, s in scores.items() if s > threshold}
        for t, scores in significance_scores(corpus, lang).items()
    }


def _inverse(x: float) -> float | None:
    return None if x == 0.0 else 1.0 / x


def _f(o: float | None, u: float | None) -> float | None:
    # None stands for infinity (nothing to penalise): F's limit is the other score.
    if o is None and u is None:
        return None
    if o is None:
        return u
    if u is None:
        return o
    return 0.0 if o + u == 0.0 else 2.0 * o * u / (o + u)


@dataclass(frozen=True)
class SignificantWordScore:
    """One text's over- and under-generation of significant words."""

    text: str
    mt_words: int
    ref_words: int
    common: int
    s_over: float
    s_under: float
    over: float | None
    under: float | None
    o: float | None
    u: float | None
    ou: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (an infinite or undefined score is null)."""
        return dict(self.__dict__)


def _text_score(
    text: str, mt: Mapping[str, float], ref: Mapping[str, float]
) -> SignificantWordScore:
    common = [w for w in mt if w in ref]
    change = math.fsum(abs(mt[w] - ref[w]) for w in common)
    s_over = change + math.fsum(s for w, s in mt.items() if w not in ref)
    s_under = change + math.fsum(s for w, s in ref.items() if w not in mt)
    over = s_over / len(mt) if mt else None
    under = s_under / len(ref) if ref else None
    o = _inverse(over) if over is not None else None
    u = _inverse(under) if under is not None else None
    ou = _f(o, u) if mt and ref else None
    return SignificantWordScore(
        text, len(mt), len(ref), len(common), s_over, s_under, over, under, o, u, ou
    )


def score_significant_words(
    mt: Mapping[str, str],
    references: Mapping[str, str],
    lang: Lang = "en",
    threshold: float = 1.0,
) -> dict[str, Any]:
    """The o, u and o&u scores of one system's texts against the reference texts.

    Both mappings are text id -> text with the same ids (a system's outputs
    are one corpus, the references another).
    """
    if set(mt) != set(references):
        only = sorted(set(mt) ^ set(references))
        raise ValueError(f"MT and reference texts differ, e.g. {only[0]!r}; give the same text ids")
    if len(mt) < 2:
        raise ValueError("need at least two texts: significance compares a text with the rest")
    mt_sig = significant_words(mt, lang, threshold)
    ref_sig = significant_words(references, lang, threshold)
    texts = [_text_score(t, mt_sig[t], ref_sig[t]) for t in references]

    def mean(name: str) -> float | None:
        values = [v for s in texts if (v := getattr(s, name)) is not None]
        return math.fsum(values) / len(values) if values else None

    return {
        "lang": lang,
        "threshold": threshold,
        "texts": len(texts),
        "texts_without_score": sum(s.ou is None for s in texts),
        "o": mean("o"),
        "u": mean("u"),
        "ou": mean("ou"),
        "over": mean("over"),
        "under": mean("under"),
        "per_text": [s.to_dict() for s in texts],
    }


_RANK_TOKEN = re.compile(r"\[|\]|[^\s\[\]]+")


def parse_ranking(text: str) -> dict[str, float]:
    """Ranks from a CESTA ranking, best first, ties in brackets: ``4 [1 2] 6 [3 5]``.

    Tied items share the mean of the places they occupy. Raises ValueError
    for unbalanced or nested brackets, an empty group or an item named twice.
    """
    groups: list[list[str]] = []
    group: list[str] | None = None
    for token in _RANK_TOKEN.findall(text):
        if token == "[":
            if group is not None:
                raise ValueError(f"ranking {text!r}: brackets cannot nest")
            group = []
        elif token == "]":
            if group is None:
                raise ValueError(f"ranking {text!r}: ']' without '['")
            if not group:
                raise ValueError(f"ranking {text!r}: empty brackets")
            groups.append(group)
            group = None
        elif group is not None:
            group.append(token)
        else:
            groups.append([token])
    if group is not None:
        raise ValueError(f"ranking {text!r}: '[' is not closed")
    ranks: dict[str, float] = {}
    place = 0
    for g in groups:
        shared = place + (len(g) + 1) / 2.0
        for item in g:
            if item in ranks:
                raise ValueError(f"ranking {text!r}: {item!r} ranked twice")
            ranks[item] = shared
        place += len(g)
    if not ranks:
        raise ValueError("empty ranking")
    return ranks


def ranking_correlation(
    ranks: Mapping[str, float], scores: Mapping[str, float], higher_is_better: bool = True
) -> dict[str, Any]:
    """Spearman and Pearson of a human ranking with a metric's scores, same items.

    Rank 1 is best, so the ranks are negated (for a metric where higher is
    better): +1 means full agreement.
    """
    if set(ranks) != set(scores):
        only = sorted(set(ranks) ^ set(scores))
        raise ValueError(f"ranking and scores name different items, e.g. {only[0]!r}")
    items = list(ranks)
    human = [-ranks[i] for i in items]
    metric = [scores[i] if higher_is_better else -scores[i] for i in items]
    rho, r = spearman(human, metric), pearson(human, metric)
    return {
        "items": len(items),
        "spearman": None if math.isnan(rho) else rho,
        "pearson": None if math.isnan(r) else r,
    }


# --- readers -------------------------------------------------------------------


def read_texts(path: str | Path, role: str, encoding: str | None = None) -> dict[str, str]:
    """Text id -> text: JSON lines {"id", "text"}, or CWMT XML with one text per document.

    A reference file holding several references (CWMT XML, or JSON lines
    repeating an id) gives its first: the significant-word score compares with
    one reference corpus. ``encoding`` is the file's (scoring.charsets; None:
    UTF-8, or for CWMT XML the encoding its declaration names).
    """
    from .charsets import codec_of
    from .rouge import read_summaries

    with open(path, "rb") as f:
        data = f.read(400)
    # Enough of the start to tell XML from JSON lines, whatever the encoding.
    head = data.decode(codec_of(encoding), errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) and encoding is None:
        head = data.decode("utf-16", errors="replace")
    if head.lstrip("\ufeff \t\r\n").startswith("<"):
        from .cwmt_xml import load_mt_file

        mt_file = load_mt_file(path, role, encoding)  # type: ignore[arg-type]
        texts: dict[str, list[str]] = {}
        for seg in mt_file.split_references()[0].segments:
            texts.setdefault(seg.doc_id, []).append(seg.text)
        return {doc: "\n".join(lines) for doc, lines in texts.items()}
    # A reference file may repeat an id (one line per reference): its first is taken.
    found = read_summaries(path, several=role == "reference", encoding=encoding)
    return {d: t[0] for d, t in found.items()}


def _tsv_lines(path: Path, encoding: str | None) -> list[tuple[int, list[str]]]:
    out = []
    for n, raw in enumerate(iter_named_lines(path, encoding), 1):
        line = raw.removesuffix("\r")
        if line.strip() and not line.lstrip().startswith("#"):
            out.append((n, line.split("\t")))
    return out


def read_rankings(path: str | Path, encoding: str | None = None) -> dict[str, dict[str, float]]:
    """``name<TAB>ranking`` lines (ranking like ``4 [1 2] 6 [3 5]``) -> name -> item -> rank.

    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed).
    """
    path = Path(path)
    out: dict[str, dict[str, float]] = {}
    for n, cells in _tsv_lines(path, encoding):
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


def read_item_scores(path: str | Path, encoding: str | None = None) -> dict[str, float]:
    """``item<TAB>score`` lines -> item -> score, read in ``encoding`` (None: UTF-8)."""
    path = Path(path)
    out: dict[str, float] = {}
    for n, cells in _tsv_lines(path, encoding):
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
