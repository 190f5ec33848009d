"""`onsite dispute` on a small real run: file, list, reject, amend, rerun; bad input.

The run: three ASR systems on six utterances. `right` answers every item; `crashing`
crashes on u3; `flaky` reads its plan from a file in its own workdir (read-only to it
inside the sandbox), answers u2 late (over budget) and crashes on u3 until the test
takes the crash out of the file, as a venue fault that is fixed before the appeal.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.leaderboard import leaderboard
from harness.store.directory import lock_run_dir
from harness.store.journal import read_events
from runners.sandbox import auto_uid
from tests.helpers import REPO, make_testset, onsite, run_site, write_site

WORDS = "one two three four"
FLAKY = """\
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "plan.json"), encoding="utf-8") as fh:
    plan = fh.read()
# What the system sees of its seal, in its answers: who it runs as, its HOME and whether
# it can write its own workdir.
seal = f"{os.getuid()} {os.environ.get('HOME')} {os.access(here, os.W_OK)}"
os.environ["FAKE_PLAN"] = plan.replace("SEAL", seal)
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"""


def _plan(crash: bool) -> dict[str, Any]:
    answer = {"text": WORDS, "seal": "SEAL"}
    plan: dict[str, Any] = {str(1600 * i): {"output": answer} for i in range(1, 7)}
    plan["3200"] = {"output": answer, "delay": 1.5}
    if crash:
        plan["4800"] = {"do": "crash"}
    return plan


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished run, kept for the tests to copy."""
    tmp = tmp_path_factory.mktemp("run")
    tmp.chmod(0o755)  # a sealed system reads its test set as another user
    root = make_testset(tmp / "set", [(f"u{i}", 1600 * i, WORDS) for i in range(1, 7)])
    flaky = tmp / "flaky"
    flaky.mkdir()
    flaky.chmod(0o755)
    (flaky / "flaky.py").write_text(FLAKY, encoding="utf-8")
    (flaky / "plan.json").write_text(json.dumps(_plan(crash=True)), encoding="utf-8")
    fake = str(REPO / "tests" / "systems" / "fake_system.py")

    def plan_env(plan: dict[str, Any]) -> dict[str, str]:
        return {"FAKE_PLAN": json.dumps(plan)}

    right = {str(1600 * i): {"text": WORDS} for i in range(1, 7)}
    site = write_site(
        tmp / "site.toml",
        root,
        {
            # Its answer to u6 lacks the "text" an ASR output needs: invalid_output.
            "right": {
                "command": [sys.executable, fake],
                "env": plan_env({**right, "9600": {"do": "bad_output"}}),
            },
            "crashing": {
                "command": [sys.executable, fake],
                "env": plan_env({**right, "4800": {"do": "crash"}}),
            },
            # The fake is named on the command line: the sandbox shows the command's files.
            "flaky": {"command": [sys.executable, "flaky.py", fake], "workdir": "flaky"},
        },
        budget={"seconds": 1.0, "hang_seconds": 10.0},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None, None, None], results
    return run_dir


@pytest.fixture
def run(base_run: Path, tmp_path: Path) -> Path:
    """A copy of the finished run of the test's own (disputes are written into it)."""
    copy = tmp_path / "run"
    shutil.copytree(base_run, copy, ignore=shutil.ignore_patterns("run.lock", "stage"))
    return copy


