"""Jobs on different devices run at the same time; stop() leaves in-flight items for resume."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from harness import Controller, RunStore, load_site, read_journal
from tests.helpers import FAKE_SERVE, make_testset, read_outputs, write_site


def two_device_site(tmp_path: Path, plan_env, delay: float) -> Path:
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1600 + i, "x") for i in range(4)])
    env = plan_env({1600 + i: {"delay": delay, "text": "x"} for i in range(4)})
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "one": {"command": FAKE_SERVE, "env": env},
            "two": {"command": FAKE_SERVE, "env": env, "device": "other"},
        },
    )
    with open(site, "a", encoding="utf-8") as fh:
        fh.write('\n[devices.other]\ntransport = "local"\n')
    return site


def test_jobs_on_different_devices_overlap(tmp_path: Path, plan_env) -> None:
    site = load_site(two_device_site(tmp_path, plan_env, 0.2))
    store = RunStore(site.run_dir, "t", 0)
    try:
        results = Controller(site, store).run()
    finally:
        store.close()
    assert [(r.system, r.failed) for r in results] == [("one", None), ("two", None)]
    spans = {
        system: [
            (r["sent"], r["done"])
            for r in read_journal(site.run_dir / "journal.jsonl")
            if r["event"] == "completed" and r["system"] == system
        ]
        for system in ("one", "two")
    }
    overlapping = any(a0 < b1 and b0 < a1 for a0, a1 in spans["one"] for b0, b1 in spans["two"])
    assert overlapping, "the two devices' systems never worked at the same time"
    for system in ("one", "two"):
        assert len(read_outputs(site.run_dir, "asr", system)) == 4


def test_stop_discards_in_flight_items_and_resume_finishes(tmp_path: Path, plan_env) -> None:
    site = load_site(two_device_site(tmp_path, plan_env, 0.5))
    store = RunStore(site.run_dir, "t", 0)
    controller = Controller(site, store)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            controller.run()
        except BaseException as exc:  # the stop surfaces as KeyboardInterrupt
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    journal = site.run_dir / "journal.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        r["event"] == "completed" for r in read_journal(journal)
    ):
        time.sleep(0.02)
    controller.stop()
    worker.join(30)
    store.close()
    assert not worker.is_alive()
    assert errors and isinstance(errors[0], KeyboardInterrupt)
    records = list(read_journal(journal))
    assert not any(r["event"] == "completed" and r["verdict"] != "ok" for r in records)

    store = RunStore(site.run_dir, "t2", 0)
    try:
        Controller(site, store).run()
    finally:
        store.close()
    for system in ("one", "two"):
        rows = read_outputs(site.run_dir, "asr", system)
        assert sorted(r["id"] for r in rows) == [f"u{i}" for i in range(4)]
        assert all(r["verdict"] == "ok" for r in rows)
    assert any(
        r["attempt"] == 2 for s in ("one", "two") for r in read_outputs(site.run_dir, "asr", s)
    )
