"""Task kinds for the text technologies: mt, cws, ner, pos, textcat and ir.

Text items carry no files: their input is plain fields (`{"text": ...}`,
`{"tokens": [...]}`, `{"query": ...}`), sent as the item's `input`. The
scorers are scoring/'s, so a run's numbers equal what `onsite score` gives.
docs/text-task-kinds.md lists each kind's layout, input, output, metric and speed.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from harness.errors import Problem, TestSetError
from harness.kinds.base import (
    ENCODING_ARG,
    AdditiveStatistics,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    ScoreFamily,
    SpeedUnit,
    TaskConfig,
    TaskKind,
    arg,
    pct,
    refuse_outputs_file,
    write_file,
)
from harness.kinds.formats import (
    write_conll,
    write_cwmt_source,
    write_cwmt_xml,
    write_sighan,
    write_trec,
    write_tsv,
)
from harness.kinds.nbest import check_nbest
from harness.kinds.submissions import (
    read_conll_tags,
    read_cwmt_xml,
    read_mt_lines,
    read_sighan,
    read_trec_run,
)
from harness.testsets import InvalidItem, TestItem, TestSet, _read_id_table
from scoring.errors import FormatError

if TYPE_CHECKING:
    from harness.kinds.options import KindOptions
    from scoring.cwmt_xml import MtFile
    from scoring.ir import Topic
    from scoring.pos import PosTraining

# The scorers and readers are imported inside the functions that use them: every kind
# module is imported by whatever reads a site file (`onsite status` too), and the MT
# scorers load numpy (docs/task-kinds.md).

MAX_REFERENCES = 4
# trec_eval's default -M: documents past this rank are not scored, so not accepted.
MAX_RESULTS = 1000
DEFAULT_LANG = "en"
# A document's reference, whatever the kind makes of it.
R = TypeVar("R")


# --------------------------------------------------------------------------- shared


def _read(path: Path, reader: Callable[[Path], Any], fix: str) -> Any:
    """Read a truth file with a scoring reader; its errors become TestSetError with the line."""
    if not path.is_file():
        raise TestSetError([Problem(path, "", "the test set has no such file", fix)])
    try:
        return reader(path)
    except FormatError as exc:
        raise TestSetError([Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]) from exc
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise TestSetError([Problem(path, "", str(exc), fix)]) from exc


def _no_items(path: Path, fix: str) -> TestSetError:
    return TestSetError([Problem(path, "", "the test set lists no items", fix)])


def _chars(text: str) -> float:
    """Non-space characters: what a chars_per_second budget counts for a text item."""
    # str.split() cuts at exactly the characters str.isspace() names, in C.
    return float(len("".join(text.split())) or 1)


def _answer(outputs: Outputs, item_id: str) -> Mapping[str, Any] | None:
    return outputs.get(item_id)


def _string_field(output: Mapping[str, Any], key: str, example: str) -> str | None:
    if not isinstance(output.get(key), str):
        return f'output needs a "{key}" string, e.g. {example}'
    return None


Speed = Callable[[TestItem, float], float | None]


def _per_second(count: Callable[[TestItem], float], scale: float = 1.0) -> Speed:
    """Per-item speed as count(item) / seconds (/ scale, e.g. 1000 for k-units)."""

    def speed(item: TestItem, seconds: float) -> float | None:
        return count(item) / seconds / scale if seconds > 0 else None

    return speed


def _ms_per_item(item: TestItem, seconds: float) -> float | None:
    return 1000.0 * seconds


# --------------------------------------------------------------------------- mt


@dataclass(frozen=True)
class MtReference:
    """One source segment's place and its reference translations."""

    doc_id: str
    seg_id: str
    refs: tuple[str, ...]
    lang: str


def _one_file(root: Path, names: Sequence[str], fix: str) -> Path:
    found = [root / n for n in names if (root / n).is_file()]
    if len(found) != 1:
        listed = " or ".join(names)
        message = f"no {listed}" if not found else f"both {listed}: which is the source?"
        raise TestSetError([Problem(root, "", message, fix)])
    return found[0]


def _mt_lang(root: Path, source: MtFile, encoding: str | None = None) -> str:
    from scoring.cws import read_lines

    lang_file = root / "lang"
    if lang_file.is_file():
        lines = [ln.strip() for ln in read_lines(lang_file, encoding or "utf-8") if ln.strip()]
        if len(lines) != 1 or len(lines[0].split()) != 1:
            raise TestSetError(
                [Problem(lang_file, "", "expected one language code", 'write e.g. "zh" or "en"')]
            )
        return lines[0].lower()
    return (source.tgtlang or DEFAULT_LANG).lower()


def _mirror(source: MtFile, ref: MtFile, path: Path) -> None:
    from scoring.cwmt_xml import require_mirror

    require_mirror(source, ref)


def _mt_categories(
    root: Path, items: Sequence[TestItem], encoding: str | None = None
) -> dict[str, str]:
    """Item id -> category from the optional ``categories.tsv`` (``<id><TAB><category>``).

    An id is an item's (a plain set's line number, ``doc:seg`` of an XML set) or, in an
    XML set, a document's: every segment of that document (e.g. its domain or genre).
    Judging only one category of segments is `onsite judge --category` (docs/judging.md).
    """
    path = root / "categories.tsv"
    if not path.is_file():
        return {}
    table = _read_id_table(path, "\t", "category", encoding)
    by_doc: dict[str, list[str]] = {}
    for item in items:
        by_doc.setdefault(item.reference.doc_id, []).append(item.id)
    ids = {i.id for i in items}
    out: dict[str, str] = {}
    for key, category in table.items():
        if key in ids:
            out[key] = category
        elif key in by_doc and key not in ids:
            out.update({i: category for i in by_doc[key] if i not in table})
        else:
            raise TestSetError(
                [
                    Problem(
                        path,
                        "",
                        f"id {key!r} is neither a segment nor a document of the source",
                        "categorize the source's segments (plain: line numbers; XML: "
                        "doc:seg) or its documents (docid)",
                    )
                ]
            )
    return out


