"""The tts task kind end to end: espeak-ng speaks, the controller checks and keeps the audio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import soundfile

from harness import SiteError, TestSetError, leaderboard, load_site, task_kind
from tests.helpers import read_outputs, run_site, write_site

ESPEAK = [sys.executable, "-m", "examples.systems.espeak_tts"]
REPO = Path(__file__).resolve().parents[1]


def tts_testset(root: Path) -> Path:
    """Three sentences, one of them a SUS with two blanks, categories for two."""
    root.mkdir(parents=True)
    (root / "text").write_text(
        "s1 The green table sings a careful song\ns2 Call me at 9 pm\ns3 Good morning\n",
        encoding="utf-8",
    )
    (root / "sus.jsonl").write_text(
        json.dumps({"id": "s1", "blanks": [1, 4], "answers": [["green"], ["careful"]]}) + "\n",
        encoding="utf-8",
    )
    (root / "categories.tsv").write_text("s2\tnumbers\n", encoding="utf-8")
    return root


def tts_site(
    tmp_path: Path, systems: dict[str, list[str]], rate: int = 16000, sealed: bool = False
) -> Path:
    root = tts_testset(tmp_path / "set")
    return write_site(
        tmp_path / "site.toml",
        root,
        {name: {"command": cmd, "workdir": str(REPO)} for name, cmd in systems.items()},
        budget={"chars_per_second": 2.0, "hang_seconds": 30.0},
        task="tts",
        task_keys={"kind": "tts", "sample_rates": [rate]},
        device={"transport": "local"} if sealed else {"transport": "local", "sandbox": False},
    )


def test_tts_task_keeps_valid_audio_under_anonymous_names(tmp_path: Path) -> None:
    site = tts_site(tmp_path, {"slow": [*ESPEAK, "--speed", "120"], "fast": ESPEAK})
    run_dir, _ = run_site(site)
    for system in ("slow", "fast"):
        rows = read_outputs(run_dir, "tts", system)
        assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
        for row in rows:
            audio = row["output"]["audio"]
            assert audio.startswith("media/tts/") and system not in audio
            info = soundfile.info(str(run_dir / audio))
            assert info.channels == 1 and info.samplerate == 16000
            assert row["output"]["audio_seconds"] == pytest.approx(info.frames / 16000)
            assert row["speed"] > 0  # characters per second
    records = [json.loads(x) for x in (run_dir / "journal.jsonl").read_text().splitlines()]
    done = [r for r in records if r["event"] == "completed"]
    assert all(r["rtf"] == pytest.approx(r["seconds"] / r["output"]["audio_seconds"]) for r in done)
    # Slower speech lasts longer.
    slow = sum(r["output"]["audio_seconds"] for r in read_outputs(run_dir, "tts", "slow"))
    fast = sum(r["output"]["audio_seconds"] for r in read_outputs(run_dir, "tts", "fast"))
    assert slow > fast
    rows = {r.system: r.to_dict() for r in leaderboard(load_site(site).run_dir)}
    assert rows["slow"]["audio_rate"] == 1.0 and rows["slow"]["speed_unit"] == "chars_per_second"


def test_tts_task_sealed_in_the_sandbox(tmp_path: Path) -> None:
    """A sealed system writes its audio at /onsite/out/...; the controller reads it back."""
    site = tts_site(tmp_path, {"sealed": ESPEAK}, sealed=True)
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    rows = read_outputs(run_dir, "tts", "sealed")
    assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
    for row in rows:
        info = soundfile.info(str(run_dir / row["output"]["audio"]))
        assert info.channels == 1 and info.samplerate == 16000
    records = [json.loads(x) for x in (run_dir / "journal.jsonl").read_text().splitlines()]
    # The system was told a path inside its sandbox, never one in the run directory.
    log = (run_dir / "logs" / "tts" / "sealed.log").read_text(encoding="utf-8", errors="replace")
    assert str(run_dir) not in log
    assert all(
        r["output"]["audio"].startswith("media/tts/") for r in records if r["event"] == "completed"
    )


@pytest.mark.parametrize("sealed", [False, True])
def test_tts_task_in_exec_mode(tmp_path: Path, sealed: bool) -> None:
    """A process per item: the runner puts audio_out in the item's input file."""
    site = tts_site(tmp_path, {"batch": [*ESPEAK, "--exec", "{input}", "{output}"]}, sealed=sealed)
    text = site.read_text(encoding="utf-8").replace(
        "[systems.batch]\n", '[systems.batch]\nmode = "exec"\n'
    )
    site.write_text(text, encoding="utf-8")
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    rows = read_outputs(run_dir, "tts", "batch")
    assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
    for row in rows:
        info = soundfile.info(str(run_dir / row["output"]["audio"]))
        assert info.channels == 1 and info.samplerate == 16000
    assert not list((run_dir / "stage").rglob("*.wav"))


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("stereo", "mono"),
        ("rate", "8000 Hz"),
        ("garbage", "not a readable audio file"),
        ("empty", "empty"),
        ("none", "no audio file"),
    ],
)
def test_bad_audio_is_invalid_output(tmp_path: Path, fault: str, reason: str) -> None:
    site = tts_site(tmp_path, {"bad": [*ESPEAK, "--fault", fault]})
    run_dir, _ = run_site(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "bad")
    assert row["verdict"] == "invalid_output"
    records = [json.loads(x) for x in (run_dir / "journal.jsonl").read_text().splitlines()]
    [done] = [r for r in records if r["event"] == "completed"]
    assert reason in done["message"]
    assert not list((run_dir / "media").glob("**/*.wav")) if (run_dir / "media").exists() else True


