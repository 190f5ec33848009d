"""Test sets and scoring files in the encodings the HTRDP and CWMT corpora use.

GB2312/GBK and GB18030 (simplified Chinese), Big5 (traditional), UTF-16 (with a BOM, and
UTF-16LE without one) and UTF-8 with or without a BOM: `onsite score mt|asr` and
`onsite compare` read each with `--encoding` to the UTF-8 file's numbers; without it, a
file that is not UTF-8 is refused with the file, the line and the encoding it reads as;
a task's ``encoding`` key reads its test set (every kind takes it:
tests/test_encodings_every_kind.py); `onsite export --encoding` writes CWMT XML that
declares its encoding and reads back.
"""

from __future__ import annotations

import codecs
import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import SiteError, TestSetError
from harness.kinds.registry import task_kind
from harness.site import load_site
from scoring.charsets import codec_of, encode_text, guess_encoding, read_lines
from scoring.errors import FormatError
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, run_site, write_site

SIMPLIFIED = [
    "今天天气很好，我们去公园散步。",
    "这个问题需要进一步研究。",
    "国际会议将于明年在北京举行。",
    "中国政府高度重视科技发展，加大了对基础研究的投入。",
    "据新华社报道，全国经济保持稳定增长，人民生活水平不断提高。",
    "他说：“我们一定要把这项工作做好。”",
    "机器翻译系统的评测结果显示，BLEU 分数提高了 3.5 个百分点。",
    "语音识别技术已经广泛应用于手机和汽车。",
]
TRADITIONAL = [
    "今天天氣很好，我們去公園散步。",
    "這個問題需要進一步研究。",
    "國際會議將於明年在北京舉行。",
    "中國政府高度重視科技發展，加大了對基礎研究的投入。",
    "據新華社報導，全國經濟保持穩定增長，人民生活水準不斷提高。",
    "他說：「我們一定要把這項工作做好。」",
    "機器翻譯系統的評測結果顯示，BLEU 分數提高了 3.5 個百分點。",
    "語音辨識技術已經廣泛應用於手機和汽車。",
]

# (the name given to --encoding, the Python codec that writes the file, its texts)
ENCODED = [
    ("gb2312", "gb2312", SIMPLIFIED),
    ("gbk", "gbk", SIMPLIFIED),
    ("gb18030", "gb18030", SIMPLIFIED),
    ("big5", "big5", TRADITIONAL),
    ("utf-16", "utf-16", TRADITIONAL),
    ("utf-16le", "utf-16-le", SIMPLIFIED),
    ("utf-8", "utf-8-sig", TRADITIONAL),
]


