"""What the live console costs a run: null items with and without it, in the same run.

Peer: the controller alone (as `onsite run` without --console) over N null items
(examples/systems/null_system.py). Measured: the same controller serving the console
from a thread of its process (as `onsite run --console`), with a client in another
process following the event stream (/api/events) throughout, as a browser would.
Rounds alternate the two so that load from elsewhere on the machine hits both alike.

Figures: items/s of each, from the first dispatch to the last completion on the
controller's clock, and the slowdown (goal: at most 10%); and the CPU seconds the
controller's process used per item (console thread included), which a machine loaded
by others disturbs less than wall time.

Run: `.venv/bin/python benchmarks/console_overhead.py [--items N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from harness_overhead import make_site  # noqa: E402

from harness import Controller, RunStore, load_site, read_journal  # noqa: E402
from harness.console.app import ConsoleApp  # noqa: E402
from harness.console.auth import Tokens  # noqa: E402
from harness.console.server import bind, serve_in_background  # noqa: E402
from harness.console.view import RunView  # noqa: E402

# A client in its own process, counting the status events it receives.
FOLLOWER = """
import sys, urllib.request
events = 0
with urllib.request.urlopen(sys.argv[1] + "/api/events", timeout=600) as stream:
    for line in stream:
        if line.startswith(b"event: status"):
            events += 1
            print(events, flush=True)
"""


def items_per_second(run_dir: Path) -> float:
    """Items over the span from the first dispatch to the last completion."""
    records = list(read_journal(run_dir / "journal.jsonl"))
    sent = [r["mono"] for r in records if r["event"] == "dispatched"]
    done = [r["mono"] for r in records if r["event"] == "completed"]
    assert {r["verdict"] for r in records if r["event"] == "completed"} == {"ok"}
    return len(done) / (max(done) - min(sent))


def run(site_path: Path, runs: Path, console: bool) -> tuple[float, float, int]:
    """One run; returns items/s, CPU seconds of this process per item, and how many
    status events the follower got."""
    site = load_site(site_path)
    run_dir = runs / site.name
    store = RunStore(run_dir, "bench", site.config.site.fsync_seconds)
    controller = Controller(site, store)
    controller.load_testsets()
    background = follower = None
    if console:
        sock = bind("127.0.0.1", 0)
        view = RunView(
            run_dir, site, controller=controller.is_running, testsets=controller.testsets
        )
        app = ConsoleApp(view, Tokens("bench", None), controls=controller)
        background = serve_in_background(app, sock)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        follower = subprocess.Popen(
            [sys.executable, "-c", FOLLOWER, url], stdout=subprocess.PIPE, text=True
        )
        assert follower.stdout is not None
        follower.stdout.readline()  # following before the first item is sent
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    try:
        controller.run()
    finally:
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu_seconds = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
        events = 0
        if background is not None:
            time.sleep(0.5)  # the stream's last events
            background.stop()
        if follower is not None:
            out, _ = follower.communicate(timeout=30)
            events = 1 + len(out.split())
        store.close()
    rate = items_per_second(run_dir)
    items = sum(1 for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed")
    return rate, cpu_seconds / items, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="items per run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each")
    args = parser.parse_args()
    alone, served, ratios, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="onsite-bench-console-") as tmp:
        work = Path(tmp)
        site_path = make_site(args.items, work)
        # Warm-up, not measured: loads the compiled scorers the console's first status uses.
        (work / "warm").mkdir()
        run(make_site(20, work / "warm"), work / "warm" / "runs", console=True)
        for round_no in range(1, args.rounds + 1):
            bare, bare_cpu, _ = run(site_path, work / f"alone{round_no}", console=False)
            live, live_cpu, events = run(site_path, work / f"console{round_no}", console=True)
            alone.append(bare)
            served.append(live)
            ratios.append(bare / live)
            cpu_ratios.append(live_cpu / bare_cpu)
            print(
                f"round {round_no}: without console {bare:,.0f} items/s, "
                f"{1e6 * bare_cpu:.0f} us CPU/item; with console and an event-stream client "
                f"{live:,.0f} items/s, {1e6 * live_cpu:.0f} us CPU/item ({events} status "
                f"events); slowdown {100 * (bare / live - 1):+.1f}%, "
                f"CPU {100 * (live_cpu / bare_cpu - 1):+.1f}%"
            )
    print(
        f"console overhead (median of rounds): {np.median(alone):,.0f} -> "
        f"{np.median(served):,.0f} items/s, slowdown {100 * (np.median(ratios) - 1):+.1f}% "
        f"(goal <= 10%); controller CPU per item {100 * (np.median(cpu_ratios) - 1):+.1f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
