"""A POS tagger from a table given on its command line (serve mode, stdlib only).

``python -m tests.systems.pos_table WORD=TAG ...``: each sentence is cut by forward
maximum matching over the table's words (else one character) and each word gets its
table tag, else ``n``. Two such systems with different tables dispute tags on the
same words, which is what a pos-review panel needs.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    table = dict(arg.split("=", 1) for arg in sys.argv[1:])
    longest = max((len(w) for w in table), default=1)
    out = sys.stdout
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "hello":
            out.write(json.dumps({"op": "ready", "name": "pos-table", "version": "1"}) + "\n")
        elif op == "item":
            text = str(message["input"]["text"])
            words = []
            k = 0
            while k < len(text):
                n = next(
                    (
                        n
                        for n in range(min(longest, len(text) - k), 0, -1)
                        if text[k : k + n] in table
                    ),
                    1,
                )
                words.append(text[k : k + n])
                k += n
            tagged = " ".join(f"{w}/{table.get(w, 'n')}" for w in words)
            reply = {"op": "result", "id": message["id"], "output": {"text": tagged}}
            out.write(json.dumps(reply, ensure_ascii=False) + "\n")
        elif op == "bye":
            return 0
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
