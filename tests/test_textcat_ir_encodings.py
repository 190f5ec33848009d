"""Text categorization and retrieval files in the encodings the HTRDP corpora use.

`onsite score textcat|ir --encoding E` (and a textcat or ir task's ``encoding``) read
GB2312/GBK, GB18030, Big5, UTF-16 (with a BOM), UTF-16LE and UTF-8 with or without a BOM
to the UTF-8 file's figures; for retrieval those equal pytrec_eval's (trec_eval) on the
UTF-8 file. A file not in the encoding named is refused with the file, the line and the
encoding it reads as.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import TestSetError
from harness.kinds.registry import task_kind
from scoring.charsets import codec_of
from scoring.errors import FormatError
from scoring.ir import score_ir_files
from scoring.textcat import score_textcat_files
from tests.helpers import REPO, onsite

# (the name given to --encoding, the codec that writes the file, traditional characters)
ENCODINGS = [
    ("utf-8", "utf-8", False),
    ("utf-8", "utf-8-sig", False),
    ("gbk", "gbk", False),
    ("gb2312", "gb2312", False),
    ("gb18030", "gb18030", False),
    ("big5", "big5", True),
    ("utf-16", "utf-16", False),
    ("utf-16le", "utf-16-le", True),
]
IDS = [f"{name}-{codec}" for name, codec, _ in ENCODINGS]

SIMPLIFIED = {"sports": "体育", "economy": "经济", "tech": "科技", "doc": "新闻"}
TRADITIONAL = {"sports": "體育", "economy": "經濟", "tech": "科技", "doc": "新聞"}


def _write(path: Path, lines: list[str], codec: str) -> Path:
    path.write_bytes(("\n".join(lines) + "\n").encode(codec))
    return path


def _textcat_lines(words: dict[str, str]) -> tuple[list[str], list[str]]:
    cats = [words["sports"], words["economy"], words["tech"]]
    gold = [f"{words['doc']}{k}\t{cats[k % 3]}" for k in range(12)]
    gold[4] += f",{cats[0]}"
    pred = [f"{words['doc']}{k}\t{cats[(k * k) % 3]},{cats[(k + 1) % 3]}" for k in range(12)]
    pred[7] = f"{words['doc']}7\t"
    return ["# 评测 gold", *gold], pred


@pytest.mark.parametrize(("name", "codec", "traditional"), ENCODINGS, ids=IDS)
def test_textcat_in_an_encoding_scores_as_utf8(
    tmp_path: Path, name: str, codec: str, traditional: bool
) -> None:
    gold, pred = _textcat_lines(TRADITIONAL if traditional else SIMPLIFIED)
    if codec == "big5":
        gold[0] = "# 評測 gold"
    want = score_textcat_files(
        _write(tmp_path / "gold.utf8", gold, "utf-8"), _write(tmp_path / "pred.utf8", pred, "utf-8")
    )
    got = score_textcat_files(
        _write(tmp_path / "gold.tsv", gold, codec),
        _write(tmp_path / "pred.tsv", pred, codec),
        encoding=name,
    )
    assert got == want
    assert want["macro_f1"] > 0 and want["documents"] == 12


def _run_lines(docs: list[str], tag: str) -> list[str]:
    lines = []
    for topic in ("001", "002", "010"):
        for rank, doc in enumerate(docs):
            # Ties (equal scores) are ordered by docno, Chinese ones included.
            score = 10 - (rank // 2)
            lines.append(f"{topic} Q0 {doc} {rank + 1} {score} {tag}")
    return lines


def _ir_files(words: dict[str, str]) -> tuple[list[str], list[str]]:
    docs = [f"CWT-{k:04d}" for k in range(8)] + [f"{words['doc']}-{k}" for k in range(4)]
    qrels = []
    for t, topic in enumerate(("001", "002", "010")):
        for k, doc in enumerate(docs):
            if (k + t) % 3 == 0:
                qrels.append(f"{topic} 0 {doc} {1 if (k + t) % 2 else 0}")
            elif (k * t) % 5 == 1:
                qrels.append(f"{topic} 0 {doc} 1")
    return qrels, _run_lines(list(reversed(docs)), f"{words['doc']}{words['tech']}")


def _pytrec(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text("utf-8").splitlines():
        topic, _, doc, rel = line.split()
        qrels.setdefault(topic, {})[doc] = int(rel)
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text("utf-8").splitlines():
        topic, _, doc, _, score, _ = line.split()
        run.setdefault(topic, {})[doc] = float(score)
    return pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "P_10"}).evaluate(run)


@pytest.mark.parametrize(("name", "codec", "traditional"), ENCODINGS, ids=IDS)
def test_ir_in_an_encoding_scores_as_trec_eval_on_the_utf8_file(
    tmp_path: Path, name: str, codec: str, traditional: bool
) -> None:
    qrels, run = _ir_files(TRADITIONAL if traditional else SIMPLIFIED)
    utf8_qrels = _write(tmp_path / "qrels.utf8", qrels, "utf-8")
    utf8_run = _write(tmp_path / "run.utf8", run, "utf-8")
    want = _pytrec(utf8_qrels, utf8_run)
    got = score_ir_files(
        _write(tmp_path / "qrels", qrels, codec),
        _write(tmp_path / "run", run, codec),
        encoding=name,
    )
    assert got == score_ir_files(utf8_qrels, utf8_run)
    assert set(got["per_topic"]) == set(want)
    for topic, figures in want.items():
        mine = got["per_topic"][topic]
        assert mine["ap"] == pytest.approx(figures["map"], abs=1e-12)
        assert mine["rprec"] == pytest.approx(figures["Rprec"], abs=1e-12)
        assert mine["p10"] == pytest.approx(figures["P_10"], abs=1e-12)
    assert got["map"] == pytest.approx(sum(f["map"] for f in want.values()) / len(want))


def test_score_textcat_and_ir_take_encoding_on_the_command_line(tmp_path: Path) -> None:
    gold, pred = _textcat_lines(TRADITIONAL)
    gold[0] = "# 評測"
    args = ["--gold", str(_write(tmp_path / "gold.tsv", gold, "big5"))]
    args += ["--pred", str(_write(tmp_path / "pred.tsv", pred, "big5"))]
    done = onsite("score", "textcat", *args, "--encoding", "big5", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"] == 12
    qrels, run = _ir_files(SIMPLIFIED)
    args = ["--qrels", str(_write(tmp_path / "qrels", qrels, "utf-16-le"))]
    args += ["--run", str(_write(tmp_path / "run", run, "utf-16-le"))]
    done = onsite("score", "ir", *args, "--encoding", "utf-16le", "--json")
    assert done.returncode == 0, done.stderr
    plain = score_ir_files(
        _write(tmp_path / "q8", qrels, "utf-8"), _write(tmp_path / "r8", run, "utf-8")
    )
    assert json.loads(done.stdout)["map"] == pytest.approx(plain["map"], abs=1e-12)
    # Without --encoding, the UTF-16LE run is refused with the encoding to name.
    done = onsite("score", "ir", *args)
    assert done.returncode == 2
    assert "it reads as utf-16le" in done.stderr and "`--encoding utf-16le`" in done.stderr


def test_a_wrongly_named_encoding_names_file_line_and_the_right_one(tmp_path: Path) -> None:
    # 人民 (GBK C8CB C3F1) is no Big5: C8CB lies in a range Big5 leaves unassigned.
    gold, pred = _textcat_lines(SIMPLIFIED | {"economy": "人民"})
    gold_path = _write(tmp_path / "gold.tsv", gold, "gbk")
    pred_path = _write(tmp_path / "pred.tsv", pred, "gbk")
    with pytest.raises(FormatError) as exc:
        score_textcat_files(gold_path, pred_path, encoding="big5")
    assert exc.value.path == str(gold_path) and exc.value.line is not None
    assert "not valid big5" in exc.value.problem and "it reads as gbk" in exc.value.problem
    assert "`--encoding gbk`" in exc.value.fix
    qrels, run = _ir_files(TRADITIONAL)
    qrels_path = _write(tmp_path / "qrels", qrels, "utf-8")
    run_path = _write(tmp_path / "run", run, "big5")
    with pytest.raises(FormatError) as exc:
        score_ir_files(qrels_path, run_path)
    assert exc.value.path == str(run_path) and exc.value.line == 1
    assert "not valid UTF-8" in exc.value.problem and "it reads as big5" in exc.value.problem
    assert "`--encoding big5`" in exc.value.fix
    # UTF-16 named for a file in an 8-bit encoding (it would decode, to nonsense).
    with pytest.raises(FormatError) as exc:
        score_ir_files(qrels_path, run_path, encoding="utf-16le")
    assert exc.value.path == str(qrels_path) and exc.value.line == 1
    assert "not utf-16le: the file has no NUL byte" in exc.value.problem
    assert "`--encoding utf-8`" in exc.value.fix
    with pytest.raises(FormatError, match=r"gold\.tsv:1: not utf-16: .*`--encoding gbk`"):
        score_textcat_files(gold_path, pred_path, encoding="utf-16")


def _chinese_demo(tmp_path: Path, kind: str, traditional: bool) -> Path:
    """The demo's test set with Chinese text in every file (so the encoding matters)."""
    words = TRADITIONAL if traditional else SIMPLIFIED
    root = Path(shutil.copytree(REPO / "site_config" / "data" / "demo-text" / kind, tmp_path / "u"))
    for path in [*root.iterdir(), *(root / "docs").glob("*.txt")]:
        if not path.is_file() or path.name == "README.md":
            continue
        text = path.read_text("utf-8")
        if path.name == "gold.tsv":
            for english in ("sports", "economy", "tech"):
                text = text.replace(f"\t{english}", f"\t{words[english]}")
        elif path.name == "topics":
            text = text.replace("<title> ", f"<title> {words['doc']} ")
        elif path.suffix == ".txt":
            text += f"{words['economy']}{words['doc']}。\n"
        path.write_text(text, "utf-8")
    return root


