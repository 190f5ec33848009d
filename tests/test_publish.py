"""`onsite publish` and `onsite package` (issue 29, items 2 and 3) on a real small run.

Four systems of three teams on one ASR task with two tracks; every name the site file
gives them (systems, teams, devices, hosts, command words, descriptions) is distinctive,
and so is every system's output and the references, so a scan of every byte of every
written file tells what reached it.
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.leaderboard import leaderboard
from harness.publish.package import package
from harness.significance import IntervalSettings
from harness.store.run_model import RunModel
from tests.helpers import FAKE_SERVE, make_testset, onsite, run_site, write_site

ITEMS = [(f"u{i}", 1600 * i, "one two three fourteen") for i in range(1, 7)]
REFERENCE_WORD = "fourteen"  # in the references only: no system says it
RIGHTISH = {1600 * i: {"text": "one two three four"} for i in range(1, 7)}

# name -> (plan, the distinctive word its outputs hold, site keys)
SYSTEMS: dict[str, tuple[dict[int, Any], str, dict[str, Any]]] = {
    "quillfeather": (
        {**RIGHTISH, 1600: {"text": "one two three aardvarkish"}},
        "aardvarkish",
        {"participant": "team-zephyrine", "track": "closed", "run_type": "primary",
         "description": "the quillfeather recognizer, beam 1200"},
    ),
    "quillfeather-lite": (
        {**RIGHTISH, 3200: {"text": "one bumblewort"}},
        "bumblewort",
        {"participant": "team-zephyrine", "track": "closed", "run_type": "contrast"},
    ),
    "marrowbone": (
        {**RIGHTISH, 4800: {"text": "cassowaryx two"}},
        "cassowaryx",
        {"participant": "team-obsidianfly", "track": "open", "run_type": "primary",
         "declarations": "trained on the 2005 Gigaword corpus and on marrowbone's own "
                         "crawl, tuned like quillfeather"},
    ),
    "tinwhistle": (
        {**RIGHTISH, 6400: {"do": "crash"}, 1600: {"text": "dromedaryq"}},
        "dromedaryq",
        {"track": "open"},
    ),
}  # fmt: skip
DEVICE = "benchbox-kestrel"
UNUSED_DEVICE = "gpuhost-ocelot"
UNUSED_HOST = "nightjar.example.org"
COMMAND_WORD = "zebracorn-net"


def _names() -> list[str]:
    """Every word of the site file that must not be published."""
    names = [*SYSTEMS, DEVICE, UNUSED_DEVICE, UNUSED_HOST, COMMAND_WORD, "fake_system.py"]
    for _, _, keys in SYSTEMS.values():
        names += [keys[k] for k in ("participant", "description") if k in keys]
    return names


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("publish")
    tmp.chmod(0o755)  # a sealed system reads its test set as another user
    root = make_testset(tmp / "set", ITEMS, conditions=True)
    systems = {
        name: {
            "command": [*FAKE_SERVE, "--model", COMMAND_WORD],
            "env": {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})},
            "device": DEVICE,
            **keys,
        }
        for name, (plan, _, keys) in SYSTEMS.items()
    }
    site = write_site(tmp / "site.toml", root, systems, task_keys={"tracks": ["closed", "open"]})
    text = site.read_text("utf-8").replace("[devices.local]", f"[devices.{DEVICE}]")
    text = text.replace('runs = "runs"', 'runs = "runs"\nrelease_after = "2099-12-31"')
    # A device no system uses still names a host: it must not be published either.
    text += (
        f'\n[devices.{UNUSED_DEVICE}]\ntransport = "command"\n'
        f'command = ["ssh", "-T", "{UNUSED_HOST}"]\n'
    )
    site.write_text(text, "utf-8")
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None] * 4, results
    return run_dir


def _scan(root: Path, words: list[str]) -> dict[str, list[str]]:
    """word -> the files under root whose bytes (or names) hold it, case-insensitive."""
    found: dict[str, list[str]] = {}
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for word in words:
        needle = word.lower().encode("utf-8")
        for path in files:
            if needle in path.read_bytes().lower() or needle in str(path).lower().encode():
                found.setdefault(word, []).append(str(path.relative_to(root)))
    return found


def _key(out: Path) -> dict[str, Any]:
    key = out.with_name(out.name + ".key.json")
    return dict(json.loads(key.read_text("utf-8")))


def _labels(out: Path) -> dict[str, str]:
    return {e["system"]: e["label"] for e in _key(out)["systems"]}


def test_publish_holds_no_name_of_the_site_file(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = onsite("publish", str(run), "-o", str(out), "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    assert "seed 7" in proc.stdout and "results.key.json" in proc.stdout
    assert _scan(out, _names()) == {}
    # Nor any system's output, nor the references.
    outputs = [word for _, word, _ in SYSTEMS.values()]
    assert _scan(out, [*outputs, REFERENCE_WORD]) == {}
    assert {p.name for p in out.iterdir()} == {"index.html", "results.csv", "results.json",
                                              "figures"}  # fmt: skip
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == ["asr-closed.svg", "asr-open.svg"]
    assert all(b" id=" not in p.read_bytes() for p in (out / "figures").iterdir())
    # The key is beside the directory, never inside it, and names every system and team.
    key = _key(out)
    assert key["seed"] == 7 and key["order"] == "seeded"
    assert {e["system"] for e in key["systems"]} == set(SYSTEMS)
    teams = {e["system"]: e["participant"] for e in key["systems"]}
    assert teams["quillfeather-lite"] == "team-zephyrine" and teams["tinwhistle"] == "tinwhistle"
    assert sorted(e["number"] for e in key["systems"]) == [1, 2, 3, 4]
    # Tracks, run types, tied ranks and intervals are kept; the declaration is kept with
    # the names in it replaced.
    data = json.loads((out / "results.json").read_text("utf-8"))
    assert "seed" not in json.dumps(data["numbering"]) and data["numbering"] == "random"
    tables = {t["track"]: t for t in data["tables"]}
    assert set(tables) == {"closed", "open"}
    labels = _labels(out)
    closed = {r["label"]: r for r in tables["closed"]["rows"]}
    assert set(closed) == {labels["quillfeather"], labels["quillfeather-lite"]}
    assert closed[labels["quillfeather"]]["run_type"] == "primary"
    opened = {r["label"]: r for r in tables["open"]["rows"]}
    declared = opened[labels["marrowbone"]]["declarations"]
    assert declared == (
        f"trained on the 2005 Gigaword corpus and on {labels['marrowbone']}'s own crawl, "
        f"tuned like {labels['quillfeather']}"
    )
    # The kind's secondary figures and its headline per condition of the test set.
    best = closed[labels["quillfeather"]]
    assert best["breakdown"] == [["clean", pytest.approx(0.25)]] and best["detail"]
    assert best["set_budget_met"] is None  # a per-item budget
    crashed = opened[labels["tinwhistle"]]
    assert crashed["crashes"] == 1 and crashed["completed"] == 6
    for row in [*closed.values(), *opened.values()]:
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
        assert row["rank"] in ("1", "2", "1-2")
    html = (out / "index.html").read_text("utf-8")
    assert labels["marrowbone"] in html and "closed track" in html


def test_the_numbering_is_stable_for_a_seed_and_by_rank_on_request(
    run: Path, tmp_path: Path
) -> None:
    drawn = []
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        proc = onsite("publish", str(run), "-o", str(tmp_path / name), "--seed", seed)
        assert proc.returncode == 0, proc.stderr
        drawn.append(_labels(tmp_path / name))
    assert drawn[0] == drawn[1] and drawn[0] != drawn[2]
    # The default seed is fixed and printed.
    proc = onsite("publish", str(run), "-o", str(tmp_path / "d"))
    assert proc.returncode == 0 and "seed 2005" in proc.stdout
    proc = onsite("publish", str(run), "-o", str(tmp_path / "e"), "--seed", "2005")
    assert _labels(tmp_path / "d") == _labels(tmp_path / "e")
    # By rank: best first on the task (both tracks together), lowest WER first.
    proc = onsite("publish", str(run), "-o", str(tmp_path / "r"), "--order", "rank")
    assert proc.returncode == 0, proc.stderr
    model = RunModel.open(run)
    wer = {r.system: r.score for r in leaderboard(model) if r.score is not None}
    assert set(wer) == set(SYSTEMS)
    ranked = _labels(tmp_path / "r")
    by_number = sorted(SYSTEMS, key=lambda s: int(ranked[s].split()[1]))
    assert [wer[s] for s in by_number] == sorted(wer[s] for s in by_number)
    assert ranked[min(wer, key=wer.__getitem__)] == "System 1"
    # A directory that is not empty is refused; nothing is written over.
    proc = onsite("publish", str(run), "-o", str(tmp_path / "r"))
    assert proc.returncode == 2 and "not empty" in proc.stderr


def test_a_track_filter_keeps_its_systems_and_their_numbers(run: Path, tmp_path: Path) -> None:
    every, track = tmp_path / "every", tmp_path / "open"
    assert onsite("publish", str(run), "-o", str(every)).returncode == 0
    proc = onsite("publish", str(run), "-o", str(track), "--track", "open")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((track / "results.json").read_text("utf-8"))
    assert [t["track"] for t in data["tables"]] == ["open"] and data["track"] == "open"
    labels = _labels(every)
    assert _labels(track) == labels  # a filter never renumbers
    shown = {r["label"] for r in data["tables"][0]["rows"]}
    assert shown == {labels["marrowbone"], labels["tinwhistle"]}
    assert {r["rank"] for r in data["tables"][0]["rows"]} <= {"1", "2", "1-2"}
    proc = onsite("publish", str(run), "-o", str(tmp_path / "x"), "--track", "manual")
    assert proc.returncode == 2 and "use one of: closed, open" in proc.stderr


def test_a_package_holds_one_participants_own_results(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "zephyrine"
    proc = onsite("package", str(run), "--participant", "team-zephyrine", "-o", str(out),
                  "--seed", "7")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "embargoed until after 2099-12-31" in proc.stdout
    # Their own outputs, in their formats, with verdicts, times and scores.
    own = [SYSTEMS["quillfeather"][1], SYSTEMS["quillfeather-lite"][1]]
    assert set(_scan(out, own)) == set(own)
    lines = (out / "quillfeather" / "asr" / "outputs.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["verdict"] for line in lines] == ["ok"] * 6
    assert (out / "quillfeather" / "asr" / "quillfeather.trn").exists()
    scores = json.loads((out / "quillfeather" / "asr" / "scores.json").read_text("utf-8"))
    assert scores["row"]["system"] == "quillfeather" and len(scores["items"]) == 6
    assert scores["items"][0]["score"] == pytest.approx(0.25)  # one word of four wrong
    assert all(i["seconds"] is not None for i in scores["items"])
    # Their numbers are those of the published tables with the same seed.
    published = tmp_path / "published"
    assert onsite("publish", str(run), "-o", str(published), "--seed", "7").returncode == 0
    labels = _labels(published)
    numbers = json.loads((out / "numbers.json").read_text("utf-8"))
    assert {s["system"]: s["published_as"] for s in numbers["systems"]} == {
        "quillfeather": labels["quillfeather"],
        "quillfeather-lite": labels["quillfeather-lite"],
    }
    assert (out / "tables" / "results.json").read_bytes() == (
        published / "results.json"
    ).read_bytes()
    # Nothing of the others: no output of theirs, no name of theirs, no reference.
    others = ["marrowbone", "tinwhistle", "team-obsidianfly"]
    theirs = [SYSTEMS[s][1] for s in ("marrowbone", "tinwhistle")]
    assert _scan(out, [*others, *theirs, REFERENCE_WORD]) == {}
    assert not (out / "references").exists() and not (out / "inputs").exists()


def test_an_unknown_participant_is_refused_with_the_list(run: Path, tmp_path: Path) -> None:
    proc = onsite("package", str(run), "--participant", "team-nobody", "-o", str(tmp_path / "p"))
    assert proc.returncode == 2
    assert "use one of: team-obsidianfly, team-zephyrine, tinwhistle" in proc.stderr
    assert not (tmp_path / "p").exists()
    proc = onsite("package", str(run), "--participant", "quillfeather", "-o", str(tmp_path / "q"))
    assert proc.returncode == 2
    assert "'quillfeather' is a system of 'team-zephyrine'" in proc.stderr
    # A system with no participant is its own.
    proc = onsite("package", str(run), "--participant", "tinwhistle", "-o", str(tmp_path / "t"))
    assert proc.returncode == 0, proc.stderr
    assert _scan(tmp_path / "t", ["dromedaryq"]) and not _scan(tmp_path / "t", ["cassowaryx"])


def test_references_after_the_embargo_and_on_the_operators_word(run: Path, tmp_path: Path) -> None:
    model = RunModel.open(run)
    settings = IntervalSettings(samples=200)
    # The last day of the embargo is still embargoed; the day after, the data is there.
    kept = package(model, "team-obsidianfly", tmp_path / "before", settings,
                   today=datetime.date(2099, 12, 31))  # fmt: skip
    assert not kept.references and _scan(tmp_path / "before", [REFERENCE_WORD]) == {}
    given = package(model, "team-obsidianfly", tmp_path / "after", settings,
                    today=datetime.date(2100, 1, 1))  # fmt: skip
    assert given.references and "release_after = 2099-12-31" in given.why
    refs = (tmp_path / "after" / "references" / "asr" / "references.trn").read_text("utf-8")
    assert refs.count(REFERENCE_WORD) == 6
    assert sorted(p.name for p in (tmp_path / "after" / "inputs" / "asr").iterdir()) == sorted(
        ["items.jsonl", *(f"u{i}.wav" for i in range(1, 7))]
    )
    # Still none of the others' outputs.
    others = [SYSTEMS[s][1] for s in ("quillfeather", "quillfeather-lite", "tinwhistle")]
    assert _scan(tmp_path / "after", others) == {}
    # A release by the embargo is the site's rule, not an operator's act: not journaled.
    assert b"references_released" not in (run / "journal.jsonl").read_bytes()
    # The same through the command, on a run whose site file's embargo has passed.
    past = tmp_path / "past"
    shutil.copytree(run, past)
    site_copy = past / "site.toml"
    site_copy.write_text(site_copy.read_text("utf-8").replace("2099-12-31", "2001-01-01"), "utf-8")
    proc = onsite("package", str(past), "--participant", "team-obsidianfly", "-o",
                  str(tmp_path / "released"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "included: the embargo ended (release_after = 2001-01-01)" in proc.stdout
    assert REFERENCE_WORD in _scan(tmp_path / "released", [REFERENCE_WORD])
    assert b"references_released" not in (past / "journal.jsonl").read_bytes()

    # Before the embargo, the operator's --with-references: journaled in the run.
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    out = tmp_path / "early"
    proc = onsite("package", str(copy), "--participant", "team-obsidianfly", "-o", str(out),
                  "--with-references")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "given by the operator" in proc.stdout and "references_released" in proc.stdout
    assert (out / "references" / "asr" / "references.trn").read_text("utf-8").count(
        REFERENCE_WORD
    ) == 6
    records = [json.loads(line) for line in (copy / "journal.jsonl").read_text().splitlines()]
    released = [r for r in records if r["event"] == "references_released"]
    assert len(released) == 1
    assert released[0]["participant"] == "team-obsidianfly" and released[0]["tasks"] == ["asr"]
    assert released[0]["release_after"] == "2099-12-31" and released[0]["actor"] == "operator"
    # The run still reads as before: the new record changes no score.
    before = {r.system: r.score for r in leaderboard(run)}
    after = {r.system: r.score for r in leaderboard(copy)}
    assert before == after


def test_a_leak_is_refused_and_nothing_is_written(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan is the last step: a name that reached a file stops the publication."""
    from harness.publish import write

    original = write.write_published

    def leaky(published: Any, out: Path) -> list[Path]:
        files = original(published, out)
        (out / "notes.txt").write_text("run by Quillfeather on benchbox-kestrel\n", "utf-8")
        return files

    monkeypatch.setattr(write, "write_published", leaky)
    with pytest.raises(InputError) as caught:
        write.publish(RunModel.open(run), tmp_path / "leaky", IntervalSettings(samples=100))
    text = str(caught.value)
    assert "quillfeather" in text.lower() and DEVICE in text and "notes.txt" in text
    assert not (tmp_path / "leaky").exists()
    assert not list(tmp_path.glob(".leaky*"))


