"""A device reached through any command that gives a shell on it, in serve mode: the remote
capabilities (runners/remote_parts.py) made of runs of that command on the controller, run by
the remote serve runner (runners/remote.py); docs/command.md.

Every operation is one run of the device's command (``ssh -T host``, ``docker exec -i ctr
sh``, ``adb shell``, ``kubectl exec -i pod -- sh``) with one line for the shell it gives:
``echo GO; SCRIPT; echo "END $?" >&2; exit``, GO and END random per run. The shell parses the
whole line before it runs any of it and prints GO first; only then does the controller
write what the script reads (a shell may read ahead of its line and would swallow it), and
what the account's start-up files printed before GO is not the script's output. END on
stderr is the device's own word on how the script ended: a run that ends without it was cut
(the link, or something on the device's side).

Process control, file transfer (``cat``, bytes as they are) and the resource meter are the
shell implementations of runners/remote_shell.py and runners/remote_meter.py over these
runs. Liveness: a resident shell of its own answers a keep-alive every second while a
system runs; nothing back for ``link_timeout`` ends the system's run as a lost link. The
evidence of whose failure a session that died is: a new run of the command that gives a
shell within ``evidence_seconds`` (docs/security.md, "Failures have an owner").
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .base import DeviceUnreachable, StartError, SystemSpec
from .remote import RemoteServeRunner
from .remote_meter import ShellMeter
from .remote_parts import (
    AnswerLines,
    Evidence,
    FileTransfer,
    LinkError,
    Opener,
    retry_unreachable,
)
from .remote_shell import ShellFiles, ShellHost, probe_command, probe_workdir
from .spawn import spawn, wait_exit
from .transport import CheckStep

if TYPE_CHECKING:
    from .command_device import CommandDevice

# Each run of the command dies with the controller's thread that started it.
_SETPRIV = "/usr/bin/setpriv"
_REMOTE_OP_SECONDS = 10.0
_CHUNK = 1 << 16
# What a run keeps of its stderr when nobody takes it (short commands), and for messages.
_KEEP_STDERR = 1 << 16
_TAIL = 2000


class NoCommand(LinkError):
    """The device's command cannot be run on the controller (not installed, no such path)."""


def _found(program: str, cwd: str) -> bool:
    if "/" in program:
        return os.access(Path(cwd) / Path(program).expanduser(), os.X_OK)
    return shutil.which(program) is not None