@pytest.mark.parametrize(("name", "codec", "traditional"), ENCODINGS, ids=IDS)
@pytest.mark.parametrize("kind", ["textcat", "ir"])
def test_textcat_and_ir_test_sets_in_the_tasks_encoding_load_as_in_utf8(
    tmp_path: Path, kind: str, name: str, codec: str, traditional: bool
) -> None:
    utf8 = _chinese_demo(tmp_path, kind, traditional)
    coded = Path(shutil.copytree(utf8, tmp_path / "coded"))
    for path in [*coded.iterdir(), *(coded / "docs").glob("*.txt")]:
        if path.is_file():
            path.write_bytes(path.read_text("utf-8").encode(codec))
    loader = task_kind(kind).load
    want = loader(utf8, SimpleNamespace(encoding=None))
    got = loader(coded, SimpleNamespace(encoding=name))
    assert [(i.id, i.fields, i.reference) for i in got.items] == [
        (i.id, i.fields, i.reference) for i in want.items
    ]
    assert not got.invalid and got.items
    if codec_of(name) == "utf-8":
        return
    # Read as UTF-8, the file's own encoding is named (ir's topics guess GB by
    # themselves, so its qrels, ASCII, and topics may load: then nothing is wrong).
    if kind == "textcat":
        with pytest.raises(TestSetError, match="`--encoding "):
            loader(coded, SimpleNamespace(encoding=None))


@pytest.mark.parametrize("kind", ["textcat", "ir"])
def test_a_site_file_gives_textcat_and_ir_tasks_an_encoding(tmp_path: Path, kind: str) -> None:
    from harness.site import load_site
    from tests.helpers import FAKE_SERVE, write_site

    root = _chinese_demo(tmp_path, kind, traditional=False)
    for path in [*root.iterdir(), *(root / "docs").glob("*.txt")]:
        if path.is_file():
            path.write_bytes(path.read_text("utf-8").encode("gbk"))
    site_path = write_site(
        tmp_path / "site.toml",
        root,
        {"s": {"command": FAKE_SERVE}},
        task=kind,
        task_keys={"kind": kind, "encoding": "gbk"},
    )
    task = load_site(site_path).config.tasks[kind]
    assert task.encoding == "gbk"
    loaded = task_kind(kind).load(root, task)
    assert loaded.items and not loaded.invalid
    assert any("新闻" in json.dumps(i.fields, ensure_ascii=False) for i in loaded.items)
