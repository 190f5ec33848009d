"""Viewers cannot reach the controller's process: the console is a process of its own.

`onsite run --console` serves every viewer from a console process (harness/console/
__main__.py) that reads the journal itself; the controller only publishes whether it
runs and takes authenticated controls over a socket pair. These tests look at the
processes from /proc: who holds the listening socket and the viewers' connections,
and what many viewers do to the controller's threads, sockets and CPU.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import time
from collections import Counter
from pathlib import Path

from tests.console_run import (
    TOKEN,
    call,
    job_status,
    journal,
    listening_pids,
    proc_stat,
    slow_site,
    sockets_of,
    start_run,
    wait_for,
)
from tests.helpers import read_outputs

VIEWERS = 100


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _console_pid(url: str) -> int:
    (pid,) = wait_for(lambda: listening_pids(_port(url)))
    return pid


def _follow(port: int, viewers: int, seconds: float) -> list[int]:
    """Hold ``viewers`` event streams open for ``seconds``; the status events each got."""
    selector = selectors.DefaultSelector()
    counts = [0] * viewers
    for n in range(viewers):
        conn = socket.create_connection(("127.0.0.1", port), timeout=30)
        conn.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        conn.setblocking(False)
        selector.register(conn, selectors.EVENT_READ, n)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.2):
                data = key.fileobj.recv(1 << 20)  # type: ignore[union-attr]
                counts[key.data] += data.count(b"event: status")
    finally:
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        selector.close()
    return counts


def test_viewers_are_served_by_another_process_and_cost_the_controller_nothing(
    tmp_path: Path, plan_env
) -> None:
    items = 30
    run = start_run(slow_site(tmp_path, plan_env, items=items, delay=0.1))
    controller = run.process.pid
    try:
        console = _console_pid(run.url)
        assert console != controller, "the controller's own process serves the viewers"
        assert proc_stat(console)["ppid"] == controller
        # A process group of its own (a Ctrl-C at the terminal is the controller's), but
        # the controller's session: with autogroup scheduling a session of its own would
        # get an equal share of the CPU whatever its nice value.
        assert os.getpgid(console) != os.getpgid(controller)
        assert os.getsid(console) == os.getsid(controller)
        # Its first act: the lowest priority (SCHED_IDLE, nice 19), for every thread it
        # starts after.
        wait_for(lambda: proc_stat(console)["policy"] == os.SCHED_IDLE)
        wait_for(lambda: job_status(run.url)["completed"] >= 1)
        threads = [f"{console}/task/{tid}" for tid in os.listdir(f"/proc/{console}/task")]
        assert len(threads) > 1
        priority = {(proc_stat(t)["policy"], proc_stat(t)["nice"]) for t in threads}
        assert priority == {(os.SCHED_IDLE, 19)}, priority

        # Paused between items, the controller has nothing to do: what it spends while
        # many viewers follow the stream is what the viewers cost it.
        assert call(run.url + "/api/jobs/asr/alpha/pause", "POST", TOKEN)[0] == 200
        wait_for(lambda: (j := job_status(run.url))["state"] == "paused" and not j["in_flight"])
        ticks = os.sysconf("SC_CLK_TCK")
        alone = proc_stat(controller)
        time.sleep(3.0)
        before = proc_stat(controller)
        sockets = sockets_of(controller)
        counts = _follow(_port(run.url), VIEWERS, 3.0)
        after = proc_stat(controller)
        assert min(counts) >= 2, f"every viewer is served (events per viewer: {Counter(counts)})"
        assert sockets_of(controller) == sockets, "no viewer's connection is the controller's"
        assert after["threads"] == before["threads"]
        # The same 3 s of an idle controller without viewers, then with them: the
        # console thread of old spent about 0.4 s more on this many streams.
        idle = (before["cpu_ticks"] - alone["cpu_ticks"]) / ticks
        watched = (after["cpu_ticks"] - before["cpu_ticks"]) / ticks
        assert watched < idle + 0.1, f"controller CPU: {idle:.2f} s alone, {watched:.2f} s watched"

        assert call(run.url + "/api/jobs/asr/alpha/resume", "POST", TOKEN)[0] == 200
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    wait_for(lambda: not os.path.exists(f"/proc/{console}"), timeout=30)
    records = journal(run.run_dir)
    assert [r["action"] for r in records if r["event"] == "operator_action"] == ["pause", "resume"]
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]


def test_a_killed_console_leaves_the_run_alone(tmp_path: Path, plan_env) -> None:
    items = 20
    run = start_run(slow_site(tmp_path, plan_env, items=items, delay=0.05))
    try:
        console = _console_pid(run.url)
        assert console != run.process.pid
        wait_for(lambda: job_status(run.url)["completed"] >= 2)
        os.kill(console, signal.SIGKILL)
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    assert {o["verdict"] for o in outputs} == {"ok"}


def test_a_killed_controller_takes_its_console_along(tmp_path: Path, plan_env) -> None:
    run = start_run(slow_site(tmp_path, plan_env, items=40, delay=0.1))
    try:
        console = _console_pid(run.url)
        assert console != run.process.pid
        wait_for(lambda: job_status(run.url)["completed"] >= 1)
    finally:
        run.process.kill()
        run.process.wait()
    # No console is left behind serving a run nobody runs, nor holding the port.
    wait_for(lambda: not os.path.exists(f"/proc/{console}"), timeout=30)
    assert not listening_pids(_port(run.url))


def test_a_viewer_following_to_the_end_gets_the_final_state_and_the_stream_ends(
    tmp_path: Path, plan_env
) -> None:
    items = 6
    run = start_run(slow_site(tmp_path, plan_env, items=items, delay=0.1))
    try:
        with socket.create_connection(("127.0.0.1", _port(run.url)), timeout=120) as conn:
            conn.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            # Read until the console closes the stream: it must, once the run has ended.
            while chunk := conn.recv(65536):
                data += chunk
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    events = [
        json.loads(line.split(b"data: ", 1)[1])
        for line in data.split(b"\n")
        if line.startswith(b"data: ")
    ]
    assert any(e["controller"] == "running" for e in events)
    last = events[-1]
    assert last["controller"] == "stopped"
    (job,) = last["jobs"]
    assert job["state"] == "done" and job["completed"] == items and job["in_flight"] is None


def test_a_flood_of_controls_reaches_the_controller_spaced_out(tmp_path: Path, plan_env) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from harness.console.bridge import CONTROL_GAP_SECONDS

    run = start_run(slow_site(tmp_path, plan_env, items=40, delay=0.1))
    pause = run.url + "/api/jobs/asr/alpha/pause"
    try:
        wait_for(lambda: job_status(run.url)["completed"] >= 1)
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(lambda _: call(pause, "POST", TOKEN)[0], range(30)))
        assert codes == [200] * 30
        assert call(run.url + "/api/stop", "POST", TOKEN)[0] == 200
        assert run.wait() == 130
    finally:
        if run.process.poll() is None:
            run.process.kill()
    stamps = [
        r["mono"]
        for r in journal(run.run_dir)
        if r["event"] == "operator_action" and r["action"] == "pause"
    ]
    assert len(stamps) == 30
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert min(gaps) >= 0.8 * CONTROL_GAP_SECONDS, min(gaps)


def test_an_interrupted_run_tells_its_viewers_it_stopped(tmp_path: Path, plan_env) -> None:
    run = start_run(slow_site(tmp_path, plan_env, items=40, delay=0.1))
    try:
        console = _console_pid(run.url)
        wait_for(lambda: job_status(run.url)["completed"] >= 2)
        with socket.create_connection(("127.0.0.1", _port(run.url)), timeout=120) as conn:
            conn.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = conn.recv(65536)
            run.process.send_signal(signal.SIGINT)  # as Ctrl-C does
            while chunk := conn.recv(65536):
                data += chunk
        assert run.wait() == 130
    finally:
        if run.process.poll() is None:
            run.process.kill()
    wait_for(lambda: not os.path.exists(f"/proc/{console}"), timeout=30)
    last = json.loads(
        [line for line in data.split(b"\n") if line.startswith(b"data: ")][-1].split(b" ", 1)[1]
    )
    (job,) = last["jobs"]
    assert last["controller"] == "stopped" and job["state"] == "stopped"
    assert job["in_flight"] is None and 2 <= job["completed"] < 40
    assert journal(run.run_dir)[-1]["event"] == "session_interrupted"


def test_ctrl_c_on_a_read_only_console_ends_its_streams_with_the_final_state(
    tmp_path: Path, plan_env
) -> None:
    from tests.console_run import serve_run_dir

    run = start_run(slow_site(tmp_path, plan_env, items=3, delay=0.0))
    assert run.wait() == 0, "\n".join(run.lines)
    server, url = serve_run_dir(run.run_dir, "127.0.0.1:0")
    streams = []
    try:
        for _ in range(5):
            conn = socket.create_connection(("127.0.0.1", _port(url)), timeout=60)
            conn.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            streams.append((conn, bytearray(conn.recv(65536))))
        wait_for(
            lambda: all(
                b"event: status" in seen or seen.extend(c.recv(65536)) for c, seen in streams
            )
        )
        server.send_signal(signal.SIGINT)
        for conn, seen in streams:
            while chunk := conn.recv(65536):
                seen.extend(chunk)
            # Ended, not cut: the chunked body's last chunk, after a whole final event.
            assert seen.endswith(b"}\n\n\r\n0\r\n\r\n"), bytes(seen[-200:])
        out, _ = server.communicate(timeout=60)
    finally:
        for conn, _ in streams:
            conn.close()
        if server.poll() is None:
            server.kill()
    assert server.returncode == 130
    assert "Traceback" not in out and "ERROR" not in out, out