def _system_output(lines: list[str], seed: int = 3) -> list[str]:
    """A plausible system's output: each line with a few characters replaced."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        chars = list(line)
        for _ in range(3):
            chars[rng.randrange(len(chars))] = rng.choice("的一是不了在人有")
        out.append("".join(chars))
    return out


def _write(path: Path, lines: list[str], codec: str) -> Path:
    path.write_bytes(("\n".join(lines) + "\n").encode(codec))
    return path


def _dir(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


def _trn(lines: list[str]) -> list[str]:
    return [f"{' '.join(text)} (spk1-u{k})" for k, text in enumerate(lines)]


def _score(*args: str) -> dict:
    done = onsite("score", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("lines", [SIMPLIFIED, TRADITIONAL])
def test_guess_names_the_encoding_of_each_line_and_of_the_whole_text(lines: list[str]) -> None:
    national = "gbk" if lines is SIMPLIFIED else "big5"
    whole = "\n".join(lines) + "\n"
    assert guess_encoding(whole.encode(national)) == national
    assert guess_encoding(whole.encode("utf-16")) == "utf-16"
    assert guess_encoding(whole.encode("utf-16-le")) == "utf-16le"
    assert guess_encoding(whole.encode("utf-16-be")) == "utf-16be"
    for line in lines:
        assert guess_encoding(line.encode(national)) == national, line
        assert guess_encoding(line.encode("utf-16-le")) == "utf-16le", line


def test_guess_tells_gb18030_from_gbk_and_gives_up_on_what_is_no_chinese() -> None:
    # U+20000 needs GB18030's four-byte form: GBK cannot decode it.
    assert guess_encoding(("abc \U00020000" + SIMPLIFIED[0]).encode("gb18030")) == "gb18030"
    # Traditional characters in GBK are still GBK (Big5 cannot decode them).
    assert guess_encoding("\n".join(TRADITIONAL).encode("gbk")) == "gbk"
    assert guess_encoding("café, résumé et naïveté\n".encode("latin-1")) is None


def test_readers_decode_every_encoding_to_the_same_lines(tmp_path: Path) -> None:
    for name, codec, lines in ENCODED:
        path = _write(tmp_path / name, lines, codec)
        assert read_lines(path, name) == lines, name


def test_utf16_of_ascii_is_refused_though_it_is_valid_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path / "ids.txt", ["u1 hello world", "u2 good morning"], "utf-16-le")
    with pytest.raises(
        FormatError, match=r"NUL bytes.*utf-16le; read it with `--encoding utf-16le`"
    ):
        read_lines(path)


def test_a_writer_names_the_character_its_encoding_lacks(tmp_path: Path) -> None:
    assert encode_text("国", "gb2312", "x") == "国".encode("gb2312")
    with pytest.raises(
        ValueError, match=r"x: line 2: '國' \(U\+570B\) cannot be written in gb2312"
    ):
        encode_text("a\n國", "gb2312", "x")


# --------------------------------------------------------------------------- onsite score


@pytest.mark.parametrize(("name", "codec", "lines"), ENCODED, ids=[e[0] for e in ENCODED])
def test_score_mt_asr_command_with_encoding_give_the_utf8_numbers(
    tmp_path: Path, name: str, codec: str, lines: list[str]
) -> None:
    hyp = _system_output(lines)
    for family, ref_lines, hyp_lines, extra in (
        ("mt", lines, hyp, ["--lang", "zh"]),
        ("asr", _trn(lines), _trn(hyp), ["--unit", "char"]),
        ("command", _trn(lines), _trn([*hyp[:4], *lines[4:]]), []),
    ):
        flag = "--hyp", "--ref"
        # The same names in two directories: a plain file's document is its name.
        utf8 = [
            _write(_dir(tmp_path / "utf8") / f"{family}.{w}", t, "utf-8")
            for w, t in (("hyp", hyp_lines), ("ref", ref_lines))
        ]
        coded = [
            _write(_dir(tmp_path / name) / f"{family}.{w}", t, codec)
            for w, t in (("hyp", hyp_lines), ("ref", ref_lines))
        ]
        plain = _score(family, flag[0], str(utf8[0]), flag[1], str(utf8[1]), *extra)
        read = _score(
            family, flag[0], str(coded[0]), flag[1], str(coded[1]), *extra, "--encoding", name
        )
        for key in ("hyp_file", "ref_files"):
            plain.pop(key, None), read.pop(key, None)
        # sclite keeps a UTF-8 BOM in a trn file's first word: onsite drops it and says so.
        notes = read.pop("warnings", [])
        assert notes == plain.pop("warnings", []) or (
            family == "asr"
            and codec == "utf-8-sig"
            and all("starts with a byte-order mark" in n for n in notes)
        ), notes
        assert read == plain, (family, name)
        headline = plain.get("bleu", plain.get("wer", plain.get("overall", {}).get("correct_rate")))
        assert headline not in (0.0, 1.0, None), (family, plain)


@pytest.mark.parametrize(
    ("codec", "lines", "named"),
    [
        ("big5", TRADITIONAL, "big5"),
        ("gbk", SIMPLIFIED, "gbk"),
        ("utf-16-le", SIMPLIFIED, "utf-16le"),
    ],
)
def test_without_encoding_the_error_names_file_line_and_the_right_encoding(
    tmp_path: Path, codec: str, lines: list[str], named: str
) -> None:
    # The first line is ASCII: the error names line 2, the first that is not UTF-8.
    ref = _write(tmp_path / "ref.txt", ["plain ascii", *lines], codec)
    hyp = _write(tmp_path / "hyp.txt", ["plain ascii", *lines], "utf-8")
    for family, extra in (("mt", ["--lang", "zh"]), ("asr", [])):
        if family == "asr":
            ref = _write(tmp_path / "ref.trn", _trn(["plain ascii", *lines]), codec)
            hyp = _write(tmp_path / "hyp.trn", _trn(["plain ascii", *lines]), "utf-8")
        done = onsite("score", family, "--hyp", str(hyp), "--ref", str(ref), *extra)
        assert done.returncode == 2
        if codec == "utf-16-le":
            # ASCII in UTF-16 is valid UTF-8 with NULs: refused as such, or at the first
            # character that is not.
            assert f"{ref}:" in done.stderr, done.stderr
        else:
            assert f"{ref}:2: not valid UTF-8" in done.stderr, done.stderr
        assert f"it reads as {named}; read it with `--encoding {named}`" in done.stderr
        assert "LATIN1" not in done.stderr


def test_compare_reads_the_files_in_their_encoding(tmp_path: Path) -> None:
    ref = _write(tmp_path / "ref.txt", TRADITIONAL, "big5")
    a = _write(tmp_path / "a.txt", _system_output(TRADITIONAL, 1), "big5")
    b = _write(tmp_path / "b.txt", _system_output(TRADITIONAL, 2), "big5")
    args = ["compare", "mt", "--ref", str(ref), "--hyp", str(a), "--hyp", str(b), "--lang", "zh"]
    refused = onsite(*args)
    assert refused.returncode == 2 and "--encoding big5" in refused.stderr
    done = onsite(*args, "--encoding", "big5", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["pairs"]) == 1


def test_an_unknown_encoding_is_refused_with_the_list(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.txt", ["a"], "utf-8")
    done = onsite("score", "mt", "--hyp", str(path), "--ref", str(path), "--encoding", "ebcdic")
    assert done.returncode == 2
    assert "unknown encoding 'ebcdic'; use one of utf-8, gb2312, gbk" in done.stderr


# --------------------------------------------------------------------------- site file


def _mt_site(tmp_path: Path, name: str, codec: str | None) -> Path:
    """Site ``name``: a zh->zh MT set of plain files in ``codec`` (the task's encoding;
    None: UTF-8, no key) and a fake system answering each source line with
    `_system_output`'s line."""
    root = tmp_path / f"set-{name}"
    root.mkdir()
    source, refs = SIMPLIFIED, SIMPLIFIED
    _write(root / "source.txt", source, codec or "utf-8")
    _write(root / "ref1.txt", refs, codec or "utf-8")
    (root / "lang").write_text("zh\n", "utf-8")
    plan = {s: {"text": h} for s, h in zip(source, _system_output(source), strict=True)}
    keys = {"kind": "mt"} | ({"encoding": codec} if codec else {})
    return write_site(
        tmp_path / f"{name}.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": {"FAKE_PLAN": json.dumps(plan)}}},
        name=name,
        task="mt",
        task_keys=keys,
    )


