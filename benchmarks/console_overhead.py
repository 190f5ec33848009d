"""What console viewers do to a run's recorded times: 200 event-stream viewers against none.

Harness: `onsite run SITE --console 127.0.0.1:0` started as a user starts it (a
subprocess of `python -m harness.cli`, output not a terminal), on a local system that
sleeps SLEEP ms per item (written here; the null system's protocol loop plus a sleep)
and says on its stderr, into the run's log, how long each sleep really took.

Peer, in the same benchmark run: the same run with its console and no viewer. Measured:
the same run while 200 viewers follow the event stream (/api/events) and 20 more poll
/api/status and /api/jobs/... in turn every half second on a kept-alive connection, all
from a helper process on this machine, connected before the measured items. Rounds
alternate the two (and a run without --console) so that load from elsewhere hits them
alike. The viewers' process stands for browsers on other machines (`--viewers
elsewhere`, the default: it runs under SCHED_IDLE, taking no CPU the controller could
use); `--viewers here` runs it at the ordinary priority, as if the 200 browsers ran on
the controller's own machine.

Figures, over the items dispatched after the viewers were all connected:
- recorded-time overhead: the journal's `completed.seconds` minus the system's own
  sleep for that item (its anonymous id pairs them), p50 and p99; goal: the viewers
  move p99 by at most 1 ms;
- the controller's CPU per item: utime + stime of the `onsite run` process (all its
  threads, not its children) from /proc, sampled across the same span, divided by the
  items; goal: the viewers change it by less than 5%;
- the CPU the console process and the viewers' process used.

Run: `.venv/bin/python benchmarks/console_overhead.py [--items N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from null_runs import REPO, bench_site

# The participant: the null system's loop, sleeping SLEEP seconds per item, and saying on
# stderr (the run's log) how long the sleep really took.
SLEEPER = r"""
import json, sys, time
sleep = float(sys.argv[1])
for line in sys.stdin:
    m = json.loads(line)
    op = m.get("op")
    if op == "item":
        t0 = time.perf_counter()
        time.sleep(sleep)
        slept = time.perf_counter() - t0
        sys.stderr.write("slept %s %.9f\n" % (m["id"], slept))
        sys.stderr.flush()
        reply = {"op": "result", "id": m["id"], "output": {"text": "w"}}
        sys.stdout.write(json.dumps(reply) + "\n")
    elif op == "hello":
        sys.stdout.write('{"op": "ready", "name": "sleeper", "version": "1"}\n')
    elif op == "bye":
        break
    sys.stdout.flush()
"""

# The viewers, in one process of their own: STREAMS event streams held open and POLLERS
# clients polling the status and the job's page data, until the console closes.
VIEWERS = r"""
import asyncio, json, os, resource, sys, time
port, streams, pollers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if sys.argv[4] == "idle":
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
events = [0] * streams
polls = 0
ended = False

async def get(path):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    data = await r.read()
    w.close()
    return data

async def stream(n):
    r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    w.write(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    while line := await r.readline():
        if line.startswith(b"event: status"):
            events[n] += 1
            if events[n] == 1 and all(events):
                print("ready", flush=True)
    w.close()

async def poll(n):
    # As a browser's fetch does: one kept-alive connection, a request every half second.
    global polls
    paths = [b"/api/status", b"/api/jobs/t/sleeper"]
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
        while not ended:
            w.write(b"GET " + paths[polls % 2] + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = await r.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
            await r.readexactly(length)
            polls += 1
            await asyncio.sleep(0.5)
    except (OSError, asyncio.IncompleteReadError):
        return

async def main():
    global ended
    while True:  # the console process may still be starting
        try:
            if b" 200 " in (await get(b"/api/status")).split(b"\r\n", 1)[0]:
                break
        except OSError:
            pass
        await asyncio.sleep(0.1)
    tasks = []
    for n in range(streams):
        tasks.append(asyncio.create_task(stream(n)))
        await asyncio.sleep(0.002)
    pollers_ = [asyncio.create_task(poll(n)) for n in range(pollers)]
    await asyncio.gather(*tasks, return_exceptions=True)
    ended = True
    await asyncio.gather(*pollers_, return_exceptions=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"events": events, "polls": polls, "cpu": cpu}), flush=True)

