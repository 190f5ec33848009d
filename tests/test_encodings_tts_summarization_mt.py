"""The listening-test, summarization, ROUGE, CESTA, MT human and alignment families, and
the tts and summarization kinds, in the corpora's encodings (issue 30).

Each family's files written in GBK, Big5 and UTF-16LE score, with ``--encoding``, to
the figures of the same files in UTF-8; a file that is not in the encoding named (or
UTF-8, when none is) is refused with the file, the line and the encoding to name.
ROUGE-1.5.5's own fixtures read through a GBK copy give ROUGE-1.5.5's figures; a live
tts and a live summarization run on a GBK test set give the UTF-8 run's figures.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import leaderboard, load_site
from harness.judge.material import load_material
from harness.kinds import task_kind
from scoring.rouge import score_rouge_files
from tests.helpers import REPO, onsite, read_outputs, run_site, write_site
from tests.test_encodings import SIMPLIFIED, TRADITIONAL
from tests.test_rouge_155 import HYP, METRICS, REF, as_printed, rouge_155

# (a file's flag, its name, its text)
Files = list[tuple[str, str, str]]
# (family, its files from a list of Chinese words, its other arguments)
Family = tuple[str, Callable[[list[str]], Files], list[str]]

# (--encoding, the codec that writes the files, the texts the words come from)
ENCODED = [
    ("gbk", "gbk", SIMPLIFIED),
    ("big5", "big5", TRADITIONAL),
    ("utf-16le", "utf-16-le", SIMPLIFIED),
]


def _words(lines: list[str]) -> list[str]:
    """Two-character words of the texts (no punctuation, no ASCII): 24 of them."""
    chars = [c for line in lines for c in line if "\u4e00" <= c <= "\u9fff"]
    return ["".join(chars[k : k + 2]) for k in range(0, 48, 2)]


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# --------------------------------------------------------------------------- the families


def _mos(w: list[str]) -> Files:
    rows = [
        {"system": w[s], "listener": w[4 + k], "sentence": w[10 + n], "score": 1 + (s + k + n) % 5}
        for s in range(2)
        for k in range(3)
        for n in range(3)
    ]
    return [("--hyp", "mos.jsonl", _jsonl(rows))]


def _pair(w: list[str]) -> Files:
    rows = [
        {
            "listener": w[4 + k],
            "sentence": w[10 + n],
            "first": w[n % 2],
            "second": w[1 - n % 2],
            "score": (k + 2 * n) % 5 - 2,
        }
        for k in range(4)
        for n in range(4)
    ]
    return [("--hyp", "pair.jsonl", _jsonl(rows))]


def _sus(w: list[str]) -> Files:
    rows = [
        {
            "system": w[s],
            "listener": w[4 + k],
            "sentence": w[10 + n],
            "expected": [w[12 + n], w[16 + n]],
            "answer": [w[12 + n] if (s + k) % 2 else w[20], None if n == 1 else w[16 + n]],
        }
        for s in range(2)
        for k in range(2)
        for n in range(3)
    ]
    return [("--hyp", "sus.jsonl", _jsonl(rows))]


def _experts(w: list[str]) -> Files:
    lines = [
        f"{task}\t{w[s]}\t{w[10 + d]}\t{w[4 + e]}\t{(s + d + e) % (6 if task == 'summary' else 4)}"
        for task in ("summary", "keywords")
        for s in range(2)
        for d in range(3)
        for e in range(2)
    ]
    return [("--hyp", "experts.tsv", "".join(f"{line}\n" for line in lines))]


def _summaries(w: list[str]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    refs = [{"id": f"d{d}", "text": "".join(w[d : d + 6])} for d in range(4)]
    refs += [{"id": f"d{d}", "text": "".join(w[d + 2 : d + 9])} for d in range(2)]
    hyps = [{"id": f"d{d}", "text": "".join(w[d + 1 : d + 5]) + w[20 + d]} for d in range(4)]
    return refs, hyps


def _rouge(w: list[str]) -> Files:
    refs, hyps = _summaries(w)
    return [("--hyp", "hyp.jsonl", _jsonl(hyps)), ("--ref", "ref.jsonl", _jsonl(refs))]


def _cesta_rank(w: list[str]) -> Files:
    rankings = "".join(
        f"{''.join(w[k::4])}\t{order}\n"
        for k, order in enumerate(["4 [1 2] 6 [3 5]", "1 2 [3 4] 5 6"])
    )
    scores = "".join(f"{i}\t{0.1 * i * (-1) ** i:.2f}\n" for i in range(1, 7))
    return [("--rankings", "rankings.tsv", rankings), ("--scores", "scores.tsv", scores)]


def _human_csv(w: list[str]) -> Files:
    header = "judge,system,doc_id,seg_id,adequacy,fluency\n"
    rows = "".join(
        f"{w[4 + j]},{w[s]},{w[10]},{g},{(j + s + g) % 6},{(j + 2 * s + g) % 6}\n"
        for j in range(2)
        for s in range(2)
        for g in range(1, 4)
    )
    sheet = [
        {
            "judge": w[6],
            "system": w[s],
            "doc_id": w[10],
            "seg_id": str(g),
            "adequacy": (s + g) % 6,
            "fluency": 5 - (s + g) % 6,
        }
        for s in range(2)
        for g in range(1, 4)
    ]
    return [("--hyp", "sheet.csv", header + rows), ("--hyp", "sheet.jsonl", _jsonl(sheet))]


def _align(w: list[str]) -> Files:
    # Links are ASCII: only UTF-16 changes their bytes.
    gold = "0-0 1-1 2-3-p 3?2\n0-1 1-0 2-2\n\n4-4 0-0-p\n"
    system = "0-0 1-2 2-3\n0-1 1-1\n0-0\n4-4 0-0\n"
    return [("--ref", "gold.txt", gold), ("--hyp", "system.txt", system)]


FAMILIES: list[Family] = [
    ("tts-mos", _mos, []),
    ("tts-pair", _pair, []),
    ("tts-sus", _sus, []),
    ("summarization", _experts, []),
    ("rouge", _rouge, ["--lang", "zh", "--details"]),
    ("cesta", _rouge, ["--lang", "zh", "--details"]),
    ("cesta-rank", _cesta_rank, []),
    ("mt-human", _human_csv, []),
    ("mt-align", _align, []),
]
# The families whose files hold Chinese (mt-align's hold digits and dashes only).
CHINESE = [f for f in FAMILIES if f[0] != "mt-align"]


def _args(tmp: Path, family: Family, codec: str, lines: list[str]) -> list[str]:
    name, files, extra = family
    folder = tmp / f"{name}-{codec}"
    folder.mkdir(exist_ok=True)
    args: list[str] = []
    for flag, file, text in files(_words(lines)):
        path = folder / file
        path.write_bytes(text.encode(codec))
        args += [flag, str(path)]
    # mt-human takes its sheets as one --hyp list.
    if name == "mt-human":
        sheets = [a for k, a in enumerate(args) if k % 2]
        args = ["--hyp", *sheets]
    return args + extra


def _score(*args: str) -> dict[str, Any]:
    done = onsite("score", *args, "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("family", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_encoding_scores_to_the_utf8_figures(tmp_path: Path, family: Family) -> None:
    name = family[0]
    for encoding, codec, lines in ENCODED:
        plain = _score(name, *_args(tmp_path, family, "utf-8", lines))
        read = _score(name, *_args(tmp_path, family, codec, lines), "--encoding", encoding)
        assert read == plain, (name, encoding)
    # The figures are figures, not a file read to nothing.
    text = json.dumps(plain, ensure_ascii=False)
    assert re.search(r"\d\.\d", text), plain
    if name != "mt-align":
        assert _words(SIMPLIFIED)[0] in text or name in ("rouge", "cesta", "cesta-rank")


def _first_path(args: list[str]) -> list[str]:
    return [a for a in args if a.startswith("/")]


@pytest.mark.parametrize("family", CHINESE, ids=[f[0] for f in CHINESE])
@pytest.mark.parametrize(
    ("codec", "lines", "named", "wrong"),
    [
        ("gbk", SIMPLIFIED, "gbk", None),
        ("big5", TRADITIONAL, "big5", None),
        ("utf-16-le", SIMPLIFIED, "utf-16le", None),
        ("gbk", SIMPLIFIED, "gbk", "utf-16le"),
        ("utf-16-le", SIMPLIFIED, "utf-16le", "gbk"),
        ("big5", TRADITIONAL, "big5", "utf-16le"),
        ("gbk", SIMPLIFIED, "gbk", "big5"),
        ("big5", TRADITIONAL, "big5", "gbk"),
    ],
    ids=["gbk-as-utf8", "big5-as-utf8", "utf16le-as-utf8", "gbk-as-utf16le", "utf16le-as-gbk",
         "big5-as-utf16le", "gbk-as-big5", "big5-as-gbk"],
)  # fmt: skip
def test_a_wrong_encoding_names_file_line_and_the_encoding_to_use(
    tmp_path: Path, family: Family, codec: str, lines: list[str], named: str, wrong: str | None
) -> None:
    name = family[0]
    args = _args(tmp_path, family, codec, lines)
    done = onsite("score", name, *args, *(["--encoding", wrong] if wrong else []))
    assert done.returncode == 2, done.stdout
    paths = _first_path(args)
    assert any(re.search(rf"error: {re.escape(p)}:\d+: ", done.stderr) for p in paths), done.stderr
    assert f"reads as {named}" in done.stderr, done.stderr
    assert f"`--encoding {named}`" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "LATIN1" not in done.stderr


def test_mt_align_in_utf16_without_encoding_and_ascii_named_utf16(tmp_path: Path) -> None:
    family = FAMILIES[-1]
    args = _args(tmp_path, family, "utf-16-le", SIMPLIFIED)
    done = onsite("score", "mt-align", *args)
    assert done.returncode == 2
    assert re.search(r"error: \S+system\.txt:1: NUL bytes .* it reads as utf-16le", done.stderr)
    assert "`--encoding utf-16le`" in done.stderr
    args = _args(tmp_path, family, "utf-8", SIMPLIFIED)
    done = onsite("score", "mt-align", *args, "--encoding", "utf-16le")
    assert done.returncode == 2
    assert re.search(r"error: \S+\.txt:1: not utf-16le: the file has no NUL byte", done.stderr)


def test_every_family_takes_encoding() -> None:
    for name in (
        "mt-human", "mt-align", "tts-pair", "tts-sus", "tts-mos", "tts-plan", "summarization",
        "rouge", "cesta", "cesta-rank",
    ):  # fmt: skip
        done = onsite("score", name, "--help")
        assert done.returncode == 0 and "--encoding" in done.stdout, name
        assert "gbk" in done.stdout and "big5" in done.stdout and "utf-16le" in done.stdout


# --------------------------------------------------------------------------- tts-plan


def test_tts_plan_reads_a_gbk_sentence_list_and_writes_the_plan_in_gbk(tmp_path: Path) -> None:
    for encoding, codec, lines in ENCODED:
        w = _words(lines)
        ids = "".join(f"{w[k]}{k}\n" for k in range(4))
        plain = tmp_path / f"sentences-{codec}-utf8.txt"
        plain.write_text(ids, encoding="utf-8")
        coded = tmp_path / f"sentences-{codec}.txt"
        coded.write_bytes(ids.encode(codec))
        common = ["--systems", w[20], w[21], "--listeners", "3", "--seed", "7"]
        want = onsite("score", "tts-plan", "--sentences", str(plain), *common)
        assert want.returncode == 0, want.stderr
        assert f'"sentence": "{w[0]}0"' in want.stdout
        # The plan is written in the encoding named: filled in, it reads back with it.
        filled = tmp_path / f"filled-{codec}.jsonl"
        data = onsite_bytes("score", "tts-plan", "--sentences", str(coded), *common,
                            "--encoding", encoding)  # fmt: skip
        assert data.decode(codec) == want.stdout
        rows = [json.loads(line) for line in want.stdout.splitlines()]
        for k, row in enumerate(rows):
            row["score"] = k % 5 - 2
        filled.write_bytes(_jsonl(rows).encode(codec))
        pair = _score("tts-pair", "--hyp", str(filled), "--encoding", encoding)
        assert pair["judgements"] == len(rows) and {p["system_a"] for p in pair["pairs"]} <= {
            w[20],
            w[21],
        }
    # Without --encoding, the GBK list is refused with the encoding to name.
    done = onsite("score", "tts-plan", "--sentences", str(tmp_path / "sentences-gbk.txt"),
                  "--systems", "a", "b", "--listeners", "2", "--seed", "1")  # fmt: skip
    assert done.returncode == 2
    assert re.search(r"sentences-gbk\.txt:1: not valid UTF-8 .* it reads as gbk", done.stderr)
    assert "`--encoding gbk`" in done.stderr


def onsite_bytes(*args: str) -> bytes:
    """`onsite ARGS`' standard output as bytes (the plan in its encoding)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=REPO, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return done.stdout


