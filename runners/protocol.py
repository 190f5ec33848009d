"""The participant protocol: JSON objects, one per line, on the system's stdin and stdout.

harness -> {"op": "hello", "protocol": 1, "task": ..., "kind": ...}
system  -> {"op": "ready", "name": ..., "version": ...}
harness -> {"op": "item", "id": ..., "input": {...}}
system  -> {"op": "result", "id": ..., "output": {...}} | {"op": "error", "id": ..., "message": ...}
harness -> {"op": "bye"}

The same bytes flow over a local pipe and over an SSH channel, so this module
knows nothing about transports.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

PARTICIPANT_PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 16 * 1024 * 1024


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class SystemReady(_Message):
    """The system finished loading and can take items."""

    op: Literal["ready"]
    name: str = ""
    version: str = ""


class Result(_Message):
    """The system's answer to one item."""

    op: Literal["result"]
    id: str
    output: dict[str, Any]


class Error(_Message):
    """The system could not process one item and says why."""

    op: Literal["error"]
    id: str
    message: str = ""


SystemMessage = SystemReady | Result | Error
_BY_OP: dict[str, type[SystemMessage]] = {"ready": SystemReady, "result": Result, "error": Error}


class ProtocolError(ValueError):
    """A line from the system that is not a valid protocol message."""


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\n")
    return text if len(text) <= 200 else text[:200] + "..."


def parse_message(line: bytes) -> SystemReady | Result | Error:
    """Parse one line written by a system, or raise ProtocolError saying what is wrong."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"not a JSON line ({exc}): {_shown(line)!r}") from exc
    if not isinstance(data, dict) or "op" not in data:
        raise ProtocolError(f'not a protocol message (needs an "op" key): {_shown(line)!r}')
    op = data["op"]
    # Chosen by its op, the message is checked against its own model only: half the cost
    # of trying the union, and the problems listed are the ones of the message meant.
    model = _BY_OP.get(op) if isinstance(op, str) else None
    if model is None:
        raise ProtocolError(
            f"unknown op {op!r} (a system writes {', '.join(_BY_OP)}): {_shown(line)!r}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ProtocolError(f"bad {op!r} message ({problems}): {_shown(line)!r}") from exc


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of UTF-8 JSON."""
    return orjson.dumps(message) + b"\n"


def hello(task: str, kind: str, files: dict[str, str] | None = None) -> bytes:
    """The first line the harness sends; ``files`` are setup inputs (name -> staged path)."""
    message: dict[str, Any] = {
        "op": "hello",
        "protocol": PARTICIPANT_PROTOCOL_VERSION,
        "task": task,
        "kind": kind,
    }
    if files:
        message["files"] = files
    return encode(message)


def item(anon_id: str, inputs: dict[str, Any]) -> bytes:
    """One item request."""
    return encode({"op": "item", "id": anon_id, "input": inputs})


BYE = encode({"op": "bye"})

__all__ = [
    "BYE",
    "Error",
    "MAX_LINE_BYTES",
    "PARTICIPANT_PROTOCOL_VERSION",
    "ProtocolError",
    "SystemReady",
    "Result",
    "encode",
    "hello",
    "item",
    "parse_message",
]