def _ok(*args: str) -> str:
    proc = onsite(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _refused(*args: str) -> str:
    proc = onsite(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error: "), proc.stderr
    return proc.stderr


def _rows(run_dir: Path) -> dict[str, Any]:
    return {r.system: r for r in leaderboard(run_dir)}


def _listed(run_dir: Path) -> list[dict[str, Any]]:
    return list(json.loads(_ok("dispute", str(run_dir), "--list", "--json")))


def test_the_run_as_disputed(base_run: Path) -> None:
    rows = _rows(base_run)
    assert rows["right"].invalid_outputs == 1
    assert rows["flaky"].crashes == 1 and rows["flaky"].over_budget == 1
    assert rows["crashing"].crashes == 1 and rows["crashing"].score == pytest.approx(4 / 24)


def test_file_list_and_reject(run: Path) -> None:
    before = _rows(run)
    out = _ok("dispute", str(run), "--task", "asr", "--system", "crashing", "--item", "u3",
              "--reason", "the [b]venue[/b] power dipped", "--by", "team C")  # fmt: skip
    assert "dispute 1 filed" in out and "crashed" in out
    # A dispute alone changes nothing.
    assert _rows(run) == before
    [entry] = _listed(run)
    assert (entry["dispute"], entry["state"], entry["item"], entry["by"]) == (
        1,
        "open",
        "u3",
        "team C",
    )
    assert entry["original"]["verdict"] == "crashed" and entry["decision"] is None
    table = _ok("dispute", str(run), "--list")
    assert "[b]venue[/b]" in table and "open" in table  # the reason as written, not markup
    # One open dispute per item: a second is refused until the first is decided.
    said = _refused("dispute", str(run), "--task", "asr", "--system", "crashing", "--item", "u3",
                    "--reason", "again")  # fmt: skip
    assert "dispute 1 on this item is still open" in said
    _ok("dispute", str(run), "--resolve", "1", "--reject", "--reason", "the log shows a segfault")
    [entry] = _listed(run)
    assert entry["state"] == "rejected" and entry["counted"]["verdict"] == "crashed"
    assert entry["decision"]["reason"] == "the log shows a segfault"
    assert _rows(run) == before
    # A decision is final.
    said = _refused("dispute", str(run), "--resolve", "1", "--amend", "ok", "--reason", "x")
    assert "dispute 1 was already decided (rejected" in said
    # Nothing was rewritten: the crash is still the item's one completion.
    records = list(read_events(run / "journal.jsonl"))
    done = [
        r for r in records if r.event == "completed" and (r.system, r.item) == ("crashing", "u3")
    ]
    assert len(done) == 1 and done[0].verdict == "crashed"
    assert [r.event for r in records[-2:]] == ["dispute_filed", "dispute_decided"]


def test_amend_changes_the_leaderboard_and_the_report_shows_it(run: Path, tmp_path: Path) -> None:
    before = _rows(run)["flaky"]
    _ok("dispute", str(run), "--task", "asr", "--system", "flaky", "--item", "u2",
        "--reason", "the delay was the venue's network share")  # fmt: skip
    _ok("dispute", str(run), "--resolve", "1", "--amend", "ok",
        "--reason", "the venue's file server stalled")  # fmt: skip
    after = _rows(run)["flaky"]
    assert (before.over_budget, after.over_budget) == (1, 0)
    assert after.score == before.score  # the same output, now on time
    # The verdict is amended, not the time: the item's seconds still count in the speed.
    assert after.total_seconds == before.total_seconds
    [entry] = _listed(run)
    assert (entry["state"], entry["counted"]["verdict"], entry["decision"]["verdict"]) == (
        "amended",
        "ok",
        "ok",
    )
    html, data = tmp_path / "report.html", tmp_path / "report.json"
    _ok("report", str(run), "--html", str(html), "--json-file", str(data), "--no-intervals")
    text = html.read_text(encoding="utf-8")
    assert "<h2>Disputes</h2>" in text and "Dispute 1: asr / flaky, item u2" in text
    assert "the venue&#x27;s file server stalled" in text and "over_budget" in text
    [reported] = json.loads(data.read_text(encoding="utf-8"))["disputes"]
    assert reported["original"]["verdict"] == "over_budget"
    assert reported["counted"] == {"attempt": 1, "verdict": "ok"}


def test_rerun_keeps_both_attempts(run: Path, base_run: Path, tmp_path: Path) -> None:
    plan = base_run.parent.parent / "flaky" / "plan.json"
    _ok("dispute", str(run), "--task", "asr", "--system", "flaky", "--item", "u3",
        "--reason", "the machine was rebooted by the venue")  # fmt: skip
    before = _rows(run)["flaky"]
    plan.write_text(json.dumps(_plan(crash=False)), encoding="utf-8")
    try:
        out = _ok("dispute", str(run), "--resolve", "1", "--rerun", "--reason", "venue fault")
    finally:
        plan.write_text(json.dumps(_plan(crash=True)), encoding="utf-8")
    assert "appeal attempt 2" in out and "ok" in out and "was crashed" in out
    records = list(read_events(run / "journal.jsonl"))
    mine = [
        r
        for r in records
        if getattr(r, "system", None) == "flaky" and getattr(r, "item", None) == "u3"
    ]
    events = [r.event for r in mine]
    assert events == [
        "dispatched", "completed", "system_lost", "dispute_filed",
        "appeal_dispatched", "appeal_completed", "dispute_decided",
    ], events  # fmt: skip
    dispatched, completed, _, _, appeal_sent, appeal, decided = mine
    # Both attempts kept; the appeal ran under the same budget, on a fresh anonymous id,
    # timed by the runner like the original, the system started as in a run.
    assert completed.verdict == "crashed" and completed.attempt == 1
    assert (appeal_sent.attempt, appeal.attempt, decided.attempt) == (2, 2, 2)
    assert appeal_sent.budget_seconds == dispatched.budget_seconds == 1.0
    assert appeal_sent.hang_seconds == dispatched.hang_seconds
    assert appeal_sent.anon_id not in (dispatched.anon_id, completed.anon_id)
    result = appeal.result
    assert result["verdict"] == "ok" and result["anon_id"] == appeal_sent.anon_id
    assert result["sent"] is not None and result["done"] > result["sent"]
    assert 0 < result["seconds"] < 1.0 and result["output"]["text"] == WORDS
    # Sealed as in the run: the run directory's user for the system (the third; the copy of
    # the run has a block of users of its own), the sandbox's HOME, a read-only workdir.
    first = next(r for r in records if r.event == "completed" and r.system == "flaky")
    seals = [first.output["seal"].split(), result["output"]["seal"].split()]
    assert [s[1:] for s in seals] == [["/onsite/home", "False"]] * 2
    if os.geteuid() == 0:  # a root controller gives each system a user of its own
        assert [int(s[0]) for s in seals] == [auto_uid(base_run, 2), auto_uid(run, 2)]
    at = records.index(appeal_sent)
    assert any(r.event == "system_started" and r.system == "flaky" for r in records[at - 3 : at])
    # The rerun's result counts: no crash left, the utterance's words found.
    after = _rows(run)["flaky"]
    assert (before.crashes, after.crashes) == (1, 0)
    assert before.score == pytest.approx(4 / 24) and after.score == 0.0
    assert after.over_budget == 1 and not after.in_progress
    # The outputs file is still the journal's first completions.
    outputs = [
        json.loads(x) for x in (run / "outputs" / "asr" / "flaky.jsonl").read_text().splitlines()
    ]
    assert [o["verdict"] for o in outputs if o["id"] == "u3"] == ["crashed"]
    html, data = tmp_path / "report.html", tmp_path / "report.json"
    _ok("report", str(run), "--html", str(html), "--json-file", str(data), "--samples", "200")
    text = html.read_text(encoding="utf-8")
    assert "Dispute 1: asr / flaky, item u3" in text and "<b>rerun</b>" in text
    assert "appeal attempt" in text and "crashed" in text
    [reported] = json.loads(data.read_text(encoding="utf-8"))["disputes"]
    assert [reported["original"]["verdict"]] + [a["verdict"] for a in reported["appeals"]] == [
        "crashed",
        "ok",
    ]
    assert reported["counted"] == {"attempt": 2, "verdict": "ok"}
    # The interval is the counted results' too (harness/significance.py).
    jobs = json.loads(data.read_text(encoding="utf-8"))["tasks"][0]["jobs"]
    row = next(j["row"] for j in jobs if j["row"]["system"] == "flaky")
    assert row["score"] == row["ci_low"] == row["ci_high"] == 0.0
    # A later dispute of the same item challenges what it counts as now.
    _ok("dispute", str(run), "--task", "asr", "--system", "flaky", "--item", "u3",
        "--reason", "second look")  # fmt: skip
    assert _listed(run)[1]["original"]["verdict"] == "ok"


def test_a_rerun_under_a_changed_test_set_is_refused(run: Path, tmp_path: Path) -> None:
    _ok("dispute", str(run), "--task", "asr", "--system", "crashing", "--item", "u3",
        "--reason", "x")  # fmt: skip
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    # The run's site file names its test set; a changed reference text there is refused.
    text = Path(meta["site_root"]) / "set" / "text"
    original = text.read_bytes()
    text.write_bytes(original.replace(b"u1 one", b"u1 uno"))
    try:
        said = _refused("dispute", str(run), "--resolve", "1", "--rerun")
    finally:
        text.write_bytes(original)
    assert "changed" in said
    assert _listed(run)[0]["state"] == "open"
    assert "appeal_dispatched" not in (run / "journal.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--task", "asr", "--system", "right", "--item", "u9", "--reason", "x"],
         ["[--item]", "no item 'u9' in the test set of task 'asr'", "e.g. u1"]),
        (["--task", "asr", "--system", "ghost", "--item", "u1", "--reason", "x"],
         ["[--task/--system]", "no job asr/ghost", "asr/right"]),
        (["--task", "asr", "--system", "right", "--item", "u1"],
         ["[--reason]", "a dispute needs a reason"]),
        (["--resolve", "7", "--reject", "--reason", "x"],
         ["[--resolve]", "no dispute 7 in this run", "none yet"]),
        (["--resolve", "1"], ["--resolve 1 needs --rerun, --amend VERDICT or --reject"]),
        (["--list", "--resolve", "1", "--reject"], ["give one of"]),
    ],
)  # fmt: skip
def test_bad_input(run: Path, args: list[str], says: list[str]) -> None:
    said = _refused("dispute", str(run), *args)
    for words in says:
        assert words in said, said
    assert "dispute_filed" not in (run / "journal.jsonl").read_text(encoding="utf-8")


