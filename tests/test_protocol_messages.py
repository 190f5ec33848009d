"""What a system writes, read: each line is checked against the message its op names, and
a bad one is refused with that message's own problems."""

from __future__ import annotations

import pytest

from runners.protocol import Error, ProtocolError, Result, SystemReady, parse_message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            b'{"op":"ready","name":"asr","version":"2"}',
            SystemReady(op="ready", name="asr", version="2"),
        ),
        (b'{"op":"ready"}', SystemReady(op="ready")),
        (
            b'{"op":"result","id":"a1","output":{"text":"x y"}}',
            Result(op="result", id="a1", output={"text": "x y"}),
        ),
        (
            b'{"op":"error","id":"a1","message":"no model"}',
            Error(op="error", id="a1", message="no model"),
        ),
        (b'{"op":"error","id":"a1"}\n', Error(op="error", id="a1")),
    ],
)
def test_good_messages(line: bytes, expected: object) -> None:
    assert parse_message(line) == expected


def test_fields_beyond_the_protocol_are_kept() -> None:
    message = parse_message(b'{"op":"result","id":"a","output":{},"took_ms":3}')
    assert isinstance(message, Result) and message.model_extra == {"took_ms": 3}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        # Only the problems of the message the op names; no other message's.
        (b'{"op":"result","id":"a"}', "bad 'result' message (output: Field required)"),
        (
            b'{"op":"result","id":3,"output":{}}',
            "bad 'result' message (id: Input should be a valid string)",
        ),
        (
            b'{"op":"result","id":"a","output":[1]}',
            "bad 'result' message (output: Input should be a valid dictionary)",
        ),
        (b'{"op":"error"}', "bad 'error' message (id: Field required)"),
        (b'{"op":"ready","name":5}', "bad 'ready' message (name: Input should be a valid string)"),
        (b'{"op":"what","id":"a"}', "unknown op 'what' (a system writes ready, result, error)"),
        (b'{"op":["result"]}', "unknown op ['result'] (a system writes ready, result, error)"),
        (b'{"op":null}', "unknown op None"),
        (b'{"id":"a"}', 'not a protocol message (needs an "op" key)'),
        (b'["op"]', 'not a protocol message (needs an "op" key)'),
        (b"{not json", "not a JSON line"),
        (b'{"op":"result","id":"\xff"}', "not a JSON line"),
    ],
)
def test_bad_messages_say_what_is_wrong(line: bytes, says: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_message(line)
    assert says in str(caught.value)
    # The line itself is quoted, so the operator sees what the system wrote.
    assert line[:4].decode("utf-8", "replace") in str(caught.value)


def test_a_long_bad_line_is_quoted_short() -> None:
    line = b'{"op":"result","id":"a","output":"' + b"x" * 10_000 + b'"}'
    with pytest.raises(ProtocolError) as caught:
        parse_message(line)
    assert len(str(caught.value)) < 400 and str(caught.value).count("x") < 250
