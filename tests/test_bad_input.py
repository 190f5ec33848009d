"""Bad site files and bad test items: clear errors that name the file, key or line, and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness import SiteError, TestSetError, load_asr_testset, load_site
from tests.helpers import FAKE_SERVE, REPO, make_testset, read_outputs, run_site, write_site

GOOD = """\
[site]
name = "venue"

[devices.local]
transport = "local"

[tasks.asr-2x]
kind = "asr"
testset = "set"
budget = { realtime_factor = 2.0 }

[systems.sphinx]
device = "local"
tasks = ["asr-2x"]
command = ["python", "-m", "x"]
"""


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    make_testset(tmp_path / "set", [("u1", 1600, "a")])
    return tmp_path


def problems_for(site_dir: Path, text: str) -> list[str]:
    path = site_dir / "site.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SiteError) as info:
        load_site(path)
    return [str(p) for p in info.value.problems]


def test_good_site_loads(site_dir: Path) -> None:
    (site_dir / "site.toml").write_text(GOOD)
    site = load_site(site_dir / "site.toml")
    assert site.jobs() == [("asr-2x", "sphinx")]
    assert site.run_dir == (site_dir / "runs" / "venue").resolve()


def test_unknown_budget_key_names_file_key_line_and_allowed_keys(site_dir: Path) -> None:
    [problem] = problems_for(
        site_dir, GOOD.replace("realtime_factor = 2.0", "realtime_factr = 2.0")
    )
    assert str(site_dir / "site.toml") + ":10" in problem
    assert "[tasks.asr-2x.budget.realtime_factr]" in problem
    assert "unknown key 'realtime_factr'" in problem
    assert "realtime_factor" in problem and "hang_seconds" in problem


def test_unknown_task_and_device(site_dir: Path) -> None:
    text = GOOD.replace('tasks = ["asr-2x"]', 'tasks = ["asr-20x"]').replace(
        'device = "local"', 'device = "pda"'
    )
    problems = problems_for(site_dir, text)
    assert any("[systems.sphinx.device]" in p and "unknown device 'pda'" in p for p in problems)
    assert any("unknown task 'asr-20x'" in p and "define [tasks.asr-20x]" in p for p in problems)


def test_missing_testset_and_key(site_dir: Path) -> None:
    text = GOOD.replace('testset = "set"', 'testset = "nowhere"').replace(
        'command = ["python", "-m", "x"]\n', ""
    )
    problems = problems_for(site_dir, text)
    assert any("required key 'command' is missing" in p for p in problems)
    text = GOOD.replace('testset = "set"', 'testset = "nowhere"')
    [problem] = problems_for(site_dir, text)
    assert "nowhere" in problem and "relative to the site file" in problem
    assert ":9" in problem


def test_toml_syntax_error_has_a_line(site_dir: Path) -> None:
    [problem] = problems_for(site_dir, GOOD.replace('kind = "asr"', "kind = asr"))
    assert ":8" in problem and "not valid TOML" in problem


def test_two_rate_keys_and_exec_without_placeholders(site_dir: Path) -> None:
    text = GOOD.replace("realtime_factor = 2.0", "realtime_factor = 2.0, seconds = 3").replace(
        "[systems.sphinx]", '[systems.sphinx]\nmode = "exec"'
    )
    problems = problems_for(site_dir, text)
    assert any("not realtime_factor and seconds" in p for p in problems)
    assert any('needs "{input}" and "{output}"' in p for p in problems)


def test_site_file_not_utf8(site_dir: Path) -> None:
    path = site_dir / "site.toml"
    path.write_bytes(GOOD.replace('"venue"', '"v"\n# 评测').encode("gb18030"))
    with pytest.raises(SiteError, match="not UTF-8"):
        load_site(path)


def test_cli_reports_bad_config_before_anything_starts(site_dir: Path) -> None:
    (site_dir / "site.toml").write_text(GOOD.replace('transport = "local"', 'kind = "locl"'))
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site_dir / "site.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "devices.local.kind" in proc.stderr and "locl" in proc.stderr
    assert not (site_dir / "runs").exists(), "nothing may be written for a bad site file"


def test_bad_audio_items_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("good", 1600, "a"), ("stereo", 1700, "b")])
    soundfile.write(root / "stereo.wav", np.zeros((1700, 2), dtype=np.int16), 16000)
    (root / "broken.flac").write_bytes(b"fLaC\x00this is not audio")
    soundfile.write(root / "narrow.wav", np.zeros(800, dtype=np.int16), 8000)
    with open(root / "text", "a", encoding="utf-8") as fh:
        fh.write("broken c\nnarrow d\nmissing e\n")
    testset = load_asr_testset(root)
    assert [i.id for i in testset.items] == ["good"]
    reasons = {bad.id: bad.reason for bad in testset.invalid}
    assert "2 channels" in reasons["stereo"]
    assert "cannot be decoded" in reasons["broken"]
    assert "8000 Hz" in reasons["narrow"] and "16000" in reasons["narrow"]
    assert "no audio file" in reasons["missing"]

    site = write_site(tmp_path / "site.toml", root, {"fake": {"command": FAKE_SERVE}})
    run_dir, results = run_site(site)
    assert results[0].failed is None
    assert [r["id"] for r in read_outputs(run_dir, "asr", "fake")] == ["good"]


def test_text_file_in_wrong_encoding_names_the_line(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("u1", 1600, "a")])
    (root / "text").write_bytes("u1 ok\nu2 你好\n".encode("gb18030"))
    with pytest.raises(TestSetError) as info:
        load_asr_testset(root)
    [problem] = info.value.problems
    assert problem.line == 2 and "not valid UTF-8" in str(problem)
    assert "it reads as gbk. Fix: read it with `--encoding gbk`" in str(problem)
    assert 'the task\'s `encoding = "gbk"`' in str(problem)


def test_duplicate_ids_and_missing_text(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("u1", 1600, "a")])
    (root / "text").write_text("u1 a\nu1 b\n")
    with pytest.raises(TestSetError, match="appears twice"):
        load_asr_testset(root)
    (root / "text").unlink()
    with pytest.raises(TestSetError, match="no 'text' file"):
        load_asr_testset(root)