def test_a_task_with_encoding_gbk_runs_and_exports_cwmt_xml_in_gbk(tmp_path: Path) -> None:
    utf8_run, _ = run_site(_mt_site(tmp_path, "plain", None))
    gbk_run, results = run_site(_mt_site(tmp_path, "gbk", "gbk"))
    assert [r.failed for r in results] == [None]
    [plain] = json.loads(onsite("report", str(utf8_run), "--json").stdout)
    [coded] = json.loads(onsite("report", str(gbk_run), "--json").stdout)
    assert coded["bleu"] == plain["bleu"] and 0 < plain["bleu"] < 1

    # The task's encoding is the export's default; --encoding overrides it.
    files = {}
    for what, extra in (("hyp", []), ("ref", ["--references"])):
        path = tmp_path / f"{what}.xml"
        done = onsite("export", str(gbk_run), "--format", "cwmt-xml", "-o", str(path), *extra)
        assert done.returncode == 0, done.stderr
        data = path.read_bytes()
        assert data.startswith(b'<?xml version="1.0" encoding="GBK"?>\n')
        assert SIMPLIFIED[0].encode("gbk") in data or what == "hyp"
        data.decode("gbk")
        files[what] = path
    # Read back without being told: the declaration names the encoding.
    scored = _score("mt", "--hyp", str(files["hyp"]), "--ref", str(files["ref"]), "--lang", "zh")
    assert scored["bleu"] == pytest.approx(plain["bleu"], abs=1e-9)

    utf16 = tmp_path / "hyp16.xml"
    done = onsite(
        "export", str(gbk_run), "--format", "cwmt-xml", "-o", str(utf16), "--encoding", "utf-16le"
    )
    assert done.returncode == 0, done.stderr
    assert utf16.read_bytes().startswith(codecs.BOM_UTF16_LE + "<?xml".encode("utf-16-le"))
    again = _score("mt", "--hyp", str(utf16), "--ref", str(files["ref"]), "--lang", "zh")
    assert again["bleu"] == scored["bleu"]

    # Big5 holds no simplified characters: the export names the first and what to use.
    refused = onsite(
        "export", str(utf8_run), "--format", "cwmt-xml", "--encoding", "big5", "--references"
    )
    assert refused.returncode == 2 and "cannot be written in big5" in refused.stderr


