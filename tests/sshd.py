"""A real OpenSSH server on 127.0.0.1 for tests and benchmarks: keys, config, start, stop.

Imported by tests/test_ssh_runner.py and benchmarks/ssh_overhead.py. The
"remote" machine is this one, logged into as the current user.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SSHD = Path("/usr/sbin/sshd")


class SshdMissing(RuntimeError):
    """OpenSSH's server or ssh-keygen is not installed."""


@dataclass(frozen=True)
class Sshd:
    """A running sshd and what a client needs to log into it."""

    port: int
    user: str
    user_key: Path
    host_key_line: str
    root: Path
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"

    def options(self, **extra: object) -> dict[str, object]:
        """Device settings for an ssh runner pointed at this server with the host key pinned."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "key": str(self.user_key),
            "host_key": self.host_key_line,
            "connect_timeout": 5.0,
            **extra,
        }

    def session_processes(self, client_port: int) -> list[psutil.Process]:
        """The sshd processes serving the connection from the given local client port."""
        found = []
        for proc in psutil.Process(self.process.pid).children(recursive=True):
            try:
                if proc.name() != "sshd":
                    continue
                # net_connections is psutil >= 6; connections its older name.
                listing = getattr(proc, "net_connections", None) or proc.connections
                for conn in listing(kind="tcp"):
                    if conn.raddr and conn.raddr.port == client_port:
                        found.append(proc)
                        break
            except psutil.Error:
                continue
        return found

    def stop(self) -> None:
        """Kill the server (and with it every session it still serves)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def require_sshd() -> None:
    """Raise SshdMissing saying how to install OpenSSH if it is not here."""
    missing = [str(p) for p in (SSHD,) if not p.exists()]
    if shutil.which("ssh-keygen") is None:
        missing.append("ssh-keygen")
    if missing:
        raise SshdMissing(
            f"{', '.join(missing)} not found: the SSH runner tests need a real OpenSSH server; "
            "install it with `apt-get install openssh-server openssh-client` "
            "(make test installs it through SYSTEM_PACKAGES)"
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path, comment: str) -> Path:
    """A new ed25519 key pair without passphrase (kept if already there); returns its path."""
    if path.exists():
        return path
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


def start_sshd(
    root: Path,
    wait_seconds: float = 10.0,
    sftp: bool = True,
    port: int | None = None,
    extra: tuple[str, ...] = (),
    address: str = "127.0.0.1",
    netns: str | None = None,
) -> Sshd:
    """Generate keys and a config under root, start sshd -D -e on a free port, wait for it.

    ``sftp=False`` leaves out the sftp Subsystem, as on many small boards. Started again
    on the same root with the same ``port``, it is the same machine come back: same keys.
    ``extra`` are more sshd_config lines (``SetEnv HOME=...`` gives sessions another home).
    ``netns`` runs it in that network namespace, listening on ``address`` (tests/netns.py:
    a machine whose network cable a test can pull).
    """
    require_sshd()
    root.mkdir(parents=True, exist_ok=True)
    host_key = keygen(root / "host_ed25519", "onsite-test-host")
    user_key = keygen(root / "user_ed25519", "onsite-test-user")
    authorized = root / "authorized_keys"
    authorized.write_text(Path(f"{user_key}.pub").read_text())
    os.chmod(authorized, 0o600)
    port = port or free_port()
    config = root / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                f"ListenAddress {address}",
                f"HostKey {host_key}",
                f"PidFile {root / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                # Tests open many connections and channels at once.
                "MaxStartups 100",
                "MaxSessions 100",
                "Subsystem sftp internal-sftp" if sftp else "",
                "LogLevel ERROR",
                *extra,
                "",
            ]
        )
    )
    # sshd refuses to start without its privilege separation directory, which the
    # distribution's service unit normally creates.
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(root / "sshd.log", "ab")
    inside = ["ip", "netns", "exec", netns] if netns else []
    process = subprocess.Popen(
        [*inside, str(SSHD), "-D", "-e", "-f", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    log.close()
    deadline = time.monotonic() + wait_seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"sshd exited with code {process.returncode}: {(root / 'sshd.log').read_text()}"
            )
        try:
            with socket.create_connection((address, port), timeout=0.5) as sock:
                if sock.recv(4).startswith(b"SSH-"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"sshd did not accept connections on port {port}")
        time.sleep(0.05)
    kind, blob = Path(f"{host_key}.pub").read_text().split()[:2]
    return Sshd(port, getpass.getuser(), user_key, f"{kind} {blob}", root, process, address)
