"""`onsite ingest`: a submitted file becomes a job's outputs (issue 29, item 4).

A run like test_compare's (FAKE_SERVE systems on six utterances) where one system
ran and another never did; its submitted trn file is ingested and must score as
`onsite score asr` scores the same file, with empty speed figures, its SHA-256 in the
journal, and nothing written for a file that does not cover the test set exactly.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import Controller, RunStore, load_site
from harness.leaderboard import leaderboard
from harness.store.directory import RunState
from harness.store.events import Completed, Ingested
from scoring.cwmt_xml import load_mt_file
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, read_outputs, write_site

TRN = "".join(
    f"{text} (u{i})\n"
    for i, text in enumerate(["one too three", "won two", *["one two three four"] * 4], start=1)
)


def _run_only(site_path: Path, jobs: list[tuple[str, str]]) -> Path:
    """Run some of a site's jobs in-process; the others are never started."""
    site = load_site(site_path)
    store = RunStore(site.run_dir, "test", fsync_seconds=0)
    try:
        store.keep_site_copy(site.path, site.root)
        results = Controller(site, store).run(jobs)
    finally:
        store.close()
    assert [r.failed for r in results] == [None] * len(jobs), results
    return site.run_dir


@pytest.fixture
def asr_site(tmp_path: Path) -> Path:
    """Two systems on six utterances: `live` runs at the venue, `offline` sends a file."""
    tmp_path.chmod(0o755)  # a sealed system reads its test set as another user
    items = [(f"u{i}", 1600 * i, "one two three four") for i in range(1, 7)]
    root = make_testset(tmp_path / "set", items)
    right = {str(1600 * i): {"text": "one two three four"} for i in range(1, 7)}
    live = {"command": FAKE_SERVE, "env": {"FAKE_PLAN": json.dumps(right)}}
    return write_site(tmp_path / "site.toml", root, {"live": live, "offline": live})


@pytest.fixture
def asr_run(asr_site: Path) -> Path:
    return _run_only(asr_site, [("asr", "live")])


def _journal(run_dir: Path) -> list[Any]:
    return RunState.from_journal(run_dir / "journal.jsonl").records


def test_ingested_trn_scores_as_onsite_score_asr(asr_run: Path, tmp_path: Path) -> None:
    sub = tmp_path / "offline.trn"
    sub.write_text(TRN, encoding="utf-8")
    proc = onsite("ingest", str(asr_run), str(sub), "--task", "asr", "--system", "offline")
    assert proc.returncode == 0, proc.stderr
    digest = hashlib.sha256(sub.read_bytes()).hexdigest()
    assert digest in proc.stdout

    scored = onsite("score", "asr", "--ref", str(asr_run.parent.parent / "set" / "text"),
                    "--hyp", str(sub), "--json")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    wer = json.loads(scored.stdout)["wer"]
    rows = {r.system: r for r in leaderboard(asr_run)}
    row = rows["offline"]
    assert row.score == wer == pytest.approx(5 / 24)
    assert (row.completed, row.scored, row.in_progress) == (6, 6, False)
    # No timing: the speed figures are empty, not zero, and no time is charged.
    assert (row.speed_mean, row.speed_p95, row.speed_max, row.total_seconds) == (None,) * 4
    assert row.set_budget_met is None and row.running_score == 100.0
    assert row.offline and not rows["live"].offline
    assert rows["live"].speed_mean is not None and rows["live"].total_seconds

    records = _journal(asr_run)
    ingested = [r for r in records if isinstance(r, Ingested)]
    assert [(r.sha256, r.format, r.items, r.supersedes) for r in ingested] == [
        (digest, "trn", 6, 0)
    ]
    done = [r for r in records if isinstance(r, Completed) and r.system == "offline"]
    assert [r.offline for r in done] == [True] * 6 and {r.seconds for r in done} == {0.0}
    assert [line["output"]["text"] for line in read_outputs(asr_run, "asr", "offline")] == [
        line.rsplit(" (", 1)[0] for line in TRN.splitlines()
    ]

    # The report, compare and export read the ingested job as any job.
    report = onsite("report", str(asr_run), "--json")
    assert report.returncode == 0, report.stderr
    shown = {r["system"]: r for r in json.loads(report.stdout)}
    assert shown["offline"]["wer"] == wer and shown["offline"]["rtf_mean"] is None
    assert shown["offline"]["offline"] is True and shown["offline"]["total_seconds"] is None
    compared = onsite("compare", str(asr_run), "--task", "asr", "--samples", "200", "--json")
    assert compared.returncode == 0, compared.stderr
    assert {s["system"]: s["score"] for s in json.loads(compared.stdout)["systems"]} == {
        "live": 0.0,
        "offline": wer,
    }
    # export(ingest(file)) is the file.
    exported = onsite("export", str(asr_run), "--task", "asr", "--system", "offline",
                      "--format", "trn")  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == TRN
    again = onsite("score", "asr", "--run", str(asr_run), "--task", "asr", "--system", "offline",
                   "--json")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["wer"] == wer


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (TRN.replace("won two (u2)\n", ""), ["[missing ids]", "u2"]),
        (TRN + "extra words (u9)\n", ["[extra ids]", "u9 (line 7)"]),
        (TRN + "won two (u2)\n", ["[repeated ids]", "u2 (lines 2, 7)"]),
    ],
)
def test_a_file_not_covering_the_set_is_refused_and_nothing_written(
    asr_run: Path, tmp_path: Path, text: str, said: list[str]
) -> None:
    before = (asr_run / "journal.jsonl").read_bytes()
    sub = tmp_path / "offline.trn"
    sub.write_text(text, encoding="utf-8")
    proc = onsite("ingest", str(asr_run), str(sub), "--task", "asr", "--system", "offline")
    assert proc.returncode == 2
    assert str(sub) in proc.stderr and all(s in proc.stderr for s in said), proc.stderr
    assert (asr_run / "journal.jsonl").read_bytes() == before


