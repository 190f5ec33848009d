"""The judging station: a Starlette app over one `JudgeStore` (API in docs/judging.md).

Routes::

    GET  /judge/{token}                 the judge's page
    GET  /judge/{token}/media/{id}.wav  a trial's audio (anonymous id, this judge's only)
    GET  /api/judge/{token}/next        the next trial, or {"done": true}
    POST /api/judge/{token}/answer      {"trial", "answer", "plays"?}
    GET  /operator/{token}              progress page for the operator
    GET  /api/operator/{token}/progress progress per judge, as JSON

A bad token is 401, a malformed answer or one outside the scale 400 with the
reason, an answer for another trial than the current one (or answered before) 409.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .pages import JUDGE_PAGE, OPERATOR_PAGE
from .plan import balance
from .schema import validate
from .store import JudgeStore

_NO_STORE = {"cache-control": "no-store"}
_MAX_BODY = 64 << 10


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=_NO_STORE)


def _unknown_token() -> JSONResponse:
    return _error(401, "unknown judge token: use the link the operator gave you")


def create_app(store: JudgeStore) -> Starlette:
    """The station's ASGI app; every route reads and writes ``store`` only."""

    def judge_of(request: Request) -> str | None:
        return store.judge_of(request.path_params["token"])

    def trial_view(judge: str) -> dict[str, Any]:
        found = store.next_trial(judge)
        if found is None:
            return {"done": True}
        trial, served, done, total = found
        token = store.tokens()[judge]
        media = [f"/judge/{token}/media/{m}.wav" for m in served["media"]]
        return {
            "done": False,
            "trial": trial,
            "test": served["test"],
            "media": media,
            "text": served["text"],
            "answer_schema": served["answer_schema"],
            "play_once": served["play_once"],
            # Audio fetched before (a judge who closed the page mid-trial): a test played
            # once only must not be heard again.
            "played": len(media) > 0 and store.fetched(trial) >= len(media),
            "progress": {"answered": done, "total": total},
        }

    def page(request: Request) -> Response:
        if judge_of(request) is None:
            return HTMLResponse("<h1>Unknown judge link</h1>", status_code=401)
        return HTMLResponse(JUDGE_PAGE, headers=_NO_STORE)

    def media(request: Request) -> Response:
        judge = judge_of(request)
        if judge is None:
            return _unknown_token()
        found = store.media_path(judge, request.path_params["media"])
        if found is None or not found[1].is_file():
            return _error(404, "no such audio for this judge")
        trial, path = found
        ranged = request.headers.get("range", "bytes=0-")
        if ranged.startswith("bytes=0-"):
            # A play starts at byte 0; later range requests of the same play are not counted.
            store.journal("played", judge, trial)
        return FileResponse(path, media_type="audio/wav", headers=_NO_STORE)

    def next_trial(request: Request) -> Response:
        judge = judge_of(request)
        if judge is None:
            return _unknown_token()
        view = trial_view(judge)
        if not view["done"]:
            store.journal("served", judge, view["trial"])
        return JSONResponse(view, headers=_NO_STORE)

    async def answer(request: Request) -> Response:
        judge = judge_of(request)
        if judge is None:
            return _unknown_token()
        raw = await request.body()
        if len(raw) > _MAX_BODY:
            return _error(400, f"the answer is larger than {_MAX_BODY} bytes")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"the body is not JSON ({exc}); send {{'trial', 'answer'}}")
        if not isinstance(body, dict) or not isinstance(body.get("trial"), str):
            return _error(400, 'send {"trial": "<id>", "answer": {...}}')
        trial = body["trial"]
        plays = body.get("plays")
        if plays is not None and (not isinstance(plays, int) or isinstance(plays, bool)):
            return _error(400, '"plays" must be a whole number (how often the audio was played)')
        found = store.served(trial)
        if found is None or found[0] != judge:
            return _error(400, f"trial {trial!r} is not one of this judge's trials")
        if store.is_answered(trial):
            return _error(409, f"trial {trial!r} is already answered")
        current = store.next_trial(judge)
        if current is None or current[0] != trial:
            return _error(409, "answer the current trial first (GET next)")
        problem = validate(found[1]["answer_schema"], body.get("answer"))
        if problem:
            store.journal("refused", judge, trial, reason=problem)
            return _error(400, problem)
        if not store.record_answer(judge, trial, body["answer"], plays):
            return _error(409, f"trial {trial!r} is already answered")
        return JSONResponse({"ok": True}, headers=_NO_STORE)

    def operator_page(request: Request) -> Response:
        if not store.is_operator(request.path_params["token"]):
            return HTMLResponse("<h1>Unknown operator link</h1>", status_code=401)
        return HTMLResponse(OPERATOR_PAGE, headers=_NO_STORE)

    def progress(request: Request) -> Response:
        if not store.is_operator(request.path_params["token"]):
            return _error(401, "unknown operator token")
        meta = store.meta()
        answered = {(a.judge, a.position) for a in store.answers()}
        warnings = balance(store.plan(), answered).warnings
        return JSONResponse(
            {
                "task": meta["task"],
                "test": meta["test"],
                "judges": store.progress(),
                "warnings": list(warnings),
            },
            headers=_NO_STORE,
        )

    return Starlette(
        routes=[
            Route("/judge/{token}", page),
            Route("/judge/{token}/media/{media}.wav", media),
            Route("/api/judge/{token}/next", next_trial),
            Route("/api/judge/{token}/answer", answer, methods=["POST"]),
            Route("/operator/{token}", operator_page),
            Route("/api/operator/{token}/progress", progress),
        ]
    )
