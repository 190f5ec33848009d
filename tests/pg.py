"""A real PostgreSQL server for tests: initdb in a temporary directory, start, restart, stop.

The server runs as an unprivileged user (PostgreSQL refuses to run as root): `nobody`
when the tests run as root, else the current user. It listens on a free TCP port on
127.0.0.1 and on a unix socket in its own directory, with trust authentication.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

UNPRIVILEGED_UID = 65534  # nobody
UNPRIVILEGED_GID = 65534  # nogroup


class PostgresMissing(RuntimeError):
    """The Debian postgresql package is not installed."""


def find_bindir() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and postgres."""
    root = Path("/usr/lib/postgresql")
    candidates = sorted(
        (p / "bin" for p in root.glob("*") if (p / "bin" / "postgres").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not candidates:
        raise PostgresMissing(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): "
            "install it with `apt-get install postgresql` (make system-deps does)"
        )
    return candidates[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> list[str]:
    """The command prefix that drops root; nothing when the tests already run unprivileged."""
    if os.geteuid() != 0:
        return []
    return [
        "setpriv",
        f"--reuid={UNPRIVILEGED_UID}",
        f"--regid={UNPRIVILEGED_GID}",
        "--clear-groups",
        # A killed test run must not leave a server behind.
        "--pdeathsig=SIGINT",
        "--",
    ]


@dataclass
class Postgres:
    """A running test server; ``dsn(db)`` connects to one of its databases as superuser."""

    root: Path
    port: int
    bindir: Path
    process: subprocess.Popen[bytes] | None = None
    _databases: int = field(default=0)

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory."""
        return self.root / "data"

    def dsn(self, database: str = "postgres") -> str:
        """A libpq URL for the given database over TCP."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and wait until it accepts connections."""
        log = open(self.root / "server.log", "ab")
        self.process = subprocess.Popen(
            [
                *_as_server_user(),
                str(self.bindir / "postgres"),
                "-D",
                str(self.data_dir),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.root}",
                # Tests need many short connections, not durability against power loss.
                "-c",
                "fsync=off",
                "-c",
                "max_connections=60",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited at start; see {self.root / 'server.log'}")
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown: sessions are ended, committed work is kept."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server, stay down for ``down_seconds``, start it again on the same port."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def new_database(self) -> str:
        """Create a fresh database and return its DSN."""
        self._databases += 1
        name = f"t{self._databases}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def destroy(self) -> None:
        """Stop the server and delete its directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> Postgres:
    """initdb a fresh cluster in a temporary directory and start it."""
    bindir = find_bindir()
    # Not under pytest's tmp directory: that one is 0700 root, closed to the server user.
    root = Path(tempfile.mkdtemp(prefix="onsite-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(root, UNPRIVILEGED_UID, UNPRIVILEGED_GID)
    try:
        subprocess.run(
            [
                *_as_server_user(),
                str(bindir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            check=True,
            capture_output=True,
            cwd=root,
        )
        server = Postgres(root=root, port=_free_port(), bindir=bindir)
        server.start()
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(root)
        raise
    return server
