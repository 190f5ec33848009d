"""Systems on a participant's own machine, driven over SSH in serve mode.

The participant protocol runs unchanged over an SSH exec channel: stdin and
stdout of the channel carry the JSON lines, stderr goes to the system's log.
The remote command runs under a small sh wrapper (runners.ssh_wrapper) that gives
the system its own session and a clean environment, reports the session id on
its first stdout line, and kills everything the system started when the channel
closes; a hung system is killed from a second channel, and what an earlier
controller left running is killed before anything is sent again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import posixpath
import secrets
import shlex
import shutil
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import paramiko
from paramiko.buffered_pipe import PipeTimeout

from . import protocol
from .base import (
    ItemAttempt,
    ItemRequest,
    OutputFile,
    StartError,
    StartInfo,
    SystemSpec,
)
from .exchange import AttemptBuilder
from .lines import LineBuffer, LineTooLong
from .logcap import CappedLog
from .registry import ProbeResult, settings_from
from .serve import StreamServeRunner, log_note, log_tail
from .ssh_fetch import FetchRefused, FetchSession, LocalWriteError, fetch_file
from .ssh_link import (
    AuthError,
    HostKeyError,
    RemoteMeter,
    SshDevice,
    UnreachableError,
    connect,
    connect_once,
    exec_put,
    host_answers,
    key_file_warning,
    last_send,
    packet_age,
    read_banner,
    run_remote,
)
from .ssh_wrapper import (
    cleanup_command,
    kill_command,
    prepare_command,
    stage_dir,
    system_dir,
    system_slug,
    wrapper_command,
)

logger = logging.getLogger(__name__)

_BYE_GRACE_SECONDS = 2.0
_RECONNECT_SECONDS = 30.0
_REMOTE_OP_SECONDS = 10.0
_PID_PREFIX = b"onsite-pid "
_WORKDIR_PREFIX = "onsite-workdir "
_MIN_FREE_BYTES = 1 << 30
# After the channel closes, the wrapper gives the system this long to exit on its own.
_WRAPPER_GRACE_SECONDS = 2.0
# The venue's own check of a machine whose session died: a TCP connection that must be
# answered before the kernel would send its first retransmission (1 s).
_EVIDENCE_SECONDS = 0.9


class _ChannelLines(LineBuffer):
    """Lines from an SSH channel's stdout (lines.LineBuffer's contract)."""

    def __init__(self, chan: paramiko.Channel, max_bytes: int) -> None:
        super().__init__()
        self._chan = chan
        self.max_bytes = max_bytes
        # When bytes reached the controller: stamped by paramiko's transport thread as it
        # hands them to the channel, not when this reader's thread next gets to run (with
        # dozens of devices, a wait for the interpreter lock the system must not be
        # charged for). The stamp is taken before the bytes enter the buffer, so a read
        # never sees bytes newer than the stamp it reads after them.
        # Better still, when the socket keeps the kernel's receive stamps: when the packet
        # reached this machine, before the transport thread woke to read and decrypt it.
        self._fed_at = 0.0
        pipe = chan.in_buffer
        feed = pipe.feed
        transport = chan.get_transport()

        def stamped(data: bytes) -> None:
            now = time.monotonic()
            age = packet_age(transport)
            self._fed_at = now if age is None else now - age
            feed(data)

        pipe.feed = stamped  # type: ignore[method-assign]

    def readline(self, deadline: float) -> bytes | None:
        line = super().readline(deadline)
        if line and len(line) > self.max_bytes:
            raise LineTooLong(self._too_long())
        return line

    def _too_long(self) -> str:
        return f"an answer of more than max_output_bytes={self.max_bytes} bytes"

    def _fill(self, timeout: float) -> None:
        if len(self._buf) > self.max_bytes and b"\n" not in self._buf:
            # Never hold more than the ceiling of an answer that is already too long.
            raise LineTooLong(self._too_long())
        # Wait on the channel's stdout buffer itself, with our deadline's timeout. Never
        # chan.fileno(): its readiness pipe is shared with stderr, and two threads clearing
        # it at once (this reader and the stderr pump) block one of them in os.read for
        # ever (paramiko issues 537 and 1235).
        try:
            data = self._chan.in_buffer.read(1 << 16, max(timeout, 0.0))
        except PipeTimeout:
            return
        self.arrived = self._fed_at or time.monotonic()
        if data:
            self._buf += data
        else:
            self._eof = True  # the buffer was closed: EOF or the channel closed


class SshServeRunner(StreamServeRunner):
    """A resident system on a participant's machine, speaking the participant protocol over SSH."""

    HANDSHAKE_ERRORS = (OSError, EOFError, paramiko.SSHException, ValueError)
    WRITE_ERRORS = (OSError, EOFError, paramiko.SSHException)
    # A reading of /proc on the machine is a line to the resident sampler and back.
    SAMPLE_SECONDS = 0.25

    def __init__(self, spec: SystemSpec, options: Mapping[str, Any] | SshDevice) -> None:
        self.spec = spec
        self.options = settings_from(SshDevice, options)
        # How long a reconnect keeps retrying a machine that answered before; tests shorten
        # it. A machine that has not answered yet is tried once per start(), with the short
        # first_connect_timeout: the controller waits for it with its own, visible backoff.
        self.reconnect_seconds = _RECONNECT_SECONDS
        self._reached = False  # the machine has answered once this session
        self._log = CappedLog(spec.log_path, spec.max_log_bytes)
        self._client: paramiko.SSHClient | None = None
        self._transport: paramiko.Transport | None = None
        self._sftp: paramiko.SFTPClient | None = None
        # The connection's own SFTP session for fetching files back (ssh_fetch).
        self._fetcher = FetchSession()
        self._has_sftp = True
        self._remote_dir = self.options.workdir
        self._slug = system_slug(spec.task, spec.name, str(spec.log_path.absolute()))
        self._system_dir = system_dir(self._remote_dir, self._slug)
        self._meter: RemoteMeter | None = None
        self._chan: paramiko.Channel | None = None
        self._reader: _ChannelLines | None = None
        self._pump: threading.Thread | None = None
        self._pgid: int | None = None
        self._token: str | None = None
        # A start whose processes could not be killed because the link was down.
        self._orphaned = False
        self._staged: set[str] = set()
        self._rtt: float | None = None
        self._rtt_at = float("-inf")
        self._cpu_mark: float | None = None
        self._peak: int | None = None
        # Where output files fetched back from the machine wait for the controller.
        self._fetched_dir = spec.stage_dir / "fetched"

    # -- public ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The remote system's process id (also its session and process group id) while it runs."""
        return self._pgid

    @property
    def answers(self) -> _ChannelLines:
        """The channel's stdout, while the system runs."""
        assert self._reader is not None
        return self._reader

    @property
    def round_trip_seconds(self) -> float | None:
        """The most recent measurement of the link's round-trip time."""
        return self._rtt

    @property
    def link_port(self) -> int | None:
        """The local TCP port of the SSH connection while it is up (to find it in server logs)."""
        transport = self._transport
        if transport is None or not transport.is_active():
            return None
        sock = transport.sock
        assert isinstance(sock, socket.socket)  # paramiko's own connections are TCP sockets
        return int(sock.getsockname()[1])

    @property
    def remote_workdir(self) -> str:
        """The absolute remote directory the system runs in."""
        return self._remote_dir

    @property
    def remote_stage_dir(self) -> str:
        """The remote directory of the current start's staged inputs."""
        return self._stage_dir

    @property
    def _stage_dir(self) -> str:
        return stage_dir(self._system_dir, self._token or "none")

    def start(self) -> StartInfo:
        spec = self.spec
        if spec.mode != "serve":
            raise StartError(f"mode {spec.mode!r} is not supported on ssh devices; use serve mode")
        self._ensure_connected()
        # Before anything is sent: kill what an earlier start (ours, or a controller that
        # died) left running on the machine, and remove the files it staged.
        self._token = secrets.token_hex(16)
        self._prepare_remote(self._token)
        assert self._transport is not None
        self._mark_log(f"starting {' '.join(spec.command)} on {self.options.address}")
        self._reset_fetched()
        setup_files = self._stage_setup_files()
        try:
            command = wrapper_command(
                self._remote_dir,
                self._system_dir,
                self._token,
                spec.env,
                spec.command,
                _WRAPPER_GRACE_SECONDS,
            )
        except ValueError as exc:
            raise StartError(str(exc)) from exc
        t0 = time.monotonic()
        try:
            chan = self._transport.open_session(timeout=_REMOTE_OP_SECONDS)
            chan.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._drop_connection()
            raise StartError(
                f"cannot start {spec.command[0]!r} on {self.options.address}: {exc}"
            ) from exc
        self._chan = chan
        self._reader = _ChannelLines(chan, spec.max_output_bytes)
        self._pump = threading.Thread(
            target=self._pump_stderr, args=(chan,), name=f"ssh-stderr-{spec.name}", daemon=True
        )
        self._pump.start()
        return self._handshake(t0, setup_files)

    def _launched(self, deadline: float) -> bool | bytes | None:
        # Login scripts on the participant's machine may print before our wrapper runs;
        # that text is logged, and the protocol starts after the wrapper's pid line.
        reader = self.answers
        line = reader.readline(deadline)
        while line and not line.startswith(_PID_PREFIX):
            self._log_bytes(b"remote shell printed: " + line)
            line = reader.readline(deadline)
        if not line:
            return line
        self._pgid = int(line[len(_PID_PREFIX) :])
        return True

    def _ended_before_ready(self) -> str:
        lost, code = self._ended()
        if lost:
            return f"link lost: {lost}"
        if self._pgid is None:
            # The wrapper never said its first line: the account's shell ended before it.
            return f"{self._shell_ended(code)}; stderr: {self._log_tail()}"
        return f"exited with code {code} before ready; stderr: {self._log_tail()}"

    def _on_ready(self, ready_at: float) -> None:
        self._cpu_mark, self._peak = None, None

    def _shell_ended(self, code: int | None) -> str:
        return (
            f"the login shell of {self.options.address} ended (exit code {code}) before "
            "onsite's command ran: sshd runs every command through it, so its "
            "non-interactive start-up files (~/.bashrc under bash, $BASH_ENV, ~/.zshenv) "
            "must not exit or read stdin"
        )

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        if self._chan is None or self._reader is None:
            raise RuntimeError("run_item before start")
        self._maybe_measure_rtt()
        t_stage = time.monotonic()
        inputs: dict[str, Any] = dict(request.fields)
        staged: list[str] = []
        # Output files go to the start's stage directory, removed after the item like inputs.
        outputs: dict[str, str] = {}
        for key, suffix in request.outputs.items():
            remote = posixpath.join(self._stage_dir, f"{request.anon_id}-{key}{suffix}")
            self._staged.add(remote)
            staged.append(remote)
            outputs[key] = inputs[key] = remote
        try:
            for key, source in request.files.items():
                remote = posixpath.join(self._stage_dir, f"{request.anon_id}-{key}{source.suffix}")
                self._staged.add(remote)
                staged.append(remote)
                self._put(source, remote)
                inputs[key] = remote
        except (OSError, EOFError, paramiko.SSHException) as exc:
            now = time.monotonic()
            lost = self._lost_reason(wait=0.0)
            loss = self._whose_loss(lost) if lost else {"message": f"staging failed: {exc}"}
            self._unstage(staged)
            self.kill()
            return ItemAttempt(
                request.anon_id,
                "crashed",
                now,
                now,
                now - t_stage,
                round_trip_seconds=self._rtt,
                system_lost=True,
                **loss,
            )
        data = protocol.item(request.anon_id, inputs)
        stage_seconds = time.monotonic() - t_stage
        try:
            result = self._exchange(request, data, stage_seconds)
            if result.outcome == "result" and outputs:
                # After the answer's time was taken: the transfer is the venue's.
                result = self._fetch_outputs(result, outputs)
            return result
        finally:
            self._unstage(staged)

    def _fetch_outputs(self, result: ItemAttempt, outputs: Mapping[str, str]) -> ItemAttempt:
        """Copy the item's output files from the machine into the local stage directory.

        A missing file is left for the controller to judge (it finds none); a file that is
        not a regular file, or is too large, makes the item invalid_output; a link that
        fails makes it a lost link (the item is sent again).
        """
        t0 = time.monotonic()
        files: dict[str, OutputFile] = {}
        for key, remote in outputs.items():
            host = self._fetched_dir / posixpath.basename(remote)
            try:
                transport = self._transport
                if transport is None:
                    raise OSError("not connected")
                fetch_file(
                    self._sftp,
                    transport,
                    remote,
                    host,
                    self.spec.max_output_file_bytes,
                    _REMOTE_OP_SECONDS,
                    self._fetcher,
                )
            except FetchRefused as exc:
                self._drop_fetched(files)
                return dataclasses.replace(
                    result,
                    outcome="invalid_output",
                    message=f"the file written at {key} ({remote}) {exc}",
                    fetch_seconds=time.monotonic() - t0,
                )
            except LocalWriteError as exc:
                # The controller's disk, not the system: the item is sent again.
                self._drop_fetched(files)
                return dataclasses.replace(
                    result,
                    outcome="crashed",
                    message=f"cannot keep the file written at {key} on the controller: {exc}",
                    link_lost=True,
                    fetch_seconds=time.monotonic() - t0,
                )
            except (OSError, EOFError, paramiko.SSHException) as exc:
                self._drop_fetched(files)
                # A read that failed as the connection dropped comes before the transport
                # notices: give it a moment to tell a lost link from a file it cannot read.
                lost = self._lost_reason(wait=1.0)
                if lost is None:
                    return dataclasses.replace(
                        result,
                        outcome="invalid_output",
                        message=f"cannot fetch the file written at {key} ({remote}): {exc}",
                        fetch_seconds=time.monotonic() - t0,
                    )
                self.kill()
                return dataclasses.replace(
                    result,
                    outcome="crashed",
                    system_lost=True,
                    fetch_seconds=time.monotonic() - t0,
                    **self._whose_loss(f"while fetching {key}: {lost}"),
                )
            files[key] = OutputFile(host, remote)
        return dataclasses.replace(result, output_files=files, fetch_seconds=time.monotonic() - t0)

    @staticmethod
    def _drop_fetched(files: Mapping[str, OutputFile]) -> None:
        for file in files.values():
            with contextlib.suppress(OSError):
                file.host.unlink()

    def _reset_fetched(self) -> None:
        """Remove what earlier starts fetched and the controller did not take."""
        path = self._fetched_dir
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()

    def stop(self) -> None:
        chan = self._chan
        if chan is not None and not chan.closed:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                self._write(protocol.BYE)
                chan.shutdown_write()
            chan.status_event.wait(_BYE_GRACE_SECONDS)
        token, sid = self._token, self._pgid
        if token is not None:
            # Until a clean-up below has killed what this start runs.
            self._orphaned = True
        transport = self._transport
        if not (transport is not None and transport.is_active()):
            self._forget_start()
            if self._orphaned:
                # The link died under a running system: one quick try to kill what it
                # left behind.
                with contextlib.suppress(StartError):
                    self._ensure_connected(retry_seconds=0.0)
        transport = self._transport
        if transport is not None and transport.is_active():
            # One channel for all of it: this start's processes (with the session the
            # controller trusts), every earlier start's, and the directory with what was
            # staged.
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                status, _, _ = run_remote(
                    transport, cleanup_command(self._system_dir, token, sid), _REMOTE_OP_SECONDS
                )
                if status == 0:
                    self._orphaned = False
                    self._staged.clear()
        self._forget_start()
        self._unstage(list(self._staged))
        note = self._meter.summary() if self._meter is not None else None
        if note:
            self._mark_log(note)
        self._drop_connection()
        self._reset_fetched()
        self._close_log()

    def kill(self) -> None:
        if self._token is not None:
            if not self._kill_start(self._token, self._pgid):
                self._orphaned = True
        self._forget_start()

    def _forget_start(self) -> None:
        """Close the current start's channel and drop what the controller knew of it."""
        chan = self._chan
        if chan is not None:
            with contextlib.suppress(Exception):
                chan.close()
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        self._chan = None
        self._reader = None
        self._pump = None
        self._pgid = None
        self._token = None

    # -- the exchange ---------------------------------------------------------------------

    def _attempt_fields(self) -> Mapping[str, Any]:
        return {"round_trip_seconds": self._rtt}

    def _stream_ended(self, attempt: AttemptBuilder, stream: str) -> ItemAttempt:
        now = time.monotonic()
        lost, code = self._ended()
        if lost:
            result = attempt("crashed", now, **self._whose_loss(lost))
        else:
            result = attempt(
                "crashed",
                now,
                message=f"exited with code {code}; stderr: {self._log_tail()}",
            )
        self.kill()
        return result

    def _ended(self) -> tuple[str | None, int | None]:
        """After end of stream: why the link died (None if alive), else the exit code."""
        chan = self._chan
        assert chan is not None
        # Set by exit-status and by the channel closing, whichever comes first; a dead
        # connection sets neither, and must be told at once: the venue's check of the
        # machine (_whose_loss) means something only right after the loss.
        deadline = time.monotonic() + 5.0
        while not chan.status_event.wait(0.05):
            transport = self._transport
            if transport is None or not transport.is_active() or time.monotonic() > deadline:
                break
        if chan.exit_status != -1:
            if self._pump is not None:
                self._pump.join(timeout=2.0)  # so the stderr tail is in the log
            return None, chan.exit_status
        lost = self._lost_reason(wait=1.0)
        if lost:
            return lost, None
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        return None, None

    def _whose_loss(self, lost: str) -> dict[str, Any]:
        """An attempt's message and ``link_lost`` for a session that died: the venue's only
        when the venue cannot show the participant's host and the network were up.

        A new connection to the machine is tried at once: when its kernel answers it, the
        machine and the network were up and the session ended on the participant's machine
        (its sshd or the system's session killed), which is the participant's failure
        (docs/security.md, "Failures have an owner").
        """
        down = host_answers(self.options, _EVIDENCE_SECONDS)
        if down is None:
            return {
                "message": f"the SSH session ended ({lost}) while the machine answered a new "
                "connection at once, so it and the network were up: the participant's "
                "failure, not the link's",
                "link_lost": False,
            }
        return {"message": f"link lost: {lost}; {down}", "link_lost": True}

    def _lost_reason(self, wait: float) -> str | None:
        """Why the SSH connection is down, or None if it is up (waiting up to `wait` to tell)."""
        transport = self._transport
        if transport is None:
            return "not connected"
        until = time.monotonic() + wait
        while transport.is_active():
            if time.monotonic() >= until:
                return None
            time.sleep(0.02)
        exc = transport.get_exception()
        return str(exc) if exc and str(exc) else "the SSH connection closed"

    def _write(self, data: bytes) -> None:
        assert self._chan is not None
        self._chan.sendall(data)

    def _handed_over(self, before: float) -> float:
        # paramiko encrypts and queues in this thread; the socket saw the last bytes leave.
        handed = last_send(self._transport)
        return handed if handed is not None and handed >= before else before

    # -- the connection -------------------------------------------------------------------

    def _ensure_connected(self, retry_seconds: float | None = None) -> None:
        if self._transport is not None and self._transport.is_active():
            return
        self._drop_connection()
        if self._reached:
            retry = self.reconnect_seconds if retry_seconds is None else retry_seconds
            client, trusted = connect(self.options, retry)
        else:
            client, trusted = connect(self.options, 0.0, self.options.first_connect_timeout)
            self._reached = True
        if trusted:
            self._mark_log(trusted)
        warning = key_file_warning(self.options)
        if warning:
            logger.warning("%s", warning)
            self._mark_log(f"warning: {warning}")
        self._client = client
        self._transport = client.get_transport()
        assert self._transport is not None
        self._meter = RemoteMeter(self._transport)
        self._sftp = None
        try:
            self._sftp = client.open_sftp()
            channel = self._sftp.get_channel()
            if channel is not None:
                channel.settimeout(_REMOTE_OP_SECONDS)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            if self._has_sftp:
                self._mark_log(
                    f"the SSH server at {self.options.address} has no SFTP subsystem ({exc}); "
                    "inputs are staged through the exec channel"
                )
            self._has_sftp = False
        # Leftovers from a connection that died: the system it ran and the inputs staged for it.
        if self._orphaned or self._staged:
            with contextlib.suppress(StartError):
                self._prepare_remote(None)
        self._rtt_at = float("-inf")
        self._maybe_measure_rtt()

    def _prepare_remote(self, token: str | None) -> None:
        """Kill what earlier starts of this system left, empty its remote directory, and
        make the stage directory of the start with this token."""
        transport = self._transport
        if transport is None:
            # Preparing after a reconnect failed and dropped the connection.
            raise StartError(f"the connection to {self.options.address} was lost while starting")
        script = prepare_command(self.options.workdir, self._slug, token or "none")
        try:
            status, out, err = run_remote(transport, script, _REMOTE_OP_SECONDS)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            self._drop_connection()
            raise StartError(
                f"connected to {self.options.address} but cannot prepare the workdir "
                f"{self.options.workdir!r}: {exc}"
            ) from exc
        text = out.decode(errors="replace")
        found = [ln for ln in text.splitlines() if ln.startswith(_WORKDIR_PREFIX)]
        if status != 0 and b"remote workdir" not in err:
            why = err.decode(errors="replace").strip()
            raise StartError(self._shell_ended(status) + (f"; stderr: {why}" if why else ""))
        if status != 0 or not found:
            why = err.decode(errors="replace").strip() or f"exit status {status}"
            raise StartError(
                f"cannot prepare the workdir on {self.options.address}: {why}; make "
                f"{self.options.workdir!r} a directory the account {self.options.user!r} "
                "can write, or set workdir in the device settings"
            )
        self._orphaned = False
        self._staged.clear()
        self._remote_dir = found[-1][len(_WORKDIR_PREFIX) :]
        self._system_dir = system_dir(self._remote_dir, self._slug)

    def _drop_connection(self) -> None:
        self._fetcher.close()
        for closable in (self._meter, self._sftp, self._client):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()
        self._meter = None
        self._sftp = None
        self._client = None
        self._transport = None

    def _maybe_measure_rtt(self) -> None:
        transport = self._transport
        now = time.monotonic()
        if transport is None or now - self._rtt_at < self.options.rtt_interval:
            return
        # An SFTP stat of the workdir: one request and its answer on the open connection, no
        # process started on the other side, and bounded by the SFTP channel's timeout.
        # Without SFTP, a line to the resident meter shell and back (shell builtins only).
        sftp = self._sftp
        if sftp is None:
            if self._meter is None:
                return
            rtt = self._meter.ping()
            if rtt is None:
                return
            self._rtt, self._rtt_at = rtt, time.monotonic()
            return
        t0 = time.monotonic()
        try:
            sftp.stat(self._remote_dir)
        except (OSError, EOFError, paramiko.SSHException):
            return
        t1 = time.monotonic()
        self._rtt = t1 - t0
        self._rtt_at = t1

    def _kill_start(self, token: str, sid: int | None) -> bool:
        """Kill every process of one start (over a new channel); False if the link is down."""
        transport = self._transport
        if transport is None or not transport.is_active():
            return False
        try:
            run_remote(transport, kill_command(self._system_dir, token, sid), _REMOTE_OP_SECONDS)
        except (OSError, EOFError, paramiko.SSHException):
            return False
        return True

    def _put(self, source: Path, remote: str) -> None:
        """Copy one input to the machine (SFTP, else the exec channel); never writes source."""
        if self._sftp is not None:
            self._sftp.put(str(source), remote, confirm=False)
            return
        transport = self._transport
        if transport is None:
            raise OSError("not connected")
        exec_put(transport, source, remote, _REMOTE_OP_SECONDS)

    def _stage_setup_files(self) -> dict[str, str]:
        """Copy the files hello carries (a gallery) to the remote workdir, at every start:
        a reconnect may follow a reboot that emptied it."""
        staged: dict[str, str] = {}
        token = secrets.token_hex(4)
        try:
            for n, (name, source) in enumerate(self.spec.setup_files.items()):
                remote = posixpath.join(self._stage_dir, f"setup-{token}-{n}{source.suffix}")
                self._staged.add(remote)
                self._put(source, remote)
                staged[name] = remote
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise StartError(f"cannot stage setup files on {self.options.address}: {exc}") from exc
        return staged

    def _unstage(self, paths: list[str]) -> None:
        if not paths:
            return
        sftp = self._sftp
        if sftp is None:
            transport = self._transport
            if transport is None or not transport.is_active():
                return
            command = "rm -f -- " + " ".join(shlex.quote(p) for p in paths)
            try:
                status, _, _ = run_remote(transport, command, _REMOTE_OP_SECONDS)
            except (OSError, EOFError, paramiko.SSHException):
                return  # kept in _staged: removed after the next connect
            if status == 0:
                self._staged.difference_update(paths)
            return
        for path in paths:
            try:
                sftp.remove(path)
            except FileNotFoundError:
                pass
            except (OSError, EOFError, paramiko.SSHException):
                continue  # kept in _staged: removed after the next connect
            self._staged.discard(path)

    # -- resources ------------------------------------------------------------------------

    def _sample(self, now: float) -> tuple[float | None, int | None]:
        """CPU seconds so far and peak RSS of the remote session, read over the link."""
        if self._pgid is None or self._meter is None:
            return None, self._peak
        cpu, peak = self._meter.sample(self._pgid)
        if peak is not None:
            self._peak = max(self._peak or 0, peak)
        return cpu, self._peak

    # -- the log --------------------------------------------------------------------------

    def _mark_log(self, text: str) -> None:
        self._log.write(f"{log_note(text)}\n".encode())

    def _log_tail(self) -> str:
        return log_tail(self.spec.log_path)

    def _pump_stderr(self, chan: paramiko.Channel) -> None:
        while True:
            try:
                data = chan.recv_stderr(1 << 16)
            except Exception:
                return
            if not data:
                return
            self._log_bytes(data)

    def _log_bytes(self, data: bytes) -> None:
        self._log.write(data)

    def _close_log(self) -> None:
        self._log.close()