class CommandChannel:
    """One run of the device's command with one script for its shell (a ``Channel``).

    ``shell_seconds`` bounds the wait for the shell (GO); ``timeout`` every wait after it.
    Lines the account's shell prints before GO go to ``noise``; stderr goes to ``sink`` (else
    it is kept for ``recv_stderr``). ``on_lost`` hears why, when the run ended without the
    device's END: the link was cut, or the device's side ended it.
    """

    def __init__(
        self,
        argv: Sequence[str],
        cwd: str,
        script: str,
        timeout: float,
        shell_seconds: float,
        noise: Callable[[bytes], None] | None = None,
        sink: Callable[[bytes], None] | None = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        if not _found(argv[0], cwd):
            raise NoCommand(f"the program {argv[0]!r} is not on the controller")
        nonce = secrets.token_hex(8)
        go = f"onsite-go-{nonce}"
        self._end = f"onsite-end-{nonce} ".encode()
        self._timeout = timeout
        self._sink = sink
        self._on_lost = on_lost
        self._closing = False
        self._cut: str | None = None  # why the controller ended the run (a keep-alive)
        self._status: int | None = None
        self._err = bytearray()
        self._tail = b""
        self._out = bytearray()
        run = list(argv)
        if os.access(_SETPRIV, os.X_OK):
            run = [_SETPRIV, "--pdeathsig", "KILL", "--", *run]
        try:
            self._proc: subprocess.Popen[bytes] = spawn(
                run,
                None,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise NoCommand(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from exc
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdin = self._proc.stdin.fileno()
        self._stdout = self._proc.stdout.fileno()
        os.set_blocking(self._stdin, False)
        self._readable = select.poll()
        self._readable.register(self._stdout, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._pump = threading.Thread(target=self._read_stderr, name="command-stderr", daemon=True)
        self._pump.start()
        line = f'echo {go}; {script}; echo "{self._end.decode()}$?" >&2; exit\n'
        try:
            self.write(line.encode(), timeout)
            self._await(go.encode(), shell_seconds, noise)
        except BaseException:
            self.close()
            raise

    # -- the Channel -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the run was closed, or has ended."""
        return self._closing or self._proc.poll() is not None

    def sendall(self, data: bytes) -> None:
        """Write ``data`` to the script's stdin within the channel's timeout."""
        self.write(data, self._timeout)

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes of stdout; TimeoutError when none came within the timeout."""
        data = self.read_stdout(self._timeout)
        if data is None:
            raise TimeoutError(f"nothing came through the command within {self._timeout:g} s")
        if len(data) > size:
            self._out[:0] = data[size:]
            data = data[:size]
        return data

    def recv_stderr(self, size: int) -> bytes:
        """Up to ``size`` bytes of the stderr kept, once the run's stderr has ended."""
        self._pump.join(self._timeout)
        data = bytes(self._err[:size])
        del self._err[:size]
        return data

    def shutdown_write(self) -> None:
        """End the script's stdin."""
        assert self._proc.stdin is not None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()

    def exit_status(self, timeout: float) -> int | None:
        """The status END said; None while the run goes on or when it ended without it."""
        return self.ended(timeout)[0]

    def close(self) -> None:
        """End the run (its process group is killed) and release its pipes."""
        if self._closing:
            return
        self._closing = True
        self._kill()
        wait_exit(self._proc, 2.0)
        self.shutdown_write()
        self._pump.join(2.0)
        # Stdout is closed with the channel when it is dropped, never here: another thread
        # may still be about to read it, and a number closed now could be reused at once.

    # -- more than a Channel ---------------------------------------------------------------

    def write(self, data: bytes, timeout: float | None) -> None:
        """Write all of ``data`` to stdin, waiting for room at most ``timeout`` (None: as
        long as the run lives); a link error when the run's stdin is gone."""
        view = memoryview(data)
        deadline = None if timeout is None else time.monotonic() + timeout
        room = select.poll()
        room.register(self._stdin, select.POLLOUT)
        while view:
            try:
                view = view[os.write(self._stdin, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                raise LinkError(f"the command's stdin closed: {exc.strerror or exc}") from exc
            if deadline is None:
                room.poll()
            elif not room.poll(max(0.0, deadline - time.monotonic()) * 1000.0):
                raise TimeoutError(f"the command took no input for {timeout:g} s")

    def read_stdout(self, timeout: float) -> bytes | None:
        """Stdout bytes that came within ``timeout``; b"" at its end; None if none came."""
        if self._out:
            data = bytes(self._out)
            self._out.clear()
            return data
        if self._closing:
            return b""
        if not self._readable.poll(max(0.0, timeout) * 1000.0):
            return None
        try:
            return os.read(self._stdout, _CHUNK)
        except OSError:
            return b""

    def ended(self, wait: float) -> tuple[int | None, str | None]:
        """Once the run ended (waiting up to ``wait``): (the status END said, None), or
        (None, why) when it ended without END. (None, None) while it goes on."""
        code = wait_exit(self._proc, wait)
        if code is None:
            return None, None
        self._pump.join(2.0)  # END and the rest of stderr
        if self._status is not None:
            return self._status, None
        why = self._cut or (
            f"the command ended (exit code {code}) before the device's shell said how "
            f"its command ended{self.said()}"
        )
        if self._on_lost is not None and not self._closing:
            self._on_lost(why)
        return None, why

    def wait(self, timeout: float) -> int | None:
        """The local command's exit code once it ended (waiting up to ``timeout``), or None."""
        return wait_exit(self._proc, timeout)

    def abort(self, why: str) -> None:
        """End the run for ``why`` (a keep-alive that got no answer): a lost link."""
        self._cut = why
        self._kill()

    def said(self) -> str:
        """ ": " and the end of what the run wrote on stderr, for messages (or nothing)."""
        text = self._tail.decode(errors="replace").strip().replace("\n", " | ")
        return f": {text}" if text else ""

    def _kill(self) -> None:
        # Only while it is not reaped: its pid (and group id) cannot be taken by another.
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self._proc.pid, signal.SIGKILL)

    def _await(self, go: bytes, seconds: float, noise: Callable[[bytes], None] | None) -> None:
        deadline = time.monotonic() + seconds
        pending = bytearray()
        while True:
            at = pending.find(b"\n")
            if at >= 0:
                line = bytes(pending[: at + 1])
                del pending[: at + 1]
                if line.rstrip(b"\r\n") == go:
                    self._out[:0] = pending
                    return
                if noise is not None:
                    noise(line)
                continue
            data = self.read_stdout(deadline - time.monotonic())
            if data is None:
                raise LinkError(f"no shell within {seconds:g} s{self.said()}")
            if not data:
                code = wait_exit(self._proc, 1.0)
                self._pump.join(1.0)
                raise LinkError(
                    f"the command ended (exit code {code}) before its shell answered{self.said()}"
                )
            pending += data

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        pending = b""
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._stderr_line(line + b"\n")
            if len(pending) > _CHUNK:
                self._stderr_line(pending)
                pending = b""
        if pending:
            self._stderr_line(pending)

    def _stderr_line(self, line: bytes) -> None:
        if line.startswith(self._end):
            with contextlib.suppress(ValueError):
                self._status = int(line[len(self._end) :])
                return
        self._tail = (self._tail + line)[-_TAIL:]
        if self._sink is not None:
            self._sink(line)
        elif len(self._err) < _KEEP_STDERR:
            self._err += line


class _PipeLines(AnswerLines):
    """The system's stdout through the command, timed when the controller read it."""

    def __init__(self, chan: CommandChannel, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._chan = chan

    def _receive(self, timeout: float) -> tuple[bytes, float] | None:
        data = self._chan.read_stdout(timeout)
        return None if data is None else (data, time.monotonic())


class CommandStream:
    """The system's wrapper in one run of the command (runners.remote_parts.ExecStream),
    kept alive by pings to a resident shell in a run of its own while the system runs."""

    def __init__(
        self,
        chan: CommandChannel,
        max_bytes: int,
        pinger: Opener | None,
        link_timeout: float,
        lost_reason: Callable[[float], str | None],
    ) -> None:
        self._chan = chan
        self._lines = _PipeLines(chan, max_bytes)
        self._lost_reason = lost_reason
        self._stop = threading.Event()
        if pinger is not None:
            threading.Thread(
                target=self._keep_alive,
                args=(pinger, link_timeout),
                name="command-keepalive",
                daemon=True,
            ).start()

    @property
    def lines(self) -> _PipeLines:
        """The system's stdout."""
        return self._lines

    @property
    def closed(self) -> bool:
        """Whether the run was closed or has ended."""
        return self._chan.closed

    def write(self, data: bytes) -> None:
        """Send bytes to the system's stdin (waiting for room while the run lives)."""
        self._chan.write(data, None)

    def handed_over(self, before: float) -> float:
        """A pipe's single write call leaves ``before`` as good as any."""
        return before

    def close_stdin(self) -> None:
        """End the system's stdin."""
        self._chan.shutdown_write()

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the run to end."""
        return self._chan.wait(timeout) is not None

    def ended(self, wait: float) -> tuple[int | None, str | None]:
        """The status the device's shell said, or why the run was cut."""
        status, lost = self._chan.ended(wait)
        if status is None and lost is None:
            lost = self._lost_reason(1.0)
        return status, lost

    def close(self) -> None:
        """End the run; the wrapper on the device sees its stdin end."""
        self._stop.set()
        self._chan.close()

    def _keep_alive(self, open_pinger: Opener, timeout: float) -> None:
        # The resident shell is started from this thread, and dies with it (its run is
        # started with a parent-death signal): it lives as long as the system's stream. One
        # that ended (killed on the device) is started again, but an answer from a shell
        # started for that ping does not count: a system that kills the resident shell again
        # and again ends its stream within the link timeout (then the evidence check makes
        # it the participant's crash), not at the item's hang limit.
        pinger = ShellMeter(open_pinger, timeout=timeout)
        answered = time.monotonic()
        shell: int | None = None
        try:
            while not self._stop.wait(1.0):
                rtt = pinger.ping()
                pid = pinger.remote_pid
                restarted = shell is not None and pid != shell
                shell = pid if pid is not None else shell
                if rtt is not None and not restarted:
                    answered = time.monotonic()
                elif time.monotonic() - answered >= timeout and not self._stop.is_set():
                    self._chan.abort(
                        f"nothing came back through the command for {timeout:g} s (keep-alive)"
                    )
                    return
        finally:
            pinger.close()


class CommandHost(ShellHost):
    """A device behind a command that gives a shell (runners.remote_parts.RemoteHost)."""

    transport_name = "command"
    session = "command's session"
    account = "the account the command logs into"
    op_seconds = _REMOTE_OP_SECONDS

    def __init__(self, device: CommandDevice) -> None:
        self.device = device
        self.address = f"the device behind {shlex.join(device.command)}"
        self._cwd = str(device.directory)
        self._connected = False
        self._lost: str | None = None
        self._meter: ShellMeter | None = None

    def run(self, script: str, timeout: float, shell_seconds: float) -> CommandChannel:
        """One run of the command with ``script``, whatever the link's state."""
        return CommandChannel(self.device.command, self._cwd, script, timeout, shell_seconds)

    def connect(self, retry_seconds: float, first: bool) -> list[str]:
        """A run that gives a shell within ``connect_timeout`` (retried with backoff for a
        device that answered before); the resident meter starts with its first sample."""
        seconds = self.device.connect_timeout

        def once() -> None:
            try:
                self.run(":", seconds, seconds).close()
            except NoCommand as exc:
                raise StartError(
                    f"{exc}: install it, or give its path (relative to the site file)"
                ) from exc
            except LinkError as exc:
                raise DeviceUnreachable(f"{self.address} gave no shell: {exc}") from exc

        hint = f"is the device up? try: {shlex.join(self.device.command)}, then type: echo ok"
        retry_unreachable(once, 0.0 if first else retry_seconds, hint)
        self._connected, self._lost = True, None
        self._meter = ShellMeter(self.open, timeout=_REMOTE_OP_SECONDS)
        return []

    def connected(self) -> bool:
        """Up since the last connect, and no run was cut since."""
        return self._connected and self._lost is None

    def mark_lost(self, why: str) -> None:
        """A run ended without the device's word: the link is taken as down until the next
        connect."""
        if self._lost is None:
            self._lost = why

    def close(self) -> None:
        """Stop the resident meter."""
        if self._meter is not None:
            self._meter.close()
        self._meter = None
        self._connected = False

    def lost_reason(self, wait: float) -> str | None:
        """Why the link is taken as down, or None (waiting up to ``wait`` to tell)."""
        until = time.monotonic() + wait
        while self._connected and self._lost is None:
            if time.monotonic() >= until:
                return None
            time.sleep(0.02)
        return self._lost or "not connected"

    def evidence(self) -> Evidence:
        """A new run of the command that gives a shell within ``evidence_seconds``: the device
        and the way to it were up, and the session ended there."""
        seconds = self.device.evidence_seconds
        try:
            self.run(":", seconds, seconds).close()
        except LinkError as exc:
            return Evidence(False, f"a new run of the command failed: {exc}")
        return Evidence(True, f"the device ran a new command within {seconds:g} s")

    def round_trip(self, workdir: str) -> float | None:
        """A line to the resident meter shell and back."""
        return self._meter.ping() if self._meter is not None else None

    def shell_ended(self, code: int | None) -> str:
        """The shell the command gives ended before onsite's command ran."""
        return (
            f"the shell that {shlex.join(self.device.command)} gives ended (exit code {code}) "
            "before onsite's command ran: its start-up files must not exit or read stdin"
        )

    def open(self, command: str, timeout: float) -> CommandChannel:
        """A run of the command for one operation (a link error while the link is down)."""
        if not self.connected():
            raise LinkError(self._lost or "not connected")
        return CommandChannel(
            self.device.command,
            self._cwd,
            command,
            timeout,
            self.device.connect_timeout,
            on_lost=self.mark_lost,
        )

    def start(self, command: str, log: Callable[[bytes], None], max_bytes: int) -> CommandStream:
        """The wrapper in a run of its own; its stderr, and what the shell printed first, go
        to ``log``."""
        if not self.connected():
            raise LinkError(self._lost or "not connected")
        chan = CommandChannel(
            self.device.command,
            self._cwd,
            command,
            _REMOTE_OP_SECONDS,
            self.device.connect_timeout,
            noise=lambda line: log(b"remote shell printed: " + line),
            sink=log,
            on_lost=self.mark_lost,
        )
        return CommandStream(
            chan, max_bytes, self._open_pinger, self.device.link_timeout, self.lost_reason
        )

    def _open_pinger(self, command: str, timeout: float) -> CommandChannel:
        # The keep-alive's own runs: a shell within the link timeout, or the link is silent.
        return self.run(command, timeout, timeout)

    @property
    def files(self) -> FileTransfer:
        """``cat`` and ``rm`` in runs of the command."""
        return ShellFiles(self.open, _REMOTE_OP_SECONDS)


class CommandServeRunner(RemoteServeRunner):
    """A resident system on a device reached through a command that gives a shell on it."""

    def __init__(self, spec: SystemSpec, device: CommandDevice) -> None:
        self.device = device
        super().__init__(spec, CommandHost(device), device.workdir, device.rtt_interval)


def probe(device: CommandDevice) -> list[CheckStep]:
    """Check a command device step by step for ``onsite check``; stops at the first failure."""
    argv, seconds = device.command, device.connect_timeout
    cwd = str(device.directory)
    if not _found(argv[0], cwd):
        detail = f"the program {argv[0]!r} is not on the controller; install it or give its path"
        return [CheckStep("command", False, detail)]
    results = [CheckStep("command", True, shlex.join(argv))]
    t0 = time.monotonic()
    try:
        CommandChannel(argv, cwd, ":", seconds, seconds).close()
    except LinkError as exc:
        return [*results, CheckStep("shell", False, str(exc))]
    ms = (time.monotonic() - t0) * 1e3
    results.append(CheckStep("shell", True, f"a shell on the device in {ms:.0f} ms"))

    def opener(command: str, timeout: float) -> CommandChannel:
        return CommandChannel(argv, cwd, command, timeout, seconds)

    run: Opener = opener
    ran = probe_command(run, _REMOTE_OP_SECONDS)
    results.append(ran)
    if ran.ok:
        results.extend(probe_workdir(run, _REMOTE_OP_SECONDS, device.workdir, CommandHost.account))
    return results
