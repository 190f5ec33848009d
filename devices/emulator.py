"""A device on a pseudo-terminal: the agent behind an emulated serial line.

The controller opens the emulator's tty path with pyserial exactly as it would
open /dev/ttyUSB0. Between that tty and the device the emulator models the
line: bytes move at baud / 10 bytes per second in each direction (8N1), bits
can be flipped at a given rate, the device's CPU can be slowed by a factor, and
the device can reboot (at random, or when asked: the emulated DTR/RTS reset).

The device is either the reference agent core with a participant's recognizer
(which runs in a process of its own, so that nothing it does - holding Python's
global interpreter lock in a C decoder, say - can delay the emulated line), or
any program that speaks the protocol on a tty (``command``, e.g. a vendor's C
port built for the PC): the emulator gives it a second pty, ``{port}`` in its
arguments, and puts the line model between the two.

Command line (prints the tty path on the first line of stdout, then runs until
interrupted; SIGUSR1 reboots the device as a hard reset would)::

    python -m devices.emulator --agent examples.devices.sphinx_command --baud 115200 \
        [--bit-error-rate 1e-4] [--slowdown 2] [--reboot-every-seconds N]
    python -m devices.emulator --command "./mydevice {port}" --baud 115200 ...
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import math
import multiprocessing
import os
import random
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
import tty
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .agent_core import AgentCore, AgentSettings, BytePort
from .hooks import Recognizer, RecognizerFactory, load_agent

CoreFactory = Callable[[BytePort, Recognizer, AgentSettings], AgentCore]

# Bytes the line moves per pacing step are those of about this many seconds.
_SLICE_SECONDS = 0.002


@dataclass(frozen=True)
class LineStats:
    """What the emulated line did so far."""

    bytes_to_device: int
    bytes_to_host: int
    bits_flipped: int
    reboots: int


class _SlowRecognizer:
    """Wraps a recognizer so every call takes ``factor`` times as long."""

    def __init__(self, inner: Recognizer, factor: float) -> None:
        self.inner = inner
        self.factor = factor
        self.name = inner.name
        self.version = inner.version
        self.sample_rates = tuple(inner.sample_rates)

    def _slow(self, started: float) -> None:
        if self.factor > 1.0:
            time.sleep((time.monotonic() - started) * (self.factor - 1.0))

    def load(self, vocabulary: Sequence[str]) -> None:
        started = time.monotonic()
        try:
            self.inner.load(vocabulary)
        finally:
            self._slow(started)

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        started = time.monotonic()
        try:
            return self.inner.recognize(pcm, sample_rate)
        finally:
            self._slow(started)


class RecognizerProcessError(RuntimeError):
    """The recognizer's process failed, or its call raised (the message says which)."""


def _serve_recognizer(conn: Connection, factory: RecognizerFactory | str, slowdown: float) -> None:
    """The recognizer's own process: build it, then answer calls from the pipe."""
    # Forked from a thread of a busy process: let go of every descriptor inherited but our
    # own pipe and the standard streams. Otherwise a subprocess the parent was starting at
    # that instant never sees its exec-error pipe close, and its Popen waits for ever.
    keep = conn.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    try:
        make = load_agent(factory) if isinstance(factory, str) else factory
        recognizer: Recognizer = make()
        if slowdown > 1.0:
            recognizer = _SlowRecognizer(recognizer, slowdown)
        info = (recognizer.name, recognizer.version, tuple(recognizer.sample_rates))
        conn.send(("ok", info))
    except BaseException as exc:  # the participant's code: report, do not die silently
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            call = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if call[0] == "load":
                recognizer.load(call[1])
                conn.send(("ok", None))
            else:
                conn.send(("ok", recognizer.recognize(call[1], call[2])))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ProcessRecognizer:
    """A recognizer running in a child process; the calls cross a pipe.

    The emulated line lives in the parent, so a recognizer that holds the
    interpreter lock for seconds delays nothing but its own answer. An agent
    given by module path starts in a fresh interpreter ("spawn"); a factory
    object (tests pass lambdas) in a forked child.
    """

    _START_SECONDS = 120.0

    def __init__(self, factory: RecognizerFactory | str, slowdown: float = 1.0) -> None:
        # A module name is imported afresh; a factory object travels only by fork.
        ctx = (
            multiprocessing.get_context("spawn")
            if isinstance(factory, str)
            else multiprocessing.get_context("fork")
        )
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve_recognizer, args=(child, factory, slowdown), daemon=True
        )
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(self._START_SECONDS):
            self.close()
            raise RecognizerProcessError("the recognizer did not start within 120 s")
        info = self._answer()
        self.name, self.version, self.sample_rates = info

    def _answer(self) -> Any:
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            raise RecognizerProcessError("the recognizer's process ended") from exc
        if kind != "ok":
            raise RecognizerProcessError(value)
        return value

    def load(self, vocabulary: Sequence[str]) -> None:
        self._conn.send(("load", list(vocabulary)))
        self._answer()

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        self._conn.send(("recognize", pcm, sample_rate))
        return str(self._answer())

    def close(self) -> None:
        """Power off: kill the process, whatever it is doing."""
        with contextlib.suppress(Exception):
            self._conn.close()
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join(timeout=2.0)


