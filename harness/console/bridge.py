"""The narrow channel between a controller and the console process that serves its run.

The console serves every viewer from a process of its own (harness/console/__main__.py)
and reads the run's journal itself. What the journal does not say crosses one UNIX
socket pair, one JSON object per line:

- controller -> console: ``hello`` once (the tokens), ``state`` (whether the controller
  runs: looked at every PUBLISH_SECONDS, sent when it changed) and ``reply`` (to a
  control);
- console -> controller: ``control``, an operator action the console has already
  authenticated with the operator token.

No path names the channel: only the process started with its end holds it. Nothing a
viewer does crosses it; the controller's side handles one small message at a time on a
thread of its own and journals each control as `Controller.control` does.

This module needs no web stack: the controller's side is loaded by `onsite run`.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import ControlConflict

# How often the controller's side looks at whether the controller runs (its only
# periodic work), and so the longest a console shows a stale "running".
PUBLISH_SECONDS = 0.25
# A line longer than this is no message of ours: the channel is closed.
MAX_LINE = 64 * 1024
# The longest a console waits for the controller to answer a control.
REPLY_SECONDS = 30.0
# How long a send may block before the other side counts as gone.
SEND_SECONDS = 5.0
# The least time between two controls the controller takes: a script flooding controls
# with the operator token gets them spaced out, not the controller's CPU.
CONTROL_GAP_SECONDS = 0.05
_NAME = 200  # the longest task, system or device name a control may carry


class Controls(Protocol):
    """What takes an operator's controls: the controller (harness.engine.controller.Controller)
    and, in the console's process, the controller's end of the channel (`ConsoleSide`)."""

    def control(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
        actor: str = "operator",
    ) -> dict[str, Any]: ...


class Controllable(Controls, Protocol):
    """What the controller's side needs of a controller (harness.engine.controller.Controller)."""

    def is_running(self) -> bool: ...


class ControlUnavailable(Exception):
    """The controller did not answer a control (it is gone, or took too long)."""


class Hello(BaseModel):
    """The first message to the console: the tokens it checks requests against."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["hello"]
    operator: str | None
    viewer: str | None


class State(BaseModel):
    """What the console cannot read in the journal: whether the controller runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["state"]
    running: bool


class Reply(BaseModel):
    """The controller's answer to one control: an HTTP status and the record or the error."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["reply"]
    id: int
    status: int
    record: dict[str, Any] | None = None
    error: str | None = None


class ControlRequest(BaseModel):
    """One operator action, as the console forwards it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["control"]
    id: int = Field(ge=0, lt=1 << 53)
    action: str = Field(max_length=16)
    task: str | None = Field(default=None, max_length=_NAME)
    system: str | None = Field(default=None, max_length=_NAME)
    device: str | None = Field(default=None, max_length=_NAME)


def _line(message: BaseModel) -> bytes:
    return message.model_dump_json().encode("utf-8") + b"\n"


