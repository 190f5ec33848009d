"""A participant system whose behaviour per item the tests script.

The plan comes from the FAKE_PLAN environment variable: JSON mapping the
item's audio length in frames (the one thing that survives anonymous staging)
to a behaviour: {"delay": s, "burn": s (of CPU time, busy), "text": str,
"repeat": n (the text n times),
"do": "crash" | "hang" | "garbage" | "error" | "bad_output" | "wrong_id"}.
FAKE_START may be "crash", "hang" or "garbage" to misbehave before ready.
FAKE_LOG names a file that receives every message the harness sent, one JSON
line each. Standard library only, so the fake starts fast and cannot import the harness by accident.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import wave


def plan_key(inputs: dict) -> str:
    """Audio: its frame count; a PNG: its width; other files: their size in bytes;
    a text item (no file): its text, query, or tokens joined by spaces."""
    if "audio" in inputs:
        with wave.open(inputs["audio"], "rb") as fh:
            return str(fh.getnframes())
    if "frame" in inputs:
        return f"f{inputs['frame']}"
    path = inputs.get("image") or inputs.get("image_a") or inputs.get("ink")
    if path is None:
        if "tokens" in inputs:
            return " ".join(inputs["tokens"])
        return str(inputs.get("text", inputs.get("query", "")))
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head.startswith(b"\x89PNG"):
        return str(int.from_bytes(head[16:20], "big"))
    return str(os.path.getsize(path))


def main() -> None:
    plan = json.loads(os.environ.get("FAKE_PLAN", "{}"))
    log_path = os.environ.get("FAKE_LOG")
    start = os.environ.get("FAKE_START", "")
    out = sys.stdout

    def send(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    seen: set[str] = set()
    for line in sys.stdin:
        message = json.loads(line)
        if log_path:
            with open(log_path, "a") as log:
                log.write(line if line.endswith("\n") else line + "\n")
        op = message["op"]
        if op == "hello" and log_path:
            files = message.get("files", {})
            with open(log_path, "a") as log:
                log.write(json.dumps({"affinity": sorted(os.sched_getaffinity(0))}) + "\n")
                log.write(
                    json.dumps({"files_exist": {k: os.path.exists(p) for k, p in files.items()}})
                    + "\n"
                )
        if op == "hello":
            if start == "crash":
                print("fake: failing at start-up", file=sys.stderr)
                sys.exit(3)
            if start == "hang":
                time.sleep(3600)
            if start == "garbage":
                out.write("Loading model... done\n")
                out.flush()
                continue
            time.sleep(float(os.environ.get("FAKE_SETUP_SECONDS", "0")))
            send({"op": "ready", "name": "fake", "version": "1.0"})
        elif op == "item":
            key = plan_key(message["input"])
            behaviour = plan.get(key, {})
            if behaviour.get("do") == "cache" and key in seen:
                pass  # a cheat: the second time the same input comes, answer at once
            else:
                time.sleep(behaviour.get("delay", 0))
                burn_until = time.process_time() + float(behaviour.get("burn", 0))
                while time.process_time() < burn_until:
                    pass
            seen.add(key)
            if behaviour.get("do") == "random":
                behaviour = {"text": os.urandom(4).hex()}
            action = behaviour.get("do")
            if action == "crash":
                print("fake: crashing on purpose", file=sys.stderr)
                sys.stderr.flush()
                os._exit(7)
            if action == "hang":
                # A child that would outlive a careless kill of the parent alone.
                child = subprocess.Popen(["sleep", "3600"])
                if os.environ.get("FAKE_CHILD_PID"):
                    with open(os.environ["FAKE_CHILD_PID"], "w") as fh:
                        fh.write(f"{os.getpid()} {child.pid}\n")
                time.sleep(3600)
            if action == "garbage":
                out.write("Segmentation fault? \x00\x01 not json\n")
                out.flush()
                continue
            if action == "error":
                send({"op": "error", "id": message["id"], "message": "cannot decode"})
                continue
            if action == "bad_output":
                send({"op": "result", "id": message["id"], "output": {"words": ["a"]}})
                continue
            if action == "wrong_id":
                send({"op": "result", "id": "not-" + message["id"], "output": {"text": ""}})
                continue
            text = behaviour.get("text", "") * int(behaviour.get("repeat", 1))
            output = behaviour.get("output", {"text": text})
            send({"op": "result", "id": message["id"], "output": output})
        elif op == "bye":
            return


if __name__ == "__main__":
    main()
