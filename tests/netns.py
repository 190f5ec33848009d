"""A participant's machine on a network cable a test can pull: an sshd in a network
namespace of its own, reached over a veth pair (needs root and iproute2).

Pulling the cable sets the machine's end of the pair down: packets in flight are lost
and nothing is acknowledged, as when a real cable is pulled or a switch dies; a new
connection fails. Putting it back brings the same machine back.
"""

from __future__ import annotations

import os
import subprocess
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.sshd import Sshd, start_sshd


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class RemoteMachine:
    """An sshd on its own network, and the cable to it."""

    def __init__(self, root: Path, sftp: bool = True) -> None:
        self.sftp = sftp
        key = zlib.crc32(f"{os.getpid()}:{root}".encode()) % 60000
        self.netns = f"onsite-m{key}"
        self.host_end, self.machine_end = f"om{key}h", f"om{key}r"
        # A /30 of 10.232.0.0/16 per machine (the key picks it).
        base = 4 * (key % 16000)
        self.host_address = f"10.{232 + base // 65536}.{base // 256 % 256}.{base % 256 + 1}"
        self.address = f"10.{232 + base // 65536}.{base // 256 % 256}.{base % 256 + 2}"
        self._made = False
        self.sshd: Sshd | None = None
        self.root = root

    def start(self) -> Sshd:
        """Make the namespace and the cable, and start its sshd."""
        self.close()
        _ip("netns", "add", self.netns)
        self._made = True
        _ip("link", "add", self.host_end, "type", "veth", "peer", "name", self.machine_end)
        _ip("link", "set", self.machine_end, "netns", self.netns)
        _ip("addr", "add", f"{self.host_address}/30", "dev", self.host_end)
        _ip("link", "set", self.host_end, "up")
        inside = ("netns", "exec", self.netns, "ip")
        _ip(*inside, "addr", "add", f"{self.address}/30", "dev", self.machine_end)
        _ip(*inside, "link", "set", self.machine_end, "up")
        _ip(*inside, "link", "set", "lo", "up")
        self.sshd = start_sshd(self.root, sftp=self.sftp, address=self.address, netns=self.netns)
        return self.sshd

    def pull_cable(self) -> None:
        """The machine's end goes down: nothing gets through either way."""
        _ip("netns", "exec", self.netns, "ip", "link", "set", self.machine_end, "down")

    def plug_cable(self) -> None:
        """The same machine is reachable again."""
        _ip("netns", "exec", self.netns, "ip", "link", "set", self.machine_end, "up")

    def close(self) -> None:
        """Stop its sshd and remove the namespace and the cable."""
        if self.sshd is not None:
            self.sshd.stop()
            self.sshd = None
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_end], capture_output=True)
        self._made = False


@contextmanager
def remote_machine(root: Path, sftp: bool = True) -> Iterator[RemoteMachine]:
    """A RemoteMachine (with or without the sftp subsystem), started, removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("a machine in a network namespace of its own needs root")
    machine = RemoteMachine(root, sftp)
    try:
        machine.start()
        yield machine
    finally:
        machine.close()
