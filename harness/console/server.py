"""Serving the console with uvicorn: in the foreground, or beside a running controller."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from .app import ConsoleApp


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
    return uvicorn.Config(
        console.app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        # Open event streams must not hold a shutdown for long.
        timeout_graceful_shutdown=3,
    )


@dataclass
class Background:
    """A console served from a thread of the controller's process."""

    console: ConsoleApp
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        """End the event streams and the server; returns when its thread has ended."""
        self.console.closing.set()
        self.server.should_exit = True
        self.thread.join(timeout=5)


def serve_in_background(console: ConsoleApp, sock: socket.socket) -> Background:
    """Start serving on ``sock`` from a daemon thread; returns once it accepts connections."""
    server = uvicorn.Server(_config(console))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="console", daemon=True
    )
    thread.start()
    # The first status scores every job (and may load compiled scorers): do it now, not
    # while the first viewer waits.
    threading.Thread(target=console.view.status, name="console-warmup", daemon=True).start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    return Background(console, server, thread)


def serve(console: ConsoleApp, sock: socket.socket) -> None:
    """Serve in the foreground until interrupted (Ctrl-C)."""
    server = uvicorn.Server(_config(console))
    try:
        server.run(sockets=[sock])
    finally:
        console.closing.set()