def test_reingest_needs_replace_and_keeps_both(asr_run: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.trn", tmp_path / "b.trn"
    first.write_text(TRN, encoding="utf-8")
    second.write_text(TRN.replace("won two", "one two three four"), encoding="utf-8")
    args = ("--task", "asr", "--system", "offline")
    assert onsite("ingest", str(asr_run), str(first), *args).returncode == 0
    refused = onsite("ingest", str(asr_run), str(second), *args)
    assert refused.returncode == 2 and "--replace" in refused.stderr, refused.stderr
    # Nor is a job that ran live overwritten.
    live = onsite("ingest", str(asr_run), str(second), "--task", "asr", "--system", "live")
    assert live.returncode == 2 and "6 item(s) recorded already" in live.stderr
    replaced = onsite("ingest", str(asr_run), str(second), *args, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    records = _journal(asr_run)
    assert [(r.file, r.supersedes) for r in records if isinstance(r, Ingested)] == [
        (str(first), 0),
        (str(second), 6),
    ]
    assert sum(isinstance(r, Completed) and r.system == "offline" for r in records) == 12
    row = {r.system: r for r in leaderboard(asr_run)}["offline"]
    assert (row.score, row.completed) == (pytest.approx(2 / 24), 6)
    lines = read_outputs(asr_run, "asr", "offline")
    assert [line["id"] for line in lines] == [f"u{i}" for i in range(1, 7)]
    assert lines[1]["output"]["text"] == "one two three four"
    # A later `onsite run` runs what is left and leaves the ingested job as it is.
    rerun = onsite("run", str(asr_run.parent.parent / "site.toml"))
    assert rerun.returncode == 0, rerun.stderr
    assert {r.system: r for r in leaderboard(asr_run)}["offline"].score == row.score
    assert len(read_outputs(asr_run, "asr", "offline")) == 6


def test_ingest_creates_the_run_from_the_site_file(asr_site: Path, tmp_path: Path) -> None:
    sub = tmp_path / "offline.jsonl"
    sub.write_text(
        "".join(
            json.dumps({"id": f"u{i}", "output": {"text": "one two three four"}}) + "\n"
            for i in range(1, 7)
        ),
        encoding="utf-8",
    )
    run_dir = tmp_path / "runs" / "t"
    args = (str(run_dir), str(sub), "--task", "asr", "--system", "offline")
    no_site = onsite("ingest", *args)
    assert no_site.returncode == 2 and "--site" in no_site.stderr
    assert not (run_dir / "journal.jsonl").exists()
    made = onsite("ingest", *args, "--site", str(asr_site))
    assert made.returncode == 0, made.stderr
    assert "created the run" in made.stdout
    rows = {r.system: r for r in leaderboard(run_dir)}
    assert rows["offline"].score == 0.0 and rows["live"].completed == 0
    # `onsite run` then runs the live system into the same run.
    ran = onsite("run", str(asr_site), "--runs", str(tmp_path / "runs"))
    assert ran.returncode == 0, ran.stderr
    rows = {r.system: r for r in leaderboard(run_dir)}
    assert rows["live"].completed == 6 and rows["offline"].speed_mean is None


def test_encoding_is_handed_to_the_reader(asr_run: Path, tmp_path: Path) -> None:
    sub = tmp_path / "offline.trn"
    sub.write_bytes(TRN.replace("won two", "万 two").encode("gbk"))
    args = (str(asr_run), str(sub), "--task", "asr", "--system", "offline")
    refused = onsite("ingest", *args)
    assert refused.returncode == 2 and f"{sub}:2" in refused.stderr, refused.stderr
    proc = onsite("ingest", *args, "--encoding", "gbk")
    assert proc.returncode == 0, proc.stderr
    assert read_outputs(asr_run, "asr", "offline")[1]["output"] == {"text": "万 two"}
    [ingested] = [r for r in _journal(asr_run) if isinstance(r, Ingested)]
    assert ingested.encoding == "gbk"


def test_wrong_kind_format_and_unknown_job(asr_run: Path, tmp_path: Path) -> None:
    sub = tmp_path / "offline.txt"
    sub.write_text(TRN, encoding="utf-8")
    proc = onsite("ingest", str(asr_run), str(sub), "--task", "asr", "--system", "offline")
    assert proc.returncode == 2 and "trn, kaldi, ctm, jsonl" in proc.stderr
    proc = onsite("ingest", str(asr_run), str(sub), "--task", "asr", "--system", "offline",
                  "--format", "kaldi")  # fmt: skip
    assert proc.returncode == 2 and "reads as trn" in proc.stderr
    proc = onsite("ingest", str(asr_run), str(sub), "--task", "asr", "--system", "nobody",
                  "--format", "trn")  # fmt: skip
    assert proc.returncode == 2 and "no system 'nobody'" in proc.stderr


# --------------------------------------------------------------------------- CWMT XML

NBEST_MT = [sys.executable, "-m", "examples.systems.nbest_mt"]
DOCS = {"d1": ["你好世界", "我们喜欢北京"], "d2": ["我们在北京", "你好上海"]}
REFS = {"d1": ["hello world", "we like beijing"], "d2": ["we are in beijing", "hello shanghai"]}


def _xml(tag: str, docs: dict[str, list[str]], extra: str = "") -> str:
    body = "".join(
        f'<doc docid="{d}"{extra}>'
        + "".join(f'<s id="{n}">{t}</s>' for n, t in enumerate(segs, 1))
        + "</doc>\n"
        for d, segs in docs.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{tag} setid="zh_en_news_trans" srclang="zh" tgtlang="en">\n{body}</{tag}>\n'
    )


@pytest.fixture
def mt_run(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    root.mkdir()
    (root / "source.xml").write_text(_xml("srcset", DOCS), "utf-8")
    (root / "ref1.xml").write_text(_xml("refset", REFS, ' sysid="ref1"'), "utf-8")
    system = {"command": NBEST_MT, "workdir": str(REPO)}
    site = write_site(
        tmp_path / "mt.toml",
        root,
        {"acme": system, "late": system},
        name="mtrun",
        task="zh_en_news_trans",
        task_keys={"kind": "mt"},
        budget={"seconds": 20.0, "hang_seconds": 30.0},
    )
    return _run_only(site, [("zh_en_news_trans", "acme")])


def _segments(path: Path) -> list[tuple[str, str, str, tuple[Any, ...]]]:
    return [
        (s.doc_id, s.seg_id, s.text, tuple((c.text, c.score) for c in s.candidates))
        for s in load_mt_file(path, "target").segments
    ]


def test_cwmt_xml_is_checked_by_the_naming_rule_and_round_trips(
    mt_run: Path, tmp_path: Path
) -> None:
    task = "zh_en_news_trans"
    named = tmp_path / f"{task}-late-primary-late.xml"
    made = onsite("export", str(mt_run), "--task", task, "--system", "acme",
                  "--format", "cwmt-xml", "-o", str(named))  # fmt: skip
    assert made.returncode == 0, made.stderr
    # As the participant `late` sends it: their site and system in the <system> element.
    named.write_text(
        named.read_text("utf-8").replace('site="acme" sysid="acme"', 'site="late" sysid="late"'),
        "utf-8",
    )
    before = (mt_run / "journal.jsonl").read_bytes()
    wrong = tmp_path / "late.xml"
    wrong.write_bytes(named.read_bytes())
    proc = onsite("ingest", str(mt_run), str(wrong), "--task", task, "--system", "late")
    assert proc.returncode == 2
    assert "naming rule task-site-primary|contrast-system.xml" in proc.stderr, proc.stderr
    other = tmp_path / "en_zh_news_trans-late-primary-late.xml"
    other.write_bytes(named.read_bytes())
    proc = onsite("ingest", str(mt_run), str(other), "--task", task, "--system", "late")
    assert proc.returncode == 2 and "the set's is 'zh_en_news_trans'" in proc.stderr
    assert (mt_run / "journal.jsonl").read_bytes() == before

    proc = onsite("ingest", str(mt_run), str(named), "--task", task, "--system", "late")
    assert proc.returncode == 0, proc.stderr
    rows = {r.system: r for r in leaderboard(mt_run)}
    assert rows["late"].score == rows["acme"].score and rows["late"].speed_mean is None
    back = tmp_path / "back.xml"
    exported = onsite("export", str(mt_run), "--task", task, "--system", "late",
                      "--format", "cwmt-xml", "-o", str(back))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert _segments(back) == _segments(named) and any(s[3] for s in _segments(back))
    assert "no execution time measured" in back.read_text("utf-8")
    # The combination set and the judging panel take the ingested job as any job.
    combo = tmp_path / "combo"
    made = onsite("combination-set", str(mt_run), "--task", task, "-o", str(combo))
    assert made.returncode == 0, made.stderr
    assert len(list((combo / "candidates").iterdir())) == 2
    panel = onsite("judge", str(mt_run), "--test", "mt-adequacy-fluency", "--task", task,
                   "--judges", "1", "--plan-only")  # fmt: skip
    assert panel.returncode == 0, panel.stderr
    with sqlite3.connect(mt_run / "judging" / f"{task}.mt-adequacy-fluency.sqlite") as db:
        shown = {s for (row,) in db.execute("SELECT systems FROM trials") for s in json.loads(row)}
    assert shown == {"acme", "late"}
    # A plain-text submission: one translation per line in the set's order.
    plain = tmp_path / "late.txt"
    plain.write_text("".join(s[2] + "\n" for s in _segments(named)), "utf-8")
    proc = onsite("ingest", str(mt_run), str(plain), "--task", task, "--system", "late",
                  "--format", "plain", "--replace")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert {r.system: r for r in leaderboard(mt_run)}["late"].score == rows["acme"].score


# --------------------------------------------------------------------------- every reader


def _kinds_with_readers() -> list[str]:
    from harness.kinds.registry import task_kinds

    return [name for name, kind in task_kinds().items() if kind.readers]


@pytest.mark.parametrize("kind", _kinds_with_readers())
def test_every_reader_reads_back_what_its_writer_wrote(kind: str, tmp_path: Path) -> None:
    """export(read(export(job))) == export(job) for every format a kind both writes and
    reads, on the kind's demo-style job (tests/test_kind_conformance.py's examples)."""
    from dataclasses import replace

    from harness import task_kind
    from harness.export import export_job, read_run
    from harness.kinds.submissions import cwmt_set
    from tests.kind_examples import run_example
    from tests.test_kind_conformance import _all_examples

    tmp_path.chmod(0o755)
    run_dir = run_example(kind, _all_examples()[kind](tmp_path), tmp_path)
    job = read_run(run_dir, None, None)
    the_kind = task_kind(kind)
    both = [fmt for fmt in the_kind.readers if fmt in the_kind.formats]
    assert both, kind
    for fmt in both:
        text = export_job(job, fmt)
        name = f"{job.task}.{fmt}"
        if fmt == "cwmt-xml":
            from scoring.cwmt_xml import task_id

            name = f"{task_id(*cwmt_set(job.testset, job.task))}-sys-primary-sys.xml"
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        entries = the_kind.submission_formats[fmt](path, job.testset, job.task, job.config, None)
        outputs = {e.item: e.output for e in entries}
        assert len(outputs) == len(entries), fmt
        again = export_job(replace(job, outputs=outputs), fmt)
        if fmt == "cwmt-xml":
            # A segment's text is read as `onsite score mt` reads it, stripped (the example's
            # "we like beijing\r" loses its &#13;): the same file, read the same way.
            back = tmp_path / "again" / name
            back.parent.mkdir(exist_ok=True)
            back.write_text(again, encoding="utf-8")
            assert _segments(back) == _segments(path)
        else:
            assert again == text, fmt