def test_bad_decisions(run: Path) -> None:
    _ok("dispute", str(run), "--task", "asr", "--system", "crashing", "--item", "u3",
        "--reason", "x")  # fmt: skip
    said = _refused("dispute", str(run), "--resolve", "1", "--amend", "ok", "--reason", "y")
    assert "has no output to count as ok" in said and "--resolve 1 --rerun" in said
    said = _refused("dispute", str(run), "--resolve", "1", "--amend", "great", "--reason", "y")
    assert "unknown verdict 'great'" in said and "invalid_output" in said
    said = _refused("dispute", str(run), "--resolve", "1", "--reject")
    assert "--reject needs a reason" in said
    # An output the scorer cannot read is never counted as answered.
    _ok("dispute", str(run), "--task", "asr", "--system", "right", "--item", "u6",
        "--reason", "our output was fine")  # fmt: skip
    said = _refused("dispute", str(run), "--resolve", "2", "--amend", "ok", "--reason", "y")
    assert 'cannot be scored as ok: output needs a "text" string' in said
    said = _refused("dispute", str(run), "--resolve", "3", "--reject", "--reason", "y")
    assert "no dispute 3 in this run" in said and "disputes: 1, 2" in said
    assert [d["state"] for d in _listed(run)] == ["open", "open"]


def test_a_run_in_use_is_left_alone(run: Path) -> None:
    fd = lock_run_dir(run)
    try:
        proc = onsite("dispute", str(run), "--task", "asr", "--system", "right", "--item", "u1",
                      "--reason", "x")  # fmt: skip
    finally:
        os.close(fd)
    assert proc.returncode == 1 and "in use by another onsite controller" in proc.stderr
    # Listing only reads.
    assert _listed(run) == []
