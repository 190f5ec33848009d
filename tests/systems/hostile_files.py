"""A system that leaves something other than a file where it must write its answer.

    hostile_files.py exec SHAPE INPUT OUTPUT   # exec mode, any audio-in kind
    hostile_files.py tts SHAPE                 # a tts system in serve mode

A link's target is in the environment (``HOSTILE_TARGET``): as an argument, a sandbox
would take it for one of the program's files and want to show it to the system.

Exec mode: the item whose input WAV has ``HOSTILE_FRAMES`` frames gets SHAPE at OUTPUT;
the others get ``{"text": "fine"}``. tts: the item whose text starts with "Hostile" gets
SHAPE at ``audio_out``; the others a valid mono WAV at the rate asked. Either way the
system exits 0 (exec) or answers ``result`` as if all were well.

SHAPE: ``dir`` (a directory), ``fifo`` (a named pipe no one writes), ``socket`` (a bound
UNIX socket, held open while the system lives), ``symlink`` (a link to HOSTILE_TARGET), ``device``
(a character device like /dev/zero: needs root, so an unsealed system),
``sparse`` (a regular file of 10 GB apparent size, all hole), ``deep`` (JSON nested
200000 deep, which exhausts a recursive parser), ``lease`` (tts only: a
regular WAV file under a write lease the system holds, so that a blocking open of it
waits for the lease to be broken).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import stat
import sys
import wave

HOSTILE_FRAMES = 3200
SPARSE_BYTES = 10 << 30

# What must outlive the call that made it (a bound socket, a lease's descriptor).
_held: list[object] = []


def write_wav(path: str, rate: int) -> None:
    """A tenth of a second of a quiet square wave, mono 16-bit."""
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x01\x00\xff" * (rate // 20))


def make(shape: str, path: str, target: str | None, rate: int = 16000) -> None:
    """Leave SHAPE at path."""
    if shape == "dir":
        os.mkdir(path)
    elif shape == "fifo":
        os.mkfifo(path)
    elif shape == "socket":
        # A socket's path is short (108 bytes): bind the name relative to its directory.
        here = os.getcwd()
        os.chdir(os.path.dirname(path))
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(os.path.basename(path))
            sock.listen(1)
        finally:
            os.chdir(here)
        _held.append(sock)
    elif shape == "symlink":
        assert target, "symlink needs HOSTILE_TARGET"
        os.symlink(target, path)
    elif shape == "device":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    elif shape == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(SPARSE_BYTES)
    elif shape == "deep":
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('{"text": ' + "[" * 200000)
    elif shape == "lease":
        # A reader's open asks the holder to give the lease up (SIGIO, which would kill
        # it); ignored, the kernel waits lease-break-time (45 s by default) first.
        signal.signal(signal.SIGIO, signal.SIG_IGN)
        write_wav(path, rate)
        fd = os.open(path, os.O_WRONLY)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        _held.append(fd)
    else:
        raise SystemExit(f"hostile_files: unknown shape {shape!r}")


def run_exec(shape: str, source: str, output: str, target: str | None) -> None:
    with wave.open(source, "rb") as fh:
        frames = fh.getnframes()
    if frames == HOSTILE_FRAMES:
        make(shape, output, target)
        return
    with open(output, "w", encoding="utf-8") as fh:
        json.dump({"text": "fine"}, fh)


def run_tts(shape: str, target: str | None) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "hostile_files"}), flush=True)
        elif message["op"] == "item":
            item = message["input"]
            out, rate = item["audio_out"], int(item["sample_rate"])
            if str(item["text"]).startswith("Hostile"):
                make(shape, out, target, rate)
            else:
                write_wav(out, rate)
            answer = {"op": "result", "id": message["id"], "output": {"audio": out}}
            print(json.dumps(answer), flush=True)
        elif message["op"] == "bye":
            return


def main() -> None:
    mode, shape = sys.argv[1], sys.argv[2]
    target = os.environ.get("HOSTILE_TARGET")
    if mode == "exec":
        run_exec(shape, sys.argv[3], sys.argv[4], target)
    else:
        run_tts(shape, target)


if __name__ == "__main__":
    main()