class _Buffer:
    """A byte queue between the line threads and the device.

    Each write is kept with the moment it was made: the line cannot start
    sending bytes before they were written, however late its thread runs.
    """

    def __init__(self) -> None:
        self._chunks: collections.deque[tuple[float, bytes]] = collections.deque()
        self._cond = threading.Condition()

    def put(self, data: bytes, at: float | None = None) -> None:
        if not data:
            return
        with self._cond:
            self._chunks.append((time.monotonic() if at is None else at, bytes(data)))
            self._cond.notify_all()

    def take(self, limit: int, timeout: float) -> tuple[bytes, float]:
        """Up to ``limit`` bytes of the oldest write, and when that write was made.

        The piece ends at the write's end or after a frame delimiter, whichever
        comes first, so that a frame's last byte is delivered at its own time on
        the line, not at the end of a pacing step that carries the next frame too.
        """
        with self._cond:
            if not self._chunks:
                self._cond.wait(timeout)
                if not self._chunks:
                    return b"", 0.0
            at, data = self._chunks[0]
            cut = data.find(0, 0, limit)
            n = min(len(data), limit) if cut < 0 else cut + 1
            if n < len(data):
                self._chunks[0] = (at, data[n:])
            else:
                self._chunks.popleft()
            return data[:n], at

    def take_all(self, timeout: float) -> bytes:
        """Everything waiting (the device reads its UART buffer whole), b"" after ``timeout``."""
        with self._cond:
            if not self._chunks:
                self._cond.wait(timeout)
            out = b"".join(data for _, data in self._chunks)
            self._chunks.clear()
            return out

    def clear(self) -> None:
        with self._cond:
            self._chunks.clear()

    def waiting(self) -> bool:
        with self._cond:
            return bool(self._chunks)


class _DevicePort:
    """The device's view of the line during one boot; dead after a reboot."""

    def __init__(self, rx: _Buffer, tx: _Buffer) -> None:
        self._rx = rx
        self._tx = tx
        self.alive = True

    def read(self, timeout: float) -> bytes:
        if not self.alive:
            time.sleep(timeout)
            return b""
        return self._rx.take_all(timeout)

    def write(self, data: bytes) -> None:
        if self.alive:
            self._tx.put(data)


