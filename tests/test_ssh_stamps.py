"""An SSH item's time is taken where its bytes leave and arrive, not where Python gets to them.

With dozens of devices on one controller, paramiko's threads wait milliseconds for the
interpreter lock to encrypt an item or to read and decrypt an answer. The link's socket
(runners.ssh_link.StampedSocket) keeps the kernel's receive stamp of every read and the
moment each thread handed bytes to the kernel; the runner times items by them.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from runners.ssh_link import StampedSocket, last_send, packet_age
from tests.helpers import make_testset
from tests.sshd import Sshd
from tests.test_ssh_runner import plan, request, spec_for, ssh_runner


def _pair() -> tuple[StampedSocket, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    with server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
    stamped = StampedSocket.adopt(client)
    assert stamped.packet_age() is None  # nothing read yet
    return stamped, peer


def _until_stamped(stamped: StampedSocket, peer: socket.socket) -> None:
    """The kernel turns receive stamps on for the machine a moment after the first socket
    asks (deferred work): until then reads carry none, and the runner falls back to
    when its thread got to the bytes."""
    for _ in range(200):
        peer.sendall(b".")
        assert stamped.recv(1) == b"."
        if stamped.packet_age() is not None:
            return
        time.sleep(0.01)
    pytest.fail("the kernel gives no receive stamps (SO_TIMESTAMPNS)")


def test_a_read_knows_when_its_bytes_arrived() -> None:
    stamped, peer = _pair()
    with stamped, peer:
        _until_stamped(stamped, peer)
        peer.sendall(b"answer\n")
        time.sleep(0.3)  # the bytes wait in the kernel, as behind a busy interpreter
        assert stamped.recv(100) == b"answer\n"
        age = stamped.packet_age()
        assert age is not None and 0.25 <= age < 5.0


def test_each_thread_sees_its_own_last_send() -> None:
    stamped, peer = _pair()
    with stamped, peer:
        assert stamped.last_send() is None
        before = time.monotonic()
        stamped.send(b"item\n")
        mine = stamped.last_send()
        assert mine is not None and before <= mine <= time.monotonic()
        seen: list[float | None] = []
        other = threading.Thread(target=lambda: seen.append(stamped.last_send()))
        other.start()
        other.join()
        assert seen == [None]  # another thread's sends are not this one's
        assert peer.recv(100) == b"item\n"


def test_a_socket_of_another_kind_gives_no_stamps() -> None:
    assert packet_age(None) is None and last_send(None) is None


@pytest.mark.sshd
def test_a_busy_controller_is_not_charged_to_the_system(tmp_path: Path, sshd: Sshd) -> None:
    """The answer comes 50 ms after the item; meanwhile a thread of the controller holds
    the interpreter lock for much longer (one C-level loop never lets it go). The time
    recorded is the answer's arrival, not when the controller got to read it."""
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    spec = spec_for(tmp_path, plan({1600: {"text": "warm"}, 3200: {"text": "ok", "delay": 0.05}}))
    with ssh_runner(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        assert isinstance(runner.ssh.transport.sock, StampedSocket)  # type: ignore[union-attr]
        runner.run_item(request(items / "a.wav", "s1"))
        write = runner._write
        held = {}

        def write_then_hold(data: bytes) -> None:
            write(data)

            def hold() -> None:
                t0 = time.monotonic()
                sum(range(60_000_000))  # about a second with the lock held
                held["seconds"] = time.monotonic() - t0

            threading.Thread(target=hold).start()

        runner._write = write_then_hold  # type: ignore[method-assign]
        attempt = runner.run_item(request(items / "b.wav", "s2"))
    assert attempt.outcome == "result" and attempt.output == {"text": "ok"}
    assert held["seconds"] > 0.4, "the lock was not held long enough to tell"
    assert 0.05 <= attempt.seconds < held["seconds"] / 2
