"""Waiting for a system's answer to one item: the part of the participant protocol that is
the same over a local pipe and an SSH channel."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from . import protocol
from .base import ItemAttempt
from .lines import LineTooLong


class Lines(Protocol):
    """A line source with a deadline (runners.lines.LineReader, the SSH channel reader)."""

    arrived: float

    def readline(self, deadline: float) -> bytes | None: ...


def attempt_builder(
    anon_id: str,
    sent: float,
    stage_seconds: float,
    measure: Callable[[float], tuple[float | None, int | None]],
    **fixed: Any,
) -> Callable[..., ItemAttempt]:
    """``attempt(outcome, done, **fields)`` for one item: resources measured at ``done``,
    and the system counted as lost on a timeout or crash unless a field says otherwise."""

    def attempt(outcome: str, done: float, **fields: Any) -> ItemAttempt:
        cpu, peak = measure(done)
        fields.setdefault("system_lost", outcome in ("timeout", "crashed"))
        return ItemAttempt(
            anon_id,
            outcome,  # type: ignore[arg-type]
            sent,
            done,
            stage_seconds,
            cpu_seconds=cpu,
            peak_rss_bytes=peak,
            **fixed,
            **fields,
        )

    return attempt


def await_answer(
    reader: Lines,
    deadline: float,
    anon_id: str,
    hang_seconds: float,
    attempt: Callable[..., ItemAttempt],
    kill: Callable[[], None],
    crashed: Callable[[], ItemAttempt],
) -> ItemAttempt:
    """Read until the answer for ``anon_id``, the deadline, or the end of the stream.

    ``attempt(outcome, done, **fields)`` builds the ItemAttempt; ``kill()`` stops the
    system (on timeout, and when the stream is out of step so that only a restart makes
    the next answer trustworthy); ``crashed()`` handles the end of the stream.
    """
    while True:
        try:
            line = reader.readline(deadline)
        except LineTooLong as exc:
            now = time.monotonic()
            kill()
            return attempt("invalid_output", now, message=str(exc), system_lost=True)
        if line is None:
            result = attempt(
                "timeout",
                time.monotonic(),
                message=f"no answer within hang_seconds={hang_seconds:g}; killed",
            )
            kill()
            return result
        if line == b"":
            return crashed()
        done = reader.arrived
        if not line.strip():
            continue
        result = _judge_line(line, done, anon_id, attempt)
        if result.system_lost:
            kill()
        return result


def _judge_line(
    line: bytes, done: float, anon_id: str, attempt: Callable[..., ItemAttempt]
) -> ItemAttempt:
    try:
        message: Any = protocol.parse_message(line)
    except protocol.ProtocolError as exc:
        return attempt("invalid_output", done, message=str(exc), system_lost=True)
    if isinstance(message, protocol.SystemReady) or message.id != anon_id:
        got = getattr(message, "id", None)
        return attempt(
            "invalid_output",
            done,
            message=f"answer for id {got!r} while waiting for {anon_id!r}",
            system_lost=True,
        )
    if isinstance(message, protocol.Error):
        return attempt("error", done, message=message.message)
    return attempt("result", done, output=message.output)
