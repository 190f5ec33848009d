"""A participant system that tries what a cheating or careless one would (serve mode).

HOSTILE selects the behaviour per item; the answer reports what it found, so the tests
can assert that it found nothing of the run:
- snoop: search the file system from the input's directory up and from / for a journal,
  a site file, the test set and other inputs; read /proc; dump the environment; try the
  network (HOSTILE_PORT on 127.0.0.1); say who it runs as.
- scribble: write into its input file, every way it can; answer the input's SHA-256.
- daemon: double-fork a daemon into its own session that keeps touching $HOME/marker.
- forkbomb: fork HOSTILE_FORKS children that sleep; answer how many forks succeeded.
- closestdin: close stdin after the handshake and keep running.
- stderr: write HOSTILE_STDERR_BYTES to stderr per item, numbered lines.
- shm: list /dev/shm, take a multiprocessing.Lock, pass through a Queue, then fill
  /dev/shm until it is full.
- mountinfo: answer /proc/self/mountinfo.
- slow: move the protocol off fd 1 (as systems do to keep library chatter out of it),
  then never answer: a hang, not a closed stdout.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time

_WANTED = {"journal.jsonl", "site.toml", "run.json", "text", "manifest.json"}
# The operating system and the interpreter's own libraries are visible by design.
_SKIP = {"/proc", "/sys", "/dev", "/usr", "/etc", sys.prefix, sys.base_prefix}


def _readable(path: str) -> bool:
    """A file whose bytes can be read (a name masked by /dev/null reads nothing)."""
    try:
        with open(path, "rb") as fh:
            return bool(fh.read(1))
    except OSError:
        return False


def snoop(input_path: str) -> dict:
    found = []
    seen_inputs = []
    start = os.path.dirname(input_path)
    roots = [start, os.path.dirname(start), "/"]
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in _SKIP]
            for name in filenames:
                path = os.path.join(dirpath, name)
                wanted = _WANTED | set(os.environ.get("HOSTILE_WANTED", "").split(",")) - {""}
                if (name in wanted or name.endswith(".toml")) and _readable(path):
                    found.append(path)
                if name.endswith(".wav") and path != input_path:
                    seen_inputs.append(path)
    # /dev is skipped above, but the host stages sealed inputs in its RAM file system.
    for dirpath, _, filenames in os.walk("/dev/shm"):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if path != input_path:
                seen_inputs.append(path)
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    cmdlines = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdlines[pid] = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError as exc:
            cmdlines[pid] = f"unreadable: {exc.strerror}"
    environs = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environs[pid] = fh.read().decode(errors="replace")
        except OSError as exc:
            environs[pid] = f"unreadable: {exc.strerror}"
    network = "not tried"
    port = os.environ.get("HOSTILE_PORT")
    if port:
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as conn:
                conn.sendall(b"stolen\n")
            network = "connected"
        except OSError as exc:
            network = f"refused: {exc}"
    return {
        "found": found,
        "inputs": seen_inputs,
        "pids": pids,
        "cmdlines": cmdlines,
        "environs": environs,
        "env": dict(os.environ),
        "network": network,
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "groups": os.getgroups(),
        "cwd": os.getcwd(),
        "affinity": sorted(os.sched_getaffinity(0)),
    }


def scribble(input_path: str) -> dict:
    attempts = {}
    for name, how in (
        ("open_rw", lambda: open(input_path, "r+b").write(b"X" * 64)),
        ("chmod", lambda: os.chmod(input_path, 0o666)),
        ("unlink", lambda: os.unlink(input_path)),
        ("truncate", lambda: os.truncate(input_path, 0)),
    ):
        try:
            how()
            attempts[name] = "ok"
        except OSError as exc:
            attempts[name] = exc.strerror
    try:
        with open(input_path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        digest = None
    return {"attempts": attempts, "sha256": digest}


def daemon() -> dict:
    marker = os.path.join(os.environ["HOME"], "marker")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            while True:
                with open(marker, "a") as fh:
                    fh.write(f"{time.time()}\n")
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    deadline = time.time() + 5
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.01)
    return {"marker": marker, "started": os.path.exists(marker)}


def fill() -> dict:
    """Write into every writable place until refused (or HOSTILE_FILL_BYTES), then free it."""
    limit = int(os.environ.get("HOSTILE_FILL_BYTES", str(1 << 30)))
    chunk = b"x" * (1 << 20)
    written: dict[str, int] = {}
    errors: dict[str, str] = {}
    for place in (os.environ["HOME"], os.environ["TMPDIR"], "/tmp", "/onsite/out"):
        path = os.path.join(place, "filler")
        total = 0
        try:
            with open(path, "wb") as fh:
                while total < limit:
                    total += fh.write(chunk)
                    fh.flush()
        except OSError as exc:
            errors[place] = exc.strerror or str(exc)
        written[place] = total
        try:
            os.unlink(path)
        except OSError:
            pass
    return {"written": written, "errors": errors}


def hog() -> dict:
    """Hold HOSTILE_HOG_BYTES of memory, touching every page."""
    wanted = int(os.environ.get("HOSTILE_HOG_BYTES", str(2 << 30)))
    held = []
    total = 0
    while total < wanted:
        block = bytearray(16 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        held.append(block)
        total += len(block)
    return {"held": total}


def helpers() -> dict:
    """Start HOSTILE_HELPERS short helper processes, as a system calling a tool does."""
    wanted = int(os.environ.get("HOSTILE_HELPERS", "4"))
    ran = 0
    for _ in range(wanted):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        ran += 1
    return {"helpers": ran}


def forkbomb() -> dict:
    wanted = int(os.environ.get("HOSTILE_FORKS", "300"))
    made = 0
    refused = 0
    for _ in range(wanted):
        try:
            pid = os.fork()
        except OSError:
            refused += 1
            continue
        if pid == 0:
            time.sleep(3600)
            os._exit(0)
        made += 1
    return {"made": made, "refused": refused}


def shm() -> dict:
    import multiprocessing

    seen = sorted(os.listdir("/dev/shm"))
    report: dict = {"seen": seen}
    try:
        lock = multiprocessing.Lock()
        with lock:
            report["lock"] = "ok"
        queue: multiprocessing.Queue = multiprocessing.Queue()
        for n in (1, 2, 3):
            queue.put(n)
        report["queue"] = [queue.get(timeout=10) for _ in range(3)]
    except OSError as exc:
        report["lock"] = f"{type(exc).__name__}: {exc}"
    filled, error = 0, None
    try:
        with open("/dev/shm/fill", "wb") as fh:
            while filled < 1 << 30:
                fh.write(b"\0" * (1 << 20))
                fh.flush()
                filled += 1 << 20
    except OSError as exc:
        error = exc.strerror
    finally:
        if os.path.exists("/dev/shm/fill"):
            filled = os.path.getsize("/dev/shm/fill")
            os.unlink("/dev/shm/fill")
    report.update(filled=filled, fill_error=error)
    return {"shm": report}


def main() -> None:
    mode = os.environ.get("HOSTILE", "snoop")
    out = sys.stdout
    if mode == "slow":
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)

    def send(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            send({"op": "ready", "name": "hostile", "version": mode})
            if mode == "closestdin":
                os.close(0)
                time.sleep(3600)
        elif message["op"] == "item":
            path = message["input"].get("audio", "")
            if mode == "snoop":
                output = snoop(path)
            elif mode == "scribble":
                output = scribble(path)
            elif mode == "daemon":
                output = daemon()
            elif mode == "forkbomb":
                output = forkbomb()
            elif mode == "fill":
                output = fill()
            elif mode == "hog":
                output = hog()
            elif mode == "helpers":
                output = helpers()
            elif mode == "shm":
                output = shm()
            elif mode == "mountinfo":
                with open("/proc/self/mountinfo", encoding="utf-8") as fh:
                    output = {"mountinfo": fh.read()}
            elif mode == "slow":
                time.sleep(3600)
                output = {}
            elif mode == "stderr":
                size = int(os.environ.get("HOSTILE_STDERR_BYTES", "100000"))
                n = 0
                written = 0
                while written < size:
                    chunk = f"line {n:08d} of the noisy system\n"
                    sys.stderr.write(chunk)
                    written += len(chunk)
                    n += 1
                sys.stderr.write("the very last line\n")
                sys.stderr.flush()
                output = {"lines": n}
            else:
                output = {}
            output.setdefault("text", "")
            output.setdefault("uid", os.getuid())
            # Work on (or hang) after the item's work, with what it started still running.
            time.sleep(float(os.environ.get("HOSTILE_SLEEP", "0")))
            send({"op": "result", "id": message["id"], "output": output})
        elif message["op"] == "bye":
            return


if __name__ == "__main__":
    main()
