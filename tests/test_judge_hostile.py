"""The judging panel under hostile requests: every one is a 4xx, never a traceback or 500.

Raw requests on a socket to the real panel (uvicorn on 127.0.0.1): non-ASCII tokens,
a 400 MB body announced with a valid judge link, deep JSON, integers of thousands of
digits, lone surrogates, a foreign Host header; and the anti-framing headers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.judge.schema import validate
from tests.judge_helpers import (
    TTS_TASK,
    call,
    copy_run,
    make_text_run,
    make_tts_run,
    onsite,
    raw,
    serving,
)


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("mt"), "mt")


@pytest.fixture(scope="module")
def panel(tts_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One pair panel for the whole module: (base URL, store, J1's token, its trial)."""
    run = copy_run(tts_run, tmp_path_factory.mktemp("panel"))
    with serving(run, TTS_TASK, "pair", judges=2, seed=1, link_host="judges.venue") as (
        base,
        store,
    ):
        token = store.tokens()["J1"]
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        yield base, store, token, view


def _post(base: str, path: str, body: bytes, extra: str = "") -> tuple[int, dict, bytes]:
    head = (
        f"POST {path} HTTP/1.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}{extra}"
    )
    return raw(base, head, body)


def _assert_clean(status: int, body: bytes, wanted: int | tuple[int, ...]) -> None:
    assert status in ((wanted,) if isinstance(wanted, int) else wanted), (status, body[:300])
    assert b"Traceback" not in body and b'File "' not in body


_ROUTES = (
    "GET /judge/{t}",
    "GET /judge/{t}/media/abc.wav",
    "GET /api/judge/{t}/next",
    "GET /operator/{t}",
    "GET /api/operator/{t}/progress",
)


@pytest.mark.parametrize("route", _ROUTES)
@pytest.mark.parametrize("token", ["%C3%A9t%C3%A9", "%FF%FE", "\u00e9t\u00e9", "%00", "%ED%A0%80"])
def test_a_malformed_token_is_a_4xx(panel: tuple, route: str, token: str) -> None:
    base, store, _, _ = panel
    status, _, body = raw(base, route.format(t=token) + " HTTP/1.1")
    _assert_clean(status, body, (400, 401, 404))
    assert store.answers() == []


@pytest.mark.parametrize("token", ["%C3%A9", "\u00e9"])
def test_a_malformed_token_on_the_answer_route_is_a_4xx(panel: tuple, token: str) -> None:
    base, _, _, _ = panel
    status, _, body = _post(base, f"/api/judge/{token}/answer", b"{}")
    _assert_clean(status, body, (400, 401))


def test_a_400_mb_body_with_a_valid_link_is_refused_unread(panel: tuple) -> None:
    base, store, token, _ = panel
    # Only the headers are sent: the panel answers from Content-Length alone.
    head = (
        f"POST /api/judge/{token}/answer HTTP/1.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 400000000"
    )
    status, _, body = raw(base, head)
    _assert_clean(status, body, 413)
    assert b"larger than 65536 bytes" in body