def _load_mt(root: Path, task: TaskConfig) -> TestSet:
    from scoring.cwmt_xml import load_mt_file
    from scoring.mt_files import entity_warnings

    fix = "give source.txt (one segment per line) or a CWMT source.xml"
    source_path = _one_file(root, ("source.txt", "source.xml"), fix)
    encoding = getattr(task, "encoding", None)
    source = _read(source_path, lambda p: load_mt_file(p, "source", encoding), fix)
    ref_paths = sorted(
        p
        for p in root.iterdir()
        if p.is_file() and p.name.startswith("ref") and p.suffix in (".txt", ".xml")
    )
    ref_fix = "give ref1.txt (one reference per source line) or ref*.xml, one to four references"
    references: list[MtFile] = []
    # Where mteval-v13a would read a reference otherwise (&apos;, &#N;, CDATA ...).
    entity_notes: list[str] = []
    for path in ref_paths:
        ref_file = _read(path, lambda p: load_mt_file(p, "reference", encoding), ref_fix)
        references.extend(ref_file.split_references())
        entity_notes += entity_warnings(ref_file, None)
    if not 1 <= len(references) <= MAX_REFERENCES:
        raise TestSetError(
            [Problem(root, "", f"{len(references)} reference sets, expected 1 to 4", ref_fix)]
        )
    lang = _mt_lang(root, source, encoding)
    texts: list[list[str]] = []
    for ref in references:
        if source.kind == "xml" and ref.kind == "xml":
            _read(ref.path, partial(_mirror, source, ref), ref_fix)
            lookup = {(s.doc_id, s.seg_id): s.text for s in ref.segments}
            texts.append([lookup[(s.doc_id, s.seg_id)] for s in source.segments])
        elif len(ref.segments) != len(source.segments):
            raise TestSetError(
                [
                    Problem(
                        ref.path,
                        "",
                        f"{len(ref.segments)} reference segments for "
                        f"{len(source.segments)} source segments in {source.path.name}",
                        "give one reference segment per source segment, in the same order",
                    )
                ]
            )
        else:
            texts.append([s.text for s in ref.segments])
    items = []
    for n, seg in enumerate(source.segments):
        item_id = seg.seg_id if source.kind == "plain" else f"{seg.doc_id}:{seg.seg_id}"
        refs = tuple(t[n] for t in texts)
        items.append(
            TestItem(
                id=item_id,
                files={},
                fields={"text": seg.text, "lang": lang},
                reference=MtReference(seg.doc_id, seg.seg_id, refs, lang),
                units=_chars(seg.text),
            )
        )
    if not items:
        raise _no_items(source_path, fix)
    categories = _mt_categories(root, items, encoding)
    if categories:
        items = [replace(i, condition=categories.get(i.id)) for i in items]
    # The organizer's bilingual dictionary (closed-track training material): handed to
    # the system in hello, never read by onsite.
    dictionary = root / "dictionary.txt"
    setup = {"dictionary": dictionary} if dictionary.is_file() else {}
    return TestSet(root, tuple(items), setup_files=setup, warnings=tuple(entity_notes))


def _check_mt(output: Mapping[str, Any]) -> str | None:
    return _string_field(output, "text", '{"text": "the translation"}') or check_nbest(output)


def _mt_segments(testset: TestSet, outputs: Outputs) -> tuple[list[Any], str]:
    """The job's segments as mteval sees them, and the target language."""
    from scoring.mt import MtSegment, as_sgml_text

    segments = []
    for item in testset.items:
        ref: MtReference = item.reference
        answer = _answer(outputs, item.id)
        # An unanswered segment is scored as an empty translation, as in a CWMT submission.
        hyp = str(answer["text"]) if answer else ""
        # As mteval sees them: the output is literal text, the references
        # were decoded once by their reader (see scoring.mt.as_sgml_text).
        refs = tuple(as_sgml_text(r) for r in ref.refs)
        segments.append(MtSegment(ref.doc_id, ref.seg_id, as_sgml_text(hyp), refs))
    lang = testset.items[0].reference.lang if testset.items else DEFAULT_LANG
    return segments, lang