class _Lines:
    """Whole lines from a socket, each at most MAX_LINE bytes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def feed(self) -> list[bytes] | None:
        """The lines completed by one read; None once the other side closed (or overflowed)."""
        try:
            data = self.sock.recv(65536)
        except OSError:
            return None
        if not data:
            return None
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > MAX_LINE or any(len(line) > MAX_LINE for line in lines):
            return None
        return lines


class ControllerSide:
    """The controller's end: publishes its state, takes controls, on a thread of its own.

    Viewers never reach it; a control costs the controller one parsed line and the
    `control` call it would have made for a console in its own process.
    """

    def __init__(self, controller: Controllable, sock: socket.socket) -> None:
        self.controller = controller
        self.sock = sock
        self.sock.settimeout(SEND_SECONDS)
        self._send_lock = threading.Lock()
        self._stopping = threading.Event()
        self._published: bool | None = None
        self._last_control = 0.0
        self._thread = threading.Thread(target=self._serve, name="console-bridge", daemon=True)

    def start(self, hello: Hello) -> None:
        """Send the tokens, then publish and take controls until stop()."""
        self._send(hello)
        self._thread.start()

    def stop(self) -> None:
        """Say the controller stopped, close the channel (the console then ends its streams
        with the final state and exits) and wait for the thread."""
        self._stopping.set()
        with self._send_lock:
            try:
                self.sock.sendall(_line(State(type="state", running=False)))
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the console is gone already
        self._thread.join(timeout=2 * PUBLISH_SECONDS + SEND_SECONDS)
        self.sock.close()

    def _send(self, message: BaseModel) -> bool:
        with self._send_lock:
            if self._stopping.is_set() and not isinstance(message, Hello):
                return False
            try:
                self.sock.sendall(_line(message))
            except OSError:
                return False
        return True

    def _serve(self) -> None:
        lines = _Lines(self.sock)
        while not self._stopping.is_set():
            try:
                readable, _, _ = select.select([self.sock], [], [], PUBLISH_SECONDS)
            except (OSError, ValueError):
                return  # closed under us by stop()
            if readable:
                got = lines.feed()
                if got is None:
                    return  # the console is gone, or sent what no console of ours sends
                for line in got:
                    if line.strip() and not self._send(self._answer(line)):
                        return
            running = self.controller.is_running()
            if running != self._published:
                if not self._send(State(type="state", running=running)):
                    return
                self._published = running

    def _answer(self, line: bytes) -> Reply:
        wait = self._last_control + CONTROL_GAP_SECONDS - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_control = time.monotonic()
        try:
            request = ControlRequest.model_validate_json(line)
        except ValidationError as exc:
            return Reply(type="reply", id=-1, status=400, error=f"not a control: {exc}"[:500])
        try:
            record = self.controller.control(
                request.action, task=request.task, system=request.system, device=request.device
            )
        except KeyError as exc:
            message = str(exc.args[0]) if exc.args else "not found"
            return Reply(type="reply", id=request.id, status=404, error=message)
        except ValueError as exc:
            return Reply(type="reply", id=request.id, status=400, error=str(exc))
        except ControlConflict as exc:
            return Reply(type="reply", id=request.id, status=409, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a control must never end the controller
            return Reply(
                type="reply",
                id=request.id,
                status=500,
                error=f"the controller could not apply it: {type(exc).__name__}: {exc}"[:500],
            )
        return Reply(type="reply", id=request.id, status=200, record=_plain(record))


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """The record as JSON values (what the console answers with)."""
    return dict(json.loads(json.dumps(record, default=str)))


class ConsoleSide:
    """The console's end: the controller's state as published, and controls sent to it.

    ``control`` has the signature of `Controller.control` and raises as it does
    (KeyError, ValueError, ControlConflict), or ControlUnavailable when no answer comes.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lines = _Lines(sock)
        self._pending: list[bytes] = []
        self._running = False
        self._closed = threading.Event()
        self._send_lock = threading.Lock()
        self._replies: dict[int, Reply] = {}
        self._waiting: dict[int, threading.Event] = {}
        self._reply_lock = threading.Lock()
        self._next_id = 0
        self._on_close: Callable[[], None] = lambda: None

    def hello(self, timeout: float = 60.0) -> Hello:
        """Read the first message (the tokens); raises ControlUnavailable without one."""
        self.sock.settimeout(timeout)
        try:
            while not self._pending:
                got = self._lines.feed()
                if got is None:
                    raise ControlUnavailable("the controller closed the channel before its hello")
                self._pending.extend(line for line in got if line.strip())
        finally:
            self.sock.settimeout(None)
        try:
            return Hello.model_validate_json(self._pending.pop(0))
        except ValidationError as exc:
            raise ControlUnavailable(f"the controller's hello is malformed: {exc}") from None

    def start(self, on_close: Callable[[], None]) -> None:
        """Follow the controller's messages on a thread; ``on_close`` runs once the channel
        closes (the run ended, or the controller is gone)."""
        self._on_close = on_close
        threading.Thread(target=self._follow, name="controller-link", daemon=True).start()

    def is_running(self) -> bool:
        """Whether the controller works on the run, as it last said."""
        return self._running and not self._closed.is_set()

    @property
    def closed(self) -> bool:
        """True once the controller closed the channel."""
        return self._closed.is_set()

    def control(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
        actor: str = "operator",
    ) -> dict[str, Any]:
        """Send one control and wait for the controller's answer (the journaled record)."""
        with self._reply_lock:
            ident = self._next_id
            self._next_id += 1
            done = self._waiting[ident] = threading.Event()
        try:
            request = ControlRequest(
                type="control", id=ident, action=action, task=task, system=system, device=device
            )
        except ValidationError as exc:
            with self._reply_lock:
                self._waiting.pop(ident, None)
            raise ValueError(f"not a control: {exc.errors()[0]['msg']}") from None
        try:
            with self._send_lock:
                if self._closed.is_set():
                    raise ControlUnavailable("the controller has ended")
                self.sock.sendall(_line(request))
            if not done.wait(REPLY_SECONDS):
                raise ControlUnavailable("the controller did not answer in time")
        except OSError:
            raise ControlUnavailable("the controller has ended") from None
        finally:
            with self._reply_lock:
                self._waiting.pop(ident, None)
                reply = self._replies.pop(ident, None)
        if reply is None:
            raise ControlUnavailable("the controller has ended")
        if reply.status == 200 and reply.record is not None:
            return reply.record
        message = reply.error or "refused"
        if reply.status == 404:
            raise KeyError(message)
        if reply.status == 400:
            raise ValueError(message)
        if reply.status == 409:
            raise ControlConflict(message)
        raise ControlUnavailable(message)

    def _follow(self) -> None:
        try:
            while True:
                for line in self._pending:
                    self._take(line)
                self._pending = []
                got = self._lines.feed()
                if got is None:
                    return
                self._pending = [line for line in got if line.strip()]
        finally:
            self._closed.set()
            with self._reply_lock:
                for event in self._waiting.values():
                    event.set()
            self._on_close()

    def _take(self, line: bytes) -> None:
        try:
            data = json.loads(line)
            if data.get("type") == "state":
                self._running = State.model_validate(data).running
            elif data.get("type") == "reply":
                reply = Reply.model_validate(data)
                with self._reply_lock:
                    if reply.id in self._waiting:
                        self._replies[reply.id] = reply
                        self._waiting[reply.id].set()
        except (ValueError, AttributeError):
            return  # not ours to act on: nothing a viewer sees depends on it
