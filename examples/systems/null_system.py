"""A null participant: answers every item at once with ``{"text": ""}``.

Used to benchmark the harness's own per-item overhead, so the loop does as
little as possible: no model, no audio access, one json.loads per line and a
pre-built reply template.  Usage: ``python -m systems.null_system``.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    """Serve-mode loop; returns the exit code."""
    # Local names avoid attribute lookups per line in the hot loop.
    loads = json.loads
    dumps = json.dumps
    write = sys.stdout.write
    flush = sys.stdout.flush
    for line in sys.stdin:
        try:
            message = loads(line)
            op = message.get("op")
        except (ValueError, AttributeError):
            # Blank or non-object lines: report, never die on them.
            write('{"op": "error", "message": "bad protocol line"}\n')
            flush()
            continue
        if op == "item":
            write(
                '{"op": "result", "id": ' + dumps(message.get("id")) + ', "output": {"text": ""}}\n'
            )
        elif op == "hello":
            write('{"op": "ready", "name": "null-system", "version": "1.0"}\n')
        elif op == "bye":
            return 0
        else:
            reply = {"op": "error", "id": message.get("id"), "message": f"unknown op {op!r}"}
            if reply["id"] is None:
                del reply["id"]
            write(dumps(reply) + "\n")
        flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