asyncio.run(main())
"""

CLK_TCK = os.sysconf("SC_CLK_TCK")
WARMUP_SECONDS = 4.0


def make_site(work: Path, items: int, sleep: float) -> Path:
    """An MT task of ``items`` one-word lines answered by the sleeper (no file is staged)."""
    testset = work / "set"
    testset.mkdir()
    (testset / "source.txt").write_text("".join(f"s{i} w\n" for i in range(items)))
    (testset / "ref1.txt").write_text("".join(f"r{i} w\n" for i in range(items)))
    return bench_site(work, "mt", "sleeper", ["python", "-c", SLEEPER, str(sleep)])


@dataclass
class Result:
    """One run's figures over its measured items."""

    overhead: np.ndarray  # recorded seconds minus the system's own sleep, per item
    recorded: np.ndarray
    cpu_per_item: float
    items: int
    events: list[int]
    polls: int
    console_cpu: float  # CPU seconds of the console process, whole run
    viewers_cpu: float  # CPU seconds of the viewers' process


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def _console_of(pid: int) -> int | None:
    """The console process `onsite run --console` started, once it is there."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                command = fh.read()
            with open(f"/proc/{name}/stat", encoding="ascii") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == pid and b"harness.console" in command:
            return int(name)
    return None


def run_once(
    site: Path, runs: Path, console: bool, streams: int, pollers: int, viewers_policy: str
) -> Result:
    """`onsite run` (with --console and, when ``streams``, the viewers); its figures."""
    command = [sys.executable, "-m", "harness.cli", "run", str(site), "--runs", str(runs)]
    if console:
        command += ["--console", "127.0.0.1:0"]
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100")
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    console_ticks = [0]
    url: list[str] = []
    found = threading.Event()
    output: list[str] = []

    def read_output() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            match = re.search(r"console: (http://\S+?)/?$", line.strip())
            if match and not url:
                url.append(match.group(1))
                found.set()

    def sample() -> None:
        # The controller's CPU, with the time of each reading on the journal's clock.
        beside = None
        while proc.poll() is None:
            ticks = _cpu_ticks(proc.pid)
            if ticks is not None:
                samples.append((time.monotonic(), ticks))
            if console and beside is None:
                beside = _console_of(proc.pid)
            if beside is not None:
                console_ticks[0] = _cpu_ticks(beside) or console_ticks[0]
            time.sleep(0.02)

    threads = [threading.Thread(target=read_output), threading.Thread(target=sample)]
    for thread in threads:
        thread.start()
    viewers = None
    ready = started
    if console:
        if not found.wait(60):
            proc.kill()
            raise SystemExit("the console URL was never printed:\n" + "".join(output))
        if streams:
            port = url[0].rsplit(":", 1)[1]
            viewers = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    VIEWERS,
                    port,
                    str(streams),
                    str(pollers),
                    viewers_policy,
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert viewers.stdout is not None
            if viewers.stdout.readline().strip() != "ready":
                raise SystemExit("the viewers never all got their first event")
            ready = time.monotonic()
    code = proc.wait()
    for thread in threads:
        thread.join()
    if code != 0:
        sys.stderr.write("".join(output))
        raise SystemExit(f"onsite run failed ({code})")
    events: list[int] = []
    polls = 0
    viewers_cpu = 0.0
    if viewers is not None:
        out, _ = viewers.communicate(timeout=60)
        summary = json.loads(out.strip().splitlines()[-1])
        events, polls, viewers_cpu = summary["events"], summary["polls"], summary["cpu"]

    run_dir = runs / "bench"
    t0 = max(ready, started + WARMUP_SECONDS)
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    sent = {r["anon_id"]: r["mono"] for r in records if r["event"] == "dispatched"}
    done = [r for r in records if r["event"] == "completed" and sent[r["anon_id"]] >= t0]
    if len(done) < 100:
        raise SystemExit(f"only {len(done)} items after the viewers connected: give more --items")
    assert {r["verdict"] for r in done} == {"ok"}
    slept = {}
    for line in (run_dir / "logs" / "t" / "sleeper.log").read_text().splitlines():
        if line.startswith("slept "):
            _, anon, seconds = line.split()
            slept[anon] = float(seconds)
    recorded = np.array([r["seconds"] for r in done])
    overhead = recorded - np.array([slept[r["anon_id"]] for r in done])
    start = min(sent[r["anon_id"]] for r in done)
    end = max(r["mono"] for r in done)
    before = max((s for s in samples if s[0] <= start), default=samples[0])
    after = min((s for s in samples if s[0] >= end), default=samples[-1])
    cpu = (after[1] - before[1]) / CLK_TCK
    return Result(
        overhead,
        recorded,
        cpu / len(done),
        len(done),
        events,
        polls,
        console_ticks[0] / CLK_TCK,
        viewers_cpu,
    )


def _ms(values: np.ndarray, q: float) -> float:
    return 1e3 * float(np.percentile(values, q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1500, help="items per run")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds")
    parser.add_argument("--streams", type=int, default=200, help="event-stream viewers")
    parser.add_argument("--pollers", type=int, default=20, help="polling viewers")
    parser.add_argument("--sleep-ms", type=float, default=20.0, help="the system's time per item")
    parser.add_argument(
        "--viewers",
        choices=["elsewhere", "here"],
        default="elsewhere",
        help="elsewhere (default): the viewers' process runs under SCHED_IDLE, standing for "
        "browsers on other machines, which take no CPU of this one; here: at the ordinary "
        "priority, as 200 browsers on the controller's own machine would",
    )
    parser.add_argument(
        "--dir", default=str(REPO), help="where the runs go (default: the repository)"
    )
    args = parser.parse_args()
    p99_delta, cpu_ratio = [], []
    with tempfile.TemporaryDirectory(prefix=".onsite-bench-console-", dir=args.dir) as tmp:
        work = Path(tmp)
        site = make_site(work, args.items, args.sleep_ms / 1e3)
        for round_no in range(1, args.rounds + 1):
            bare = run_once(site, work / f"bare{round_no}", False, 0, 0, "")
            alone = run_once(site, work / f"alone{round_no}", True, 0, 0, "")
            watched = run_once(
                site,
                work / f"watched{round_no}",
                True,
                args.streams,
                args.pollers,
                "idle" if args.viewers == "elsewhere" else "normal",
            )
            for name, r in (
                ("without --console", bare),
                ("console, no viewer", alone),
                (f"console, {args.streams}+{args.pollers} viewers", watched),
            ):
                seen = (
                    f"; {min(r.events)}-{max(r.events)} status events per stream, {r.polls} "
                    f"polls, viewers' process {r.viewers_cpu:.1f} s CPU"
                    if r.events
                    else ""
                )
                if r.console_cpu:
                    seen = f"; console process {r.console_cpu:.1f} s CPU" + seen
                print(
                    f"round {round_no} {name}: {r.items} items, overhead p50 "
                    f"{_ms(r.overhead, 50):.3f} ms p99 {_ms(r.overhead, 99):.3f} ms "
                    f"(recorded p99 {_ms(r.recorded, 99):.2f} ms), controller CPU "
                    f"{1e3 * r.cpu_per_item:.3f} ms/item{seen}"
                )
            p99_delta.append(_ms(watched.overhead, 99) - _ms(alone.overhead, 99))
            cpu_ratio.append(watched.cpu_per_item / alone.cpu_per_item)
    delta, ratio = statistics.median(p99_delta), statistics.median(cpu_ratio)
    print(
        f"{args.streams} event-stream + {args.pollers} polling viewers against none "
        f"(median of {args.rounds} rounds): recorded-time overhead p99 {delta:+.3f} ms "
        f"(goal within 1 ms); controller CPU per item x{ratio:.3f} ({100 * (ratio - 1):+.1f}%, "
        f"goal under 5%); load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
