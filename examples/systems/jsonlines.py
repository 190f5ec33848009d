"""Minimal JSON-lines serve loop and exec-mode helper for example systems.

Serve mode: the harness writes one JSON object per line to stdin and reads
one per line from stdout (hello -> ready, item -> result/error, bye).
Exec mode: ``python -m systems.X --exec INPUT OUTPUT`` handles one
item and writes its output object as JSON to OUTPUT.

Stand-alone on purpose: participant programs must not depend on the harness.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

PROTOCOL_VERSION = 1

Recognize = Callable[[dict[str, Any]], dict[str, Any]]
Setup = Callable[[dict[str, Any]], None]


def log(message: str) -> None:
    """Write a log line to stderr (the harness records stderr)."""
    print(message, file=sys.stderr, flush=True)


def _claim_stdout() -> TextIO:
    """Return a private handle on the protocol stream and point fd 1 at stderr.

    Native libraries and stray print() calls write to fd 1 / sys.stdout; sending
    those to stderr keeps the protocol stream clean whatever they do.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "w", encoding="utf-8", newline="\n", closefd=True)


def _send(out: TextIO, message: dict[str, Any]) -> None:
    # ensure_ascii keeps every message on one line whatever the hypothesis holds.
    out.write(json.dumps(message, ensure_ascii=True) + "\n")
    out.flush()


def serve(
    name: str,
    version: str,
    recognize: Recognize,
    setup: Setup | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run the serve-mode loop until ``bye`` or EOF; return the exit code.

    ``setup(hello)`` runs once after hello and before ready (e.g. model
    loading); ``recognize(input)`` maps an item's input to its output dict.
    An exception in ``recognize`` becomes an ``error`` reply for that item
    and the loop keeps serving.
    """
    inp = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else _claim_stdout()
    ready = False
    while True:
        line = inp.readline()
        if not line:
            log(f"{name}: EOF on stdin, exiting")
            return 0
        if not line.strip():
            continue
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("message is not a JSON object")
        except ValueError as exc:
            _send(out, {"op": "error", "message": f"bad protocol line: {exc}"})
            continue
        op = message.get("op")
        item_id = message.get("id")
        if op == "hello":
            if ready:
                _send(out, {"op": "error", "message": "duplicate hello"})
                continue
            if message.get("protocol") != PROTOCOL_VERSION:
                _send(
                    out,
                    {"op": "error", "message": f"unsupported protocol {message.get('protocol')!r}"},
                )
                return 2
            if setup is not None:
                try:
                    setup(message)
                except Exception as exc:  # reported to the harness, then exit
                    _send(out, {"op": "error", "message": f"setup failed: {exc}"})
                    return 1
            ready = True
            _send(out, {"op": "ready", "name": name, "version": version})
        elif op == "item":
            if not ready:
                _send(out, _error(item_id, "item received before hello"))
                continue
            try:
                output = recognize(message.get("input") or {})
            except Exception as exc:  # one bad item must not end the run
                log(f"{name}: item {item_id}: {type(exc).__name__}: {exc}")
                _send(out, _error(item_id, str(exc) or type(exc).__name__))
                continue
            _send(out, {"op": "result", "id": item_id, "output": output})
        elif op == "bye":
            return 0
        else:
            _send(out, _error(item_id, f"unknown op {op!r}"))


def _error(item_id: Any, text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"op": "error"}
    if item_id is not None:
        message["id"] = item_id
    message["message"] = text
    return message


def exec_input(input_path: str) -> dict[str, Any]:
    """Build an item input from an exec-mode INPUT argument.

    A ``.json`` file is taken to hold the input object itself; anything else
    is taken to be the audio file.
    """
    path = Path(input_path)
    if path.suffix.lower() == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{input_path}: input JSON is not an object")
        return data
    return {"audio": str(path.resolve())}


def exec_main(
    recognize: Recognize, input_path: str, output_path: str, setup: Setup | None = None
) -> int:
    """Handle one exec-mode item: recognize INPUT, write the output JSON to OUTPUT.

    Returns the process exit code: 0 on success, 1 (with a message on stderr
    and no output file) on failure.
    """
    try:
        if setup is not None:
            setup({"op": "hello", "protocol": PROTOCOL_VERSION, "mode": "exec"})
        output = recognize(exec_input(input_path))
    except Exception as exc:  # becomes the exit status
        log(f"error: {type(exc).__name__}: {exc}")
        return 1
    target = Path(output_path)
    # Write then rename so the harness never sees a half-written file.
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(output, ensure_ascii=True) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return 0


def main(
    name: str,
    version: str,
    recognize: Recognize,
    setup: Setup | None = None,
    argv: list[str] | None = None,
) -> int:
    """Dispatch on the command line: ``--exec INPUT OUTPUT`` or serve mode."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--exec"]:
        if len(args) != 3:
            log("usage: --exec INPUT OUTPUT")
            return 2
        return exec_main(recognize, args[1], args[2], setup)
    if args:
        log(f"unexpected arguments: {args}")
        return 2
    return serve(name, version, recognize, setup)