def test_an_asr_task_with_encoding_big5_reads_its_text_file(tmp_path: Path, plan_env) -> None:
    items = [("u1", 1600, "今 天 天 氣"), ("u2", 3200, "我 們 去 公 園")]
    testset = make_testset(tmp_path / "set", items)
    text = (testset / "text").read_text("utf-8")
    (testset / "text").write_bytes(text.encode("big5"))
    env = plan_env({1600: {"text": "今 天 天 氣"}, 3200: {"text": "我 們 去 公"}})
    systems = {"fake": {"command": FAKE_SERVE, "env": env}}
    refused = write_site(tmp_path / "plain.toml", testset, systems)
    done = onsite("check", str(refused))
    assert done.returncode != 0
    assert "--encoding big5" in done.stdout + done.stderr or 'encoding = "big5"' in (
        done.stdout + done.stderr
    )
    site = write_site(tmp_path / "big5.toml", testset, systems, task_keys={"encoding": "big5"})
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    [row] = json.loads(onsite("report", str(run_dir), "--json").stdout)
    assert row["wer"] == pytest.approx(1 / 9)


def test_a_site_file_with_an_unknown_encoding_names_the_key(tmp_path: Path) -> None:
    site = _mt_site(tmp_path, "bad", "gbk")
    text = site.read_text("utf-8")
    site.write_text(text.replace('encoding = "gbk"', 'encoding = "klingon"'), "utf-8")
    with pytest.raises(SiteError, match=r"\[tasks\.mt\.encoding\]: unknown encoding 'klingon'"):
        load_site(site)


def _words(line: str) -> str:
    """A segmentation of ``line``: a word every two characters."""
    return " ".join(line[k : k + 2] for k in range(0, len(line), 2))


@pytest.mark.parametrize(("name", "codec", "lines"), ENCODED, ids=[e[0] for e in ENCODED])
def test_score_cws_ner_pos_with_encoding_give_the_utf8_numbers(
    tmp_path: Path, name: str, codec: str, lines: list[str]
) -> None:
    gold = [_words(line) for line in lines]
    test = [_words(line[1:]) for line in lines]
    conll = [
        f"{c} {'B-X' if k % 3 == 0 else 'O'} {'B-X' if k % 2 else 'O'}"
        for k, c in enumerate(lines[0])
    ]
    tagged_gold = [" ".join(f"{w}/N" for w in g.split()) for g in gold]
    tagged_test = [
        " ".join(f"{w}/{'N' if k % 2 else 'V'}" for k, w in enumerate(g.split())) for g in gold
    ]
    cases = {
        "cws": ({"gold": gold, "test": test}, "--gold", "--test"),
        "ner": ({"conll": conll}, "--conll"),
        "pos": ({"gold": tagged_gold, "test": tagged_test}, "--gold", "--test"),
    }
    for family, (files, *flags) in cases.items():
        plain, coded = [], []
        for flag, (what, content) in zip(flags, files.items(), strict=True):
            plain += [
                flag,
                str(_write(_dir(tmp_path / "utf8") / f"{family}.{what}", content, "utf-8")),
            ]
            coded += [flag, str(_write(_dir(tmp_path / name) / f"{family}.{what}", content, codec))]
        want = _score(family, *plain)
        got = _score(family, *coded, "--encoding", name)
        # The SIGHAN script keeps a UTF-8 BOM in the first word: onsite drops it and says so.
        notes = got.pop("warnings", [])
        assert notes == [] or (
            family == "cws" and codec == "utf-8-sig" and all("--sighan-quirks" in n for n in notes)
        ), notes
        want.pop("warnings", None)
        assert got == want, (family, name)


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "utf-16le"])
@pytest.mark.parametrize("kind", ["cws", "ner", "pos", "mt"])
def test_text_test_sets_in_the_tasks_encoding_load_as_in_utf8(
    tmp_path: Path, kind: str, encoding: str
) -> None:
    demo = REPO / "site_config" / "data" / "demo-text" / kind
    root = Path(shutil.copytree(demo, tmp_path / kind))
    codec = codec_of(encoding)
    for path in root.iterdir():
        if path.is_file() and path.name != "README.md":
            # The demo sets hold GBK's characters only: a change that breaks this fails here.
            path.write_bytes(path.read_text("utf-8").encode(codec))
    loader = task_kind(kind).load
    task = SimpleNamespace(encoding=encoding)
    want = loader(demo, None)
    got = loader(root, task)
    assert [(i.id, i.fields, i.reference) for i in got.items] == [
        (i.id, i.fields, i.reference) for i in want.items
    ]
    # Text of the GBK range is named gbk even when written as GB18030 (the same bytes).
    named = "gbk" if encoding == "gb18030" else encoding
    with pytest.raises(TestSetError, match=f"`--encoding {named}`"):
        loader(root, None)


