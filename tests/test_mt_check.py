"""`onsite score mt-check`: exit codes, name against sysid, each problem once, Appendix C."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from scoring.mt_check import DESCRIPTION_ITEMS, check_results
from tests.helpers import onsite

SOURCE = """<?xml version="1.0" encoding="UTF-8"?>
<srcset setid="zh_en_news_trans" srclang="zh" tgtlang="en">
<doc docid="d1">
<s id="1">玻利维亚举行总统与国会选举</s>
<s id="2">投票所关闭</s>
</doc>
</srcset>
"""

DESCRIPTION = """
Hardware and software: Debian 12 on 2 CPUs (Xeon 2.4 GHz), 16 GB memory.
Execution time: 35 minutes for the whole test set.
Technology outline: phrase-based statistical model, 5-gram language model.
Training data: the CWMT 2008 training corpus (CLDC-LAC-2003-004).
External technology: GIZA++ and SRILM (open source).
"""


def target(site: str = "ict", sysid: str = "systema", description: str = DESCRIPTION) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<tgtset setid="zh_en_news_trans" srclang="zh" tgtlang="en">
<system site="{site}" sysid="{sysid}">{description}</system>
<doc docid="d1">
<s id="1" score="0.5">Bolivia holds elections</s>
<s id="2" score="0.4">Polling stations closed</s>
</doc>
</tgtset>
"""


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source.xml"
    path.write_text(SOURCE)
    return path


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(source: Path, *paths: Path) -> list[str]:
    return [p.problem for p in check_results(source, paths).problems]


def test_a_good_submission_passes_and_exits_0(source: Path, tmp_path: Path) -> None:
    good = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", target())
    assert problems(source, good) == []
    # The real command line: exit 0, and a table saying ok.
    proc = onsite("score", "mt-check", "--src", str(source), "--hyp", str(good))
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout and "True" in proc.stdout


def test_problems_exit_1_with_and_without_json(source: Path, tmp_path: Path) -> None:
    bad = write(tmp_path, "zh_en_news_trans-ict-primary-systemb.xml", target())
    proc = onsite("score", "mt-check", "--src", str(source), "--hyp", str(bad), "--json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] is False
    assert [p["problem"] for p in result["problems"]] == [
        "file name says system 'systemb' but <system sysid> is 'systema'"
    ]
    proc = onsite("score", "mt-check", "--src", str(source), "--hyp", str(bad))
    assert proc.returncode == 1 and "systemb" in proc.stdout and "problems" in proc.stdout


def test_name_against_site_and_setid_ignoring_case(source: Path, tmp_path: Path) -> None:
    upper = write(tmp_path, "zh_en_news_trans-ICT-primary-SystemA.xml", target())
    assert problems(source, upper) == []
    other = write(tmp_path, "en_zh_news_trans-neu-primary-systema.xml", target())
    assert problems(source, other) == [
        "file name says task 'en_zh_news_trans' but setid is 'zh_en_news_trans'",
        "file name says site 'neu' but <system site> is 'ict'",
    ]


def test_naming_rule_is_said_once(source: Path, tmp_path: Path, capsys) -> None:
    bad = write(tmp_path, "my result.xml", target())
    found = problems(source, bad)
    assert sum("naming rule" in p for p in found) == 1
    assert main(["score", "mt-check", "--src", str(source), "--hyp", str(bad)]) == 1
    assert capsys.readouterr().out.count("breaks the naming rule") == 1


def test_description_must_cover_appendix_c(source: Path, tmp_path: Path) -> None:
    thin = write(
        tmp_path,
        "zh_en_news_trans-ict-primary-systema.xml",
        target(description="OS: Linux on 4 CPUs. Runs a phrase-based model."),
    )
    missing = problems(source, thin)
    items = list(DESCRIPTION_ITEMS)
    assert missing == [f"system description does not say the {item}" for item in items[1:4:2]] + [
        f"system description does not say the {items[4]}"
    ]
    chinese = write(
        tmp_path,
        "zh_en_news_trans-ict-contrast-systemc.xml",
        target(
            sysid="systemc",
            description="硬件：4 CPU；运行时间：30分钟；技术：统计模型；"
            "训练数据：CWMT语料；外部：开源工具",
        ),
    )
    assert not [p for p in problems(source, chinese) if "description" in p]
    # Words count whole: "parameters" does not mention RAM, "runtimes" is no "runtime".
    words = write(
        tmp_path,
        "zh_en_news_trans-ict-contrast-systemd.xml",
        target(
            sysid="systemd",
            description=DESCRIPTION.replace("16 GB memory", "parameters").replace(
                "Hardware and software: Debian 12 on 2 CPUs (Xeon 2.4 GHz),", ""
            ),
        ),
    )
    assert [p for p in problems(source, words) if "description" in p] == [
        f"system description does not say the {items[0]}"
    ]


def test_missing_system_element_and_empty_description(source: Path, tmp_path: Path) -> None:
    no_system = target().replace(f'<system site="ict" sysid="systema">{DESCRIPTION}</system>', "")
    path = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", no_system)
    assert problems(source, path) == ["no <system> element (system description)"]
    empty = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", target(description=""))
    assert problems(source, empty) == ["<system> description is empty"]


def test_several_files_one_primary_rule(source: Path, tmp_path: Path) -> None:
    a = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", target())
    b = write(tmp_path, "zh_en_news_trans-ict-primary-systemb.xml", target(sysid="systemb"))
    assert problems(source, a, b) == ["zh_en_news_trans/ict: 2 primary results, need 1"]


def test_unreadable_file_is_a_problem_and_the_others_are_still_checked(
    source: Path, tmp_path: Path
) -> None:
    broken = write(tmp_path, "zh_en_news_trans-ict-contrast-systemb.xml", "<tgtset><seg>")
    good = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", target())
    report = check_results(source, [broken, good])
    assert not report.ok and len(report.problems) == 1
    assert report.problems[0].path == str(broken)


def test_mirror_problems_are_reported(source: Path, tmp_path: Path) -> None:
    short = target().replace('<s id="2" score="0.4">Polling stations closed</s>\n', "")
    path = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", short)
    assert problems(source, path) == ["document 'd1': segment 2 is missing"]


def test_result_file_names_made_for_a_run_keep_the_naming_rule() -> None:
    from scoring.cwmt_xml import name_part, parse_result_name, result_file_name

    # A set id of the rule's form is kept; the parts lose what the rule reserves.
    name = result_file_name("zh_en_news_trans", "word-mt", "word-mt")
    assert name == "zh_en_news_trans-word_mt-primary-word_mt.xml"
    assert parse_result_name(name).system == name_part("word-mt") == "word_mt"
    # Another set id becomes src_tgt_<its letters>_trans, xx for a language not named.
    assert result_file_name("mt", "s", "s", None, "en") == "xx_en_mt_trans-s-primary-s.xml"
    assert result_file_name("MT-2026", "a.b", "c d", "zh", "en").startswith("zh_en_mt_trans-a_b-")
    for odd in ("", "-", "我们", "a/b"):
        parse_result_name(result_file_name(odd, odd, odd, odd, odd))
