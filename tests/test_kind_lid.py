"""The `lid` kind (harness/kinds/lid.py): scores, test-set errors, a run end to end, the CLI.

The example system (tests/systems/lid_pitch.py) names a language by the pitch of a
pure tone, so every answer is known in advance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness import SiteError, TestSetError, leaderboard, load_site, task_kind
from harness.kinds.lid import score_lid
from harness.report import build_report, html_text
from tests.helpers import REPO, onsite, read_outputs, run_site, write_site

LID_SYSTEM = [sys.executable, str(REPO / "tests" / "systems" / "lid_pitch.py")]
RATE = 16000
# A system that is never started: the site file needs one to be valid.
IDLE = {"idle": {"command": ["true"]}}


def tone_testset(root: Path, items: dict[str, tuple[float, str]], rate: int = RATE) -> Path:
    """A WAV of a pure tone per item (hz) and the lang file naming its reference language."""
    root.mkdir(parents=True, exist_ok=True)
    t = np.arange(rate // 2) / rate  # half a second each
    for item, (hz, _) in items.items():
        wave = (8000 * np.sin(2 * np.pi * hz * t)).astype(np.int16)
        soundfile.write(root / f"{item}.wav", wave, rate, "PCM_16")
    lines = [f"{item} {lang}" for item, (_, lang) in items.items()]
    (root / "lang").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_accuracy_recall_precision_and_confusion() -> None:
    refs = {"a": "en", "b": "en", "c": "zh", "d": "zh", "e": "fr"}
    # "EN" equals "en" (BCP 47 is case-insensitive); d is unanswered; e is answered "en".
    scores = score_lid(refs, {"a": "EN", "b": "zh", "c": "zh", "e": "en"}).to_dict()
    assert scores["items"] == 5 and scores["correct"] == 2 and scores["unanswered"] == 1
    assert scores["accuracy"] == pytest.approx(0.4)
    assert scores["confusion"] == {
        "en": {"en": 1, "zh": 1},
        "fr": {"en": 1},
        "zh": {"-": 1, "zh": 1},
    }
    by_lang = {f["language"]: f for f in scores["languages"]}
    assert by_lang["en"]["recall"] == 0.5 and by_lang["en"]["precision"] == 0.5
    assert by_lang["zh"]["precision"] == 0.5  # answered "zh" twice, right once
    assert by_lang["fr"]["recall"] == 0.0 and by_lang["fr"]["precision"] is None


def test_no_items_scores_zero_not_a_division_error() -> None:
    assert score_lid({}, {}).accuracy == 0.0


@pytest.mark.parametrize(
    ("lang", "needle"),
    [
        ("u1 english\n", "'english' is not a language code"),
        ("u1 en\nu1 zh\n", "appears twice"),
        ("u1\n", "expected '<utt-id> <language code>'"),
    ],
)
def test_bad_lang_file_names_line_and_fix(tmp_path: Path, lang: str, needle: str) -> None:
    root = tone_testset(tmp_path / "set", {"u1": (200.0, "en")})
    (root / "lang").write_text(lang, encoding="utf-8")
    with pytest.raises(TestSetError) as caught:
        task_kind("lid").load(root, None)
    [problem] = caught.value.problems
    assert needle in problem.message and problem.file == root / "lang" and problem.line
    assert problem.fix


def test_missing_lang_file_and_odd_audio(tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    with pytest.raises(TestSetError, match="no 'lang' file"):
        task_kind("lid").load(root, None)
    tone_testset(root, {"u1": (200.0, "en")}, rate=8000)
    site_cfg = load_site(_site(tmp_path, root, IDLE)).config.tasks["lid"]
    testset = task_kind("lid").load(root, site_cfg)
    # 8 kHz audio for a 16 kHz task is an invalid item, never resampled.
    assert not testset.items and "sample rate 8000 Hz" in testset.invalid[0].reason


def _site(tmp_path: Path, testset: Path, systems: dict, **task_keys: object) -> Path:
    return write_site(
        tmp_path / "site.toml",
        testset,
        systems,
        task="lid",
        task_keys={"kind": "lid", **task_keys},
        budget={"realtime_factor": 5.0, "hang_seconds": 10.0},
    )


def test_site_file_knows_lid_and_its_options_only(tmp_path: Path) -> None:
    root = tone_testset(tmp_path / "set", {"u1": (200.0, "en")})
    site = load_site(_site(tmp_path, root, IDLE, sample_rates=[8000, 16000]))
    assert site.config.tasks["lid"].sample_rates == [8000, 16000]
    with pytest.raises(SiteError) as caught:
        load_site(_site(tmp_path, root, IDLE, unit="char"))
    [problem] = caught.value.problems
    assert problem.where == "tasks.lid.unit" and problem.line
    assert "unknown key 'unit'" in problem.message and "sample_rates" in problem.fix


def test_lid_run_end_to_end(tmp_path: Path) -> None:
    items = {
        "en1": (200.0, "en"),
        "en2": (250.0, "en"),
        "zh1": (1000.0, "zh"),
        "zh2": (1200.0, "zh"),
        "fr1": (300.0, "fr"),  # the toy answers "en": wrong
        "bad": (5000.0, "zh"),  # answered "x": not a language code, invalid_output
    }
    root = tone_testset(tmp_path / "set", items)
    env = {"LID_BANDS": "en:0-400,zh:400-2000,x:2000-100000"}
    site = _site(tmp_path, root, {"pitch": {"command": LID_SYSTEM, "env": env}})
    run_dir, _ = run_site(site)
    verdicts = {r["id"]: r["verdict"] for r in read_outputs(run_dir, "lid", "pitch")}
    assert verdicts == {**dict.fromkeys(items, "ok"), "bad": "invalid_output"}
    [row] = leaderboard(run_dir)
    assert row.metric == "accuracy" and row.higher_is_better
    assert row.score == pytest.approx(4 / 6)
    assert row.scores["confusion"] == {
        "en": {"en": 2},
        "fr": {"en": 1},
        "zh": {"-": 1, "zh": 2},
    }
    assert row.speed_unit == "rtf" and row.speed_mean is not None and row.speed_mean > 0
    assert row.invalid_outputs == 1
    assert row.detail == "worst fr 0.0%, 1 unanswered"
    page = html_text(build_report(run_dir))
    assert "pitch: confusion matrix" in page and "real-time factor" in page


def test_onsite_score_lid(tmp_path: Path) -> None:
    ref = tmp_path / "lang"
    ref.write_text("a en\nb zh\nc zh\n", encoding="utf-8")
    hyp = tmp_path / "answers.jsonl"
    hyp.write_text(
        "\n".join(
            json.dumps(x) for x in [{"id": "a", "language": "en"}, {"id": "b", "language": "en"}]
        )
        + "\n",
        encoding="utf-8",
    )
    proc = onsite("score", "lid", "--ref", str(ref), "--hyp", str(hyp), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # The same numbers as a run gives: one function scores both.
    assert result == score_lid({"a": "en", "b": "zh", "c": "zh"}, {"a": "en", "b": "en"}).to_dict()
    assert result["accuracy"] == pytest.approx(1 / 3)
    table = onsite("score", "lid", "--ref", str(ref), "--hyp", str(hyp))
    assert table.returncode == 0 and "accuracy" in table.stdout and "languages" in table.stdout
    hyp.write_text('{"id": "a", "language": 3}\n{"id": "zz", "language": "en"}\n', encoding="utf-8")
    bad = onsite("score", "lid", "--ref", str(ref), "--hyp", str(hyp))
    assert bad.returncode == 2 and f"{hyp}:1" in bad.stderr and "write" in bad.stderr
