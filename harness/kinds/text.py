"""Task kinds for the text technologies: mt, cws, ner, pos, textcat and ir.

Text items carry no files: their input is plain fields (`{"text": ...}`,
`{"tokens": [...]}`, `{"query": ...}`), sent as the item's `input`. The
scorers are scoring/'s, so a run's numbers equal what `onsite score` gives.
docs/text-task-kinds.md lists each kind's layout, input, output, metric and speed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from scoring.errors import FormatError

from ..errors import Problem, TestSetError
from ..testsets import InvalidItem, TestItem, TestSet
from .base import Outputs, SpeedUnit, TaskConfig, TaskKind, pct
from .nbest import check_nbest

if TYPE_CHECKING:
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


def _mt_lang(root: Path, source: MtFile) -> str:
    from scoring.cws import read_lines

    lang_file = root / "lang"
    if lang_file.is_file():
        lines = [ln.strip() for ln in read_lines(lang_file) if ln.strip()]
        if len(lines) != 1 or len(lines[0].split()) != 1:
            raise TestSetError(
                [Problem(lang_file, "", "expected one language code", 'write e.g. "zh" or "en"')]
            )
        return lines[0].lower()
    return (source.tgtlang or DEFAULT_LANG).lower()


def _mirror(source: MtFile, ref: MtFile, path: Path) -> None:
    from scoring.cwmt_xml import require_mirror

    require_mirror(source, ref)


def _load_mt(root: Path, task: TaskConfig) -> TestSet:
    from scoring.cwmt_xml import load_mt_file

    fix = "give source.txt (one segment per line) or a CWMT source.xml"
    source_path = _one_file(root, ("source.txt", "source.xml"), fix)
    source = _read(source_path, lambda p: load_mt_file(p, "source"), fix)
    ref_paths = sorted(
        p
        for p in root.iterdir()
        if p.is_file() and p.name.startswith("ref") and p.suffix in (".txt", ".xml")
    )
    ref_fix = "give ref1.txt (one reference per source line) or ref*.xml, one to four references"
    references: list[MtFile] = []
    for path in ref_paths:
        ref_file = _read(path, lambda p: load_mt_file(p, "reference"), ref_fix)
        references.extend(ref_file.split_references())
    if not 1 <= len(references) <= MAX_REFERENCES:
        raise TestSetError(
            [Problem(root, "", f"{len(references)} reference sets, expected 1 to 4", ref_fix)]
        )
    lang = _mt_lang(root, source)
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
    # The organizer's bilingual dictionary (closed-track training material): handed to
    # the system in hello, never read by onsite.
    dictionary = root / "dictionary.txt"
    setup = {"dictionary": dictionary} if dictionary.is_file() else {}
    return TestSet(root, tuple(items), setup_files=setup)


def _check_mt(output: Mapping[str, Any]) -> str | None:
    return _string_field(output, "text", '{"text": "the translation"}') or check_nbest(output)


def _score_mt(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.mt import MtSegment, as_sgml_text
    from scoring.mt_batch import score_mt_batch

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
    # score_mt's report, computed for the whole set at once (equal value for value).
    return score_mt_batch(segments, lang).to_dict()


def _source_words(item: TestItem) -> float:
    from scoring import tokenize

    # CJK characters count one each, other runs are whitespace words: no segmenter needed.
    return float(len(tokenize(str(item.fields["text"]), "char", case_sensitive=True, unicode=True)))


# The system-combination kind (combination.py) reads the mt layout and scores with
# the same BLEU at the same speed: these are its names for them.
load_mt_testset = _load_mt
score_mt_outputs = _score_mt
source_words = _source_words


# --------------------------------------------------------------------------- cws


@dataclass(frozen=True)
class Segmented:
    """A gold segmentation line and the training word list (for OOV recall)."""

    words: tuple[str, ...]
    lexicon: frozenset[str] | None


def _load_cws(root: Path, task: TaskConfig) -> TestSet:
    from scoring.cws import read_segmentation, read_word_list

    fix = "give gold.txt: one segmented sentence per line, words separated by spaces"
    gold_path = root / "gold.txt"
    gold = _read(gold_path, read_segmentation, fix)
    words_path = root / "words.txt"
    lexicon: frozenset[str] | None = None
    if words_path.is_file():
        lexicon = _read(words_path, read_word_list, "give one training word per line")
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
    return TestSet(root, tuple(items), setup_files=setup)


def _check_segmented(output: Mapping[str, Any]) -> str | None:
    return _string_field(output, "text", '{"text": "我们 在 北京"} (words separated by spaces)')


def _score_cws(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.cws import score_cws, split_words

    gold = [list(item.reference.words) for item in testset.items]
    test = []
    for item in testset.items:
        answer = _answer(outputs, item.id)
        test.append(split_words(str(answer["text"])) if answer else [])
    lexicon = testset.items[0].reference.lexicon if testset.items else None
    return score_cws(gold, test, lexicon).to_dict()


# --------------------------------------------------------------------------- ner


def _read_gold_conll(path: Path) -> list[tuple[int, list[str], list[str]]]:
    """Sentences of (first line, tokens, gold tags): token first, gold tag last column."""
    from scoring.cws import read_lines
    from scoring.ner import parse_tag

    sentences: list[tuple[int, list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    start = 0
    for number, line in enumerate(read_lines(path), 1):
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
    sentences = _read(gold_path, _read_gold_conll, fix)
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


def _score_ner(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.ner import score_ner

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
    scores = score_ner(gold, cast(list[list[str]], predicted)).to_dict()
    return {**scores, "unanswered": unanswered, "wrong_length": wrong_length}


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
    gold = _read(gold_path, read_tagged, fix)
    train_path = root / "train.pos"
    training = None
    if train_path.is_file():
        sentences = _read(train_path, read_tagged, "give train.pos in the word/TAG format")
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


def _score_pos(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.pos import score_pos

    gold = [list(item.reference.tokens) for item in testset.items]
    test = []
    for item in testset.items:
        answer = _answer(outputs, item.id)
        test.append((parse_tagged(str(answer["text"])) or []) if answer else [])
    training = testset.items[0].reference.training if testset.items else None
    return score_pos(gold, test, training).to_dict()


# --------------------------------------------------------------------------- textcat


def unlisted_documents(docs: Path, listed: Iterable[str], why: str) -> tuple[str, ...]:
    """A warning per file of ``docs`` whose id is not among ``listed`` (it is not sent)."""
    names = {f"{doc_id}.txt" for doc_id in listed}
    found = sorted(docs.iterdir()) if docs.is_dir() else []
    return tuple(f"{p}: document with {why}" for p in found if p.is_file() and p.name not in names)


def read_document(docs: Path, doc_id: str) -> tuple[str, InvalidItem | None]:
    """A test set's document ``docs/<doc_id>.txt`` as text, or why it cannot be an item
    (missing, not UTF-8, empty): the run goes on without it."""
    path = docs / f"{doc_id}.txt"
    if not path.is_file():
        return "", InvalidItem(doc_id, None, f"no document {path}")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 (byte {exc.start}); convert it, e.g. iconv -f GB18030 -t UTF-8"
        return "", InvalidItem(doc_id, path, reason)
    if not text.strip():
        return "", InvalidItem(doc_id, path, "the document is empty")
    return text, None


def _load_textcat(root: Path, task: TaskConfig) -> TestSet:
    from scoring.textcat import read_category_file

    fix = "give gold.tsv: one 'doc_id<TAB>category[,category2]' line per document"
    gold_path = root / "gold.tsv"
    gold: dict[str, tuple[str, ...]] = _read(gold_path, read_category_file, fix)
    docs = root / "docs"
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    for doc_id, categories in gold.items():
        text, bad = read_document(docs, doc_id)
        if bad is not None:
            invalid.append(bad)
            continue
        items.append(
            TestItem(
                id=doc_id, files={}, fields={"text": text}, reference=categories, units=_chars(text)
            )
        )
    warnings = unlisted_documents(docs, gold, f"no line in {gold_path}; it is not used")
    return TestSet(root, tuple(items), tuple(invalid), warnings)


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


def _score_textcat(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    from scoring.textcat import score_textcat

    gold = {item.id: item.reference for item in testset.items}
    pred = {
        item.id: tuple(str(c).strip() for c in answer["categories"])
        for item in testset.items
        if (answer := _answer(outputs, item.id))
    }
    # Classifying time: the run's own per-item seconds, failed items included.
    total = math.fsum(seconds.get(k, 0.0) for k in gold)
    return score_textcat(gold, pred, seconds=total).to_dict()


# --------------------------------------------------------------------------- ir


@dataclass(frozen=True)
class IrReference:
    """One topic's judgements: docno -> relevance."""

    judgements: Mapping[str, int]