def _score_mt(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.mt_batch import score_mt_batch
    from scoring.mt_files import gtm_warnings

    segments, lang = _mt_segments(testset, outputs)
    # score_mt's report, computed for the whole set at once (equal value for value).
    out = score_mt_batch(segments, lang).to_dict()
    # Where GTM 1.4 would give another GTM (docs/scoring-mt.md#gtm), said as
    # `onsite score mt` says it.
    # The references' entities mteval would read otherwise (found when the set was loaded).
    warnings = [*testset.warnings, *gtm_warnings(segments, out["n_refs"])]
    if warnings:
        out["warnings"] = warnings
    return out


def _bleu_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each segment's n-gram counts: BLEU is that of the summed counts."""
    from scoring.mt_batch import score_mt_batch

    segments, lang = _mt_segments(testset, outputs)
    if not segments:
        return {}
    report = score_mt_batch(segments, lang, metrics=("bleu",))
    return {
        item.id: seg.scores.ngrams for item, seg in zip(testset.items, report.segments, strict=True)
    }


def _bleu_aggregate(task: TaskConfig, counts: Sequence[Any]) -> float | None:
    from scoring.mt import bleu_from_stats

    if not counts:
        return None
    total = counts[0]
    for more in counts[1:]:
        total = total + more
    return bleu_from_stats(total)


def _source_words(item: TestItem) -> float:
    from scoring import tokenize

    # CJK characters count one each, other runs are whitespace words: no segmenter needed.
    return float(len(tokenize(str(item.fields["text"]), "char", case_sensitive=True, unicode=True)))


# The system-combination kind (combination.py) reads the mt layout and scores with
# the same BLEU at the same speed: these are its names for them.
load_mt_testset = _load_mt
score_mt_outputs = _score_mt
source_words = _source_words


def _bleu_vector(task: TaskConfig, stats: Any) -> Mapping[Hashable, float]:
    """The figures BLEU reads of a segment's counts: matches and totals of orders 1-4
    and the closest reference length."""
    from scoring.mt import BLEU_ORDER

    return {
        **{("match", n): stats.matches[n] for n in range(BLEU_ORDER)},
        **{("total", n): stats.totals[n] for n in range(BLEU_ORDER)},
        "ref_len": stats.ref_len_closest,
    }


def _bleu_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    from scoring.mt import BLEU_ORDER, NgramStats, bleu_from_stats

    def count(key: Hashable) -> int:
        return int(sums.get(key, 0))

    matches = tuple(count(("match", n)) for n in range(BLEU_ORDER))
    totals = tuple(count(("total", n)) for n in range(BLEU_ORDER))
    # The NIST figures and the other lengths do not enter BLEU (mteval-v13a, closest).
    zeros = (0.0,) * BLEU_ORDER
    return bleu_from_stats(NgramStats(matches, totals, zeros, count("ref_len"), 0, 0, 0))


BLEU_STATISTICS = ItemStatistics(
    _bleu_items, _bleu_aggregate, AdditiveStatistics(_bleu_vector, _bleu_headline)
)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pooled_additive(
    zero: Callable[[], Any], headline: Callable[[Any], float]
) -> AdditiveStatistics:
    """The additive form of a metric of pooled count records (`scoring.pooled` with the
    empty record ``zero()`` first, as the aggregates pool): each integer field summed,
    and a field None in the pooled record wherever `pooled` makes it None (None in
    the empty record, or in any pooled item)."""

    def vector(task: TaskConfig, record: Any) -> Mapping[Hashable, float]:
        out: dict[Hashable, float] = {}
        for f in fields(record):
            value = getattr(record, f.name)
            if value is None:
                out[("none", f.name)] = 1
            elif _count(value):
                out[f.name] = value
        return out

    def total(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
        empty = zero()
        summed: dict[str, int | None] = {}
        for f in fields(empty):
            value = getattr(empty, f.name)
            if value is None or sums.get(("none", f.name), 0):
                summed[f.name] = None
            elif _count(value):
                summed[f.name] = int(sums.get(f.name, 0))
        return headline(replace(empty, **summed))

    return AdditiveStatistics(vector, total)


# --------------------------------------------------------------------------- cws


@dataclass(frozen=True)
class Segmented:
    """A gold segmentation line and the training word list (for OOV recall)."""

    words: tuple[str, ...]
    lexicon: frozenset[str] | None


def _load_cws(root: Path, task: TaskConfig) -> TestSet:
    from scoring.cws import read_segmentation, read_word_list, sighan_file_notes

    fix = "give gold.txt: one segmented sentence per line, words separated by spaces"
    gold_path = root / "gold.txt"
    encoding = getattr(task, "encoding", None) or "utf-8"
    gold = _read(gold_path, partial(read_segmentation, encoding=encoding), fix)
    words_path = root / "words.txt"
    lexicon: frozenset[str] | None = None
    if words_path.is_file():
        lexicon = _read(
            words_path,
            partial(read_word_list, encoding=encoding),
            "give one training word per line",
        )
    items = [
        TestItem(
            id=str(line),
            files={},
            fields={"text": "".join(words)},
            reference=Segmented(tuple(words), lexicon),
            units=_chars("".join(words)),
        )
        for line, words in enumerate(gold, 1)
        if words  # a blank gold line is no sentence (the bakeoff script skips it too)
    ]
    if not items:
        raise _no_items(gold_path, fix)
    setup = {"words": words_path} if lexicon is not None else {}
    # Where the SIGHAN script would read the gold file otherwise (said on the leaderboard).
    notes = sighan_file_notes(gold_path, encoding)
    return TestSet(root, tuple(items), setup_files=setup, warnings=tuple(notes))


def _check_segmented(output: Mapping[str, Any]) -> str | None:
    return _string_field(output, "text", '{"text": "我们 在 北京"} (words separated by spaces)')


def _cws_lines(testset: TestSet, outputs: Outputs) -> tuple[list[Any], list[Any], Any]:
    """Gold and system words per sentence (an unanswered one has none), and the word list."""
    from scoring.cws import split_words

    gold = [list(item.reference.words) for item in testset.items]
    test = []
    for item in testset.items:
        answer = _answer(outputs, item.id)
        test.append(split_words(str(answer["text"])) if answer else [])
    lexicon = testset.items[0].reference.lexicon if testset.items else None
    return gold, test, lexicon


def _score_cws(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.cws import score_cws, sighan_answer_notes

    out = score_cws(*_cws_lines(testset, outputs)).to_dict()
    answers = {
        item.id: str(answer["text"])
        for item in testset.items
        if (answer := _answer(outputs, item.id)) is not None
    }
    # Where the SIGHAN script would count otherwise: the gold file's lines, the answers.
    out["warnings"] = [*testset.warnings, *sighan_answer_notes(answers), *out["warnings"]]
    return out


def _cws_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each sentence's word counts: P, R and F are those of the pooled counts."""
    from scoring.cws import score_cws

    gold, test, lexicon = _cws_lines(testset, outputs)
    return {
        item.id: score_cws([g], [t], lexicon)
        for item, g, t in zip(testset.items, gold, test, strict=True)
    }


def _cws_aggregate(task: TaskConfig, scores: Sequence[Any]) -> float:
    from scoring.cws import score_cws
    from scoring.pooled import pooled

    return pooled([score_cws([], []), *scores]).f


def _cws_zero() -> Any:
    from scoring.cws import score_cws

    return score_cws([], [])


# --------------------------------------------------------------------------- ner


def _read_gold_conll(path: Path, encoding: str = "utf-8") -> list[tuple[int, list[str], list[str]]]:
    """Sentences of (first line, tokens, gold tags): token first, gold tag last column."""
    from scoring.cws import read_lines
    from scoring.ner import parse_tag

    sentences: list[tuple[int, list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    start = 0
    for number, line in enumerate(read_lines(path, encoding), 1):
        cols = line.split()
        # A blank line, conlleval's -X- or a -DOCSTART- marker ends a sentence.
        if not cols or cols[0] in ("-X-", "-DOCSTART-"):
            if tokens:
                sentences.append((start, tokens, tags))
            tokens, tags = [], []
            continue
        if len(cols) < 2:
            raise FormatError(
                path, number, "fewer than 2 columns", "write the token first and its gold tag last"
            )
        if parse_tag(cols[-1]) is None:
            raise FormatError(
                path,
                number,
                f"malformed gold tag {cols[-1]!r}",
                "use O or B-/I-/E-/S- followed by the entity type, e.g. B-PER",
            )
        if not tokens:
            start = number
        tokens.append(cols[0])
        tags.append(cols[-1])
    if tokens:
        sentences.append((start, tokens, tags))
    return sentences


def _load_ner(root: Path, task: TaskConfig) -> TestSet:
    fix = "give gold.conll: one 'token ... TAG' line per token, a blank line between sentences"
    gold_path = root / "gold.conll"
    encoding = getattr(task, "encoding", None) or "utf-8"
    sentences = _read(gold_path, partial(_read_gold_conll, encoding=encoding), fix)
    items = [
        TestItem(
            id=str(line),
            files={},
            fields={"tokens": tokens},
            reference=tuple(tags),
            units=_chars("".join(tokens)),
        )
        for line, tokens, tags in sentences
    ]
    if not items:
        raise _no_items(gold_path, fix)
    return TestSet(root, tuple(items))


def _check_tags(output: Mapping[str, Any]) -> str | None:
    from scoring.ner import parse_tag

    tags = output.get("tags")
    example = 'e.g. {"tags": ["B-PER", "I-PER", "O"]}, one tag per input token'
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return f'output needs "tags": a list of strings, {example}'
    bad = next((t for t in tags if parse_tag(t) is None), None)
    if bad is not None:
        return f"tag {bad!r} is not O or B-/I-/E-/S- plus a type, {example}"
    return None


def check_ner_length(item: TestItem, output: Mapping[str, Any]) -> str | None:
    """The per-item check check_output cannot make: one tag per token sent."""
    tags, tokens = output.get("tags"), item.fields["tokens"]
    if isinstance(tags, list) and len(tags) != len(tokens):
        return f"{len(tags)} tags for {len(tokens)} tokens: give one tag per input token"
    return None


def _ner_tags(testset: TestSet, outputs: Outputs) -> tuple[list[Any], list[Any], int, int]:
    """Gold and predicted tags per sentence, and how many went unanswered or wrong length."""
    gold: list[list[str]] = []
    predicted: list[list[str | None]] = []
    unanswered = wrong_length = 0
    for item in testset.items:
        tags = list(item.reference)
        answer = _answer(outputs, item.id)
        guess: list[str | None] = [None] * len(tags)
        if answer is None:
            unanswered += 1
        elif check_ner_length(item, answer):
            wrong_length += 1
        else:
            guess = list(answer["tags"])
        # None never equals a gold tag and starts no chunk: no credit, as for a missing answer.
        gold.append(tags)
        predicted.append(guess)
    return gold, predicted, unanswered, wrong_length


def _score_ner(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.ner import conlleval_sentence_warning, score_ner

    gold, predicted, unanswered, wrong_length = _ner_tags(testset, outputs)
    scores = score_ner(gold, cast(list[list[str]], predicted)).to_dict()
    ids = [item.id for item in testset.items]
    return {
        **scores,
        "unanswered": unanswered,
        "wrong_length": wrong_length,
        "warnings": conlleval_sentence_warning(gold, predicted, ids),
    }


def _ner_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each sentence's chunk counts: F1 is that of the pooled counts."""
    from scoring.ner import score_ner

    gold, predicted, _, _ = _ner_tags(testset, outputs)
    return {
        item.id: score_ner([g], [p])
        for item, g, p in zip(testset.items, gold, predicted, strict=True)
    }


def _ner_aggregate(task: TaskConfig, scores: Sequence[Any]) -> float:
    from scoring.ner import NerScore, score_ner

    return NerScore.pooled([score_ner([], []), *scores]).f1


def _ner_zero() -> Any:
    from scoring.ner import score_ner

    return score_ner([], [])


# --------------------------------------------------------------------------- pos


@dataclass(frozen=True)
class Tagged:
    """A gold word/TAG line and the training counts (for IV/OOV accuracy)."""

    tokens: tuple[tuple[str, str], ...]
    training: PosTraining | None


def _load_pos(root: Path, task: TaskConfig) -> TestSet:
    from scoring.pos import PosTraining, read_tagged

    fix = "give gold.pos: one sentence per line, tokens word/TAG separated by spaces"
    gold_path = root / "gold.pos"
    encoding = getattr(task, "encoding", None) or "utf-8"
    gold = _read(gold_path, partial(read_tagged, encoding=encoding), fix)
    train_path = root / "train.pos"
    training = None
    if train_path.is_file():
        sentences = _read(
            train_path,
            partial(read_tagged, encoding=encoding),
            "give train.pos in the word/TAG format",
        )
        training = PosTraining.from_sentences(sentences)
    items = [
        TestItem(
            id=str(line),
            files={},
            fields={"text": "".join(w for w, _ in tokens)},
            reference=Tagged(tuple(tokens), training),
            units=_chars("".join(w for w, _ in tokens)),
        )
        for line, tokens in enumerate(gold, 1)
        if tokens
    ]
    if not items:
        raise _no_items(gold_path, fix)
    setup = {"train": train_path} if training is not None else {}
    return TestSet(root, tuple(items), setup_files=setup)


def parse_tagged(text: str) -> list[tuple[str, str]] | None:
    """A system's `word/TAG word/TAG` line as (word, tag) pairs; None if a token has no tag."""
    from scoring.cws import split_words

    tokens = []
    for token in split_words(text):
        word, sep, tag = token.rpartition("/")
        if not sep or not word or not tag:
            return None
        tokens.append((word, tag))
    return tokens


def _check_pos(output: Mapping[str, Any]) -> str | None:
    from scoring.cws import split_words

    example = '{"text": "我们/r 在/p 北京/ns"}'
    problem = _string_field(output, "text", example)
    if problem:
        return problem
    if parse_tagged(output["text"]) is None:
        bad = next(t for t in split_words(output["text"]) if parse_tagged(t) is None)
        return f"token {bad[:40]!r} is not word/TAG; write every token as word/TAG, e.g. {example}"
    return None


def _pos_lines(testset: TestSet, outputs: Outputs) -> tuple[list[Any], list[Any]]:
    """Gold and system (word, tag) tokens per sentence (an unanswered one has none)."""
    gold = [list(item.reference.tokens) for item in testset.items]
    test = []
    for item in testset.items:
        answer = _answer(outputs, item.id)
        test.append((parse_tagged(str(answer["text"])) or []) if answer else [])
    return gold, test


def _score_pos(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.pos import score_pos

    training = testset.items[0].reference.training if testset.items else None
    return score_pos(*_pos_lines(testset, outputs), training).to_dict()


def _pos_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each sentence's tagged-word counts: F is that of the pooled counts (no training
    figures: they are not the headline)."""
    from scoring.pos import score_pos

    gold, test = _pos_lines(testset, outputs)
    return {
        item.id: score_pos([g], [t]) for item, g, t in zip(testset.items, gold, test, strict=True)
    }


def _pos_aggregate(task: TaskConfig, scores: Sequence[Any]) -> float:
    from scoring.pooled import pooled
    from scoring.pos import score_pos

    return pooled([score_pos([], []), *scores]).f


def _pos_zero() -> Any:
    from scoring.pos import score_pos

    return score_pos([], [])


# --------------------------------------------------------------------------- textcat


def _unlisted_documents(docs: Path, listed: Iterable[str], why: str) -> tuple[str, ...]:
    """A warning per file of ``docs`` whose id is not among ``listed`` (it is not sent)."""
    names = {f"{doc_id}.txt" for doc_id in listed}
    found = sorted(docs.iterdir()) if docs.is_dir() else []
    return tuple(f"{p}: document with {why}" for p in found if p.is_file() and p.name not in names)


def _read_document(
    docs: Path, doc_id: str, encoding: str | None = None
) -> tuple[str, InvalidItem | None]:
    """A test set's document ``docs/<doc_id>.txt`` as text, or why it cannot be an item
    (missing, not in ``encoding`` (None: UTF-8), empty): the run goes on without it."""
    path = docs / f"{doc_id}.txt"
    if not path.is_file():
        return "", InvalidItem(doc_id, None, f"no document {path}")
    from scoring.charsets import read_text

    try:
        text = read_text(path, encoding)
    except FormatError as exc:
        return "", InvalidItem(doc_id, path, f"{exc.problem}; {exc.fix}")
    if not text.strip():
        return "", InvalidItem(doc_id, path, "the document is empty")
    return text, None


def document_testset(
    root: Path,
    refs: Mapping[str, R],
    item: Callable[[str, str, R], TestItem],
    unlisted: str,
    encoding: str | None = None,
) -> TestSet:
    """A test set of documents ``docs/<doc_id>.txt``, one item per reference: ``item(doc_id,
    text, reference)``. A document that cannot be read (in ``encoding``, None: UTF-8) is an
    invalid item (the run goes on without it); one with no reference is a warning saying it
    has ``unlisted``."""
    docs = root / "docs"
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    for doc_id, ref in refs.items():
        text, bad = _read_document(docs, doc_id, encoding)
        if bad is not None:
            invalid.append(bad)
            continue
        items.append(item(doc_id, text, ref))
    warnings = _unlisted_documents(docs, refs, unlisted)
    return TestSet(root, tuple(items), tuple(invalid), warnings)


def _load_textcat(root: Path, task: TaskConfig) -> TestSet:
    from scoring.textcat import read_category_file

    fix = "give gold.tsv: one 'doc_id<TAB>category[,category2]' line per document"
    gold_path = root / "gold.tsv"
    encoding = getattr(task, "encoding", None)
    gold: dict[str, tuple[str, ...]] = _read(
        gold_path, partial(read_category_file, encoding=encoding), fix
    )

    def item(doc_id: str, text: str, categories: tuple[str, ...]) -> TestItem:
        return TestItem(
            id=doc_id, files={}, fields={"text": text}, reference=categories, units=_chars(text)
        )

    return document_testset(root, gold, item, f"no line in {gold_path}; it is not used", encoding)


def _check_categories(output: Mapping[str, Any]) -> str | None:
    from scoring.textcat import MAX_CATEGORIES

    cats = output.get("categories")
    if (
        not isinstance(cats, list)
        or len(cats) > MAX_CATEGORIES
        or not all(isinstance(c, str) and c.strip() and "," not in c for c in cats)
        or len(set(cats)) != len(cats)
    ):
        return (
            'output needs "categories": at most two distinct category names, best first, '
            'e.g. {"categories": ["sports", "economy"]} ([] for no answer)'
        )
    return None


def _categories(
    testset: TestSet, outputs: Outputs
) -> tuple[dict[str, Any], dict[str, tuple[str, ...]]]:
    gold = {item.id: item.reference for item in testset.items}
    pred = {
        item.id: tuple(str(c).strip() for c in answer["categories"])
        for item in testset.items
        if (answer := _answer(outputs, item.id))
    }
    return gold, pred


def _score_textcat(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    from scoring.textcat import score_textcat

    gold, pred = _categories(testset, outputs)
    # Classifying time: the run's own per-item seconds, failed items included.
    total = math.fsum(seconds.get(k, 0.0) for k in gold)
    return score_textcat(gold, pred, seconds=total).to_dict()


def _textcat_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each document's (expert categories, system categories or None): macro-F1 is made of
    per-category counts that each document adds to."""
    gold, pred = _categories(testset, outputs)
    return {doc: (expert, pred.get(doc)) for doc, expert in gold.items()}


def _textcat_aggregate(task: TaskConfig, docs: Sequence[Any]) -> float | None:
    from scoring.textcat import score_textcat

    if not docs:
        return None
    # Numbered: a resample may hold a document twice, and each copy counts.
    gold = {str(n): expert for n, (expert, _) in enumerate(docs)}
    pred = {str(n): system for n, (_, system) in enumerate(docs) if system is not None}
    return score_textcat(gold, pred).macro_f1


# --------------------------------------------------------------------------- ir


@dataclass(frozen=True)
class IrReference:
    """One topic's judgements: docno -> relevance."""

    judgements: Mapping[str, int]


def _ir_options() -> type[KindOptions]:
    from typing import Literal

    from harness.kinds.options import KindOptions

    class IrOptions(KindOptions):
        """ir: where the relevance judgements come from, and the organizer's collection."""

        # "file": the test set's qrels; "judging": pooled from the runs and judged at the
        # venue (`onsite judge RUN --test relevance`, docs/judging.md).
        qrels: Literal["file", "judging"] = "file"
        # The organizer's copy of the collection (<docno>.txt files, relative to the site
        # file), shown to relevance assessors; never sent to a system.
        collection: str | None = None

    return IrOptions


def _load_ir(root: Path, task: TaskConfig) -> TestSet:
    from scoring.ir import read_qrels, read_topics

    topics_fix = "give topics: TREC-style <top> <num> <title> <desc> <narr> </top> blocks"
    qrels_fix = "give qrels: one 'topic iter docno relevance' line per judgement"
    topics_path = root / "topics"
    qrels_path = root / "qrels"
    encoding = getattr(task, "encoding", None)
    topics: list[Topic] = _read(topics_path, lambda p: read_topics(p, encoding)[0], topics_fix)
    if getattr(task, "qrels", "file") == "judging":
        # Judged after the run from the pooled results: every topic is sent, and the
        # run's relevance panel supplies the judgements (harness/judge/qrels.py).
        return TestSet(
            root,
            tuple(
                TestItem(
                    id=t.num,
                    files={},
                    fields={"query": t.title, "description": t.desc, "narrative": t.narr},
                    reference=IrReference({}),
                    units=1.0,
                )
                for t in topics
            ),
        )
    qrels: dict[str, dict[str, int]] = _read(
        qrels_path, partial(read_qrels, encoding=encoding), qrels_fix
    )
    warnings = [
        f"{topics_path}:{t.line}: topic {t.num} has no judgements in {qrels_path}; not sent"
        for t in topics
        if t.num not in qrels
    ]
    numbers = {t.num for t in topics}
    warnings += [
        f"{qrels_path}: topic {n} is not in {topics_path}; its judgements are not used"
        for n in qrels
        if n not in numbers
    ]
    items = [
        TestItem(
            id=t.num,
            files={},
            fields={"query": t.title, "description": t.desc, "narrative": t.narr},
            reference=IrReference(qrels[t.num]),
            units=1.0,
        )
        for t in topics
        if t.num in qrels
    ]
    if not items:
        raise TestSetError(
            [Problem(qrels_path, "", f"no topic of {topics_path} is judged", qrels_fix)]
        )
    return TestSet(root, tuple(items), warnings=tuple(warnings))


def _check_results(output: Mapping[str, Any]) -> str | None:
    results = output.get("results")
    problem = (
        'output needs "results": [["docno", score], ...], e.g. [["CWT-0001", 12.5]] '
        f"(at most {MAX_RESULTS}; ranked by score)"
    )
    if not isinstance(results, list) or len(results) > MAX_RESULTS:
        return problem
    seen: set[str] = set()
    for pair in results:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not pair[0]
            or not isinstance(pair[1], int | float)
            or isinstance(pair[1], bool)
            or not math.isfinite(pair[1])
        ):
            return problem
        if pair[0] in seen:
            return f"document {pair[0]!r} is listed twice; give each document once"
        seen.add(pair[0])
    return None


def _ir_inputs(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], dict[str, Any]]:
    # A topic without judgements (qrels = "judging", not judged yet) is not scored, as a
    # topic missing from a qrels file is not.
    qrels = {i.id: i.reference.judgements for i in testset.items if i.reference.judgements}
    run = {
        item.id: {str(d): float(s) for d, s in answer["results"]}
        for item in testset.items
        if (answer := _answer(outputs, item.id))
    }
    return qrels, run


def _score_ir(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.ir import score_ir

    qrels, run = _ir_inputs(testset, outputs)
    if not qrels:
        # qrels = "judging" before any judgement: nothing to score yet.
        return {"map": None, "rprec": None, "p10": None, "averaged_over": 0}
    # complete: a topic with no answer counts 0 (trec_eval -c) rather than dropping out.
    report = score_ir(qrels, run, complete=True, max_docs=MAX_RESULTS)
    return report.to_dict()


def _ir_items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each topic's average precision (0 unanswered): MAP is their mean."""
    from scoring.ir import score_ir

    qrels, run = _ir_inputs(testset, outputs)
    if not qrels:
        return {}
    ap = {
        t.topic: t.ap for t in score_ir(qrels, run, complete=True, max_docs=MAX_RESULTS).per_topic
    }
    return {topic: ap.get(topic, 0.0) for topic in qrels}


def _ir_aggregate(task: TaskConfig, aps: Sequence[float]) -> float | None:
    # As trec_eval -c averages: over every topic, an exact sum.
    return math.fsum(aps) / len(aps) if aps else None


def _ir_vector(task: TaskConfig, ap: float) -> Mapping[Hashable, float]:
    return {"ap": ap, "topics": 1}


def _ir_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float | None:
    # A float sum: equal to the fsum of the aggregate within rounding (1e-12 relative),
    # not to the bit (tests/test_additive_statistics.py).
    topics = int(sums.get("topics", 0))
    return float(sums.get("ap", 0.0)) / topics if topics else None


# --------------------------------------------------------------------------- onsite score


def _mt_metrics(text: str) -> tuple[str, ...]:
    """``--metrics``: comma-separated MT metric names, or ``all``."""
    from scoring.mt_batch import METRICS

    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return METRICS
    unknown = [n for n in names if n not in METRICS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {', '.join(unknown) or repr(text)}; give some of "
            f"{','.join(METRICS)} separated by commas, or all"
        )
    return tuple(dict.fromkeys(names))


def _score_mt_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.cwmt_xml import load_mt_file, require_mirror
    from scoring.mt_batch import METRICS
    from scoring.mt_files import score_mt_files

    refuse_outputs_file(args.hyp, "mt")
    encoding = getattr(args, "encoding", None)
    if args.src:
        source = load_mt_file(args.src, "source", encoding)
        target = load_mt_file(args.hyp, "target", encoding)
        require_mirror(source, target)
    # The table shows system and document figures: segments only go to --json.
    return score_mt_files(
        Path(args.hyp),
        [Path(r) for r in args.ref],
        lang=args.lang,
        metrics=args.metrics or METRICS,
        with_segments=args.json,
        encoding=encoding,
        mteval=args.mteval_entities,
    )


def _score_mt_check(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.mt_check import check_results

    return check_results(args.src, args.hyp, getattr(args, "encoding", None)).to_dict()


def _score_mt_human(args: argparse.Namespace) -> dict[str, Any]:
    from harness.kinds._panel_files import hyp_encoding
    from scoring.mt_human import score_human

    return score_human(args.hyp, hyp_encoding(args)).to_dict()


def _score_mt_align(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.word_alignment import score_alignment_files

    return score_alignment_files(args.hyp, args.ref, getattr(args, "encoding", None))


def _score_cws_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.cws import score_cws_files

    return score_cws_files(
        args.gold,
        args.test,
        args.words,
        accepted=args.accepted,
        encoding=getattr(args, "encoding", None) or "utf-8",
        lcs=args.lcs,
        script_quirks=args.sighan_quirks,
    )


def _score_ner_file(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ner import score_ner_file

    return score_ner_file(
        args.conll,
        getattr(args, "encoding", None) or "utf-8",
        conlleval=getattr(args, "conlleval", False),
    )


def _score_pos_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.pos import score_pos_files

    encoding = getattr(args, "encoding", None) or "utf-8"
    if getattr(args, "accepted", None):
        # The pos-review panel's export (docs/judging.md): accepted tags count as correct.
        from scoring.pos_review import score_pos_review_files

        return score_pos_review_files(
            args.gold, args.test, args.accepted, args.train, encoding=encoding
        )
    return score_pos_files(args.gold, args.test, args.train, encoding=encoding)


def _score_textcat_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.textcat import score_textcat_files

    return score_textcat_files(
        args.gold, args.pred, seconds=args.seconds, encoding=getattr(args, "encoding", None)
    )


def _score_ir_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ir import score_ir_files

    return score_ir_files(
        args.qrels, args.run, complete=args.complete, encoding=getattr(args, "encoding", None)
    )


MT_FAMILY = ScoreFamily(
    _score_mt_files,
    "translation: BLEU and NIST (mteval-v13a), BLEU shortest-ref, GTM, mWER, mPER",
    (
        arg("--hyp", required=True, help="system output: CWMT XML or one segment per line"),
        arg(
            "--ref",
            required=True,
            action="append",
            help="a reference file; repeat for more (any number, as mteval)",
        ),
        arg(
            "--lang",
            choices=("en", "zh", "ja"),
            default="en",
            help="target language: zh/ja score characters by the CWMT rule (full-width "
            "forms to ASCII, each CJK character a token); en tokenises as mteval-v13a, "
            "which tokenises every language as English",
        ),
        arg("--src", help="the source XML: the output must mirror its docs and segments"),
        arg(
            "--mteval-entities",
            nargs="?",
            const="sgml",
            choices=("sgml", "xml"),
            help="read XML text as mteval-v13a does instead of decoding it once: sgml (the "
            "value when none is given) as it reads a file not named *.xml, keeping "
            "&apos;, &#N; and CDATA as written; xml as it reads *.xml (XML::Twig), "
            "decoding &amp;amp; and &amp;quot; twice",
        ),
        arg(
            "--metrics",
            type=_mt_metrics,
            help="comma-separated, from bleu,nist,gtm,mwer,mper,bleu_shortest; "
            "default all (the CWMT/HTRDP metrics with public definitions: ICT and "
            "Woodpecker are absent); e.g. --metrics bleu computes BLEU alone",
        ),
        ENCODING_ARG,
    ),
    tables=("documents",),
)
MT_CHECK_FAMILY = ScoreFamily(
    _score_mt_check,
    "CWMT submissions: mirror the source, system description, file naming rule",
    (
        arg("--src", required=True, help="the source XML"),
        arg("--hyp", required=True, nargs="+", help="one or more result files"),
        ENCODING_ARG,
    ),
    tables=("problems",),
)
_MT_FAMILIES = {
    "mt": MT_FAMILY,
    "mt-check": MT_CHECK_FAMILY,
    "mt-human": ScoreFamily(
        _score_mt_human,
        "adequacy and fluency (0-5) from several judges' sheets, averaged per system",
        (
            arg("--hyp", required=True, nargs="+", help="judges' sheets (CSV or JSON lines)"),
            ENCODING_ARG,
        ),
        tables=("systems",),
        panel="mt-adequacy-fluency",
    ),
    "mt-align": ScoreFamily(
        _score_mt_align,
        "word alignment: precision, recall, F1, AER with sure and possible links",
        (
            arg("--ref", required=True, help="gold links: i-j sure, i-j-p possible"),
            arg("--hyp", required=True, help="system links: i-j"),
            ENCODING_ARG,
        ),
    ),
}


# --------------------------------------------------------------------------- --run and export


def mt_run_args(metrics: tuple[str, ...] | None) -> Callable[[JobData, Path], dict[str, Any]]:
    """`onsite score mt --run`: the CWMT target and reference files, the set's language,
    and the metrics the kind's live scorer reports (None: all)."""

    def args(job: JobData, directory: Path) -> dict[str, Any]:
        lang = str(job.testset.items[0].reference.lang) if job.testset.items else "en"
        return {
            "hyp": write_file(job, directory, write_cwmt_xml, "hyp.xml", False),
            "ref": [write_file(job, directory, write_cwmt_xml, "ref.xml", True)],
            "lang": lang,
            "src": None,
            "metrics": metrics,
        }

    return args


def mt_check_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    """`onsite score mt-check --run`: a source written from the test set, and the target
    saved under the CWMT naming rule (task-site-primary-system.xml, task = the set's id)."""
    from scoring.cwmt_xml import load_mt_file, result_file_name

    source = directory / "source.xml"
    source.write_text(write_cwmt_source(job), encoding="utf-8")
    hyp = Path(write_file(job, directory, write_cwmt_xml, "hyp.xml", False))
    written = load_mt_file(hyp, "target")
    named = directory / result_file_name(
        written.setid or job.task, job.system, job.system, written.srclang, written.tgtlang
    )
    hyp.rename(named)
    return {"src": str(source), "hyp": [str(named)]}


def _cws_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    words = job.testset.setup_files.get("words")
    return {
        "gold": write_file(job, directory, write_sighan, "gold.txt", True),
        "test": write_file(job, directory, write_sighan, "test.txt", False),
        "words": str(words) if words else None,
        "accepted": None,
    }


def write_sighan_tagged(job: JobData, references: bool) -> str:
    """POS: the sighan lines with `word/TAG` tokens (an unanswered sentence is empty)."""
    out = []
    for item in job.testset.items:
        tokens = (
            list(item.reference.tokens) if references else parse_tagged(job.text(item.id)) or []
        )
        out.append(" ".join(f"{w}/{t}" for w, t in tokens) + "\n")
    return "".join(out)


def _pos_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    train = job.testset.setup_files.get("train")
    return {
        "gold": write_file(job, directory, write_sighan_tagged, "gold.pos", True),
        "test": write_file(job, directory, write_sighan_tagged, "test.pos", False),
        "train": str(train) if train else None,
    }


def _ner_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    return {"conll": write_file(job, directory, write_conll, "conlleval.txt", True)}


def _textcat_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    return {
        "gold": write_file(job, directory, write_tsv, "gold.tsv", True),
        "pred": write_file(job, directory, write_tsv, "pred.tsv", False),
        "seconds": job.run_seconds,
    }


def _ir_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    # complete: an unanswered topic scores 0 (trec_eval -c), as live.
    return {
        "qrels": write_file(job, directory, write_trec, "qrels", True),
        "run": write_file(job, directory, write_trec, "run", False),
        "complete": True,
    }


# --------------------------------------------------------------------------- registry

WORDS_PER_SECOND = SpeedUnit("words_per_second", "word/s", "source words / s")
KCHARS_PER_SECOND = SpeedUnit("kchars_per_second", "kchar/s", "thousand characters / s", "{:.2f}")
TOKENS_PER_SECOND = SpeedUnit("tokens_per_second", "token/s", "tokens / s")
DOCS_PER_SECOND = SpeedUnit("docs_per_second", "doc/s", "documents / s")
MS_PER_QUERY = SpeedUnit("ms_per_query", "ms/query", "ms / query")

KINDS = (
    TaskKind(
        name="mt",
        text_encodings=True,
        summary="machine translation: a source segment in, its translation out",
        max_output_bytes=4 << 20,
        load=_load_mt,
        check_output=_check_mt,
        score=_score_mt,
        metric=lambda task: "bleu",
        metric_labels={"bleu": "BLEU"},
        statistics=BLEU_STATISTICS,
        unit=WORDS_PER_SECOND,
        speed=_per_second(_source_words),
        detail=lambda s: (
            f"NIST {s['nist']:.2f}, mWER {pct(s.get('mwer'))}"
            if isinstance(s.get("nist"), int | float)
            else ""
        ),
        writers={"cwmt-xml": write_cwmt_xml},
        readers={"cwmt-xml": read_cwmt_xml, "plain": read_mt_lines},
        score_families=_MT_FAMILIES,
        from_run={
            "mt": FromRun(mt_run_args(None)),
            # A checker: its verdict ("ok"), no live figure.
            "mt-check": FromRun(mt_check_run_args, same_as={}),
        },
    ),
    TaskKind(
        name="cws",
        text_encodings=True,
        summary="Chinese word segmentation: a sentence in, words separated by spaces out",
        max_output_bytes=4 << 20,
        load=_load_cws,
        check_output=_check_segmented,
        score=_score_cws,
        metric=lambda task: "f",
        metric_labels={"f": "F"},
        statistics=ItemStatistics(
            _cws_items, _cws_aggregate, pooled_additive(_cws_zero, lambda total: total.f)
        ),
        unit=KCHARS_PER_SECOND,
        speed=_per_second(lambda item: _chars(str(item.fields["text"])), scale=1000.0),
        detail=lambda s: (
            f"P {pct(s.get('precision'))} R {pct(s.get('recall'))}"
            + (f", OOV recall {pct(s['oov_recall'])}" if s.get("oov_recall") is not None else "")
        ),
        writers={"sighan": write_sighan},
        readers={"sighan": read_sighan},
        score_families={
            "cws": ScoreFamily(
                _score_cws_files,
                "word segmentation, SIGHAN bakeoff `score` conventions",
                (
                    arg(
                        "--gold",
                        required=True,
                        help="reference segmentation, words split by spaces",
                    ),
                    arg("--test", required=True, help="system segmentation"),
                    arg("--words", help="the training word list, for OOV and IV figures"),
                    arg("--accepted", help="judged review file: pieces accepted as correct"),
                    arg(
                        "--lcs",
                        action="store_true",
                        help="match a true longest common subsequence instead of GNU diff's "
                        "choice (the script's numbers are the default)",
                    ),
                    arg(
                        "--sighan-quirks",
                        action="store_true",
                        help="also reproduce the script's slips: an empty word before a leading "
                        "U+3000, `chop` of a word list's last byte when it lacks a final newline, "
                        "a UTF-8 BOM kept as part of the first word",
                    ),
                    ENCODING_ARG,
                ),
            )
        },
        from_run={"cws": FromRun(_cws_run_args)},
    ),
    TaskKind(
        name="ner",
        text_encodings=True,
        summary="named entities: tokens in, one BIOES tag per token out",
        max_output_bytes=4 << 20,
        load=_load_ner,
        check_output=_check_tags,
        score=_score_ner,
        metric=lambda task: "f1",
        metric_labels={"f1": "F1"},
        statistics=ItemStatistics(
            _ner_items, _ner_aggregate, pooled_additive(_ner_zero, lambda total: total.f1)
        ),
        unit=TOKENS_PER_SECOND,
        speed=_per_second(lambda item: float(len(item.fields["tokens"]))),
        detail=lambda s: f"P {pct(s.get('precision'))} R {pct(s.get('recall'))}",
        check_item=check_ner_length,
        writers={"conll": write_conll},
        readers={"conll": read_conll_tags},
        score_families={
            "ner": ScoreFamily(
                _score_ner_file,
                "named entities, conlleval conventions",
                (
                    arg("--conll", required=True, help="token ... gold-tag predicted-tag per line"),
                    arg(
                        "--conlleval",
                        action="store_true",
                        help="chunk as conlleval.pl does, whatever the tags (it reads S-X S-X "
                        "and E-X B-X as one chunk); the default reads IOBES as seqeval",
                    ),
                    ENCODING_ARG,
                ),
            )
        },
        # P, R and F1 are the live ones; token accuracy is not (docs/formats.md, conll).
        from_run={
            "ner": FromRun(_ner_run_args, same_as={k: k for k in ("f1", "precision", "recall")})
        },
    ),
    TaskKind(
        name="pos",
        text_encodings=True,
        summary="part-of-speech tagging: a sentence in, word/TAG tokens out",
        max_output_bytes=4 << 20,
        load=_load_pos,
        check_output=_check_pos,
        score=_score_pos,
        # Systems segment the text themselves, so F (not accuracy) is the fair figure.
        metric=lambda task: "f",
        metric_labels={"f": "F"},
        statistics=ItemStatistics(
            _pos_items, _pos_aggregate, pooled_additive(_pos_zero, lambda total: total.f)
        ),
        unit=KCHARS_PER_SECOND,
        speed=_per_second(lambda item: _chars(str(item.fields["text"])), scale=1000.0),
        detail=lambda s: (
            f"accuracy {pct(s.get('accuracy'))}, rel. precision {pct(s.get('relative_precision'))}"
        ),
        writers={"sighan": write_sighan_tagged},
        score_families={
            "pos": ScoreFamily(
                _score_pos_files,
                "POS tagging: HTRDP P/R/F and relative precision; SIGHAN accuracy, IV/OOV, "
                "baseline",
                (
                    arg("--gold", required=True, help="reference, word/TAG tokens"),
                    arg("--test", required=True, help="system output, word/TAG tokens"),
                    arg("--train", help="training data (word/TAG), for IV/OOV and the baseline"),
                    arg(
                        "--accepted",
                        help="judged tag review file (onsite judge --test pos-review --export): "
                        "accepted tags count as correct, figures before the review also shown",
                    ),
                    ENCODING_ARG,
                ),
            )
        },
        from_run={"pos": FromRun(_pos_run_args)},
    ),
    TaskKind(
        name="textcat",
        text_encodings=True,
        summary="text categorization: a document in, its categories out",
        max_output_bytes=64 << 10,
        load=_load_textcat,
        check_output=_check_categories,
        score=_score_textcat,
        metric=lambda task: "macro_f1",
        metric_labels={"macro_f1": "macro-F1"},
        statistics=ItemStatistics(_textcat_items, _textcat_aggregate),
        unit=DOCS_PER_SECOND,
        speed=_per_second(lambda item: 1.0),
        detail=lambda s: (
            f"micro F1 {pct(s.get('micro_f1'))}, general {pct(s.get('general_score_rate'))}"
        ),
        writers={"tsv": write_tsv},
        score_families={
            "textcat": ScoreFamily(
                _score_textcat_files,
                "text categorization: per category P/R/F1, macro and micro, HTRDP general score",
                (
                    arg("--gold", required=True, help="doc_id<TAB>category[,category2]"),
                    arg("--pred", required=True, help="doc_id<TAB>category[,category2] (ranked)"),
                    arg("--seconds", type=float, help="classifying time, from the run"),
                    ENCODING_ARG,
                ),
            )
        },
        from_run={"textcat": FromRun(_textcat_run_args)},
    ),
    TaskKind(
        name="ir",
        text_encodings=True,
        summary="retrieval: a query in, ranked documents out",
        max_output_bytes=8 << 20,
        load=_load_ir,
        options_model=_ir_options,
        check_output=_check_results,
        score=_score_ir,
        metric=lambda task: "map",
        metric_labels={"map": "MAP"},
        statistics=ItemStatistics(
            _ir_items, _ir_aggregate, AdditiveStatistics(_ir_vector, _ir_headline)
        ),
        unit=MS_PER_QUERY,
        speed=_ms_per_item,
        detail=lambda s: f"P@10 {pct(s.get('p10'))}, R-prec {pct(s.get('rprec'))}",
        writers={"trec": write_trec},
        readers={"trec": read_trec_run},
        score_families={
            "ir": ScoreFamily(
                _score_ir_files,
                "retrieval: MAP, R-precision, P@10 with trec_eval's conventions",
                (
                    arg("--qrels", required=True, help="TREC qrels: topic 0 docno relevance"),
                    arg(
                        "--run",
                        required=True,
                        help="TREC run: topic Q0 docno rank score tag; or an onsite run "
                        "directory (with --task, --system), read without --qrels",
                    ),
                    arg("--complete", action="store_true", help="like trec_eval -c"),
                    ENCODING_ARG,
                ),
            )
        },
        from_run={"ir": FromRun(_ir_run_args)},
    ),
)
