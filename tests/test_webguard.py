"""The guard in front of every web server (harness/webguard.py), on a real uvicorn server.

Raw sockets, not a client library: the attacks are malformed requests a library would
not send (a foreign Host, a body past the cap announced or chunked, deep JSON).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.webguard import (
    BadInput,
    GuardMiddleware,
    allowed_hosts,
    parse_json,
    same_secret,
    small_int,
)

CAP = 16384


async def echo(request: Request) -> Response:
    raw = await request.body()
    try:
        body = parse_json(raw)
    except BadInput as exc:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)
    return JSONResponse({"got": body})


async def boom(request: Request) -> Response:
    raise RuntimeError("secret detail /etc/onsite")


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    app = Starlette(
        routes=[Route("/echo", echo, methods=["POST"]), Route("/boom", boom)],
    )
    guarded = GuardMiddleware(app, allowed_hosts("127.0.0.1", "judges.venue"), CAP)
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(guarded, log_level="critical", access_log=False, lifespan="off")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        thread.join(0.01)
    yield sock.getsockname()[1]
    srv.should_exit = True
    thread.join(5)


def _request(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(raw)
        data = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def _post(port: int, body: bytes, host: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    return _request(
        port,
        b"POST /echo HTTP/1.1\r\nHost: " + host.encode() + b"\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body,
    )


def test_a_good_request_passes_with_the_security_headers(server: int) -> None:
    status, headers, body = _post(server, b'{"a": 1}')
    assert status == 200 and b'"got":{"a":1}' in body
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == "frame-ancestors 'none'"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("host", ["127.0.0.1:8017", "localhost", "judges.venue:80"])
def test_own_names_are_answered(server: int, host: str) -> None:
    assert _post(server, b"{}", host=host)[0] == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8017", "", "127.0.0.2.nip.io"])
def test_a_foreign_host_name_is_refused(server: int, host: str) -> None:
    status, headers, body = _post(server, b"{}", host=host)
    assert status == 421
    assert b"does not answer to the name" in body
    assert headers["x-frame-options"] == "DENY"


def test_a_body_announced_past_the_cap_is_refused_unread(server: int) -> None:
    # Announces 400 MB and sends nothing: refused from the header, no wait for the bytes.
    status, _, body = _request(
        server,
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Length: 400000000\r\n\r\n",
    )
    assert status == 413 and b"larger than 16384 bytes" in body


def test_a_chunked_body_past_the_cap_is_refused(server: int) -> None:
    chunk = b"x" * 6000
    raw = (
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 3
        + b"0\r\n\r\n"
    )
    status, _, _ = _request(server, raw)
    assert status == 413


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"[" * 100 + b"]" * 100, b"nests deeper"),
        (b'{"plays": ' + b"9" * 5000 + b"}", b"not JSON"),
        (b'{"a": NaN}', b"not a JSON number"),
        (b"\xff\xfe", b"not JSON"),
    ],
)
def test_malformed_json_is_a_400_not_a_traceback(server: int, body: bytes, said: bytes) -> None:
    status, _, answer = _post(server, body)
    assert status == 400 and said in answer
    assert b"Traceback" not in answer


def test_an_exception_in_the_app_is_a_plain_500(server: int) -> None:
    status, headers, body = _request(
        server, b"GET /boom HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert status == 500 and b"secret detail" not in body and b"Traceback" not in body
    assert headers["x-frame-options"] == "DENY"


def test_tokens_compare_without_raising_on_odd_text() -> None:
    assert same_secret("abc", "abc")
    assert not same_secret("ab\u00e9", "abc")  # compare_digest raises TypeError on this
    assert not same_secret("\udcff", "abc")
    assert not same_secret(None, "abc")


def test_small_int_bounds() -> None:
    assert small_int(3, "plays") == 3
    assert small_int(None, "plays") is None
    for bad in (True, -1, 10**40, 1.5, "3"):
        with pytest.raises(BadInput):
            small_int(bad, "plays", 0, 1000)


def test_all_interfaces_answer_to_the_machine_names() -> None:
    names = allowed_hosts("0.0.0.0", None)
    assert {"localhost", "127.0.0.1", socket.gethostname().lower()} <= names
    assert "0.0.0.0" not in names
    # A LAN address listens to itself and the link host only.
    assert allowed_hosts("192.0.2.7", "judge.lan") == frozenset({"192.0.2.7", "judge.lan"})
