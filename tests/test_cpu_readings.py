"""A system's CPU time per item: read from /proc at most once per clock tick, and an item's
figure is its own CPU time or None, never a share of other items'."""

from __future__ import annotations

from pathlib import Path

from runners.serve import StreamServeRunner
from tests.helpers import FAKE_SERVE, make_testset, read_outputs, run_site, write_site

TICK = StreamServeRunner.SAMPLE_SECONDS


def test_each_item_gets_its_own_cpu_time_or_none(tmp_path: Path, plan_env) -> None:
    # Frames identify the items to the fake system; the plan says what each does.
    burn_first, sleep, burn_after_fast = 1600, 1700, 1800
    fast = [1900 + n for n in range(30)]
    rows = [("a-burn", burn_first, "x"), ("b-sleep", sleep, "x")]
    rows += [(f"c{n:02d}-fast", frames, "x") for n, frames in enumerate(fast)]
    rows += [("d-burn", burn_after_fast, "x")]
    testset = make_testset(tmp_path / "set", rows)
    plan = {
        burn_first: {"burn": 0.3, "text": "x"},
        sleep: {"delay": 0.3, "text": "x"},
        burn_after_fast: {"burn": 0.3, "text": "x"},
        **{frames: {"text": "x"} for frames in fast},
    }
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
    )
    run_dir, _ = run_site(site)
    rows_out = {r["id"]: r for r in read_outputs(run_dir, "asr", "fake")}
    assert [r["verdict"] for r in rows_out.values()] == ["ok"] * len(rows)
    cpu = {item: row["cpu_seconds"] for item, row in rows_out.items()}
    # A busy item is charged its busy time (the kernel counts in ticks of 10 ms), a
    # sleeping one next to nothing, whether or not fast items came just before it.
    for item in ("a-burn", "d-burn"):
        assert cpu[item] is not None and 0.3 - 2 * TICK <= cpu[item] <= 0.3 + 0.15, cpu
    assert cpu["b-sleep"] is not None and cpu["b-sleep"] <= 0.05, cpu
    # Items shorter than a tick: no figure, or one no larger than their own time can read
    # as (a tick); a figure spanning several of them would be a share of others' time.
    for item, value in cpu.items():
        if item.endswith("-fast"):
            assert value is None or value <= TICK + 0.005, cpu
    # The readings were spaced out: most fast items have none.
    assert sum(1 for item, v in cpu.items() if item.endswith("-fast") and v is None) >= 15, cpu
