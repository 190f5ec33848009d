"""The judging panel: a Starlette app over one `JudgeStore` (API in docs/judging.md).

Routes::

    GET  /judge/{token}                 the judge's page
    GET  /judge/{token}/media/{id}.wav  a trial's audio (anonymous id, this judge's only)
    GET  /api/judge/{token}/next        the next trial, or {"done": true}
    POST /api/judge/{token}/answer      {"trial", "answer", "plays"?}
    GET  /operator/{token}              progress page for the operator
    GET  /api/operator/{token}/progress progress per judge, as JSON

A bad token is 401, a malformed answer or one outside the scale 400 with the
reason, an answer for another trial than the current one (or answered before) 409,
a play-once sample asked for again 410. The app is wrapped in harness.webguard's
GuardMiddleware: Host check (421), anti-framing headers, bodies capped at 64 KiB (413).

Audio is served blind (media.py): every file in one canonical WAV form, from memory,
with no header that depends on the file (no Last-Modified, no ETag, no name), and
whole: a Range header is ignored, so one play is one request and every request is a
play, counted on the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from harness.judge.media import MediaBank
from harness.judge.pages import JUDGE_PAGE, OPERATOR_PAGE
from harness.judge.plan import balance
from harness.judge.schema import validate
from harness.judge.store import JudgeStore
from harness.webguard import ASGIApp, BadInput, GuardMiddleware, parse_json, small_int

_NO_STORE = {"cache-control": "no-store"}
# An answer is a few hundred bytes; SUS blanks at most a few KiB.
MAX_BODY = 64 << 10
# More plays than any listener reports; a larger number is a client's mistake.
_MAX_PLAYS = 1000
# Trial ids are 16 hex digits; anything much longer is not one (and is not echoed).
_MAX_TRIAL_ID = 64
_SEND = 'send {"trial": "<id>", "answer": {...}, "plays": n}'


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=_NO_STORE | headers)


def _unknown_token() -> JSONResponse:
    return _error(401, "unknown judge token: use the link the operator gave you")


def create_app(
    store: JudgeStore, hosts: Iterable[str] | None = None, bank: MediaBank | None = None
) -> ASGIApp:
    """The panel's ASGI app, guarded; every route reads and writes ``store`` only.

    ``hosts`` are the names the panel answers to (webguard.allowed_hosts; None: any);
    ``bank`` the plan's audio, loaded from the store's files when not given.
    """
    media_bank = bank if bank is not None else MediaBank.load(store.media_files())

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
            # Audio served before (a judge who closed the page mid-trial): the play of a
            # test played once only has begun, and its samples are not served again.
            "played": len(media) > 0 and store.fetched(trial) > 0,
            "progress": {"answered": done, "total": total},
        }

    def page(request: Request) -> Response:
        if judge_of(request) is None:
            return HTMLResponse("<h1>Unknown judge link</h1>", status_code=401)
        return HTMLResponse(JUDGE_PAGE, headers=_NO_STORE)

    def media(request: Request) -> Response:
        if request.method != "GET":
            # HEAD would tell the size without a play; browsers play with GET.
            return _error(405, "audio is fetched with GET", allow="GET")
        judge = judge_of(request)
        if judge is None:
            return _unknown_token()
        media_id = request.path_params["media"]
        found = store.media_path(judge, media_id)
        audio = None if found is None else media_bank.get(found[1])
        served = None if found is None else store.served(found[0])
        if found is None or audio is None or served is None:
            return _error(404, "no such audio for this judge")
        trial = found[0]
        # Whatever the Range header asks, the whole sample is served in one 200 answer:
        # a browser plays it from that one response, and any request is one play.
        allowed = 1 if served[1]["play_once"] else None
        if not store.claim_play(judge, trial, media_id, allowed, request.headers.get("range")):
            return _error(
                410,
                "this sample was played once already: this test is heard once only, "
                "answer with what you heard",
            )
        return Response(audio, media_type="audio/wav", headers=_NO_STORE)

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
        # GuardMiddleware has capped the body at MAX_BODY bytes.
        raw = await request.body()
        try:
            body = parse_json(raw, "the answer")
            if not isinstance(body, dict) or not isinstance(body.get("trial"), str):
                raise BadInput('the answer needs a "trial" id')
            _check_text(body)
            plays = small_int(body.get("plays"), "plays", 0, _MAX_PLAYS)
        except BadInput as exc:
            return _error(exc.status, f"{exc}; {_SEND}")
        trial = body["trial"]
        if len(trial) > _MAX_TRIAL_ID:
            return _error(400, "that trial id is not one of this judge's trials")
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

    app = Starlette(
        routes=[
            Route("/judge/{token}", page),
            Route("/judge/{token}/media/{media}.wav", media),
            Route("/api/judge/{token}/next", next_trial),
            Route("/api/judge/{token}/answer", answer, methods=["POST"]),
            Route("/operator/{token}", operator_page),
            Route("/api/operator/{token}/progress", progress),
        ]
    )
    return GuardMiddleware(app, hosts, MAX_BODY)


def _check_text(body: Any) -> None:
    """Refuse text that cannot be stored as UTF-8 (JSON's lone surrogates, e.g. "\\ud800")."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput("the answer holds a lone surrogate (\\ud800-\\udfff), not text") from None