# --------------------------------------------------------------------------- ROUGE-1.5.5


def _gbk_copy(source: Path, target: Path) -> Path:
    """``source`` (UTF-8 JSON lines) in GBK: a character GBK lacks (U+2028, accented
    capitals) written as its JSON escape, so every line reads back to the same text."""
    out = []
    for line in source.read_text(encoding="utf-8").split("\n"):  # not at U+2028
        if not line.strip():
            continue
        text = json.dumps(json.loads(line), ensure_ascii=False)
        out.append(
            "".join(c if _in_gbk(c) else json.dumps(c)[1:-1] for c in text)  # "\\u2028"
        )
    target.write_bytes(("\n".join(out) + "\n").encode("gbk"))
    return target


def _in_gbk(char: str) -> bool:
    try:
        char.encode("gbk")
    except UnicodeEncodeError:
        return False
    return True


@pytest.mark.parametrize(
    ("name", "limit"), [("nolimit", None), ("l12", 12)], ids=["no-limit", "l12"]
)
def test_rouge_155_fixtures_read_through_a_gbk_copy(
    tmp_path: Path, name: str, limit: int | None
) -> None:
    hyp, ref = _gbk_copy(HYP, tmp_path / "hyp.jsonl"), _gbk_copy(REF, tmp_path / "ref.jsonl")
    assert hyp.read_bytes() != HYP.read_bytes()  # non-ASCII letters: the bytes differ
    expected, averages = rouge_155(name)
    ours = score_rouge_files(hyp, [ref], length_limit=limit, length_unit="word", encoding="gbk")
    utf8 = score_rouge_files(HYP, [REF], length_limit=limit, length_unit="word")
    assert ours == utf8
    got = {
        (m, d["document"]): as_printed(d[f"{m}_recall"], d[f"{m}_precision"])
        for d in ours["per_document"]
        for m in METRICS.values()
    }
    assert got == expected
    for key, value in averages.items():
        assert ours[key] == pytest.approx(value, abs=2e-3)
    limited = ["--length-limit", str(limit)] if limit else []
    cli = _score("rouge", "--hyp", str(hyp), "--ref", str(ref), "--encoding", "gbk",
                 "--average", "rouge155", *limited)  # fmt: skip
    for key, value in averages.items():
        assert cli[key] == pytest.approx(value, abs=1e-5), key


