"""The kws, kws-det, ocr, faces and command (JSON lines) families in the corpora's encodings.

Issue 30: every reader takes ``--encoding`` (and a task's ``encoding``). Each family's
files written in GBK, Big5 and UTF-16LE (and GB18030, UTF-16 with a BOM, UTF-8 with a
BOM) score, with ``--encoding``, to the figures of the same files in UTF-8; a file
that is not in the encoding named (or UTF-8, when none is) is refused with the file,
the line and the encoding to name. A live task's ``encoding`` reads its test set's
text files (slots.jsonl and keywords.json, truth.jsonl, faces.jsonl, probes.jsonl,
pairs.jsonl) to the same items as UTF-8 ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness import task_kind
from harness.site import load_site
from tests.helpers import FAKE_SERVE, make_testset, onsite, run_site, write_site
from tests.test_encodings import SIMPLIFIED, TRADITIONAL

Rows = list[dict[str, Any]] | str
# (family, its files' rows (or text) from a list of Chinese words, its other arguments)
Family = tuple[str, Callable[[list[str]], tuple[Rows, Rows]], list[str]]


def _words(lines: list[str]) -> list[str]:
    """Two-character words of the texts (no punctuation, no ASCII): 24 of them."""
    chars = [c for line in lines for c in line if "\u4e00" <= c <= "\u9fff"]
    return ["".join(chars[k : k + 2]) for k in range(0, 48, 2)]


def _kws(w: list[str]) -> tuple[Rows, Rows]:
    refs = [
        {"id": f"u{i}", "setting": w[20], "slots": {w[21]: [w[i]], w[22]: [w[i + 1], w[i + 2]]}}
        for i in range(8)
    ]
    hyps = [
        {"id": f"u{i}", "slots": {w[21]: [w[i] if i % 3 else w[19]], w[22]: [w[i + 1], w[i + 2]]}}
        for i in range(7)
    ]
    return refs, hyps


def _detections(w: list[str]) -> tuple[Rows, Rows]:
    rows = [
        {"keyword": w[i % 5], "utterance": f"{w[10 + i % 4]}{i}", "score": 1 - i / 20,
         "is_true": i % 3 != 1}
        for i in range(12)
    ]  # fmt: skip
    return rows, rows


def _ocr(w: list[str]) -> tuple[Rows, Rows]:
    chars = "".join(w[:6])
    truth = [
        {"id": f"s{i}", "char": chars[i % 8], "subsets": [w[10] if i % 2 else w[11]]}
        for i in range(16)
    ]
    outputs = [
        {"id": f"s{i}", "candidates": [chars[(i + i % 3) % 8], chars[i % 8]]} for i in range(15)
    ]
    return truth, outputs


def _face(x: float) -> dict[str, list[float]]:
    return {"left_eye": [x, 30], "right_eye": [x + 20, 30], "mouth": [x + 10, 50]}


def _detect(w: list[str]) -> tuple[Rows, Rows]:
    refs = [
        {"image": f"{w[i]}.png", "subset": w[20 + i % 2], "faces": [_face(30), _face(130)]}
        for i in range(6)
    ]
    # Every image's first face found, the second on every other image.
    boxes = [[[20, 20, 40, 40, 0.9]] + [[120, 20, 40, 40, 0.8]] * (i % 2) for i in range(6)]
    hyps = [{"image": f"{w[i]}.png", "boxes": boxes[i]} for i in range(6)]
    return refs, hyps


def _identify(w: list[str]) -> tuple[Rows, Rows]:
    truth = [
        {"probe": f"{w[i]}.png", "id": w[10 + i % 4], "subset": w[20 + i % 2]} for i in range(8)
    ]
    # Every third probe ranks its identity first, the others second.
    order = [[0, 1, 2, 3], [1, 0, 2, 3], [2, 0, 1, 3]]
    ranked = [
        [[w[10 + (i + k) % 4], 0.9 - n / 10] for n, k in enumerate(order[i % 3])] for i in range(8)
    ]
    candidates = [{"probe": f"{w[i]}.png", "candidates": ranked[i]} for i in range(8)]
    return truth, candidates


def _verify(w: list[str]) -> tuple[Rows, Rows]:
    pairs = [(f"{w[i]}.png", f"{w[i + 8]}.png") for i in range(10)]
    truth = [{"a": a, "b": b, "genuine": i % 2 == 0} for i, (a, b) in enumerate(pairs)]
    scores = [{"a": a, "b": b, "score": (i * 7 % 10) / 10} for i, (a, b) in enumerate(pairs)]
    return truth, scores


def _command(w: list[str]) -> tuple[Rows, Rows]:
    refs = [{"id": f"c{i}", "text": f"{w[i]} {w[i + 1]}"} for i in range(8)]
    hyps = [{"id": f"c{i}", "text": f"{w[i]}{w[i + 1 + i % 3 // 2]}"} for i in range(8)]
    return refs, hyps


def _lid(w: list[str]) -> tuple[Rows, Rows]:
    codes = ["zh", "yue", "en", "zh-Hant"]
    table = "".join(f"{w[i]}{i} {codes[i % 4]}\n" for i in range(10))
    answers = [{"id": f"{w[i]}{i}", "language": codes[i % 4 if i % 3 else 0]} for i in range(9)]
    return table, answers


def _spkv(w: list[str]) -> tuple[Rows, Rows]:
    trials = [(f"{w[i]}-a.wav", f"{w[i + 8]}-b.wav") for i in range(10)]
    truth = [{"enrol": a, "test": b, "target": i % 2 == 0} for i, (a, b) in enumerate(trials)]
    scores = [
        {"enrol": a, "test": b, "score": (i * 7 % 10) - 4.5} for i, (a, b) in enumerate(trials)
    ]
    return truth, scores


FAMILIES: list[Family] = [
    ("kws", _kws, ["--details"]),
    ("kws-det", _detections, ["--n-true", "8", "--n-nontarget", "6"]),
    ("ocr", _ocr, ["--details"]),
    ("faces-detect", _detect, ["--details"]),
    ("faces-identify", _identify, ["--details"]),
    ("faces-verify", _verify, ["--details"]),
    ("command", _command, []),
    ("lid", _lid, []),
    ("spkv", _spkv, ["--details"]),
]
# (the name given to --encoding, the codec that writes the files, the texts)
ENCODED = [
    ("gbk", "gbk", SIMPLIFIED),
    ("big5", "big5", TRADITIONAL),
    ("utf-16le", "utf-16-le", SIMPLIFIED),
    ("gb18030", "gb18030", TRADITIONAL),
    ("utf-16", "utf-16", TRADITIONAL),
    ("utf-8", "utf-8-sig", SIMPLIFIED),
]


def _write(path: Path, rows: Rows, codec: str) -> Path:
    if isinstance(rows, str):
        text = rows
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_bytes(text.encode(codec))
    return path


def _files(tmp: Path, family: Family, codec: str, lines: list[str]) -> list[str]:
    name, rows, extra = family
    ref, hyp = rows(_words(lines))
    ref_path = _write(tmp / f"{name}-ref.{codec}.jsonl", ref, codec)
    hyp_path = _write(tmp / f"{name}-hyp.{codec}.jsonl", hyp, codec)
    given = ["--hyp", str(hyp_path)]
    return given + ([] if name == "kws-det" else ["--ref", str(ref_path)]) + extra


def _score(*args: str) -> dict[str, Any]:
    done = onsite("score", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _headline(name: str, result: dict[str, Any]) -> Any:
    keys = {
        "kws": "slot_rate",
        "kws-det": "eer",
        "ocr": "recognition_rate",
        "faces-detect": "correct_detection_rate",
        "faces-identify": "rank1",
        "faces-verify": "eer",
        "command": "correct_rate",
        "lid": "accuracy",
        "spkv": "eer",
    }
    return result.get(keys[name], result.get("overall", {}).get(keys[name]))


@pytest.mark.parametrize("family", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_encoding_scores_to_the_utf8_figures(tmp_path: Path, family: Family) -> None:
    name = family[0]
    for encoding, codec, lines in ENCODED:
        plain = _score(name, *_files(tmp_path, family, "utf-8", lines))
        headline = _headline(name, plain)
        assert headline not in (0.0, 1.0, None), (name, plain)
        read = _score(name, *_files(tmp_path, family, codec, lines), "--encoding", encoding)
        assert read == plain, (name, encoding)


@pytest.mark.parametrize("family", FAMILIES, ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize(
    ("codec", "lines", "named", "wrong"),
    [
        ("gbk", SIMPLIFIED, "gbk", None),
        ("big5", TRADITIONAL, "big5", None),
        ("utf-16-le", SIMPLIFIED, "utf-16le", None),
        ("gbk", SIMPLIFIED, "gbk", "utf-16le"),
        ("utf-16-le", SIMPLIFIED, "utf-16le", "gbk"),
        ("big5", TRADITIONAL, "big5", "utf-16le"),
    ],
)
def test_a_wrong_encoding_names_file_line_and_the_encoding_to_use(
    tmp_path: Path, family: Family, codec: str, lines: list[str], named: str, wrong: str | None
) -> None:
    name = family[0]
    args = _files(tmp_path, family, codec, lines)
    done = onsite("score", name, *args, *(["--encoding", wrong] if wrong else []))
    assert done.returncode == 2, done.stdout
    # The family reads one of its two files first: that one is named, at the first line
    # that does not decode (GBK's first lines may be valid Big5).
    paths = [args[args.index(flag) + 1] for flag in ("--hyp", "--ref") if flag in args]
    named_line = (re.search(rf"error: {re.escape(p)}:\d+: ", done.stderr) for p in paths)
    assert any(named_line), done.stderr
    assert f"reads as {named}: read it with `--encoding {named}`" in done.stderr.replace(
        f"reads as {named}; read", f"reads as {named}: read"
    ), done.stderr
    assert "Traceback" not in done.stderr and "LATIN1" not in done.stderr


# --------------------------------------------------------------------------- live kinds


def _image(path: Path, width: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((8, width), 128, dtype=np.uint8))


def _kws_set(root: Path, w: list[str], codec: str) -> None:
    make_testset(root, [(f"u{i}", 1600 + 100 * i, "") for i in range(8)])
    (root / "text").unlink()
    _write(root / "slots.jsonl", _kws(w)[0], codec)
    vocabulary = {w[21]: w[:10], w[22]: w[:10]}
    text = json.dumps({"settings": {w[20]: vocabulary}}, ensure_ascii=False)
    (root / "keywords.json").write_bytes(text.encode(codec))


def _ocr_set(root: Path, w: list[str], codec: str) -> None:
    truth = _ocr(w)[0]
    for i, row in enumerate(truth):
        _image(root / f"{row['id']}.png", 50 + i)
    _write(root / "truth.jsonl", truth, codec)


def _detect_set(root: Path, w: list[str], codec: str) -> None:
    refs = _detect(w)[0]
    for i, row in enumerate(refs):
        _image(root / row["image"], 50 + i)
    _write(root / "faces.jsonl", refs, codec)


def _identify_set(root: Path, w: list[str], codec: str) -> None:
    truth = _identify(w)[0]
    for i, row in enumerate(truth):
        _image(root / row["probe"], 50 + i)
        _image(root / "gallery" / f"{row['id']}.png", 20 + i)
    _write(root / "probes.jsonl", truth, codec)


def _verify_set(root: Path, w: list[str], codec: str) -> None:
    truth = _verify(w)[0]
    for i, row in enumerate(truth):
        _image(root / row["a"], 50 + i)
        _image(root / row["b"], 80 + i)
    _write(root / "pairs.jsonl", truth, codec)


def _lid_set(root: Path, w: list[str], codec: str) -> None:
    table = _lid(w)[0]
    assert isinstance(table, str)
    ids = [line.split()[0] for line in table.splitlines()]
    make_testset(root, [(u, 1600 + 100 * i, "") for i, u in enumerate(ids)])
    (root / "text").unlink()
    (root / "lang").write_bytes(table.encode(codec))
    labels = "".join(f"{u}\t{w[20 + i % 2]}\n" for i, u in enumerate(ids))
    (root / "conditions.tsv").write_bytes(labels.encode(codec))


def _spkv_set(root: Path, w: list[str], codec: str) -> None:
    truth = _spkv(w)[0]
    assert not isinstance(truth, str)
    names = sorted({Path(r[k]).stem for r in truth for k in ("enrol", "test")})
    make_testset(root, [(n, 1600 + 100 * i, "") for i, n in enumerate(names)])
    (root / "text").unlink()
    _write(root / "trials.jsonl", truth, codec)


LIVE = [
    ("kws", _kws_set),
    ("ocr", _ocr_set),
    ("face-detect", _detect_set),
    ("face-identify", _identify_set),
    ("face-verify", _verify_set),
    ("lid", _lid_set),
    ("spkv", _spkv_set),
]


def _load(
    tmp: Path, kind: str, build: Callable[..., None], codec: str, encoding: str | None
) -> Any:
    root = tmp / f"set-{codec}"
    build(root, _words(TRADITIONAL if codec == "big5" else SIMPLIFIED), codec)
    keys = {"kind": kind} | ({"encoding": encoding} if encoding else {})
    site = load_site(
        write_site(tmp / f"{codec}.toml", root, {"s": {"command": FAKE_SERVE}}, task_keys=keys)
    )
    return task_kind(kind).load_testset(site.testset_path("asr"), site.config.tasks["asr"])


@pytest.mark.parametrize(("kind", "build"), LIVE, ids=[k for k, _ in LIVE])
def test_a_task_encoding_reads_the_test_set_as_utf8_would(
    tmp_path: Path, kind: str, build: Callable[..., None]
) -> None:
    plain = _load(tmp_path, kind, build, "utf-8", None)
    assert plain.items and not plain.invalid
    for encoding, codec in (("gbk", "gbk"), ("utf-16le", "utf-16-le")):
        read = _load(tmp_path, kind, build, codec, encoding)
        assert [(i.id, i.reference, i.condition) for i in read.items] == [
            (i.id, i.reference, i.condition) for i in plain.items
        ], (kind, encoding)
    with pytest.raises(Exception, match=r"reads as gbk\W+(Fix: )?read it with `--encoding gbk`"):
        _load(tmp_path / "unnamed", kind, build, "gbk", None)


def test_a_kws_task_with_encoding_big5_runs_to_the_utf8_figures(
    tmp_path: Path, plan_env: Any
) -> None:
    w = _words(TRADITIONAL)
    refs, hyps = _kws(w)
    plan = {1600 + 100 * i: {"output": {"slots": h["slots"]}} for i, h in enumerate(hyps)}
    figures = []
    for codec, keys in (("utf-8", {}), ("big5", {"encoding": "big5"})):
        root = tmp_path / f"set-{codec}"
        _kws_set(root, w, codec)
        site = write_site(
            tmp_path / f"{codec}.toml",
            root,
            {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
            name=codec.replace("-", ""),
            task_keys={"kind": "kws", **keys},
        )
        run_dir, results = run_site(site)
        assert [r.failed for r in results] == [None]
        [row] = json.loads(onsite("report", str(run_dir), "--json").stdout)
        figures.append(row["slot_rate"])
    assert figures[0] == figures[1] and 0 < figures[0] < 1
