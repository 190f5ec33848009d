"""The command-line scoring paths: batch MT scoring, MT kernels, streamed TREC files, lazy imports.

`score_mt_batch` must give `score_mt`'s report exactly (floats to the last
bit), the numba kernels `edit_distance` and `gtm_match_size`'s values, the
streamed retrieval scorer what the whole-file one gives, and the CLI must
not load what a command does not use.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scoring.errors import FormatError
from scoring.ir import read_qrels, read_run, score_ir, score_ir_files
from scoring.mt import MtSegment, edit_distance, gtm_match_size, score_mt
from scoring.mt_batch import METRICS, score_mt_batch
from scoring.mt_files import score_mt_files
from tests.helpers import REPO, onsite

WORDS = "the cat sat on a mat 0 0 1 , . dog is Red red 3.14 &amp; x-y e.g. 中文 数据 (".split()


def _text(rng: random.Random, longest: int = 15) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, longest)))


def _segments(rng: random.Random, n_refs: int) -> list[MtSegment]:
    return [
        MtSegment(
            f"doc{rng.randint(0, 3)}", str(i), _text(rng), tuple(_text(rng) for _ in range(n_refs))
        )
        for i in range(rng.randint(1, 25))
    ]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("seed", range(12))
def test_batch_report_equals_score_mt(seed: int, lang: str) -> None:
    rng = random.Random(seed)
    segments = _segments(rng, 1 + seed % 4)
    for exponent in (1.0, 2.0):
        expected = score_mt(segments, lang, exponent).to_dict()
        assert score_mt_batch(segments, lang, exponent).to_dict() == expected


def test_batch_edge_cases() -> None:
    empty = [MtSegment("d", "1", "", ("",)), MtSegment("d", "2", "0 0 x", ("0 x 0 x",))]
    assert score_mt_batch(empty).to_dict() == score_mt(empty).to_dict()
    with pytest.raises(ValueError, match="no segments"):
        score_mt_batch([])
    with pytest.raises(ValueError, match="expected 1"):
        score_mt_batch([MtSegment("d", "1", "a", ("a",)), MtSegment("d", "2", "a", ("a", "b"))])
    with pytest.raises(ValueError, match="unknown MT metric"):
        score_mt_batch(empty, metrics=("blue",))
    with pytest.raises(ValueError, match="no MT metric"):
        score_mt_batch(empty, metrics=())


def test_a_subset_of_metrics_gives_the_same_numbers() -> None:
    segments = _segments(random.Random(7), 2)
    full = score_mt(segments).to_dict()
    for metric in METRICS:
        report = score_mt_batch(segments, metrics=(metric,)).to_dict()
        assert report[metric] == full[metric]


def test_kernels_equal_the_python_definitions() -> None:
    import numpy as np

    from scoring._fast_mt import edit_distances, gtm_weights

    rng = random.Random(3)
    hyps = [[rng.randint(0, 4) for _ in range(rng.randint(0, 12))] for _ in range(60)]
    refs = [[rng.randint(0, 4) for _ in range(rng.randint(0, 12))] for _ in range(60)]
    texts = hyps + refs
    off = np.cumsum([0, *map(len, texts)]).astype(np.int64)
    codes = np.array([t for text in texts for t in text], dtype=np.int32)
    dist = edit_distances(codes, off, len(hyps), 1)[0]
    assert dist.tolist() == [edit_distance(h, r) for h, r in zip(hyps, refs, strict=True)]
    for exponent in (1.0, 2.0, 3.0):
        weights = gtm_weights(codes, off, len(hyps), 1, exponent)[0]
        assert weights.tolist() == [
            gtm_match_size(h, r, exponent) for h, r in zip(hyps, refs, strict=True)
        ]


def test_score_mt_files_metrics_and_segments(tmp_path: Path) -> None:
    hyp = tmp_path / "hyp.txt"
    ref = tmp_path / "ref.txt"
    hyp.write_text("the cat sat on the mat\nit rains in beijing\n")
    ref.write_text("the cat sat on a mat\nit is raining in beijing\n")
    full = score_mt_files(hyp, [ref])
    bleu = score_mt_files(hyp, [ref], metrics=("bleu",), with_segments=False)
    assert bleu["bleu"] == full["bleu"] and bleu["metrics"] == ["bleu"]
    assert "gtm" not in bleu and "nist" not in bleu and "segments" not in bleu
    assert bleu["n_segments"] == 2 and "gtm" not in bleu["documents"][0]
    assert len(full["segments"]) == 2 and "metrics" not in full


def test_cli_metrics_option(tmp_path: Path) -> None:
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("the cat sat on the mat\n")
    args = ("score", "mt", "--hyp", str(hyp), "--ref", str(hyp), "--json")
    proc = onsite(*args, "--metrics", "bleu,mwer")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["bleu"] == 1.0 and out["mwer"] == 0.0 and "gtm" not in out
    assert len(out["segments"]) == 1 and set(out["segments"][0]) >= {"bleu", "mwer"}
    everything = json.loads(onsite(*args, "--metrics", "all").stdout)
    assert set(everything) >= set(METRICS)
    bad = onsite(*args, "--metrics", "bleu,blue")
    assert bad.returncode == 2 and "unknown metric blue" in bad.stderr


def _trec(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(f"{r}\n" for r in rows), encoding="utf-8")
    return path


def test_streamed_run_equals_whole_file_scoring(tmp_path: Path) -> None:
    rng = random.Random(5)
    qrels_rows, run_rows = [], []
    for t in range(30):
        docs = rng.sample(range(200), 60)
        qrels_rows += [f"{t:03d} 0 D{d} {rng.randint(0, 2)}" for d in docs[:30]]
        run_rows += [f"{t:03d} Q0 D{d} {k} {rng.randint(0, 5)} tag" for k, d in enumerate(docs)]
    qrels = _trec(tmp_path / "qrels", qrels_rows)
    grouped = _trec(tmp_path / "run", ["# a comment", *run_rows])
    expected = score_ir(read_qrels(qrels), read_run(grouped)).to_dict()
    assert score_ir_files(qrels, grouped) == expected
    # Topics interleaved: the streamed pass gives up and the whole file is read.
    shuffled = _trec(tmp_path / "shuffled", rng.sample(run_rows, len(run_rows)))
    assert score_ir_files(qrels, shuffled) == expected
    # Small chunks: topics straddle chunk boundaries.
    import scoring.ir

    old = scoring.ir._CHUNK_BYTES
    scoring.ir._CHUNK_BYTES = 100
    try:
        assert score_ir_files(qrels, grouped) == expected
    finally:
        scoring.ir._CHUNK_BYTES = old


def _plain_run_text(rng: random.Random) -> str:
    rows = []
    for t in range(12):
        docs = rng.sample(range(100), 40)
        rows += [f"{t:03d} Q0 D{d} {k} {rng.randint(0, 4) / 2} tag" for k, d in enumerate(docs)]
    return "".join(f"{r}\n" for r in rows)


_ODD_RUNS: dict[str, Callable[[str], str]] = {
    "tabs": lambda text: text.replace(" Q0 ", "\tQ0\t"),
    "no final line end": lambda text: text[:-1],
    "two spaces": lambda text: text.replace(" Q0 ", " Q0  ", 1),
    "CRLF": lambda text: text.replace("\n", "\r\n"),
    "leading blank": lambda text: " " + text,
    "blank line": lambda text: text.replace("\n", "\n\n", 1),
    "comment with six fields": lambda text: "# Q0 D1 1 9.0 tag\n" + text,
    "comment further down": lambda text: text.replace("\n", "\n#x Q0 D1 1 9.0 tag\n", 5),
    "hash inside a field": lambda text: text.replace(" tag", " t#g"),
    "5 and 7 columns": lambda text: text.replace(" tag\n", "\n", 1).replace(
        " tag\n", " tag x\n", 1
    ),
    "vertical tab": lambda text: text.replace(" Q0 D", " Q0 D\x0b", 1),
    "file separator": lambda text: text.replace(" Q0 D", " Q0 D\x1c", 1),
    "non-ASCII docno": lambda text: text.replace(" Q0 D", " Q0 D\u00e9", 1),
    "NBSP in a docno": lambda text: text.replace(" Q0 D", " Q0 D\u00a0", 1),
    "duplicate docno": lambda text: text.splitlines(keepends=True)[0] + text,
    "infinite score": lambda text: text.replace(" tag", "1e999 tag", 1),
    "score not a number": lambda text: text.replace(" tag", "x tag", 1),
    "interleaved topics": lambda text: "".join(sorted(text.splitlines(keepends=True), key=len)),
    "empty": lambda text: "",
}


@pytest.mark.parametrize("chunk", [1 << 18, 64, 7])
@pytest.mark.parametrize("odd", ["plain", *_ODD_RUNS])
def test_plain_run_reader_gives_the_str_readers_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str, chunk: int
) -> None:
    import scoring.ir

    rng = random.Random(3)
    qrels = _trec(
        tmp_path / "qrels",
        [f"{t:03d} 0 D{d} {rng.randint(0, 2)}" for t in range(12) for d in range(0, 100, 3)],
    )
    text = _plain_run_text(rng)
    text = _ODD_RUNS[odd](text) if odd in _ODD_RUNS else text
    run = tmp_path / "run"
    run.write_bytes(text.encode("utf-8"))

    def outcome(score: Callable[[], dict[str, Any]]) -> Any:
        try:
            return score()
        except FormatError as exc:
            return (exc.line, str(exc))

    monkeypatch.setattr(scoring.ir, "_CHUNK_BYTES", chunk)
    want = outcome(lambda: score_ir(read_qrels(qrels), read_run(run)).to_dict())
    assert outcome(lambda: score_ir_files(qrels, run)) == want
    if odd in ("plain", "tabs", "no final line end", "hash inside a field"):
        # These take the plain reader; the others go to the line-aware ones.
        plain, _ = scoring.ir._score_plain_run(run, scoring.ir._plain_qrels(qrels), 1)
        assert {t: s.to_dict() for t, s in plain.items()} == want["per_topic"]
    else:
        with pytest.raises(scoring.ir._NotQuick):
            scoring.ir._score_plain_run(run, scoring.ir._plain_qrels(qrels), 1)


_ODD_QRELS: dict[str, Callable[[str], str]] = {
    "plain": lambda text: text,
    "tabs": lambda text: text.replace(" 0 ", "\t0\t"),
    "judgements -1, +2, 10": lambda text: (
        text.replace(" 1\n", " -1\n", 1).replace(" 2\n", " +2\n", 1).replace(" 0\n", " 10\n", 1)
    ),
    "not an integer": lambda text: text.replace(" 1\n", " 1.5\n", 1),
    "three columns": lambda text: text.replace(" 0 D", " D", 1),
    "CRLF": lambda text: text.replace("\n", "\r\n"),
    "comment": lambda text: "# 000 0 D1 1\n" + text,
    "judged twice": lambda text: text.splitlines(keepends=True)[0] + text,
    "non-ASCII docno": lambda text: text.replace(" 0 D", " 0 \u4e2dD", 1),
    "empty": lambda text: "",
}


@pytest.mark.parametrize("odd", _ODD_QRELS)
def test_plain_qrels_reader_gives_read_qrels_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str
) -> None:
    import scoring.ir

    rng = random.Random(4)
    rows = [f"{t:03d} 0 D{d} {rng.randint(0, 2)}" for t in range(12) for d in range(0, 100, 3)]
    qrels = tmp_path / "qrels"
    qrels.write_bytes(_ODD_QRELS[odd]("".join(f"{r}\n" for r in rows)).encode())
    run = tmp_path / "run"
    run.write_text(_plain_run_text(rng), encoding="utf-8")

    def outcome(score: Callable[[], dict[str, Any]]) -> Any:
        try:
            return score()
        except FormatError as exc:
            return (exc.line, str(exc))

    monkeypatch.setattr(scoring.ir, "_CHUNK_BYTES", 50)
    want = outcome(lambda: score_ir(read_qrels(qrels), read_run(run)).to_dict())
    assert outcome(lambda: score_ir_files(qrels, run)) == want
    if odd in ("plain", "tabs", "judgements -1, +2, 10"):
        encoded = {t: {d.encode(): r for d, r in j.items()} for t, j in read_qrels(qrels).items()}
        assert scoring.ir._plain_qrels(qrels) == encoded
    else:
        with pytest.raises(scoring.ir._NotQuick):
            scoring.ir._plain_qrels(qrels)


@pytest.mark.parametrize("distinct", [1, 2, 7, 60, 300, 1000])
def test_trec_order_equals_rank_documents(distinct: int) -> None:
    from scoring.ir import _trec_order, rank_documents

    rng = random.Random(distinct)
    values = [rng.randint(-3, distinct) / 4 for _ in range(1000)] + [0.0, -0.0]
    scores = {f"D{rng.randint(0, 10**6)}".encode(): v for v in values}
    assert _trec_order(scores) == rank_documents(scores)
    assert _trec_order({}) == []


@pytest.mark.parametrize(
    ("rows", "line", "needle"),
    [
        (["1 Q0 a 1 2.0 t", "1 Q0 b 2 1.0 t", "2 Q0 a 1 1.0 t", "1 Q0 a 3 1.0 t"], 4, "twice"),
        (["1 Q0 a 1 2.0 t", "2 Q0 a 1 inf t"], 2, "finite"),
        (["1 Q0 a 1 2.0 t", "2 Q0 a 1 1.0"], 2, "5 columns"),
    ],
)
def test_streamed_run_errors_name_the_line(
    tmp_path: Path, rows: list[str], line: int, needle: str
) -> None:
    qrels = _trec(tmp_path / "qrels", ["1 0 a 1", "2 0 a 1"])
    run = _trec(tmp_path / "run", rows)
    with pytest.raises(FormatError, match=needle) as exc:
        score_ir_files(qrels, run)
    assert exc.value.line == line


_MODULES = """
import sys
from harness.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("numpy", "numba", "matplotlib", "harness.engine.controller", "harness.report", "runners",
         "paramiko", "pydantic", "scoring.asr", "scoring.mt")