def probe(options: Mapping[str, Any] | SshDevice) -> list[ProbeResult]:
    """Check an SSH device step by step for ``onsite check``; stops at the first failure.

    A private key file that other users can read is reported as a passing "key file"
    check whose detail starts with "warning:".
    """
    try:
        opts = settings_from(SshDevice, options)
    except ValueError as exc:
        return [ProbeResult("settings", False, str(exc))]
    results: list[ProbeResult] = []
    warning = key_file_warning(opts)
    if warning:
        results.append(ProbeResult("key file", True, f"warning: {warning}"))
    try:
        banner, seconds = read_banner(opts)
    except OSError as exc:
        return [*results, ProbeResult("reachable", False, f"{opts.endpoint}: {exc}")]
    if not banner.startswith("SSH-"):
        detail = f"{opts.endpoint} is not an SSH server: {banner!r}"
        return [*results, ProbeResult("reachable", False, detail)]
    detail = f"{opts.endpoint}: {banner} ({seconds * 1e3:.1f} ms)"
    results.append(ProbeResult("reachable", True, detail))
    try:
        client, trusted = connect_once(opts)
    except HostKeyError as exc:
        return [*results, ProbeResult("host key", False, str(exc))]
    except AuthError as exc:
        return [
            *results,
            ProbeResult("host key", True, "matches"),
            ProbeResult("authentication", False, str(exc)),
        ]
    except (UnreachableError, StartError) as exc:
        return [*results, ProbeResult("login", False, str(exc))]
    results.append(ProbeResult("host key", True, trusted or "matches"))
    results.append(ProbeResult("authentication", True, f"logged in as {opts.address}"))
    try:
        _probe_remote(client, opts, results)
    except (OSError, EOFError, paramiko.SSHException) as exc:
        results.append(ProbeResult("remote command", False, str(exc)))
    finally:
        client.close()
    return results