def test_answer_naming_another_file_is_refused(tmp_path: Path) -> None:
    """A system may not make the controller copy some other file into the run."""
    script = tmp_path / "liar.py"
    script.write_text(
        "import json,sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['op'] == 'hello': print(json.dumps({'op': 'ready', 'name': 'x'}), flush=True)\n"
        "    if m['op'] == 'item':\n"
        "        print(json.dumps({'op': 'result', 'id': m['id'],"
        " 'output': {'audio': '/etc/passwd'}}), flush=True)\n"
    )
    site = tts_site(tmp_path, {"liar": [sys.executable, str(script)]})
    run_dir, _ = run_site(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "liar")
    assert row["verdict"] == "invalid_output"


def test_symlinked_audio_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "linker.py"
    secret = tmp_path / "secret.wav"
    soundfile.write(str(secret), [0.0] * 1600, 16000)
    script.write_text(
        "import json,os,sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['op'] == 'hello': print(json.dumps({'op': 'ready', 'name': 'x'}), flush=True)\n"
        "    if m['op'] == 'item':\n"
        f"        os.symlink({str(secret)!r}, m['input']['audio_out'])\n"
        "        print(json.dumps({'op': 'result', 'id': m['id'],"
        " 'output': {'audio': m['input']['audio_out']}}), flush=True)\n"
    )
    site = tts_site(tmp_path, {"linker": [sys.executable, str(script)]})
    run_dir, _ = run_site(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "linker")
    assert row["verdict"] == "invalid_output"


def test_tts_testset_errors_name_the_line(tmp_path: Path) -> None:
    root = tts_testset(tmp_path / "set")
    (root / "sus.jsonl").write_text('{"id": "s2", "blanks": [40]}\n', encoding="utf-8")
    site = load_site(tts_site(tmp_path / "x", {"a": ESPEAK}))
    with pytest.raises(TestSetError) as err:
        task_kind("tts").load(root, site.config.tasks["tts"])
    message = str(err.value)
    # "Call me at 9 pm" has five words: positions 0..4.
    assert "sus.jsonl:1:" in message and "token positions 0..4" in message
    assert "Fix: write e.g." in message


def test_site_accepts_kind_tts(tmp_path: Path) -> None:
    site = load_site(tts_site(tmp_path, {"a": ESPEAK}))
    assert site.config.tasks["tts"].kind == "tts"
    testset = task_kind("tts").load(site.testset_path("tts"), site.config.tasks["tts"])
    assert [i.condition for i in testset.items] == [None, "numbers", None]
    assert testset.items[0].reference.parts()[1] is None


def test_tts_on_a_serial_device_is_refused_with_the_reason(tmp_path: Path) -> None:
    """The device protocol cannot carry a file upstream: a tts system on a serial line
    is a site error (SSH devices fetch the audio back: tests/test_ssh_tts.py)."""
    site = tts_site(tmp_path, {"board": ESPEAK})
    text = site.read_text(encoding="utf-8").replace(
        'transport = "local"\nsandbox = false',
        'transport = "serial"\nport = "/dev/ttyUSB0"',
    )
    site.write_text(text, encoding="utf-8")
    with pytest.raises(SiteError) as err:
        load_site(site)
    [problem] = err.value.problems
    assert "local and ssh devices only" in problem.message
    assert "local or ssh device" in problem.fix
