"""`--encoding` on `onsite meta`, `onsite compare` (offline) and `onsite combination-set`.

The HTRDP and CWMT corpora were GBK, Big5 and UTF-16LE (issue 30): each command reads
such files with `--encoding` to the figures it gives their UTF-8 copies, and a file read
in the wrong encoding is an error naming the file, the line and the encoding to name.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from tests.helpers import REPO, onsite, read_outputs, run_site, write_site

# Both texts are in GBK and in Big5 (traditional characters), so every codec holds them.
METRICS = "system,bleu,nist\n系統甲,0.30,7.0\n系統乙,0.25,6.5\n系統丙,0.10,4.0\n系統丁,0.20,6.0\n"
HUMAN = "system\t人工\n系統甲\t3.5\n系統乙\t3.6\n系統丙\t2.0\n系統丁\t3.0\n"
SEGMENTS = "system,segment,bleu\n" + "".join(
    f"系統{s},{k},{(k * 7 + i * 3) % 10 / 10}\n" for i, s in enumerate("甲乙丙") for k in range(12)
)
# Codec names as `--encoding` takes them, and the Python codec that writes the file.
CODECS = {"gbk": "gbk", "big5": "big5", "utf-16le": "utf-16-le", "utf-16": "utf-16"}


def _write(directory: Path, name: str, text: str, codec: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(text.encode(codec))
    return str(directory / name)


def _meta(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["meta", *args, "--json"]) == 0, capsys.readouterr().err
    return dict(json.loads(capsys.readouterr().out))


def _meta_runs(capsys: pytest.CaptureFixture[str], d: Path, codec: str, *enc: str) -> list[Any]:
    """Every `onsite meta` command on the files written in ``codec``."""
    metrics = _write(d, "metrics.csv", METRICS, codec)
    human = _write(d, "human.tsv", HUMAN, codec)
    segments = _write(d, "segments.csv", SEGMENTS, codec)
    return [
        _meta(capsys, "correlate", "--metrics", metrics, "--human", human, *enc),
        _meta(capsys, "profile", "--scores", metrics, "--range", "nist=0:15", *enc),
        _meta(capsys, "cluster", "--scores", metrics, "--clusters", "2", *enc),
        _meta(capsys, "stability", "--segments", segments, "--metric", "bleu", "--sizes", "4,8",
              "--repeats", "5", *enc),
        _meta(capsys, "discriminability", "--segments", segments, "--metric", "bleu",
              "--samples", "200", *enc),
    ]  # fmt: skip


@pytest.mark.parametrize("encoding", list(CODECS))
def test_meta_reads_every_encoding_to_the_utf8_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str
) -> None:
    utf8 = _meta_runs(capsys, tmp_path / "utf8", "utf-8")
    assert utf8[1]["metrics"][0]["metric"] == "bleu"
    assert [r["human"] for r in utf8[0]["correlations"]] == ["人工", "人工"]
    theirs = _meta_runs(capsys, tmp_path / encoding, CODECS[encoding], "--encoding", encoding)
    assert theirs == utf8
    # UTF-8 with a byte-order mark needs no option.
    assert _meta_runs(capsys, tmp_path / "bom", "utf-8-sig") == utf8


@pytest.mark.parametrize(
    ("codec", "named", "expected"),
    [("gbk", None, "gbk"), ("gbk", "big5", "gbk"), ("big5", "gbk", "big5"),
     ("utf-16-le", "gbk", "utf-16le"), ("utf-16-le", None, "utf-16le")],
)  # fmt: skip
def test_meta_in_the_wrong_encoding_names_file_line_and_encoding(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    codec: str,
    named: str | None,
    expected: str,
) -> None:
    # GBK's 人工 (0xc8cb 0xb9a4) is no Big5: GBK bytes that happen to be Big5 pairs would
    # read, garbled, as any double-byte encoding would read them.
    text = METRICS.replace("nist", "人工")
    path = _write(tmp_path, "metrics.csv", text, codec)
    enc = ["--encoding", named] if named else []
    assert main(["meta", "profile", "--scores", path, *enc, "--json"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: " in err
    assert re.search(rf"not (valid )?{named or 'UTF-8'}\b", err), err
    assert f"`--encoding {expected}`" in err


def _trn(words: list[str]) -> str:
    return "".join(f"{w} (spk{k % 3}_{k:02d})\n" for k, w in enumerate(words))


@pytest.mark.parametrize("encoding", ["gbk", "big5", "utf-16le"])
def test_compare_and_meta_files_read_every_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str
) -> None:
    ref = ["你好 世界", "我們 喜歡 北京", "他 在 上海", "北京 很 大"] * 6
    a = ["你好 世界", "我們 喜歡 北", "他 在 上海", "北京 大"] * 6
    b = ["你 世界", "我們 喜歡 北京", "他 上海", "北京 很 大 了"] * 6
    runs = []
    for codec, enc in (("utf-8", []), (CODECS[encoding], ["--encoding", encoding])):
        d = tmp_path / codec
        texts = {"ref": ref, "a": a, "b": b}
        files = [_write(d, f"{n}.trn", _trn(t), codec) for n, t in texts.items()]
        mt = [_write(d, f"{n}.txt", "\n".join(t) + "\n", codec) for n, t in texts.items()]
        tests = ["--test", "bootstrap", "mcnemar", "--samples", "200"]
        hyps = ["--hyp", files[1], "--hyp", files[2]]
        proc = onsite("compare", "asr", "--ref", files[0], *hyps, *tests, *enc, "--json")
        assert proc.returncode == 0, proc.stderr
        asr = json.loads(proc.stdout)
        disc = _meta(capsys, "discriminability", "--ref", mt[0], "--hyp", mt[1], "--hyp", mt[2],
                     "--lang", "zh", "--samples", "200", *enc)  # fmt: skip
        # The same figures, the files named without their directory.
        disc = json.loads(json.dumps(disc, ensure_ascii=False).replace(f"{d}/", ""))
        runs.append((asr["systems"], [p["p"] for p in asr["pairs"]], disc))
    assert runs[0][0][0]["score"] > 0
    (utf8_systems, utf8_p, utf8_disc), (systems, p, disc) = runs
    assert p == utf8_p and disc == utf8_disc
    assert [s["score"] for s in systems] == [s["score"] for s in utf8_systems]


# --------------------------------------------------------------------------- combination set

NBEST_MT = [sys.executable, "-m", "examples.systems.nbest_mt"]
SOURCE = "你好世界\n我們喜歡北京\n他在上海\n"
REFERENCE = "hello world\nwe like beijing\nhe is in shanghai\n"


def _mt_run(tmp: Path, codec: str, encoding: str | None) -> Path:
    root = tmp / "set"
    _write(root, "source.txt", SOURCE, codec)
    _write(root, "ref1.txt", REFERENCE, codec)
    _write(root, "lang", "en\n", codec)
    keys: dict[str, Any] = {"kind": "mt", **({"encoding": encoding} if encoding else {})}
    site = write_site(
        tmp / "mt.toml",
        root,
        {"only": {"command": NBEST_MT, "workdir": str(REPO)}},
        task="mt",
        task_keys=keys,
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    return run_dir


def _candidates(directory: Path) -> str:
    return (directory / "candidates" / "sys01.xml").read_text("utf-8")


@pytest.mark.parametrize("encoding", ["gbk", "big5", "utf-16le"])
def test_combination_set_reads_the_sets_encoding(tmp_path: Path, encoding: str) -> None:
    utf8_run = _mt_run(tmp_path / "utf8", "utf-8", None)
    run = _mt_run(tmp_path / encoding, CODECS[encoding], encoding)
    assert [r["output"] for r in read_outputs(run, "mt", "only")] == [
        r["output"] for r in read_outputs(utf8_run, "mt", "only")
    ]
    base = ["combination-set", "--task", "mt", "--seed", "0"]
    done = onsite(*base, str(utf8_run), "-o", str(tmp_path / "c-utf8"))
    assert done.returncode == 0, done.stderr
    # The task's encoding by default; --encoding names it too.
    for out, enc in (("c-task", []), ("c-named", ["--encoding", encoding])):
        done = onsite(*base, str(run), "-o", str(tmp_path / out), *enc)
        assert done.returncode == 0, done.stderr
        assert _candidates(tmp_path / out) == _candidates(tmp_path / "c-utf8")
        # The source and references are copied byte for byte, in their encoding.
        for name in ("source.txt", "ref1.txt", "lang"):
            copied = (tmp_path / out / name).read_bytes()
            assert copied == (tmp_path / encoding / "set" / name).read_bytes()
    # Named wrongly: the file, the line and the encoding to name.
    wrong = "utf-8" if encoding != "utf-8" else "gbk"
    done = onsite(*base, str(run), "-o", str(tmp_path / "c-wrong"), "--encoding", wrong)
    assert done.returncode != 0
    assert re.search(r"/set/source\.txt:\d+: not valid utf-8", done.stderr), done.stderr
    assert f"--encoding {encoding}" in done.stderr, done.stderr