class _Noise:
    """Flips bits at a fixed rate: the gap to the next error is geometric."""

    def __init__(self, rate: float, rng: random.Random) -> None:
        self.rate = rate
        self.rng = rng
        self.flipped = 0
        self._gap = self._draw()

    def _draw(self) -> int:
        if self.rate <= 0:
            return 1 << 62
        u = 1.0 - self.rng.random()  # in (0, 1]
        return int(math.log(u) / math.log1p(-self.rate))

    def apply(self, data: bytes) -> bytes:
        bits = len(data) * 8
        if self._gap >= bits:
            self._gap -= bits
            return data
        out = bytearray(data)
        pos = self._gap
        while pos < bits:
            out[pos // 8] ^= 1 << (pos % 8)
            self.flipped += 1
            pos += 1 + self._draw()
        self._gap = pos - bits
        return bytes(out)


class Emulator:
    """The agent on a pty behind an emulated serial line; ``path`` is the tty to open.

    ``agent`` is an agent module path (with ``make_recognizer``) or a factory;
    its recognizer runs in a process of its own. ``command`` instead runs a
    program that speaks the protocol on the tty named by ``{port}`` in its
    arguments. ``core`` replaces the agent core (tests inject faulty devices).
    Use as a context manager, or call :meth:`start` and :meth:`close`.
    """

    def __init__(
        self,
        agent: str | RecognizerFactory | None = None,
        baud: int = 115200,
        bit_error_rate: float = 0.0,
        slowdown: float = 1.0,
        reboot_every_seconds: float | None = None,
        boot_seconds: float = 0.3,
        settings: AgentSettings | None = None,
        seed: int | None = None,
        command: Sequence[str] | None = None,
        core: CoreFactory = AgentCore,
    ) -> None:
        if (agent is None) == (command is None):
            raise ValueError("give the emulator either an agent or a command")
        if command is not None and not any("{port}" in a for a in command):
            raise ValueError('the device command must name its tty as "{port}"')
        if baud <= 0:
            raise ValueError(f"baud must be positive, got {baud}")
        if not 0.0 <= bit_error_rate < 0.1:
            raise ValueError(f"bit_error_rate must be in [0, 0.1), got {bit_error_rate}")
        if slowdown < 1.0:
            raise ValueError(f"slowdown is a factor >= 1, got {slowdown}")
        self.factory: RecognizerFactory | None = (
            load_agent(agent) if isinstance(agent, str) else agent
        )
        self.command = tuple(command) if command is not None else None
        self.agent_module = agent if isinstance(agent, str) else None
        self.core = core
        self._device_proc: ProcessRecognizer | subprocess.Popen[bytes] | None = None
        self.baud = baud
        self.slowdown = slowdown
        self.reboot_every_seconds = reboot_every_seconds
        self.boot_seconds = boot_seconds
        self.settings = settings or AgentSettings(baud=baud)
        self._rng = random.Random(seed)
        self._noise_up = _Noise(bit_error_rate, random.Random(self._rng.random()))
        self._noise_down = _Noise(bit_error_rate, random.Random(self._rng.random()))
        self._rx = _Buffer()  # host -> device, after the line
        self._tx = _Buffer()  # device -> host, before the line
        self._stop = threading.Event()
        self._unplugged = threading.Event()
        self._threads: list[threading.Thread] = []
        self._boot_lock = threading.Lock()
        self._boot_stop: threading.Event | None = None
        self._port: _DevicePort | None = None
        self._master = -1
        self._slave = -1
        self.path = ""
        self._bytes_up = 0
        self._bytes_down = 0
        self._reboots = 0
        self.boots = 0
        self.last_error: BaseException | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        """Create the pty, boot the device and start the line; return the tty path."""
        self._master, self._slave = os.openpty()
        # Raw mode: no echo, no CR/LF translation; binary frames pass as they are.
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        for target, name in (
            (self._uplink, "emu-uplink"),
            (self._downlink, "emu-downlink"),
        ):
            thread = threading.Thread(target=target, daemon=True, name=name)
            thread.start()
            self._threads.append(thread)
        self._boot(delay=0.0)
        if self.reboot_every_seconds:
            thread = threading.Thread(target=self._random_reboots, daemon=True, name="emu-reboot")
            thread.start()
            self._threads.append(thread)
        return self.path

    def close(self) -> None:
        """Stop the device and the line and close the pty."""
        self._stop.set()
        with self._boot_lock:
            if self._boot_stop is not None:
                self._boot_stop.set()
            if self._port is not None:
                self._port.alive = False
        for thread in self._threads:
            thread.join(timeout=2.0)
        self._power_off()
        for fd in (self._master, self._slave):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = -1

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- faults ------------------------------------------------------------------------------

    def reboot(self) -> None:
        """Power-cycle the device: all state lost, silent for boot_seconds, then READY."""
        self._reboots += 1
        self._boot(delay=self.boot_seconds)

    hard_reset = reboot  # what toggling DTR/RTS does to a board wired for it

    def unplug(self) -> None:
        """Cut the line: every byte either end sends is lost until :meth:`plug`.

        The device keeps running (a cable pulled out, not a power cut).
        """
        self._unplugged.set()

    def plug(self) -> None:
        """Reconnect the line cut by :meth:`unplug`."""
        self._unplugged.clear()

    def inject(self, garbage: bytes, to_host: bool = True) -> None:
        """Put raw bytes on the line (line noise, a boot banner, a half frame)."""
        if to_host:
            self._tx.put(garbage)
        else:
            self._rx.put(garbage)

    def stats(self) -> LineStats:
        return LineStats(
            self._bytes_up,
            self._bytes_down,
            self._noise_up.flipped + self._noise_down.flipped,
            self._reboots,
        )

    # --- the device --------------------------------------------------------------------------

    def _boot(self, delay: float) -> None:
        with self._boot_lock:
            if self._boot_stop is not None:
                self._boot_stop.set()
            if self._port is not None:
                self._port.alive = False
            self._power_off()
            self._rx.clear()
            self._tx.clear()
            stop = threading.Event()
            port = _DevicePort(self._rx, self._tx)
            self._boot_stop = stop
            self._port = port
        target = self._run_command if self.command is not None else self._run_device
        thread = threading.Thread(
            target=target, args=(port, stop, delay), daemon=True, name="emu-device"
        )
        thread.start()

    def _power_off(self) -> None:
        """Stop the device's process (recognizer or device program) of the last boot."""
        proc, self._device_proc = self._device_proc, None
        if isinstance(proc, ProcessRecognizer):
            proc.close()
        elif proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2.0)

    def _run_device(self, port: _DevicePort, stop: threading.Event, delay: float) -> None:
        if stop.wait(delay):
            return
        assert self.factory is not None
        try:
            child = ProcessRecognizer(self.agent_module or self.factory, self.slowdown)
            with self._boot_lock:
                if stop.is_set():
                    child.close()
                    return
                self._device_proc = child
            # Bytes that arrived while the device was off are lost, as on a real board.
            self._rx.clear()
            self.boots += 1
            self.core(port, child, self.settings).run(stop)
        except BaseException as exc:  # keep the emulator up; the host sees a silent device
            self.last_error = exc

    def _run_command(self, port: _DevicePort, stop: threading.Event, delay: float) -> None:
        """Boot the device program on a pty of its own and pump bytes to and from the line."""
        if stop.wait(delay):
            return
        assert self.command is not None
        master, slave = os.openpty()
        tty.setraw(slave)
        try:
            path = os.ttyname(slave)
            args = [a.replace("{port}", path) for a in self.command]
            self._rx.clear()
            try:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                self.last_error = exc
                return
            with self._boot_lock:
                self._device_proc = proc
                if stop.is_set():
                    self._power_off()
                    return
            self.boots += 1
            while not stop.is_set() and proc.poll() is None:
                ready, _, _ = select.select([master], [], [], 0.002)
                if ready:
                    with contextlib.suppress(OSError):
                        port.write(os.read(master, 1 << 16))
                data = port.read(0.0) if port.alive else b""
                view = memoryview(data)
                while view and not stop.is_set():
                    try:
                        view = view[os.write(master, view) :]
                    except OSError:
                        break
        finally:
            for fd in (master, slave):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _random_reboots(self) -> None:
        assert self.reboot_every_seconds
        while not self._stop.wait(self._rng.expovariate(1.0 / self.reboot_every_seconds)):
            self.reboot()

    # --- the line ----------------------------------------------------------------------------

    def _pace(self, free_at: float, nbytes: int, written_at: float) -> float:
        """Sleep until ``nbytes`` written at ``written_at`` have crossed; return when it is free.

        The bytes start when both the line is free and they were written, so a
        thread that wakes late delivers what was waiting without a gap (the line
        keeps its rate) but never sends bytes faster than the baud rate from the
        moment they were written.
        """
        end = max(free_at, written_at) + nbytes * 10 / self.baud
        now = time.monotonic()
        if end > now:
            time.sleep(end - now)
        return end

    def _slice(self) -> int:
        return max(1, int(self.baud / 10 * _SLICE_SECONDS))

    def _drain_pty(self, queue: _Buffer, wait: float) -> None:
        """Move whatever the host has written into ``queue``, stamped with the moment read."""
        try:
            ready, _, _ = select.select([self._master], [], [], wait)
            while ready:
                data = os.read(self._master, 1 << 16)
                if not data:
                    return
                queue.put(data)
                ready, _, _ = select.select([self._master], [], [], 0)
        except OSError:
            self._stop.wait(0.05)

    def _uplink(self) -> None:
        free_at = 0.0
        size = self._slice()
        # The host's bytes are read as soon as they are written (not one step at a time):
        # their stamp is when they could first start crossing.
        written = _Buffer()
        while not self._stop.is_set():
            self._drain_pty(written, 0.0 if written.waiting() else 0.05)
            data, at = written.take(size, 0.0)
            if not data:
                continue
            free_at = self._pace(free_at, len(data), at)
            if self._unplugged.is_set():
                continue
            self._bytes_up += len(data)
            data = self._noise_up.apply(data)
            with self._boot_lock:
                if self._port is not None and self._port.alive:
                    self._rx.put(data)

    def _downlink(self) -> None:
        free_at = 0.0
        size = self._slice()
        while not self._stop.is_set():
            data, at = self._tx.take(size, 0.05)
            if not data:
                continue
            free_at = self._pace(free_at, len(data), at)
            if self._unplugged.is_set():
                continue
            self._bytes_down += len(data)
            data = self._noise_down.apply(data)
            view = memoryview(data)
            while view and not self._stop.is_set():
                try:
                    _, writable, _ = select.select([], [self._master], [], 0.05)
                    if writable:
                        view = view[os.write(self._master, view) :]
                except OSError:
                    break


