"""Shared pieces of the judging-panel tests: real runs to judge, an HTTP client, judges."""

from __future__ import annotations

import io
import json
import random
import shutil
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from harness.cli.main import main
from harness.judge.panel import PanelServer, open_panel
from harness.judge.store import JudgeStore
from tests.helpers import REPO, run_site, write_site

# Distinctive names: none of them may appear in anything the panel serves.
SYSTEMS = {
    "acme-voice": ["--speed", "120"],
    "zenith-speech": ["--speed", "200"],
    "orbit-talk": ["--pitch", "20"],
}
TTS_TASK = "synthesis-olympic"
TESTSET_DIR = "olympic-corpus"
SENTENCES = {
    "s1": "The green table sings a careful song",
    "s2": "A quiet river eats the yellow chair",
    "s3": "Seven windows drink the soft lamp",
    "s4": "Call me at nine in the morning",
    "s5": "The train leaves from platform two",
    "s6": "Good evening and welcome home",
}
SUS = {
    "s1": {"blanks": [1, 5], "answers": [["green"], ["careful"]]},
    "s2": {"blanks": [4], "answers": [["yellow"]]},
    "s3": {"blanks": [0, 4], "answers": [["seven", "7"], ["soft"]]},
}


def make_tts_run(root: Path) -> Path:
    """A finished run of the tts task with three espeak-ng settings; returns the run dir."""
    testset = root / TESTSET_DIR
    testset.mkdir(parents=True)
    (testset / "text").write_text("".join(f"{k} {v}\n" for k, v in SENTENCES.items()), "utf-8")
    (testset / "sus.jsonl").write_text(
        "".join(json.dumps({"id": k, **v}) + "\n" for k, v in SUS.items()), "utf-8"
    )
    systems = {
        name: {
            "command": [sys.executable, "-m", "examples.systems.espeak_tts", *extra],
            "workdir": str(REPO),
        }
        for name, extra in SYSTEMS.items()
    }
    site = write_site(
        root / "site.toml",
        testset,
        systems,
        budget={"chars_per_second": 2.0, "hang_seconds": 30.0},
        task=TTS_TASK,
        task_keys={"kind": "tts"},
        device={"transport": "local", "sandbox": False},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


# Systems writing the same samples in other WAV layouts (tests/systems/wav_layouts.py).
LAYOUT_SYSTEMS = {
    "plain-voice": "plain",
    "listchunk-voice": "list",
    "float-voice": "float",
    "deep-voice": "pcm24",
}


def make_layout_run(root: Path) -> Path:
    """A finished tts run whose systems write identical samples in different WAV layouts."""
    testset = root / TESTSET_DIR
    testset.mkdir(parents=True)
    (testset / "text").write_text("".join(f"{k} {v}\n" for k, v in SENTENCES.items()), "utf-8")
    systems = {
        name: {
            "command": [sys.executable, "-m", "tests.systems.wav_layouts", "--layout", layout],
            "workdir": str(REPO),
        }
        for name, layout in LAYOUT_SYSTEMS.items()
    }
    site = write_site(
        root / "site.toml",
        testset,
        systems,
        budget={"chars_per_second": 2.0, "hang_seconds": 30.0},
        task=TTS_TASK,
        task_keys={"kind": "tts"},
        device={"transport": "local", "sandbox": False},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


def make_text_run(root: Path, kind: str) -> Path:
    """A finished run of the demo mt or cws set with two baseline systems."""
    baseline = [sys.executable, "-m", "examples.systems.text_baselines"]
    systems = {
        name: {"command": baseline + extra, "workdir": str(REPO)}
        for name, extra in (("acme-mt", []), ("zenith-mt", []))
    }
    site = write_site(
        root / "site.toml",
        REPO / "site_config" / "data" / "demo-text" / kind,
        systems,
        task=kind,
        task_keys={"kind": kind},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


def copy_run(run_dir: Path, to: Path) -> Path:
    """A private copy of a shared run (panels write into the run directory)."""
    return Path(shutil.copytree(run_dir, to / run_dir.name))


@contextmanager
def serving(
    run_dir: Path,
    task: str,
    test: str,
    judges: int | None = None,
    seed: int | None = None,
    link_host: str | None = None,
) -> Iterator[tuple[str, JudgeStore]]:
    """A real panel (uvicorn on 127.0.0.1, a free port) for the duration of a block."""
    store, _ = open_panel(run_dir, task, test, judges, seed)
    server = PanelServer(store, "127.0.0.1", 0, link_host=link_host)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", store
    finally:
        server.stop()
        store.close()


def call(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One HTTP request; the status and the decoded body (JSON when it is JSON)."""
    data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            raw, status, kind = response.read(), response.status, response.headers["content-type"]
    except urllib.error.HTTPError as exc:
        raw, status, kind = exc.read(), exc.code, exc.headers["content-type"]
    if kind and "json" in kind:
        return status, json.loads(raw)
    return status, raw


def raw(
    base: str, head: str | bytes, body: bytes = b"", host: str | bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request written on a socket as given (a client library would refuse to send it).

    ``head`` is the request line, e.g. ``"GET /judge/x HTTP/1.1"``, with more header lines
    after it if wanted; Host (the panel's address unless given) and
    ``Connection: close`` are added. The status, the headers (lower-case names) and the body.
    """
    port = int(base.rsplit(":", 1)[1])
    line = head.encode("utf-8") if isinstance(head, str) else head
    name = host if host is not None else f"127.0.0.1:{port}"
    name = name.encode("utf-8") if isinstance(name, str) else name
    request = line + b"\r\nHost: " + name + b"\r\nConnection: close\r\n\r\n" + body
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for text in lines[1:]:
        key, _, value = text.partition(":")
        headers[key.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, rest


def answer_for(judge: str, view: dict[str, Any]) -> dict[str, Any]:
    """What a simulated judge answers: a valid answer drawn from the schema, seeded."""
    rng = random.Random(f"{judge}/{view['trial']}")
    props = view["answer_schema"]["properties"]
    out: dict[str, Any] = {}
    for name, schema in props.items():
        if schema["type"] == "array":
            n = schema["minItems"]
            parts = view["text"]["parts"]
            # A good listener: mostly right (the hidden words are in SUS, by position).
            words = [w for w in parts if w is not None]
            out[name] = [
                rng.choice(["green", "yellow", "soft", "7", "", "wrong"]) for _ in range(n)
            ]
            assert words
        elif schema["type"] == "boolean":
            out[name] = rng.random() < 0.6
        elif "enum" in schema:
            out[name] = rng.choice(schema["enum"])
        elif schema["type"] == "integer":
            out[name] = rng.randint(schema["minimum"], schema["maximum"])
        else:
            out[name] = round(rng.randint(0, 50) / 10, 1)
    return out


def judge_all(base: str, token: str, judge: str, stop_after: int | None = None) -> list[Any]:
    """Answer a judge's trials in order through the API; everything served is returned."""
    seen: list[Any] = []
    answered = 0
    while stop_after is None or answered < stop_after:
        status, view = call(base, "GET", f"/api/judge/{token}/next")
        assert status == 200, view
        seen.append(view)
        if view["done"]:
            break
        for url in view["media"]:
            status, audio = call(base, "GET", url)
            assert status == 200 and audio[:4] == b"RIFF"
            seen.append(url)
        body = {"trial": view["trial"], "answer": answer_for(judge, view), "plays": 1}
        status, reply = call(base, "POST", f"/api/judge/{token}/answer", body)
        assert status == 200, reply
        answered += 1
    return seen


def onsite(*args: str) -> tuple[int, str]:
    """Run the onsite CLI in this process; its exit code and standard output."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()
