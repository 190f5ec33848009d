"""Who may look and who may act: the operator's and the viewers' tokens."""

from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.webguard import same_secret

if TYPE_CHECKING:
    # Only for the hints: the controller's process (cli.py) uses Tokens without the web stack.
    from starlette.requests import Request

OPERATOR_TOKEN_ENV = "ONSITE_CONSOLE_TOKEN"
VIEWER_TOKEN_ENV = "ONSITE_CONSOLE_VIEW_TOKEN"
VIEW_COOKIE = "onsite_view"


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost": only this machine can connect there."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Tokens:
    """The operator's token (controls) and the viewers' (None: pages are open)."""

    operator: str | None
    viewer: str | None

    @classmethod
    def for_bind(cls, host: str, controls: bool) -> Tokens:
        """Tokens from the environment, generated where missing.

        The operator token exists only where there are controls; the viewer token only
        when the console listens beyond loopback.
        """
        operator = (
            (os.environ.get(OPERATOR_TOKEN_ENV) or secrets.token_urlsafe(18)) if controls else None
        )
        viewer = None
        if not is_loopback(host):
            viewer = os.environ.get(VIEWER_TOKEN_ENV) or secrets.token_urlsafe(18)
        return cls(operator, viewer)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _same(given: str | None, wanted: str | None) -> bool:
    # Never raises: a token of any text (non-ASCII, a lone surrogate) is just not the token.
    return same_secret(given, wanted)


def may_operate(request: Request, tokens: Tokens) -> bool:
    """The request carries the operator's token (only ever in the Authorization header,
    so a page on another site cannot make a browser send it)."""
    return _same(_bearer(request), tokens.operator)


def may_view(request: Request, tokens: Tokens) -> bool:
    """Pages and the API are open without a viewer token; otherwise the token comes in the
    Authorization header, the ``token`` query parameter or the cookie a page visit sets."""
    if tokens.viewer is None:
        return True
    given = (
        _bearer(request) or request.query_params.get("token") or request.cookies.get(VIEW_COOKIE)
    )
    return _same(given, tokens.viewer) or _same(given, tokens.operator)
