"""A summarization system that answers a stored summary per document (serve mode, stdlib only).

Usage: ``fixture_summarizer.py SUMMARIES.jsonl``. The document's first word is its id;
the answer is that id's ``text`` in SUMMARIES.jsonl, byte for byte (``\\r``, U+2028 and
all), so a live run scores exactly the summaries a reference tool was given.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    summaries: dict[str, str] = {}
    with open(sys.argv[1], encoding="utf-8", newline="") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                summaries[str(row["id"])] = row["text"]
    out = sys.stdout
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            reply = {"op": "ready", "name": "fixture-summarizer", "version": "1"}
        elif op == "item":
            doc = message["input"]["text"].split()[0]
            reply = {"op": "result", "id": message["id"], "output": {"text": summaries[doc]}}
        elif op == "bye":
            return 0
        else:
            continue
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