@contextlib.contextmanager
def emulate(agent: str | RecognizerFactory | None = None, **options: object) -> Iterator[str]:
    """``with emulate("examples.devices.checksum", baud=921600) as tty_path: ...``"""
    emulator = Emulator(agent, **options)  # type: ignore[arg-type]
    try:
        yield emulator.start()
    finally:
        emulator.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run one emulated device until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m devices.emulator", description="Emulate a serial device on a pty."
    )
    parser.add_argument("--agent", help="agent module, e.g. examples.devices.x")
    parser.add_argument(
        "--command",
        help='a device program speaking the protocol on a tty, e.g. "./mydevice {port}"',
    )
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument("--bit-error-rate", type=float, default=0.0)
    parser.add_argument("--slowdown", type=float, default=1.0, help="CPU slowdown factor >= 1")
    parser.add_argument("--reboot-every-seconds", type=float, default=None)
    parser.add_argument("--boot-seconds", type=float, default=0.3)
    parser.add_argument("--max-payload", type=int, default=AgentSettings().max_payload)
    parser.add_argument("--window", type=int, default=AgentSettings().window)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    if (args.agent is None) == (args.command is None):
        parser.error("give --agent MODULE or --command PROGRAM")
    try:
        emulator = Emulator(
            args.agent,
            command=shlex.split(args.command) if args.command else None,
            baud=args.baud,
            bit_error_rate=args.bit_error_rate,
            slowdown=args.slowdown,
            reboot_every_seconds=args.reboot_every_seconds,
            boot_seconds=args.boot_seconds,
            settings=AgentSettings(
                baud=args.baud, max_payload=args.max_payload, window=args.window
            ),
            seed=args.seed,
        )
    except ValueError as exc:
        parser.error(str(exc))
    done = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: emulator.hard_reset())
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    path = emulator.start()
    sys.stdout.write(path + "\n")
    sys.stdout.flush()
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emulator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
