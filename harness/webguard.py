"""What every web server of onsite puts in front of its app (the console, the judging panel).

- **Host names.** A request whose ``Host`` header names anything but the address the
  server listens on, the machine's own names and addresses, loopback, or the
  ``--link-host`` the links were printed with is refused (421). A page on another site
  that points a name of its own at this machine (DNS rebinding) is refused that way.
- **No framing, no sniffing, no referrer.** Every response says ``X-Frame-Options: DENY``
  and ``Content-Security-Policy: frame-ancestors 'none'`` (no page of another site can
  frame a judge's page or the operator's controls), ``X-Content-Type-Options: nosniff``,
  and ``Referrer-Policy: no-referrer`` (judge and viewer tokens travel in URLs).
- **Bodies are capped before they are read.** A body longer than the cap is refused
  (413) from its ``Content-Length`` alone, or as soon as a chunked body passes the cap;
  the app sees at most the cap.
- **Nothing a client sends is a traceback.** An exception in the app becomes a plain 500
  without detail; the helpers below turn malformed tokens and JSON (non-ASCII tokens,
  deep nesting, integers of thousands of digits) into values or 4xx answers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)

# Nesting deeper than this in a JSON body is refused before Python's parser recurses.
MAX_JSON_DEPTH = 32
_UNSPECIFIED = ("0.0.0.0", "::", "")


class BadInput(ValueError):
    """A client sent something malformed: answered with ``status`` and the message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _bare(host: str) -> str:
    """A Host header's name without its port and IPv6 brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


def machine_names() -> set[str]:
    """This machine's host names and the addresses of its interfaces, and loopback."""
    names = {"localhost", "127.0.0.1", "::1"}
    with contextlib.suppress(OSError):
        hostname = socket.gethostname()
        names.update({hostname.lower(), socket.getfqdn(hostname).lower()})
        for info in socket.getaddrinfo(hostname, None):
            names.add(str(info[4][0]).lower())
    with contextlib.suppress(Exception):
        # psutil lists every interface's addresses (a LAN address a judge's tablet uses).
        import psutil

        for addresses in psutil.net_if_addrs().values():
            for address in addresses:
                if address.family in (socket.AF_INET, socket.AF_INET6):
                    names.add(address.address.partition("%")[0].lower())
    return names


def allowed_hosts(listen_host: str, link_host: str | None = None) -> frozenset[str]:
    """The names a server listening on ``listen_host`` answers to.

    The listen address itself, ``link_host`` (the name printed in the links), and, for a
    server on every interface or on loopback, the machine's own names and addresses.
    """
    names = {_bare(listen_host)} - {""}
    if link_host:
        names.add(_bare(link_host))
    bare = _bare(listen_host)
    if bare in _UNSPECIFIED or bare == "localhost" or _is_loopback(bare):
        names |= machine_names()
    return frozenset(names - set(_UNSPECIFIED))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_secret(given: str | None, wanted: str | None) -> bool:
    """A constant-time comparison of two tokens that never raises.

    ``secrets.compare_digest`` raises TypeError for a str with non-ASCII characters,
    which a client may put in a URL on purpose; bytes compare whatever they hold.
    """
    if given is None or wanted is None:
        return False
    return secrets.compare_digest(
        given.encode("utf-8", "surrogatepass"), wanted.encode("utf-8", "surrogatepass")
    )


def _depth_ok(raw: bytes, limit: int) -> bool:
    """True when the JSON text nests no deeper than ``limit`` (strings skipped)."""
    depth = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return False
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return True


def parse_json(raw: bytes, what: str = "the body", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a JSON body a client sent, or raise BadInput (400) saying what is wrong.

    Deep nesting is refused before the parser recurses; an integer of more digits than
    Python converts (4,300) and non-finite numbers are refused as well.
    """
    if not _depth_ok(raw, max_depth):
        raise BadInput(f"{what} nests deeper than {max_depth} levels")

    def refuse_constant(name: str) -> Any:
        raise BadInput(f"{what} holds {name}, which is not a JSON number")

    try:
        return json.loads(raw, parse_constant=refuse_constant)
    except BadInput:
        raise
    except (ValueError, RecursionError) as exc:
        # JSONDecodeError and UnicodeDecodeError are ValueErrors, and so is the refusal of
        # an integer of too many digits.
        raise BadInput(f"{what} is not JSON ({str(exc)[:200]})") from None


def small_int(value: Any, name: str, low: int = 0, high: int = 1 << 31) -> int | None:
    """``value`` if it is a whole number in [low, high], None if absent; else BadInput."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(f'"{name}" must be a whole number from {low} to {high}')
    return value


class GuardMiddleware:
    """ASGI middleware: the Host check, the security headers and the body cap (above)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str] | None, max_body: int) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(_bare(h) for h in hosts)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        headers = dict(scope.get("headers") or [])
        if self.hosts is not None:
            host = headers.get(b"host", b"").decode("latin-1")
            if _bare(host) not in self.hosts:
                await _plain(
                    guarded_send,
                    421,
                    f"this server does not answer to the name {host[:100]!r}; "
                    "use the address its links were printed with",
                )
                return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _plain(guarded_send, 400, "Content-Length is not a number")
                return
            if declared > self.max_body:
                await _plain(guarded_send, 413, f"the body is larger than {self.max_body} bytes")
                return
        body, complete = await _read_capped(receive, self.max_body)
        if not complete:
            await _plain(guarded_send, 413, f"the body is larger than {self.max_body} bytes")
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            await self.app(scope, replay, guarded_send)
        except Exception:
            logger.exception("error serving %s", scope.get("path"))
            if not started:
                await _plain(guarded_send, 500, "internal error")


async def _read_capped(receive: Receive, cap: int) -> tuple[bytes, bool]:
    """The request body, read up to ``cap`` bytes; False when it is longer."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            return b"", False
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
