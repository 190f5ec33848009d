"""A summarization system that writes terminal control sequences everywhere (stdlib only).

Its ready name and version, its stderr, its error messages and, on its last item,
its crash all carry ESC sequences (screen clear, colour, window title), CR and BEL:
none of it may reach the operator's terminal (tests/test_terminal_control_chars.py).
"""

from __future__ import annotations

import json
import sys

NASTY = "\x1b[2J\x1b[31mRED\x1b[0m\rCR\x1b]0;pwned\x07\x07"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            sys.stderr.write(f"starting {NASTY}\n")
            sys.stderr.flush()
            send({"op": "ready", "name": f"evil{NASTY}name", "version": f"1{NASTY}"})
        elif op == "item":
            text = message["input"]["text"]
            sys.stderr.write(f"item {NASTY}\n")
            sys.stderr.flush()
            if text.startswith("CRASH"):
                return 3  # the stderr tail goes into "system lost"
            send({"op": "error", "id": message["id"], "message": f"cannot {NASTY} do it"})
        elif op == "bye":
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
