"""Resume, report and status of a run of 100,000 completed items: seconds and peak memory.

The run is made the way a user makes one: `onsite run SITE` with the null system
(examples/systems/null_system.py, serve mode) over a text test set of N one-line
segments (no file to stage per item, so that making the run is quick). Then, each as a
subprocess, the way a user types them:

- `onsite run SITE`: a resume with nothing left to do (replays the run's state,
  rebuilds the outputs files, finds every item done, prints the leaderboard);
- `onsite report RUN_DIR`: the leaderboard, every item scored;
- `onsite status RUN_DIR`: where the run stands.

Each is timed (wall seconds) with its peak resident memory (ru_maxrss of the child).
Peer, measured in the same run: reading the journal once with orjson (`wc`-like: every
line parsed, nothing kept), the floor for anything that reads the journal.

Goal (issue 18): resume and report under 5 s each at 100,000 items on this machine,
memory not holding every record.

Run: `.venv/bin/python benchmarks/resume_scale.py [--items N]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson
from null_runs import REPO, null_site, onsite_cli


def make_site(items: int, work: Path, kind: str = "cws") -> Path:
    """A text test set of N one-line items and a site file running the null system on it.

    cws (default): word segmentation, scored in one pass; mt: translation, whose
    scorer (BLEU and NIST with every segment's breakdown) costs far more per item than
    reading the run does, so it measures the scorer more than the run store.
    """
    testset = work / "set"
    testset.mkdir()
    if kind == "mt":
        (testset / "source.txt").write_text("".join(f"s{i} w\n" for i in range(items)))
        (testset / "ref1.txt").write_text("".join(f"r{i} w\n" for i in range(items)))
    else:
        (testset / "gold.txt").write_text("".join(f"w{i} x\n" for i in range(items)))
    return null_site(work, kind)


def onsite(*args: str) -> tuple[float, int, str]:
    """Run `onsite ARGS` as a user does; wall seconds, peak RSS in bytes, its output."""
    wall, usage, out = onsite_cli(*args)
    return wall, usage.ru_maxrss * 1024, out


def read_floor(journal: Path) -> float:
    """Seconds to parse every line of the journal with orjson, keeping nothing."""
    t0 = time.perf_counter()
    with open(journal, "rb") as fh:
        for line in fh:
            orjson.loads(line)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--kind", choices=["cws", "mt"], default="cws")
    parser.add_argument(
        "--dir", default=str(REPO), help="where the test set and the run go (default: the repo)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=".onsite-scale-", dir=args.dir) as tmp:
        work = Path(tmp)
        site = make_site(args.items, work, args.kind)
        run_dir = work / "runs" / "bench"
        made, rss, _ = onsite("run", str(site))
        journal = run_dir / "journal.jsonl"
        size = journal.stat().st_size
        print(
            f"made the run: {args.items:,} items in {made:.1f} s "
            f"({made / args.items * 1e3:.3f} ms/item end to end); journal {size / 1e6:.1f} MB; "
            f"peak RSS {rss / 1e6:.0f} MB"
        )
        floor = read_floor(journal)
        print(f"peer: orjson over every journal line {floor:.2f} s")
        results = {}
        for name, cmd in (
            ("resume (nothing to do)", ("run", str(site))),
            ("report", ("report", str(run_dir))),
            ("status", ("status", str(run_dir))),
        ):
            wall, rss, out = onsite(*cmd)
            if name == "status":
                assert f"{args.items}/{args.items}" in out, out
            results[name] = wall
            print(
                f"{name}: {wall:.2f} s ({wall / floor:.1f}x the orjson read), "
                f"peak RSS {rss / 1e6:.0f} MB"
            )
    worst = max(results["resume (nothing to do)"], results["report"])
    print(
        f"resume and report of {args.items:,} items: worst {worst:.2f} s (goal < 5 s); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
