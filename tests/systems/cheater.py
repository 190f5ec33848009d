"""A participant system that tries to answer with the references instead of recognizing.

It does what a participant found possible before runs were sealed: from the staged
input's path it walks up to the run directory, reads the journal's `dispatched` records
(anonymous id -> item), follows run.json to the site file and the test set's `text`,
and answers each item with its reference. It also searches its working directory.
When it finds nothing it answers an empty text. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _find_journal(start: Path) -> Path | None:
    for parent in start.parents:
        candidate = parent / "journal.jsonl"
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            continue
    return None


def _texts(roots: list[Path]) -> dict[str, str]:
    refs: dict[str, str] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if dirpath.count(os.sep) - str(root).count(os.sep) > 5:
                dirnames[:] = []
            if "text" in filenames:
                try:
                    lines = Path(dirpath, "text").read_text(encoding="utf-8").splitlines()
                except OSError:
                    continue
                for line in lines:
                    utt, _, words = line.partition(" ")
                    refs.setdefault(utt, words)
    return refs


def cheat(anon_id: str, audio: str) -> str:
    journal = _find_journal(Path(audio))
    item = None
    roots = [Path.cwd()]
    if journal is not None:
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == "dispatched" and record.get("anon_id") == anon_id:
                item = record.get("item")
        try:
            meta = json.loads((journal.parent / "run.json").read_text(encoding="utf-8"))
            roots.append(Path(meta["site_root"]))
        except (OSError, ValueError, KeyError):
            pass
    refs = _texts(roots)
    return refs.get(item or "", "")


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "cheater", "version": "1"}), flush=True)
        elif message["op"] == "item":
            text = cheat(message["id"], message["input"]["audio"])
            answer = {"op": "result", "id": message["id"], "output": {"text": text}}
            print(json.dumps(answer), flush=True)
        elif message["op"] == "bye":
            return


if __name__ == "__main__":
    main()
