"""`python -m harness.console`: the console process that `onsite run --console` starts
(process.py); not a command for people (`onsite console RUN_DIR` is).

It takes the lowest CPU priority (SCHED_IDLE, nice 19) before anything else, reads the
tokens from the controller over the channel, follows the run's records (its journal, or
a station's run in PostgreSQL, named in ONSITE_CONSOLE_RUN), and serves the console on
the listening socket it was handed until the controller closes the channel.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the console of one run beside its controller; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m harness.console")
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--host", required=True, help="the address listened on")
    parser.add_argument("--link-host", help="the host name the links were printed with")
    parser.add_argument("--nice", type=int, default=19)
    args = parser.parse_args(argv)
    # First, before the web stack loads: Linux keeps the scheduling of each thread and a
    # new thread inherits its creator's, so every thread of this process runs so.
    # SCHED_IDLE: a CPU running only this counts as idle, and any ordinary task that
    # wakes there (the controller, a participant's system) takes it at once; a nice
    # value alone still lets this run on for a slice of milliseconds first.
    os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))

    from harness.console.app import ConsoleApp
    from harness.console.auth import Tokens
    from harness.console.bridge import ConsoleSide, ControlUnavailable
    from harness.console.process import RUN_ENV
    from harness.console.server import serve
    from harness.console.view import RunView
    from harness.errors import InputError
    from harness.webguard import allowed_hosts

    link = ConsoleSide(socket.socket(fileno=args.channel_fd))
    listener = socket.socket(fileno=args.listen_fd)
    try:
        hello = link.hello()
        # A run directory's path, or a station's run in PostgreSQL (read straight from it).
        view = RunView(os.environ[RUN_ENV], controller=link.is_running)
    except (ControlUnavailable, InputError) as exc:
        sys.stderr.write(f"console: error: {exc}\n")
        return 2
    console = ConsoleApp(
        view,
        Tokens(hello.operator, hello.viewer),
        controls=link,
        hosts=allowed_hosts(args.host, args.link_host),
    )
    link.start(on_close=console.closing.set)
    serve(console, listener)
    return 0


if __name__ == "__main__":
    sys.exit(main())