print("LOADED:", *(m for m in heavy if m in sys.modules))
"""


def _loaded(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    return set(proc.stdout.rsplit("LOADED:", 1)[1].split())


def test_commands_load_only_what_they_use(tmp_path: Path) -> None:
    assert _loaded("--help") == set()
    # status reads the site file (pydantic) and the journal, and scores the quality so
    # far with the task's own scorer when a job has completions; never the controller,
    # the runners, the report's HTML and plots.
    assert not _loaded("status", str(tmp_path)) & {
        "matplotlib",
        "harness.engine.controller",
        "runners",
        "paramiko",
    }
    assert _loaded("score", "mt", "--help") == set()
    qrels = _trec(tmp_path / "qrels", ["1 0 a 1"])
    run = _trec(tmp_path / "run", ["1 Q0 a 1 1.0 t"])
    assert _loaded("score", "ir", "--qrels", str(qrels), "--run", str(run)) == set()
    hyp = _trec(tmp_path / "hyp", ["a b c"])
    assert _loaded("score", "mt", "--hyp", str(hyp), "--ref", str(hyp), "--metrics", "bleu") == {
        "numpy",
        "scoring.mt",
    }
    trn = _trec(tmp_path / "ref.trn", ["a b c (u1)"])
    # The sclite aligner is numpy (numba's load would cost more than a corpus's alignment),
    # and a corpus smaller than numpy's load is aligned in plain Python.
    assert _loaded("score", "asr", "--ref", str(trn), "--hyp", str(trn)) == {"scoring.asr"}
    big = [" ".join("abcd"[(i * j) % 4] for j in range(30)) + f" (u{i})" for i in range(40)]
    trn_big = _trec(tmp_path / "big.trn", big)
    assert _loaded("score", "asr", "--ref", str(trn_big), "--hyp", str(trn_big)) == {
        "numpy",
        "scoring.asr",
    }


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"a b\nc\n",
        b"a b\r\nc",
        b"\xef\xbb\xbfa\n\xef\xbb\xbfb\n",
        "x\x0by\u2028z\x1c\n\n w \r\r\n".encode(),
        "中文 B-LOC\n".encode(),
    ],
)
def test_streamed_text_lines_equal_the_bytewise_reading(tmp_path: Path, data: bytes) -> None:
    from scoring import asr_formats
    from scoring.cws import _bytewise_lines, _streamed_lines

    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert _streamed_lines(path, "utf-8") == _bytewise_lines(path, "utf-8")
    if data.strip():
        assert asr_formats._streamed_lines(path) == asr_formats._bytewise_lines(path)


@pytest.mark.parametrize(
    "data",
    [
        b"u1 a b\nu2 c\n",
        b"u1 a b\nu2 c",
        b"\xef\xbb\xbfu1 a\nu2 b\n",
        b"u1 a b\r\nu2  c \r\n",
        b"\n  \nu1 a\n\t\n;; comment\n  ;; indented comment\nu2 b ;; not one\n\n",
        b"u1\nu2 a\nu3 \t \n",
        b"u1\tx\ty\n  u2   a  b  \n",
        "u1 \u4e2d\u3000\u6587\nu2 x\x0by\u2028z\x1c w\n".encode(),
        b"u1 a (laughter)\nu2 b\nu3 c\n",
        b"a b (u1)\nc d (u2)\n",
        b"a b (u1)\nu2 c\n",
        b"u1 a\nu1 b\n",
        b"u1 a\nu1 a\n",
        b"a (u1)\nb (u1)\n",
        b"",
        b"\n \n;; only comments\n",
        b"u1 a\nu2 \xff\n",
        b";;x\n",
    ],
)
def test_quick_transcript_reader_equals_the_line_by_line_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    from scoring import asr_formats

    path = tmp_path / "t.txt"
    path.write_bytes(data)

    def read() -> dict[str, str] | str:
        try:
            out = asr_formats.read_transcripts(path)
        except FormatError as exc:
            return f"{exc.line}: {exc}"
        return {"ORDER": " ".join(out), **out}

    quick = read()
    monkeypatch.setattr(asr_formats, "_quick_kaldi", lambda path, encoding=None: None)
    assert quick == read()


def test_undecodable_lines_are_still_named(tmp_path: Path) -> None:
    from scoring.asr_formats import read_transcripts
    from scoring.cws import read_lines

    path = tmp_path / "f.txt"
    path.write_bytes(b"u1 a\nu2 \xff\n")
    for read in (read_lines, read_transcripts):
        with pytest.raises(FormatError, match="(?i)not valid UTF-8") as exc:
            read(path)
        assert exc.value.line == 2


def test_version_is_looked_up_when_asked() -> None:
    import harness

    proc = onsite("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"onsite {harness.__version__}"
    # A submodule import never hides the package's function of the same name.
    import harness.leaderboard  # noqa: F401

    assert callable(harness.leaderboard) and harness.leaderboard.__name__ == "leaderboard"


def test_a_locked_run_is_still_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI imports the run store only when a command fails (`onsite score`
    # never loads it); RunLocked must still be reported, anything else raised.
    import importlib

    # The module, not the function of the same name that harness.cli exports.
    cli = importlib.import_module("harness.cli.main")
    from harness.cli import status
    from harness.store.directory import RunLocked

    def locked(args: Any, console: Any) -> int:
        raise RunLocked("runs/demo: another controller works in this run directory")

    monkeypatch.setattr(status, "cmd_status", locked)
    assert cli.main(["status", "runs/demo"]) == cli.EXIT_FAILED
    assert capsys.readouterr().err == (
        "error: runs/demo: another controller works in this run directory\n"
    )

    def broken(args: Any, console: Any) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(status, "cmd_status", broken)
    with pytest.raises(KeyError, match="a bug"):
        cli.main(["status", "runs/demo"])