# --------------------------------------------------------------------------- live kinds

ESPEAK = [sys.executable, "-m", "examples.systems.espeak_tts", "--voice", "cmn"]
LEAD = [sys.executable, "-m", "examples.systems.lead_summarizer"]
DEMO_SUMMARIZATION = REPO / "site_config" / "data" / "demo-summarization"


def tts_set(root: Path, codec: str) -> Path:
    """Four Chinese sentences, one a SUS with two blanks, categories in Chinese."""
    root.mkdir(parents=True)
    texts = SIMPLIFIED[:4]
    (root / "text").write_bytes("".join(f"s{k} {t}\n" for k, t in enumerate(texts)).encode(codec))
    sus = {"id": "s1", "blanks": [0, 3], "answers": [[texts[1][0]], [texts[1][3], "问"]]}
    (root / "sus.jsonl").write_bytes(_jsonl([sus]).encode(codec))
    (root / "categories.tsv").write_bytes("s2\t数字\ns3\t多音字\n".encode(codec))
    return root


def _tts_run(tmp: Path, codec: str, encoding: str | None) -> tuple[Path, Any]:
    root = tts_set(tmp / f"set-{codec}", codec)
    site = write_site(
        tmp / f"{codec}.toml",
        root,
        {"espeak": {"command": ESPEAK, "workdir": str(REPO)}},
        name=codec.replace("-", ""),
        budget={"chars_per_second": 2.0, "hang_seconds": 30.0},
        task="tts",
        task_keys={"kind": "tts", "sample_rates": [16000]}
        | ({"encoding": encoding} if encoding else {}),
        device={"transport": "local", "sandbox": False},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    [row] = leaderboard(load_site(site).run_dir)
    return run_dir, row


def test_a_live_tts_run_on_a_gbk_test_set_gives_the_utf8_figures(tmp_path: Path) -> None:
    plain_dir, plain = _tts_run(tmp_path / "u", "utf-8", None)
    gbk_dir, gbk = _tts_run(tmp_path / "g", "gbk", "gbk")
    assert plain.scores["audio_items"] == 4 and plain.scores["sus_items"] == 1
    assert plain.scores["audio_seconds"] > 0
    assert gbk.scores == plain.scores and gbk.score == plain.score
    rows = read_outputs(gbk_dir, "tts", "espeak")
    assert [r["verdict"] for r in rows] == ["ok"] * 4
    # The judging panel's SUS test shows the Chinese sentence and its blanks.
    material = load_material(gbk_dir, "tts", "sus")
    assert material.items == ("s1",)
    assert material.sus["s1"] == load_material(plain_dir, "tts", "sus").sus["s1"]
    assert material.sus["s1"].tokens == tuple(SIMPLIFIED[1])
    kind = task_kind("tts")
    site = load_site(tmp_path / "g" / "gbk.toml")
    testset = kind.load_testset(site.testset_path("tts"), site.config.tasks["tts"])
    assert [(i.id, i.fields["text"], i.condition) for i in testset.items] == [
        ("s0", SIMPLIFIED[0], None),
        ("s1", SIMPLIFIED[1], None),
        ("s2", SIMPLIFIED[2], "数字"),
        ("s3", SIMPLIFIED[3], "多音字"),
    ]


def test_a_tts_set_in_gbk_without_the_key_names_the_encoding(tmp_path: Path) -> None:
    root = tts_set(tmp_path / "set", "gbk")
    site = load_site(
        write_site(
            tmp_path / "site.toml",
            root,
            {"espeak": {"command": ESPEAK}},
            task="tts",
            task_keys={"kind": "tts", "sample_rates": [16000]},
        )
    )
    with pytest.raises(Exception, match=r"text.*reads as gbk\W+(Fix: )?read it with `--encoding"):
        task_kind("tts").load_testset(site.testset_path("tts"), site.config.tasks["tts"])


def _summarization_set(root: Path, codec: str) -> Path:
    shutil.copytree(DEMO_SUMMARIZATION, root)
    for path in [*root.iterdir(), *(root / "docs").iterdir()]:
        if path.is_file() and path.name != "README.md":
            path.write_bytes(path.read_text(encoding="utf-8").encode(codec))
    return root


def _summarization_run(tmp: Path, codec: str, encoding: str | None) -> Any:
    root = _summarization_set(tmp / f"set-{codec}", codec)
    site = write_site(
        tmp / f"{codec}.toml",
        root,
        {"lead": {"command": LEAD, "workdir": str(REPO)}},
        name=codec.replace("-", ""),
        task="summ",
        task_keys={"kind": "summarization", "length_limit": 50}
        | ({"encoding": encoding} if encoding else {}),
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    _, results = run_site(site)
    assert [r.failed for r in results] == [None]
    [row] = leaderboard(load_site(site).run_dir)
    return row


@pytest.mark.parametrize(("encoding", "codec"), [("gbk", "gbk"), ("utf-16le", "utf-16-le")])
def test_a_live_summarization_run_on_a_gbk_test_set_gives_the_utf8_figures(
    tmp_path: Path, encoding: str, codec: str
) -> None:
    plain = _summarization_run(tmp_path / "u", "utf-8", None)
    read = _summarization_run(tmp_path / "g", codec, encoding)
    assert 0 < plain.score < 1 and plain.scores["documents"] == 10
    assert read.scores == plain.scores and read.score == plain.score


def test_a_summarization_set_in_gbk_without_the_key_names_the_encoding(tmp_path: Path) -> None:
    root = _summarization_set(tmp_path / "set", "gbk")
    kind = task_kind("summarization")
    with pytest.raises(Exception, match=r"reads as gbk\W+(Fix: )?read it with `--encoding gbk`"):
        kind.load(root, None)


def test_a_plan_written_in_gbk_ends_quietly_on_a_closed_pipe() -> None:
    import subprocess

    command = [sys.executable, "-m", "harness.cli", "score", "tts-plan", "--systems", "甲", "乙"]
    command += ["--sentences", "20", "--listeners", "60", "--seed", "1", "--encoding", "gbk"]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(100)
    proc.stdout.close()  # as `head -c 100` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""
    assert first.startswith(b'{"listener": "L01"') and "甲".encode("gbk") in first


@pytest.mark.parametrize(
    ("kind", "family"),
    [("tts", "tts-mos"), ("tts", "tts-sus"), ("tts", "tts-pair"), ("summarization",
     "summarization"), ("mt", "mt-human")],
)  # fmt: skip
def test_encoding_with_the_judging_panel_is_refused(tmp_path: Path, kind: str, family: str) -> None:
    import argparse

    # The panel's records are onsite's own UTF-8 files: a name given there is a mistake.
    scorer = task_kind(kind).score_families[family].scorer
    args = argparse.Namespace(
        hyp=str(tmp_path / "panel.jsonl"), run=str(tmp_path), task="t", encoding="gbk",
        confidence=0.95, clip=False, unit="listener",
    )  # fmt: skip
    with pytest.raises(ValueError, match="--encoding goes with --hyp files"):
        scorer(args)
