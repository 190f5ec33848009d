"""A run's media files (a synthesizer's audio) travel with it through PostgreSQL.

A station keeps each audio file on its own disk and in the run (``onsite_media``);
`onsite copy-run` carries them both ways, so a PostgreSQL run copied to a directory,
or a directory copied through the database, can be judged: every sample is served.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from harness.store.postgres import PgRunStore
from tests.helpers import REPO, read_outputs
from tests.judge_helpers import TTS_TASK, make_tts_run
from tests.pg import Postgres
from tests.test_judge_media_paths import _every_sample, _onsite, _panel_process

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


def _media(run_dir: Path) -> dict[str, bytes]:
    root = run_dir / "media"
    return {
        p.relative_to(run_dir).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }


def _audio_paths(run_dir: Path) -> list[str]:
    """The audio every completion of every tts job names (media/<task>/<id>.wav)."""
    paths = []
    for outputs in sorted((run_dir / "outputs" / TTS_TASK).glob("*.jsonl")):
        for line in read_outputs(run_dir, TTS_TASK, outputs.stem):
            if line.get("verdict") == "ok":
                paths.append(str(line["output"]["audio"]))
    return paths


def _judged(run: Path, cwd: Path) -> list[int]:
    """Plan a one-judge pair panel on ``run`` and fetch the first trial's samples."""
    done = _onsite(
        cwd,
        *("judge", str(run), "--test", "pair", "--task", TTS_TASK, "--judges", "1"),
        "--plan-only",
    )
    assert done.returncode == 0, done.stderr
    with _panel_process(cwd, str(run), "pair") as (base, links):
        return _every_sample(base, links["J1"])


def test_a_directory_copied_through_the_database_keeps_its_audio_and_can_be_judged(
    pg: Postgres, tts_run: Path, tmp_path: Path
) -> None:
    original = Path(shutil.copytree(tts_run, tmp_path / "venue" / tts_run.name))
    dsn = pg.new_database()
    into = _onsite(tmp_path, "copy-run", str(original), dsn, "--run", "tts")
    assert into.returncode == 0, into.stderr
    with PgRunStore(dsn, "tts") as store:
        assert {path for path, _ in store.media()} == set(_media(original))

    back = tmp_path / "judging-machine" / "the-run"
    out = _onsite(tmp_path, "copy-run", dsn, str(back), "--run", "tts")
    assert out.returncode == 0, out.stderr
    kept = _media(back)
    assert kept == _media(original) and len(kept) >= 6
    assert all(path in kept for path in _audio_paths(back))
    assert _judged(back, tmp_path / "judging-machine") == [200, 200]


def test_a_station_keeps_its_audio_in_the_run_and_a_copy_has_all_of_it(
    pg: Postgres, tts_run: Path, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    site = tmp_path / "site.toml"
    text = (tts_run.parent.parent / "site.toml").read_text(encoding="utf-8")
    site.write_text(
        text.replace('runs = "runs"', f'runs = "runs"\nstore = {json.dumps(dsn)}', 1),
        encoding="utf-8",
    )
    station = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site), "--station", "A"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "CI": "1", "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert station.returncode == 0, station.stderr
    station_dirs = [p.parent for p in tmp_path.rglob("media") if p.is_dir()]
    assert len(station_dirs) == 1
    on_station = _media(station_dirs[0])
    assert len(on_station) >= 6

    back = tmp_path / "copy"
    out = _onsite(tmp_path, "copy-run", dsn, str(back), "--run", "t")
    assert out.returncode == 0, out.stderr
    assert _media(back) == on_station
    assert sorted(_audio_paths(back)) == sorted(on_station)
    # The station's own directory gone (another machine), the copy is still judged.
    shutil.rmtree(station_dirs[0])
    assert _judged(back, tmp_path) == [200, 200]


def test_a_media_row_outside_media_is_refused_and_nothing_is_written(
    pg: Postgres, tts_run: Path, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    into = _onsite(tmp_path, "copy-run", str(tts_run), dsn, "--run", "odd")
    assert into.returncode == 0, into.stderr
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO onsite_media (run, path, data) VALUES ('odd', 'media/../../evil', 'x')"
        )
    out = _onsite(tmp_path, "copy-run", dsn, str(tmp_path / "copy"), "--run", "odd")
    assert out.returncode == 2
    assert "outside media/<task>/" in out.stderr and "media/../../evil" in out.stderr
    assert not (tmp_path / "evil").exists() and not (tmp_path / "copy").exists()
