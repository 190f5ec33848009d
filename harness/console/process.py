"""The console beside a run (`onsite run --console`): a process of its own, at the lowest
CPU priority (SCHED_IDLE), so that viewers never take time from the controller or the
systems it times.

The controller's process binds the listening socket (a port in use is refused before
anything starts), starts ``python -m harness.console`` with that socket and its end of a
socket pair, and keeps only the bridge (bridge.py): it publishes whether it runs and
takes the controls the console has authenticated. Everything a viewer asks for is
answered by the console process from the journal.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.console.auth import Tokens
from harness.console.bridge import Controllable, ControllerSide, Hello
from harness.store.api import is_pg_location

# Where the console process finds the run it serves.
RUN_ENV = "ONSITE_CONSOLE_RUN"

# The console process's nice value; it also runs under SCHED_IDLE (__main__.py), below
# the controller and the participants' systems on the same machine.
NICENESS = 19
# How long a console may take to end its streams with the final state and exit.
STOP_SECONDS = 10.0


@dataclass
class ConsoleProcess:
    """A console process serving a run, and the controller's end of its channel."""

    process: subprocess.Popen[bytes]
    bridge: ControllerSide

    @property
    def pid(self) -> int:
        """The console process's id."""
        return self.process.pid

    def stop(self) -> None:
        """Tell the console the controller stopped and wait for it to end (its event
        streams send the final state first); killed if it takes past STOP_SECONDS."""
        self.bridge.stop()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_console(
    controller: Controllable,
    run: Path | str,
    listen_host: str,
    sock: socket.socket,
    tokens: Tokens,
    link_host: str | None = None,
) -> ConsoleProcess:
    """Start the console process serving ``run`` (a run directory, or a station's run
    ``postgresql://HOST/DB?run=NAME``) on ``sock`` (which this process then closes: only
    the console holds it). Returns at once; connections wait in the socket's backlog
    until the console accepts them."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    command = [
        sys.executable,
        "-m",
        "harness.console",
        "--listen-fd",
        str(sock.fileno()),
        "--channel-fd",
        str(theirs.fileno()),
        "--host",
        listen_host,
        "--nice",
        str(NICENESS),
    ]
    if link_host:
        command += ["--link-host", link_host]
    # The package is found where this one was loaded from, whatever the working directory.
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    # The run in the environment, not the command line: a DSN may hold a password.
    where = run if is_pg_location(run) else str(Path(run).resolve())
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else ""), RUN_ENV: where}
    try:
        process = subprocess.Popen(
            command,
            pass_fds=(sock.fileno(), theirs.fileno()),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            # Its own process group, so a Ctrl-C at the terminal is the controller's to
            # handle (the console ends when the controller closes the channel, or dies).
            # Not its own session: with autogroup scheduling a session is a group of its
            # own that gets an equal share of the CPU, whatever its nice value.
            process_group=0,
        )
    finally:
        theirs.close()
        sock.close()
    bridge = ControllerSide(controller, ours)
    bridge.start(Hello(type="hello", operator=tokens.operator, viewer=tokens.viewer))
    return ConsoleProcess(process, bridge)
