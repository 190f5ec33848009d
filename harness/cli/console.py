"""`onsite console`: a read-only live console of any run; and how a console listens
and announces itself, which `onsite run --console` shares."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_OK, add_run_location
from harness.errors import InputError, Problem

if TYPE_CHECKING:
    import socket

    from rich.console import Console


def add_console_parser(sub: Any) -> None:
    """Register `onsite console` on the CLI's subparsers."""
    con = sub.add_parser("console", help="serve a read-only live console of a run")
    add_run_location(con)
    con.add_argument(
        "--listen", default="127.0.0.1:8765", help="HOST:PORT (default 127.0.0.1:8765)"
    )
    con.add_argument(
        "--link-host",
        help="the host name to print in the link, and to answer to (default: HOST)",
    )
    con.set_defaults(handler=cmd_console)


def cmd_console(args: argparse.Namespace, console: Console) -> int:
    """Serve a read-only console of any run (a directory or a run in PostgreSQL),
    following its records live."""
    from harness.console.app import ConsoleApp
    from harness.console.auth import Tokens
    from harness.console.server import serve
    from harness.console.view import RunView
    from harness.webguard import allowed_hosts

    view = RunView(args.run_dir)  # checks it is a run before listening
    host, sock = listen_at(args.listen)
    tokens = Tokens.for_bind(host, controls=False)
    announce(console, sock.getsockname(), tokens, args.link_host)
    serve(ConsoleApp(view, tokens, hosts=allowed_hosts(host, args.link_host)), sock)
    return EXIT_OK


def listen_at(text: str) -> tuple[str, socket.socket]:
    """Parse HOST:PORT and bind it; a bad address or a port in use is bad input."""
    from harness.console.server import bind, parse_listen

    try:
        host, port = parse_listen(text)
        return host, bind(host, port)
    except ValueError as exc:
        raise InputError([Problem(Path(text), "--console/--listen", str(exc))]) from None
    except OSError as exc:
        raise InputError(
            [
                Problem(
                    Path(text),
                    "--console/--listen",
                    f"cannot listen on {text}: {exc.strerror or exc}",
                    "give a free port (or 0 for any) on an address of this machine",
                )
            ]
        ) from None


def announce(console: Console, address: Any, tokens: Any, link_host: str | None) -> None:
    """Print the console's URL (with the link host, as `onsite judge` does) and the tokens."""
    import socket

    from harness.console.auth import OPERATOR_TOKEN_ENV, VIEWER_TOKEN_ENV

    host, port = address[:2]
    host = link_host or host
    if host in ("0.0.0.0", "::"):
        # Listening on every interface: viewers reach the machine by its name.
        host = socket.gethostname()
    shown = f"[{host}]" if ":" in host else host
    query = f"/?token={tokens.viewer}" if tokens.viewer else "/"
    console.print(f"console: http://{shown}:{port}{query}", markup=False)
    if tokens.operator and not os.environ.get(OPERATOR_TOKEN_ENV):
        console.print(f"operator token: {tokens.operator}", markup=False)
        # In the fragment: a browser never sends it, and the page moves it out of the
        # address bar into the tab's session storage at once.
        console.print(
            f"operator link: http://{shown}:{port}{query}#operator={tokens.operator}",
            markup=False,
        )
    if tokens.viewer and not os.environ.get(VIEWER_TOKEN_ENV):
        console.print(f"viewer token: {tokens.viewer}", markup=False)
