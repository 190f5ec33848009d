"""The console's ASGI app: pages, the JSON API, the event stream and the operator controls.

It runs in a process of its own (harness/console/__main__.py for `onsite run --console`,
`onsite console` for any run directory), never in the controller's: viewers cost the
controller nothing. Every response passes harness/webguard.py's guard.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from harness.console.auth import VIEW_COOKIE, Tokens, may_operate, may_view
from harness.console.bridge import Controls, ControlUnavailable
from harness.console.view import RunView
from harness.errors import ControlConflict
from harness.webguard import GuardMiddleware

STATIC = Path(__file__).parent / "static"
# How often the event stream looks at the journal, and the longest it stays silent (so
# in-flight timers move and a stopped controller shows even when nothing is written).
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 1.0
# No request of the console carries a body: anything past this is refused unread (413).
MAX_BODY = 4096
# A status document built this recently (and for the same journal) answers a poll again.
STATUS_REUSE_SECONDS = 0.2


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers={"Cache-Control": "no-store"})


def _error(status: int, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class ConsoleApp:
    """Builds the guarded Starlette app over one RunView and, when live, the controls.

    ``hosts``: the Host names answered (webguard.allowed_hosts); None answers any.
    ``app`` is what a server serves.
    """

    def __init__(
        self,
        view: RunView,
        tokens: Tokens,
        controls: Controls | None = None,
        hosts: Iterable[str] | None = None,
    ) -> None:
        self.view = view
        self.tokens = tokens
        self.controls = controls
        # Set when the server shuts down, so open event streams end (set from any thread).
        self.closing = threading.Event()
        self._status_lock = threading.Lock()
        self._status_doc: tuple[int, float, dict[str, Any]] | None = None
        self._job_docs: dict[tuple[str, str], tuple[int, float, bytes]] = {}
        self._stream = _Broadcast(self)
        routes = [
            Route("/", self._page("overview.html")),
            Route("/jobs/{task}/{system}", self._page("job.html")),
            Route("/board", self._page("board.html")),
            Route("/api/status", self.api_status),
            Route("/api/jobs/{task}/{system}", self.api_job),
            Route("/api/events", self.api_events),
            Route("/api/operator", self.api_operator),
            Route("/api/jobs/{task}/{system}/{action}", self.control_job, methods=["POST"]),
            Route("/api/devices/{device}/{action}", self.control_device, methods=["POST"]),
            Route("/api/stop", self.control_stop, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
        self.app = GuardMiddleware(Starlette(routes=routes), hosts, MAX_BODY)

    # --- pages -------------------------------------------------------------------------

    def _page(self, name: str) -> Callable[[Request], Any]:
        async def page(request: Request) -> Response:
            if not may_view(request, self.tokens):
                return Response(
                    "this console needs its viewer token: open it with ?token=...\n",
                    status_code=401,
                    media_type="text/plain",
                )
            response = FileResponse(STATIC / name, headers={"Cache-Control": "no-store"})
            token = request.query_params.get("token")
            if token and self.tokens.viewer is not None and token.isascii() and token.isprintable():
                # Later requests of this page (the API, the event stream) carry the cookie.
                response.set_cookie(VIEW_COOKIE, token, httponly=True, samesite="strict")
            return response

        return page

    # --- API ---------------------------------------------------------------------------

    async def api_status(self, request: Request) -> Response:
        """GET /api/status"""
        if not may_view(request, self.tokens):
            return _error(401, "viewer token required")
        return _json(await run_in_threadpool(self._status))

    async def api_job(self, request: Request) -> Response:
        """GET /api/jobs/{task}/{system}"""
        if not may_view(request, self.tokens):
            return _error(401, "viewer token required")
        task, system = request.path_params["task"], request.path_params["system"]
        body = await run_in_threadpool(self._job, task, system)
        if body is None:
            return _error(404, f"no job {task}/{system} in this run")
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def api_operator(self, request: Request) -> Response:
        """GET /api/operator: whether this console has controls, and whether the request
        carries the operator's token; the overview shows its controls only when both hold."""
        if not may_view(request, self.tokens):
            return _error(401, "viewer token required")
        controls = self.controls is not None and self.tokens.operator is not None
        operator = controls and may_operate(request, self.tokens)
        return _json({"controls": controls, "operator": operator})

    # Scoring the quality so far can take a moment (a large job, a first compile): it runs
    # in a worker thread so that the server keeps answering meanwhile.
    def _status(self) -> dict[str, Any]:
        # Many viewers polling at once share one document (the journal has not grown
        # since, and in-flight timers are at most STATUS_REUSE_SECONDS old).
        with self._status_lock:
            self.view.refresh()
            now = time.monotonic()
            doc = self._status_doc
            if doc is None or doc[0] != self.view.version or now - doc[1] > STATUS_REUSE_SECONDS:
                doc = self._status_doc = (self.view.version, now, self.view.status())
            return doc[2]

    def _job(self, task: str, system: str) -> bytes | None:
        # As for the status: viewers polling one job at once share one document.
        with self._status_lock:
            self.view.refresh()
            now = time.monotonic()
            doc = self._job_docs.get((task, system))
            if doc is None or doc[0] != self.view.version or now - doc[1] > STATUS_REUSE_SECONDS:
                body = self.view.job_json(task, system)
                if body is None:
                    return None
                doc = self._job_docs[(task, system)] = (self.view.version, now, body)
            return doc[2]

    def _changed_status(self, sent_version: int, force: bool) -> dict[str, Any] | None:
        self.view.refresh()
        if self.view.version == sent_version and not force:
            return None
        return self.view.status()

    async def api_events(self, request: Request) -> Response:
        """GET /api/events: server-sent events, one ``status`` event per change."""
        if not may_view(request, self.tokens):
            return _error(401, "viewer token required")
        return StreamingResponse(
            self._stream.follow(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    # --- controls ----------------------------------------------------------------------

    def _refuse(self, request: Request) -> Response | None:
        if self.controls is None or self.tokens.operator is None:
            return _error(403, "this console is read-only: controls are on `onsite run --console`")
        if not may_operate(request, self.tokens):
            return _error(401, "operator token required (Authorization: Bearer TOKEN)")
        return None

    def _act(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
    ) -> Response:
        assert self.controls is not None
        try:
            record = self.controls.control(action, task=task, system=system, device=device)
        except KeyError as exc:
            return _error(404, str(exc.args[0]) if exc.args else "not found")
        except ValueError as exc:
            return _error(400, str(exc))
        except ControlConflict as exc:
            return _error(409, str(exc))
        except ControlUnavailable as exc:
            return _error(503, str(exc))
        self.view.refresh()
        return _json({"ok": True, "action": record})

    async def _control(
        self, request: Request, action: str, actions: tuple[str, ...], can: str, **target: str
    ) -> Response:
        """``action`` on ``target``, if one of ``actions`` (``can`` says which, for the 404
        of any other); refused without the operator's token."""
        refused = self._refuse(request)
        if refused is not None:
            return refused
        if action not in actions:
            return _error(404, f"{can}, not {action!r}")
        # The controller answers over the channel (bridge.py): wait off the event loop.
        return await run_in_threadpool(self._act, action, **target)

    async def control_job(self, request: Request) -> Response:
        """POST /api/jobs/{task}/{system}/pause|resume|retry"""
        p = request.path_params
        can = "a job can be paused, resumed or retried"
        job = {"task": p["task"], "system": p["system"]}
        return await self._control(request, p["action"], ("pause", "resume", "retry"), can, **job)

    async def control_device(self, request: Request) -> Response:
        """POST /api/devices/{device}/pause|resume|skip"""
        p = request.path_params
        can = "a device can be paused, resumed or skipped"
        actions = ("pause", "resume", "skip")
        return await self._control(request, p["action"], actions, can, device=p["device"])

    async def control_stop(self, request: Request) -> Response:
        """POST /api/stop"""
        return await self._control(request, "stop", ("stop",), "the run can be stopped")


class _Broadcast:
    """The event stream's one producer: every open stream gets the same encoded event.

    A status is built once per change (the journal looked at every POLL_SECONDS), or
    after HEARTBEAT_SECONDS without one, whatever the number of viewers; the producer
    runs only while a stream is open. When the console closes, the last event is the
    final state and every stream ends after it.
    """

    def __init__(self, console: ConsoleApp) -> None:
        self.console = console
        self.latest: bytes | None = None
        self.serial = 0
        self.final = False
        self.followers = 0
        self._changed: asyncio.Event | None = None
        self._producer: asyncio.Task[None] | None = None

    async def follow(self) -> AsyncIterator[bytes]:
        """One viewer's stream."""
        if self._changed is None:
            self._changed = asyncio.Event()
        self.followers += 1
        if self._producer is None or self._producer.done():
            # Nobody followed for a while: what was sent last is no news.
            self.latest = None
            self._producer = asyncio.get_running_loop().create_task(self._produce())
        try:
            yield b"retry: 1000\n\n"
            seen = 0
            while True:
                changed = self._changed
                if self.serial > seen and self.latest is not None:
                    seen = self.serial
                    yield self.latest
                if self.final and seen == self.serial:
                    return
                # Starlette cancels this generator when the client goes away.
                await changed.wait()
        finally:
            self.followers -= 1

    def _publish(self, status: dict[str, Any], final: bool = False) -> None:
        self.latest = b"event: status\ndata: " + json.dumps(status).encode() + b"\n\n"
        self.serial += 1
        self.final = final
        assert self._changed is not None
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _produce(self) -> None:
        loop = asyncio.get_running_loop()
        console = self.console
        sent_version = -1
        sent_at = 0.0
        while self.followers and not console.closing.is_set():
            now = loop.time()
            status = await run_in_threadpool(
                console._changed_status, sent_version, now - sent_at >= HEARTBEAT_SECONDS
            )
            if status is not None:
                sent_version, sent_at = status["version"], now
                self._publish(status)
            await asyncio.sleep(POLL_SECONDS)
        if console.closing.is_set():
            # The server is going down (the run ended): the last word is the final state.
            final = await run_in_threadpool(console._changed_status, sent_version, True)
            assert final is not None
            self._publish(final, final=True)
