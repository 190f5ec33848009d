"""Serve mode over a stream, once: the handshake, the exchange of one item, resource sampling
and the system's log notes, shared by the local and SSH runners.

A stream transport specialises :class:`StreamServeRunner` with how it writes to the system,
where answer lines arrive, how it samples the system's CPU and memory, and what it says when
the stream ends (a process that exited, a link that died). The participant protocol itself is
runners.protocol; waiting for one answer is runners.exchange.
"""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from . import protocol
from .base import ItemAttempt, ItemRequest, Runner, StartError, StartInfo
from .exchange import AttemptBuilder, Lines, PendingItem, await_answer
from .lines import LineTooLong

# Starts each note the controller writes into a system's log; log_tail reads from the last.
LOG_MARKER = "--- onsite: "


def log_tail(path: Path, limit: int = 400) -> str:
    """The end of a system's log since its last start, on one line, for error messages."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    marker = text.rfind(LOG_MARKER)
    if marker >= 0:
        text = text[marker:].partition("\n")[2]
    return text.strip().replace("\n", " | ")


def log_note(text: str) -> str:
    """One note for a system's log: the marker, the text and the wall-clock time."""
    return f"{LOG_MARKER}{text} at {time.strftime('%Y-%m-%d %H:%M:%S')}"


class StreamServeRunner(Runner):
    """A resident system speaking the participant protocol on a byte stream."""

    # Errors of the stream during the handshake, reported as "handshake failed".
    HANDSHAKE_ERRORS: ClassVar[tuple[type[BaseException], ...]] = (OSError,)
    # Errors writing an item, taken as the system's end of the stream having closed.
    WRITE_ERRORS: ClassVar[tuple[type[BaseException], ...]] = (OSError,)

    # Readings of the system's CPU time and memory are taken when an item ends, at most
    # once per SAMPLE_SECONDS: by default one of the kernel's clock ticks (10 ms), the unit
    # /proc counts CPU time in, so a reading after a shorter item would say nothing about
    # it. A reading costs: about 16 us of the controller's time for a local system, as
    # much as the rest of a null item's bookkeeping; a transport may space them further.
    SAMPLE_SECONDS: ClassVar[float] = 1.0 / os.sysconf("SC_CLK_TCK")
    _cpu_mark: float | None = None
    _sampled_at: float = float("-inf")
    # The last reading was taken where the next item starts (at ready, or at the end of the
    # item before, the system idle in between): the next difference is that item's own.
    _mark_starts_next = False
    _peak_seen: int | None = None
    _item_sent = float("-inf")

    # -- what a transport provides ---------------------------------------------------------

    @property
    @abstractmethod
    def answers(self) -> Lines:
        """Where the system's lines arrive (only while it runs)."""

    @property
    @abstractmethod
    def pid(self) -> int | None:
        """The id the transport knows the running system by."""

    @abstractmethod
    def _write(self, data: bytes) -> None:
        """Send bytes to the system's stdin."""

    def _launched(self, deadline: float) -> bool | bytes | None:
        """Wait, if the transport must, until the system runs: True, or what ended the wait
        (None at the deadline, b"" at the end of the stream)."""
        return True

    @abstractmethod
    def _ended_before_ready(self) -> str:
        """Why the stream ended before ready (the system exited, the link died), while the
        system's remains are still there to ask."""

    @abstractmethod
    def _sample(self, now: float) -> tuple[float | None, int | None]:
        """CPU seconds so far and peak RSS of the system, or None where unknown."""

    def _on_ready(self, ready_at: float) -> None:
        """Prepare resource sampling once the system said ready."""

    def _attempt_fields(self) -> Mapping[str, Any]:
        """Fields every attempt of this transport carries (the link's round trip)."""
        return {}

    @abstractmethod
    def _stream_ended(self, attempt: AttemptBuilder, stream: str) -> ItemAttempt:
        """The attempt when the system's ``stream`` (stdin or stdout) closed mid-item."""

    @abstractmethod
    def _log_tail(self) -> str:
        """The end of the system's log since its last start."""

    # -- the handshake ---------------------------------------------------------------------

    def _handshake(self, t0: float, setup_files: Mapping[str, str]) -> StartInfo:
        """hello, then ready within setup_seconds of ``t0``; kills the system and raises
        StartError otherwise. The system's stream must be open."""
        spec = self.spec
        reader = self.answers
        deadline = t0 + spec.setup_seconds
        try:
            launched = self._launched(deadline)
            line = None if isinstance(launched, bool) else launched
            if launched is True:
                self._write(protocol.hello(spec.task, spec.kind, dict(setup_files)))
                line = reader.readline(deadline)
        except self.HANDSHAKE_ERRORS + (LineTooLong,) as exc:
            self.kill()
            raise StartError(f"handshake failed: {exc}") from exc
        if line is None:
            self.kill()
            raise StartError(
                f"no ready message within setup_seconds={spec.setup_seconds:g}; "
                f"stderr: {self._log_tail()}"
            )
        if line == b"":
            why = self._ended_before_ready()
            self.kill()
            raise StartError(why)
        ready_at = reader.arrived
        try:
            message = protocol.parse_message(line)
        except protocol.ProtocolError as exc:
            self.kill()
            raise StartError(f"expected a ready message, got {exc}") from exc
        if not isinstance(message, protocol.SystemReady):
            self.kill()
            raise StartError(f"expected a ready message, got op {message.op!r}")
        self._on_ready(ready_at)
        self._cpu_mark, self._peak_seen = self._sample(ready_at)
        self._sampled_at = ready_at
        self._mark_starts_next = self._cpu_mark is not None
        return StartInfo(message.name, message.version, ready_at - t0, self.pid)

    # -- one item --------------------------------------------------------------------------

    def _exchange(self, request: ItemRequest, data: bytes, stage_seconds: float) -> ItemAttempt:
        """Send one staged item and wait for its answer within its hang limit."""

        def builder(sent: float) -> AttemptBuilder:
            return AttemptBuilder(
                request.anon_id, sent, stage_seconds, self._measure, self._attempt_fields()
            )

        sent = self._item_sent = time.monotonic()
        try:
            self._write(data)
        except self.WRITE_ERRORS:
            return self._stream_ended(builder(sent), "stdin")
        sent = self._item_sent = self._handed_over(sent)
        attempt = builder(sent)
        item = PendingItem(
            request.anon_id, sent + request.hang_seconds, request.hang_seconds, attempt
        )
        return self._answered(await_answer(self, item))

    def _handed_over(self, before: float) -> float:
        """When the item's last bytes went to the kernel, given the time before the write
        (which a pipe's single write call leaves as good as any)."""
        return before

    def _answered(self, result: ItemAttempt) -> ItemAttempt:
        """A transport's last word on an attempt (what it learned while killing the system)."""
        return result

    def lose_system(self) -> None:
        """Kill the system in the middle of an item (runners.exchange.AnswerStream)."""
        self.kill()

    def stream_ended(self, item: PendingItem) -> ItemAttempt:
        """The system's stdout ended before the answer (runners.exchange.AnswerStream)."""
        return self._stream_ended(item.attempt, "stdout")

    # -- resources -------------------------------------------------------------------------

    def _measure(self, now: float) -> tuple[float | None, int | None]:
        """The CPU seconds of the item ending now, and the peak RSS so far.

        The CPU figure is the difference between the reading now and the one before, given
        only where that is the item's own: the reading before was taken where the item
        started, or so shortly before that other items' time in it is at most a tenth of
        this item's (readings are at most SAMPLE_SECONDS apart while items end, so that
        holds for every item ten times longer). Otherwise None, never a share of other
        items' time: items shorter than SAMPLE_SECONDS mostly have none.
        """
        if now - self._sampled_at < self.SAMPLE_SECONDS:
            self._mark_starts_next = False
            return None, self._peak_seen
        cpu, peak = self._sample(now)
        started, read_before = self._item_sent, self._sampled_at
        self._sampled_at = now
        used = None
        own = self._mark_starts_next or started - read_before <= (now - started) / 10
        if cpu is not None and self._cpu_mark is not None and own:
            used = max(0.0, cpu - self._cpu_mark)
        self._cpu_mark = cpu
        self._mark_starts_next = cpu is not None
        if peak is not None:
            self._peak_seen = peak
        return used, self._peak_seen