def _probe_remote(client: paramiko.SSHClient, opts: SshDevice, results: list[ProbeResult]) -> None:
    """The checks that need a login: a command, SFTP, the workdir, free disk."""
    transport = client.get_transport()
    assert transport is not None
    status, out, err = run_remote(
        transport,
        "sh -c " + shlex.quote("uname -sm; command -v setsid || echo 'no setsid'"),
    )
    text = out.decode(errors="replace").strip().replace("\n", ", ")
    if status != 0:
        detail = f"exit {status}: {err.decode(errors='replace').strip()}"
        results.append(ProbeResult("remote command", False, detail))
        return
    results.append(ProbeResult("remote command", True, text))
    try:
        client.open_sftp().close()
        results.append(ProbeResult("sftp", True, "available"))
    except (OSError, EOFError, paramiko.SSHException):
        detail = (
            f"the SSH server at {opts.address} has no SFTP subsystem; inputs will be "
            "staged through the exec channel (slower for large inputs)"
        )
        results.append(ProbeResult("sftp", True, detail))
    check = (
        'w=$1; mkdir -p "$w" 2>/dev/null && cd "$w" 2>/dev/null || '
        '{ echo "cannot create or enter $w" >&2; exit 3; }; '
        'f=".onsite-probe-$$"; : >"$f" 2>/dev/null && rm -f "$f" || '
        '{ echo "cannot write in $w" >&2; exit 3; }; '
        'mkfifo "$f" 2>/dev/null && rm -f "$f" || '
        '{ echo "cannot make a FIFO in $w (the system gets its stdin through one)" >&2; exit 3; }; '
        "pwd -P"
    )
    status, out, err = run_remote(
        transport, f"sh -c {shlex.quote(check)} onsite-probe {shlex.quote(opts.workdir)}"
    )
    if status != 0:
        why = err.decode(errors="replace").strip() or f"exit status {status}"
        detail = (
            f"the remote workdir {opts.workdir} is not writable by {opts.user}: {why}; "
            "make it writable for that account, or set workdir to a directory that is"
        )
        results.append(ProbeResult("workdir", False, detail))
        return
    workdir = out.decode(errors="replace").strip().splitlines()[-1]
    results.append(ProbeResult("workdir", True, f"{workdir} is writable"))
    status, out, err = run_remote(transport, f"df -Pk {shlex.quote(workdir)}")
    rows = out.decode(errors="replace").splitlines()
    try:
        free = int(rows[-1].split()[3]) * 1024
    except (IndexError, ValueError):
        results.append(ProbeResult("free disk", False, f"cannot read df for {workdir}: {err!r}"))
        return
    detail = f"{free / 1e9:.1f} GB free in {workdir}"
    if free < _MIN_FREE_BYTES:
        detail += f" (need at least {_MIN_FREE_BYTES / 1e9:.1f} GB)"
    results.append(ProbeResult("free disk", free >= _MIN_FREE_BYTES, detail))
