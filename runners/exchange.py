"""One item's attempt, built the same way by every runner, and waiting for a system's answer on
a stream: the part of the participant protocol that is the same over a local pipe and an SSH
channel."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import protocol
from .base import ItemAttempt, Outcome
from .lines import LineTooLong

Measure = Callable[[float], tuple[float | None, int | None]]


class Lines(Protocol):
    """A line source with a deadline (runners.lines.LineReader, the SSH channel reader)."""

    arrived: float

    def readline(self, deadline: float) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class AttemptBuilder:
    """Builds the ItemAttempt of one item: ``attempt(outcome, done, **fields)``.

    Resources are measured at ``done`` when ``measure`` is given; ``fixed`` fields go into
    every attempt; with ``lost_on_failure`` a timeout or crash counts the system as lost
    unless a field says otherwise.
    """

    anon_id: str
    sent: float
    stage_seconds: float
    measure: Measure | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    lost_on_failure: bool = True

    def __call__(self, outcome: Outcome, done: float, **fields: Any) -> ItemAttempt:
        if self.measure is not None:
            fields["cpu_seconds"], fields["peak_rss_bytes"] = self.measure(done)
        if self.lost_on_failure:
            fields.setdefault("system_lost", outcome in ("timeout", "crashed"))
        return ItemAttempt(
            self.anon_id,
            outcome,
            fields.pop("sent", self.sent),
            done,
            fields.pop("stage_seconds", self.stage_seconds),
            **self.fixed,
            **fields,
        )


@dataclass(frozen=True, slots=True)
class PendingItem:
    """An item sent on a stream and not yet answered."""

    anon_id: str
    deadline: float
    hang_seconds: float
    attempt: AttemptBuilder


class AnswerStream(Protocol):
    """The runner side of a stream that answers items (runners.serve.StreamServeRunner)."""

    @property
    def answers(self) -> Lines:
        """Where the system's answer lines arrive."""
        ...

    def lose_system(self) -> None:
        """Stop the system: on a timeout, and when the stream is out of step so that only a
        restart makes the next answer trustworthy."""
        ...

    def stream_ended(self, item: PendingItem) -> ItemAttempt:
        """The attempt when the answer stream ended before the answer."""
        ...


def await_answer(stream: AnswerStream, item: PendingItem) -> ItemAttempt:
    """Read until the answer for ``item``, its deadline, or the end of the stream."""
    reader = stream.answers
    attempt = item.attempt
    while True:
        try:
            line = reader.readline(item.deadline)
        except LineTooLong as exc:
            now = time.monotonic()
            stream.lose_system()
            return attempt("invalid_output", now, message=str(exc), system_lost=True)
        if line is None:
            result = attempt(
                "timeout",
                time.monotonic(),
                message=f"no answer within hang_seconds={item.hang_seconds:g}; killed",
            )
            stream.lose_system()
            return result
        if line == b"":
            return stream.stream_ended(item)
        done = reader.arrived
        if not line.strip():
            continue
        result = _judge_line(line, done, item.anon_id, attempt)
        if result.system_lost:
            stream.lose_system()
        return result


def _judge_line(line: bytes, done: float, anon_id: str, attempt: AttemptBuilder) -> ItemAttempt:
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