def site_words(run_dir: Path) -> list[str]:
    """The names a run's site file gives (systems, participants, devices, descriptions,
    command words, hosts), three characters or more, that are not a task's name."""
    site = RunModel.open(run_dir).site
    cfg = site.config
    words = [*cfg.systems, *cfg.devices]
    for system in cfg.systems.values():
        words += [system.participant or "", system.description, *system.command]
    for device in cfg.devices.values():
        given = device.model_dump(exclude_unset=True)
        words += [str(given.get(k, "")) for k in ("host", "user", "port")]
        words += [str(w) for w in given.get("command", [])]
    words = [w.rsplit("/", 1)[-1] for w in words]
    return sorted({w for w in words if len(w) >= 3 and w not in cfg.tasks})


def publish_names_nothing(run_dir: Path, out: Path) -> None:
    """`onsite publish` of a run (the demo's, from tests/test_demo.py) holds none of its
    site file's names in any byte of any file."""
    proc = onsite("publish", str(run_dir), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    words = site_words(run_dir)
    assert "sphinx" in words or len(words) > 3
    assert _scan(out, words) == {}


def test_the_helper_finds_every_name_of_this_run(run: Path, tmp_path: Path) -> None:
    words = site_words(run)
    assert {*SYSTEMS, DEVICE, UNUSED_DEVICE, UNUSED_HOST, COMMAND_WORD} <= set(words)
    publish_names_nothing(run, tmp_path / "out")
