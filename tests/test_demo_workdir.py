"""The demo's sealed systems run from a workdir that holds nothing of the organizer's.

A hostile system, run sealed in the very workdir the demo gives its local systems,
walks everything it can read and looks for the demo's references (sentences of the
ASR set, MT references, a qrels line, ...), for a canary planted in its own run
directory, and for the organizer's repository (harness code, tests, archived runs).
It must find none of them.

The site here is not the demo's site file and names none of the demo's test sets, so
the controller masks none of them: the workdir alone must keep the references out.
When the demo's workdir was the repository root, the system read the ASR references
from the script that synthesized the test audio (examples/make_demo_asr.py).
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pytest

from harness import Controller, RunStore, load_site
from tests.helpers import REPO, make_testset, read_outputs, write_site

pytestmark = pytest.mark.sandbox

DEMO = REPO / "site_config" / "demo.toml"
DATA = REPO / "site_config" / "data"
SNOOP = REPO / "tests" / "systems" / "demo_snoop.py"


def _sealed_workdirs() -> list[Path]:
    """The workdirs of the demo's systems that run sealed on a local device."""
    site = load_site(DEMO)
    found = set()
    for name, system in site.config.systems.items():
        device = site.config.devices[system.device]
        if device.transport == "local" and getattr(device, "sandbox", True):
            found.add(site.workdir(name))
    return sorted(found)


def _lines(path: Path, count: int, skip_id: bool = False) -> list[str]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if skip_id:
        lines = [line.split(" ", 1)[1] for line in lines]
    return list(dict.fromkeys(lines))[:count]


def reference_needles() -> dict[str, str]:
    """Strings of the demo's references, each long enough to mean only that."""
    needles: dict[str, str] = {}
    for n, text in enumerate(_lines(DATA / "demo-asr" / "text", 9, skip_id=True)):
        needles[f"asr reference {n}"] = text
    for n, text in enumerate(_lines(DATA / "demo-mt" / "ref1.txt", 3)):
        needles[f"mt reference {n}"] = text
    needles["qrels"] = "\n".join(_lines(DATA / "demo-ir" / "qrels", 2))
    needles["textcat gold"] = "\n".join(_lines(DATA / "demo-textcat" / "gold.tsv", 2))
    needles["cws gold"] = _lines(DATA / "demo-cws" / "gold.txt", 1)[0]
    needles["ner gold"] = "\n".join(_lines(DATA / "demo-ner" / "gold.conll", 2))
    first_summary = _lines(DATA / "demo-summarization" / "ref1.jsonl", 1)[0]
    needles["summary reference"] = json.loads(first_summary)["text"]
    needles["kws slots"] = _lines(DATA / "demo-kws" / "slots.jsonl", 1)[0]
    needles["ocr truth"] = _lines(DATA / "demo-ocr" / "truth.jsonl", 1)[0]
    needles["face truth"] = _lines(DATA / "demo-faces" / "faces.jsonl", 1)[0]
    return needles


def test_the_demo_names_its_sealed_workdirs() -> None:
    # The parametrized test below is only as good as this list.
    assert _sealed_workdirs()


@pytest.mark.parametrize("workdir", _sealed_workdirs(), ids=lambda p: p.name)
def test_a_system_in_the_demo_workdir_finds_no_reference(tmp_path: Path, workdir: Path) -> None:
    canary_name = f"canary-{secrets.token_hex(8)}"
    canary_text = f"run directory canary {secrets.token_hex(16)}"
    needles = reference_needles() | {"run directory canary": canary_text}
    # The organizer's own tree: code, tests, the demo's site and data, archived runs.
    organizer = [
        REPO / "harness",
        REPO / "runners",
        REPO / "tests" / "test_demo.py",
        REPO / "site_config",
        REPO / "runs",
        REPO / "pyproject.toml",
        REPO / ".git",
    ]
    testset = make_testset(tmp_path / "set", [("u1", 1600, "the item's own reference")])
    site_path = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "snoop": {
                "command": [sys.executable, str(SNOOP)],
                "workdir": str(workdir),
                "env": {
                    "DEMO_SNOOP": json.dumps(
                        {
                            "needles": needles,
                            "names": [canary_name, "journal.jsonl"],
                            "paths": [str(p) for p in organizer],
                        }
                    )
                },
            }
        },
        # Walking and reading everything takes a while on a busy machine.
        budget={"seconds": 1800.0, "hang_seconds": 1800.0, "setup_seconds": 120.0},
    )
    site = load_site(site_path)
    store = RunStore(site.run_dir, "test", fsync_seconds=0)
    (site.run_dir / canary_name).write_text(canary_text, encoding="utf-8")
    try:
        results = Controller(site, store).run()
    finally:
        store.close()
    assert [r.failed for r in results] == [None]
    (row,) = read_outputs(site.run_dir, "asr", "snoop")
    assert row["verdict"] == "ok", row
    seen = row["output"]
    # The walk really covered the file system and read what was outside the OS.
    assert seen["files"] > 1000 and seen["scanned"] > 100, seen
    assert seen["hits"] == [], f"references readable in {workdir}: {seen['hits']}"
    assert seen["named"] == [], "the run directory's canary is visible"
    assert seen["paths"] == [], f"the organizer's repository is visible: {seen['paths']}"
