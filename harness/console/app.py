"""The console's ASGI app: pages, the JSON API, the event stream and the operator controls."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import ControlConflict
from .auth import VIEW_COOKIE, Tokens, may_operate, may_view
from .view import RunView

STATIC = Path(__file__).parent / "static"
# How often the event stream looks at the journal, and the longest it stays silent (so
# in-flight timers move and a stopped controller shows even when nothing is written).
POLL_SECONDS = 0.25
HEARTBEAT_SECONDS = 1.0


class Controls(Protocol):
    """What the console needs of a live controller (harness.controller.Controller)."""

    def control(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
        actor: str = "operator",
    ) -> dict[str, Any]: ...


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers={"Cache-Control": "no-store"})


def _error(status: int, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class ConsoleApp:
    """Builds the Starlette app over one RunView and, when live, the controller's controls."""

    def __init__(self, view: RunView, tokens: Tokens, controls: Controls | None = None) -> None:
        self.view = view
        self.tokens = tokens
        self.controls = controls
        # Set when the server shuts down, so open event streams end (set from any thread).
        self.closing = threading.Event()
        routes = [
            Route("/", self._page("overview.html")),
            Route("/jobs/{task}/{system}", self._page("job.html")),
            Route("/board", self._page("board.html")),
            Route("/api/status", self.api_status),
            Route("/api/jobs/{task}/{system}", self.api_job),
            Route("/api/events", self.api_events),
            Route("/api/jobs/{task}/{system}/{action}", self.control_job, methods=["POST"]),
            Route("/api/devices/{device}/{action}", self.control_device, methods=["POST"]),
            Route("/api/stop", self.control_stop, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
        self.app = Starlette(routes=routes)

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
            if token and self.tokens.viewer is not None:
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
        data = await run_in_threadpool(self._job, task, system)
        if data is None:
            return _error(404, f"no job {task}/{system} in this run")
        return _json(data)

    # Scoring the quality so far can take a moment (a large job, a first compile): it runs
    # in a worker thread so that the server keeps answering meanwhile.
    def _status(self) -> dict[str, Any]:
        self.view.refresh()
        return self.view.status()

    def _job(self, task: str, system: str) -> dict[str, Any] | None:
        self.view.refresh()
        return self.view.job(task, system)

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
            self._stream(request),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, request: Request) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        sent_version = -1
        sent_at = 0.0
        yield b"retry: 1000\n\n"
        while not self.closing.is_set():
            now = loop.time()
            status = await run_in_threadpool(
                self._changed_status, sent_version, now - sent_at >= HEARTBEAT_SECONDS
            )
            if status is not None:
                sent_version, sent_at = status["version"], now
                yield b"event: status\ndata: " + json.dumps(status).encode() + b"\n\n"
            # Starlette cancels this generator when the client goes away.
            await asyncio.sleep(POLL_SECONDS)
        # The server is going down (the run ended): the last word is the final state.
        final = await run_in_threadpool(self._changed_status, sent_version, True)
        if final is not None:
            yield b"event: status\ndata: " + json.dumps(final).encode() + b"\n\n"

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
        self.view.refresh()
        return _json({"ok": True, "action": record})

    async def control_job(self, request: Request) -> Response:
        """POST /api/jobs/{task}/{system}/pause|resume|retry"""
        refused = self._refuse(request)
        if refused is not None:
            return refused
        p = request.path_params
        if p["action"] not in ("pause", "resume", "retry"):
            return _error(404, f"a job can be paused, resumed or retried, not {p['action']!r}")
        return self._act(p["action"], task=p["task"], system=p["system"])

    async def control_device(self, request: Request) -> Response:
        """POST /api/devices/{device}/pause|resume|skip"""
        refused = self._refuse(request)
        if refused is not None:
            return refused
        p = request.path_params
        if p["action"] not in ("pause", "resume", "skip"):
            return _error(404, f"a device can be paused, resumed or skipped, not {p['action']!r}")
        return self._act(p["action"], device=p["device"])

    async def control_stop(self, request: Request) -> Response:
        """POST /api/stop"""
        refused = self._refuse(request)
        if refused is not None:
            return refused
        return self._act("stop")
