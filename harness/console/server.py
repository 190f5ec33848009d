"""Serving the console: the listening socket, and uvicorn in the foreground of its process.

The web stack (uvicorn) loads only in the process that serves: `onsite run --console`
binds the socket here and hands it to the console process (process.py).
"""

from __future__ import annotations

import socket
import threading
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

    from harness.console.app import ConsoleApp


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT (or :PORT, or PORT) -> (host, port); the host defaults to 127.0.0.1.

    Raises ValueError with the fix for anything else.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValueError(f"cannot read {text!r} as HOST:PORT; give e.g. 127.0.0.1:8765")
    return host, port


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0 picks a free one); OSError says why it cannot bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


def _config(console: ConsoleApp) -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(
        console.app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        # Open event streams must not hold a shutdown for long.
        timeout_graceful_shutdown=3,
    )


def serve(console: ConsoleApp, sock: socket.socket) -> None:
    """Serve in the foreground until interrupted (Ctrl-C, SIGTERM) or until
    ``console.closing`` is set from elsewhere (the run ended): open event streams then
    end with the final state."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # The event streams end first, with the final state: the shutdown then does
            # not wait on them and cancel them.
            console.closing.set()
            super().handle_exit(sig, frame)

    server = Server(_config(console))

    def close_when_told() -> None:
        console.closing.wait()
        server.should_exit = True

    threading.Thread(target=close_when_told, name="console-closing", daemon=True).start()

    # The first status scores every job (and may load compiled scorers): do it now, not
    # while the first viewer waits.
    def warm_up() -> None:
        console.view.refresh()
        console.view.status()

    threading.Thread(target=warm_up, name="console-warmup", daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        console.closing.set()
