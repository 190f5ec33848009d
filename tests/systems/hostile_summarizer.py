"""A summarization system that breaks the rules on purpose (serve mode, stdlib only).

The document's first word chooses what it answers:
- LONG: a summary three times the item's length_limit (in its length_unit);
- EMPTY: an empty summary ({"text": ""});
- NOTEXT: an answer without "text";
- BYTES: a result line whose summary is not UTF-8 (raw bytes on stdout);
- anything else: the document's first line, as a summary.
"""

from __future__ import annotations

import json
import sys


def send(out, message: dict) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def main() -> int:
    out = sys.stdout.buffer
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            send(out, {"op": "ready", "name": "hostile-summarizer", "version": "1"})
        elif op == "item":
            item = message["input"]
            text = item["text"]
            word = text.split()[0] if text.split() else ""
            limit = int(item["length_limit"])
            if word == "LONG":
                unit = "w " if item["length_unit"] == "word" else "字"
                answer = {"text": unit * (3 * limit)}
            elif word == "EMPTY":
                answer = {"text": ""}
            elif word == "NOTEXT":
                answer = {"summary": text}
            elif word == "BYTES":
                head = b'{"op": "result", "id": ' + json.dumps(message["id"]).encode()
                out.write(head + b', "output": {"text": "\xff\xfe\xb1"}}\n')
                out.flush()
                continue
            else:
                answer = {"text": text.splitlines()[0]}
            send(out, {"op": "result", "id": message["id"], "output": answer})
        elif op == "bye":
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