def test_textcat_names_the_encoding_to_read_with(tmp_path: Path) -> None:
    gold = _write(
        tmp_path / "gold.tsv", [f"d{k}\t{t[:2]}" for k, t in enumerate(TRADITIONAL)], "big5"
    )
    done = onsite("score", "textcat", "--gold", str(gold), "--pred", str(gold))
    assert done.returncode == 2
    assert f"{gold}:1: not valid UTF-8" in done.stderr
    assert "it reads as big5; read it with `--encoding big5`" in done.stderr


def test_mt_check_reads_a_big5_source_with_encoding(tmp_path: Path) -> None:
    docs = "".join(f'<s id="{k}">{t}</s>' for k, t in enumerate(TRADITIONAL, 1))
    source = tmp_path / "source.xml"
    source.write_bytes(
        f'<srcset setid="zh_en_news_trans" srclang="zh" tgtlang="en"><doc docid="d1">{docs}'
        "</doc></srcset>\n".encode("big5")
    )
    hyp = tmp_path / "zh_en_news_trans-ict-primary-sys1.xml"
    segments = "".join(f'<s id="{k}">x</s>' for k in range(1, len(TRADITIONAL) + 1))
    hyp.write_text(
        '<tgtset setid="zh_en_news_trans" srclang="zh" tgtlang="en">'
        '<system site="ict" sysid="sys1">Hardware and software environment: Linux, 8 GB '
        "memory. Execution time: 3 seconds. Technology: phrase-based. Training data: "
        "CWMT. External technology: none.</system>"
        f'<doc docid="d1">{segments}</doc></tgtset>\n',
        "utf-8",
    )
    args = ["score", "mt-check", "--src", str(source), "--hyp", str(hyp), "--json"]
    refused = onsite(*args)
    assert refused.returncode == 2 and "it reads as big5" in refused.stderr, refused.stderr
    # The result is ASCII, the same bytes in Big5: one --encoding reads both.
    done = onsite(*args, "--encoding", "big5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_a_big5_cwmt_xml_set_without_declaration_runs_and_exports(tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    segments = "".join(f'<s id="{k}">{t}</s>' for k, t in enumerate(TRADITIONAL, 1))
    for name, tag in (("source.xml", "srcset"), ("ref1.xml", "refset")):
        (root / name).write_bytes(
            f'<{tag} setid="zh_zh_news_trans" srclang="zh" tgtlang="zh">'
            f'<doc docid="d1">{segments}</doc></{tag}>\n'.encode("big5")
        )
    hyps = _system_output(TRADITIONAL)
    plan = {s: {"text": h} for s, h in zip(TRADITIONAL, hyps, strict=True)}
    site = write_site(
        tmp_path / "big5.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": {"FAKE_PLAN": json.dumps(plan)}}},
        name="big5",
        task="mt",
        task_keys={"kind": "mt", "encoding": "big5"},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    [row] = json.loads(onsite("report", str(run_dir), "--json").stdout)
    # The set's own files, scored offline with --encoding, give the live number.
    hyp = _write(tmp_path / "hyp.txt", hyps, "big5")
    offline = _score(
        "mt", "--hyp", str(hyp), "--ref", str(root / "ref1.xml"), "--lang", "zh",
        "--encoding", "big5",
    )  # fmt: skip
    assert offline["bleu"] == pytest.approx(row["bleu"], abs=1e-12)
    out = tmp_path / "export.xml"
    done = onsite("export", str(run_dir), "--format", "cwmt-xml", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b'<?xml version="1.0" encoding="Big5"?>')
    assert b'setid="zh_zh_news_trans"' in out.read_bytes()
