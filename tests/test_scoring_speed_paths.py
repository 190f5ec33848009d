"""Fast paths of BLEU and retrieval scoring against the plain implementations.

`corpus_bleu` tokenises all segments as one string and counts n-grams with
numpy; it must give exactly `score_mt`'s system BLEU. The retrieval readers'
quick path must give what the line-by-line readers give, and fall back to
them (and their messages) on bad input.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from scoring.errors import FormatError
from scoring.ir import _read_qrels_lines, _read_run_lines, read_qrels, read_run
from scoring.mt import MtSegment, _tokenize_all, corpus_bleu, score_mt
from scoring.mt_tokenize import tokenize

# Pieces that exercise every v13a rule, segment edges and the fallbacks.
PIECES = [
    "the", "Cat", "a", ".", ",", "..", ",.", "3.14", "1,000", "5-", "-", "x-\n", "\n", "a.b",
    "&quot;", "&amp;", "&lt;", "&gt;", "&amp", "<skipped>", "don't", "(x)", "$5", "50%", "?!",
    "naïve", "\u3000", "\xa0", "\t", "\x1c", "\x00", "中文", "０１", "", " ", "e.g.", "U.S.",
    "-\n", ".5", "5.", ",5", "~", "{", "`",
]  # fmt: skip


def _text(rng: random.Random, pieces: list[str]) -> str:
    seps = ["", " ", " ", " ", "  "]
    return "".join(rng.choice(pieces) + rng.choice(seps) for _ in range(rng.randint(0, 12)))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("seed", range(30))
def test_batch_tokenisation_matches_per_segment(seed: int, lang: str) -> None:
    rng = random.Random(seed)
    # Half the seeds leave out the characters that force the slow paths.
    pieces = PIECES if seed % 2 else [p for p in PIECES if not set(p) & set("\x00\x1c")]
    texts = [_text(rng, pieces) for _ in range(rng.randint(1, 20))]
    tokens, offsets = _tokenize_all(texts, lang)
    got = [tokens[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    assert got == [tokenize(t, lang) for t in texts]


@pytest.mark.parametrize("seed", range(40))
def test_corpus_bleu_equals_score_mt(seed: int) -> None:
    rng = random.Random(seed)
    words = "the a cat dog sat on mat . , 3.5 U.S. don't (x) 1,000 &amp; 0 is".split()
    n_refs, n_segs = rng.randint(1, 4), rng.randint(1, 30)

    def sent() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 15)))

    hyps = [sent() for _ in range(n_segs)]
    refs = [[sent() for _ in range(n_segs)] for _ in range(n_refs)]
    segs = [MtSegment("d", str(i), h, tuple(r[i] for r in refs)) for i, h in enumerate(hyps)]
    system = score_mt(segs).system
    assert corpus_bleu(hyps, refs) == system.bleu
    assert corpus_bleu(hyps, refs, brevity="shortest", smooth=False) == system.bleu_shortest


def test_corpus_bleu_chinese_and_errors() -> None:
    hyps, refs = ["我们 今天 去 北京。", "ＡＢＣ 公司"], [["我们明天去北京。", "ABC公司"]]
    segs = [MtSegment("d", str(i), h, (refs[0][i],)) for i, h in enumerate(hyps)]
    assert corpus_bleu(hyps, refs, "zh") == score_mt(segs, "zh").system.bleu
    with pytest.raises(ValueError):
        corpus_bleu([], [[]])
    with pytest.raises(ValueError):
        corpus_bleu(["a"], [["a", "b"]])


RUN = "001 Q0 D1 1 2.5 r\n001 Q0 D2 2 2.5 r\n\n# note\n002 Q0 D1 1 -1 r\n  #x\n002 Q0 D3 2 1e3 r\n"
QRELS = "\ufeff001 0 D1 1\n001 0 D2 0\n002 0 D3 2\r\n"


def test_quick_readers_match_line_readers(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text(RUN, encoding="utf-8")
    qrels.write_text(QRELS, encoding="utf-8")
    assert read_run(run) == _read_run_lines(run)
    assert list(read_run(run)) == ["001", "002"]
    assert read_qrels(qrels) == _read_qrels_lines(qrels)


@pytest.mark.parametrize(
    "text",
    [
        "001 Q0 D1 1 2.5 r\n001 Q0 D1 2 2.0 r\n",  # duplicate
        "001 Q0 D1 1 nan r\n",
        "001 Q0 D1 1 inf r\n",
        "001 Q0 D1 1 high r\n",
        "001 Q0 D1 1 2.5\n",
        "# only a comment\n",
    ],
)
def test_bad_runs_get_the_line_reader_message(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError) as quick:
        read_run(path)
    with pytest.raises(FormatError) as lines:
        _read_run_lines(path)
    assert str(quick.value) == str(lines.value)