def test_a_chunked_body_past_the_cap_is_refused(panel: tuple) -> None:
    base, _, token, _ = panel
    chunk = b"x" * 30000
    body = (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 4 + b"0\r\n\r\n"
    head = f"POST /api/judge/{token}/answer HTTP/1.1\r\nTransfer-Encoding: chunked"
    status, _, reply = raw(base, head, body)
    _assert_clean(status, reply, 413)


def _body(trial: str, answer: str) -> bytes:
    """An answer body written as JSON text: ``trial`` and ``answer`` are JSON already."""
    return ('{"trial": ' + trial + ', "answer": ' + answer + "}").encode()


def _answer(panel: tuple, body: bytes) -> tuple[int, bytes]:
    base, _, token, _ = panel
    status, _, reply = _post(base, f"/api/judge/{token}/answer", body)
    return status, reply


def test_deep_json_is_a_400(panel: tuple) -> None:
    # Under the body cap, and deeper than Python's parser recurses.
    status, reply = _answer(panel, b"[" * 30000 + b"]" * 30000)
    _assert_clean(status, reply, 400)
    status, reply = _answer(panel, b'{"trial": ' + b"{" * 30000)
    _assert_clean(status, reply, 400)
    trial = panel[3]["trial"]
    status, reply = _answer(panel, _body(f'"{trial}"', '{"score": ' + "[" * 40 + "]" * 40 + "}"))
    _assert_clean(status, reply, 400)


@pytest.mark.parametrize(
    "answer",
    [
        '{"score": ' + "9" * 5000 + "}",
        '{"score": ' + "9" * 4000 + "}",
        '{"score": -' + "9" * 4000 + "}",
        '{"score": 1e400}',
        '{"score": NaN}',
        '{"score": 1}, "plays": ' + "9" * 5000,
        '{"score": 1}, "plays": ' + str(10**30),
        '{"score": 1}, "plays": -1',
        '{"score": 1}, "plays": 1.5',
        '{"score": "\\ud800"}',
        '{"score": 1, "\\udfff": 1}',
    ],
)
def test_huge_numbers_and_odd_text_in_an_answer_are_a_400(panel: tuple, answer: str) -> None:
    trial = panel[3]["trial"]
    status, reply = _answer(panel, _body(f'"{trial}"', answer))
    _assert_clean(status, reply, 400)
    assert "error" in json.loads(reply)
    assert panel[1].answers() == []


@pytest.mark.parametrize(
    "trial", ['"\\ud800"', '"' + "x" * 60000 + '"', "1" + "0" * 4500, '["a"]', "null"]
)
def test_an_odd_trial_id_is_a_400(panel: tuple, trial: str) -> None:
    status, reply = _answer(panel, _body(trial, '{"score": 1}'))
    _assert_clean(status, reply, 400)
    assert len(reply) < 2000, "the reply does not echo a long trial id"


def test_a_bad_content_length_is_a_400(panel: tuple) -> None:
    base, _, token, _ = panel
    head = f"POST /api/judge/{token}/answer HTTP/1.1\r\nContent-Length: 12x"
    status, _, reply = raw(base, head, b"{}")
    _assert_clean(status, reply, 400)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8017", "judges.venue.evil", ""])
def test_a_foreign_host_is_refused_with_421(panel: tuple, host: str) -> None:
    base, _, token, _ = panel
    for route in (f"/judge/{token}", f"/api/judge/{token}/next"):
        status, headers, body = raw(base, f"GET {route} HTTP/1.1", host=host)
        _assert_clean(status, body, 421)
        assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("host", ["judges.venue", "judges.venue:8017", "localhost", "127.0.0.1"])
def test_the_panel_answers_to_its_own_names(panel: tuple, host: str) -> None:
    base, _, token, _ = panel
    status, _, _ = raw(base, f"GET /judge/{token} HTTP/1.1", host=host)
    assert status == 200


def test_every_answer_forbids_framing(panel: tuple) -> None:
    base, store, token, view = panel
    operator = store.meta()["operator"]
    for route in (
        f"/judge/{token}",
        f"/operator/{operator}",
        f"/api/judge/{token}/next",
        f"/api/operator/{operator}/progress",
        "/judge/nope",
        "/nowhere",
    ):
        status, headers, _ = raw(base, f"GET {route} HTTP/1.1")
        assert headers["x-frame-options"] == "DENY", route
        assert headers["content-security-policy"] == "frame-ancestors 'none'", route
        assert headers["referrer-policy"] == "no-referrer", route
        assert headers["x-content-type-options"] == "nosniff", route


def test_a_huge_number_in_a_decimal_answer_is_refused_by_the_schema(
    mt_run: Path, tmp_path: Path
) -> None:
    decimal = {"type": "number", "minimum": 0, "maximum": 5, "multipleOf": 0.1}
    for value in (10**4000, -(10**4000), 10**20):
        problem = validate(decimal, value)
        assert problem and len(problem) < 200, problem
    problem = validate({"type": "integer", "minimum": 1, "maximum": 5}, 10**4000)
    assert problem and len(problem) < 200, problem
    run = copy_run(mt_run, tmp_path)
    with serving(run, "mt", "summary", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        for number in ("9" * 4000, "1" + "0" * 400, "1e400"):
            body = _body(f'"{view["trial"]}"', '{"summary": ' + number + "}")
            status, _, reply = _post(base, f"/api/judge/{token}/answer", body)
            _assert_clean(status, reply, 400)
        assert store.answers() == []
        ok = {"trial": view["trial"], "answer": {"summary": 3.5}, "plays": 0}
        assert call(base, "POST", f"/api/judge/{token}/answer", ok)[0] == 200


@pytest.mark.parametrize("listen", ["127.0.0.1:99999", "127.0.0.1:" + "9" * 400, "nohost", ":80"])
def test_a_bad_listen_address_is_an_error_not_a_traceback(
    tts_run: Path, tmp_path: Path, listen: str
) -> None:
    run = copy_run(tts_run, tmp_path)
    args = ["judge", str(run), "--test", "pair", "--task", TTS_TASK, "--judges", "1"]
    code, out = onsite(*args, "--listen", listen)
    assert code == 2 and "serving" not in out
