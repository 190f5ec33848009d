"""What `onsite console` and `onsite run --console` print at start: a link another
machine can open (never 0.0.0.0), and the operator's link with the token in its fragment."""

from __future__ import annotations

import socket

import pytest
from rich.console import Console

from harness.cli.console import announce
from harness.console.auth import OPERATOR_TOKEN_ENV, VIEWER_TOKEN_ENV, Tokens


def _printed(address: tuple[str, int], tokens: Tokens, link_host: str | None) -> list[str]:
    console = Console(record=True, width=200)
    announce(console, address, tokens, link_host)
    return console.export_text().splitlines()


def test_every_interface_prints_the_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OPERATOR_TOKEN_ENV, raising=False)
    monkeypatch.delenv(VIEWER_TOKEN_ENV, raising=False)
    lines = _printed(("0.0.0.0", 8765), Tokens("op-token", "view-token"), None)
    name = socket.gethostname()
    assert lines[0] == f"console: http://{name}:8765/?token=view-token"
    assert "0.0.0.0" not in "\n".join(lines)
    assert f"operator link: http://{name}:8765/?token=view-token#operator=op-token" in lines


def test_the_link_host_wins_and_a_token_from_the_environment_is_not_echoed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OPERATOR_TOKEN_ENV, "op-token")
    monkeypatch.delenv(VIEWER_TOKEN_ENV, raising=False)
    lines = _printed(("::", 8765), Tokens("op-token", None), "console.venue.example")
    assert lines == ["console: http://console.venue.example:8765/"]