def _load_ir(root: Path, task: TaskConfig) -> TestSet:
    from scoring.ir import read_qrels, read_topics

    topics_fix = "give topics: TREC-style <top> <num> <title> <desc> <narr> </top> blocks"
    qrels_fix = "give qrels: one 'topic iter docno relevance' line per judgement"
    topics_path = root / "topics"
    qrels_path = root / "qrels"
    topics: list[Topic] = _read(topics_path, lambda p: read_topics(p)[0], topics_fix)
    qrels: dict[str, dict[str, int]] = _read(qrels_path, read_qrels, qrels_fix)
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


def _score_ir(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    from scoring.ir import score_ir

    qrels = {item.id: item.reference.judgements for item in testset.items}
    run = {
        item.id: {str(d): float(s) for d, s in answer["results"]}
        for item in testset.items
        if (answer := _answer(outputs, item.id))
    }
    # complete: a topic with no answer counts 0 (trec_eval -c) rather than dropping out.
    report = score_ir(qrels, run, complete=True, max_docs=MAX_RESULTS)
    return report.to_dict()


# --------------------------------------------------------------------------- registry

WORDS_PER_SECOND = SpeedUnit("words_per_second", "word/s", "source words / s")
KCHARS_PER_SECOND = SpeedUnit("kchars_per_second", "kchar/s", "thousand characters / s", "{:.2f}")
TOKENS_PER_SECOND = SpeedUnit("tokens_per_second", "token/s", "tokens / s")
DOCS_PER_SECOND = SpeedUnit("docs_per_second", "doc/s", "documents / s")
MS_PER_QUERY = SpeedUnit("ms_per_query", "ms/query", "ms / query")

KINDS = (
    TaskKind(
        name="mt",
        formats=("cwmt-xml", "jsonl"),
        summary="machine translation: a source segment in, its translation out",
        max_output_bytes=4 << 20,
        load=_load_mt,
        check_output=_check_mt,
        score=_score_mt,
        metric=lambda task: "bleu",
        metric_labels={"bleu": "BLEU"},
        unit=WORDS_PER_SECOND,
        speed=_per_second(_source_words),
        detail=lambda s: (
            f"NIST {s['nist']:.2f}, mWER {pct(s.get('mwer'))}"
            if isinstance(s.get("nist"), int | float)
            else ""
        ),
    ),
    TaskKind(
        name="cws",
        formats=("sighan", "jsonl"),
        summary="Chinese word segmentation: a sentence in, words separated by spaces out",
        max_output_bytes=4 << 20,
        load=_load_cws,
        check_output=_check_segmented,
        score=_score_cws,
        metric=lambda task: "f",
        metric_labels={"f": "F"},
        unit=KCHARS_PER_SECOND,
        speed=_per_second(lambda item: _chars(str(item.fields["text"])), scale=1000.0),
        detail=lambda s: (
            f"P {pct(s.get('precision'))} R {pct(s.get('recall'))}"
            + (f", OOV recall {pct(s['oov_recall'])}" if s.get("oov_recall") is not None else "")
        ),
    ),
    TaskKind(
        name="ner",
        formats=("conll", "jsonl"),
        summary="named entities: tokens in, one BIOES tag per token out",
        max_output_bytes=4 << 20,
        load=_load_ner,
        check_output=_check_tags,
        score=_score_ner,
        metric=lambda task: "f1",
        metric_labels={"f1": "F1"},
        unit=TOKENS_PER_SECOND,
        speed=_per_second(lambda item: float(len(item.fields["tokens"]))),
        detail=lambda s: f"P {pct(s.get('precision'))} R {pct(s.get('recall'))}",
        check_item=check_ner_length,
    ),
    TaskKind(
        name="pos",
        formats=("sighan", "jsonl"),
        summary="part-of-speech tagging: a sentence in, word/TAG tokens out",
        max_output_bytes=4 << 20,
        load=_load_pos,
        check_output=_check_pos,
        score=_score_pos,
        # Systems segment the text themselves, so F (not accuracy) is the fair figure.
        metric=lambda task: "f",
        metric_labels={"f": "F"},
        unit=KCHARS_PER_SECOND,
        speed=_per_second(lambda item: _chars(str(item.fields["text"])), scale=1000.0),
        detail=lambda s: (
            f"accuracy {pct(s.get('accuracy'))}, rel. precision {pct(s.get('relative_precision'))}"
        ),
    ),
    TaskKind(
        name="textcat",
        formats=("tsv", "jsonl"),
        summary="text categorization: a document in, its categories out",
        max_output_bytes=64 << 10,
        load=_load_textcat,
        check_output=_check_categories,
        score=_score_textcat,
        metric=lambda task: "macro_f1",
        metric_labels={"macro_f1": "macro-F1"},
        unit=DOCS_PER_SECOND,
        speed=_per_second(lambda item: 1.0),
        detail=lambda s: (
            f"micro F1 {pct(s.get('micro_f1'))}, general {pct(s.get('general_score_rate'))}"
        ),
    ),
    TaskKind(
        name="ir",
        formats=("trec", "jsonl"),
        summary="retrieval: a query in, ranked documents out",
        max_output_bytes=8 << 20,
        load=_load_ir,
        check_output=_check_results,
        score=_score_ir,
        metric=lambda task: "map",
        metric_labels={"map": "MAP"},
        unit=MS_PER_QUERY,
        speed=_ms_per_item,
        detail=lambda s: f"P@10 {pct(s.get('p10'))}, R-prec {pct(s.get('rprec'))}",
    ),
)
