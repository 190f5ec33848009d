"""Systems on a participant's own machine, driven over SSH in serve mode: the paramiko
implementation of the remote capabilities (runners/remote_parts.py), run by the remote serve
runner (runners/remote.py).

The participant protocol runs unchanged over an SSH exec channel: stdin and stdout of the
channel carry the JSON lines, stderr goes to the system's log. Inputs go over SFTP where the
server has it (else ``cat`` on an exec channel), files the system wrote come back over a
fetching SFTP session of their own (runners/ssh_fetch.py); process control and the resource
meter are the shell's (runners/remote_shell.py, runners/remote_meter.py) on exec channels.
A dead link shows within ``link_timeout`` (keep-alives and TCP_USER_TIMEOUT,
runners/ssh_link.py); the evidence of whose failure it was is a new TCP connection to the
machine's sshd port, answered at once or not.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import paramiko
from paramiko.buffered_pipe import PipeTimeout

from .base import StartError, SystemSpec
from .remote import RemoteServeRunner
from .remote_parts import (
    AnswerLines,
    Evidence,
    FileServiceHung,
    FileTransfer,
    LinkError,
)
from .remote_shell import ShellFiles, ShellHost, probe_command, probe_workdir
from .ssh_fetch import FetchSession, fetch_file
from .ssh_link import (
    AuthError,
    HostKeyError,
    RemoteMeter,
    SshChannel,
    SshDevice,
    UnreachableError,
    connect,
    connect_once,
    exec_channel,
    host_answers,
    key_file_warning,
    last_send,
    link_errors,
    packet_age,
    read_banner,
    ssh_opener,
)
from .transport import CheckStep, settings_from

logger = logging.getLogger(__name__)

_REMOTE_OP_SECONDS = 10.0
# The venue's own check of a machine whose session died: a TCP connection that must be
# answered before the kernel would send its first retransmission (1 s).
_EVIDENCE_SECONDS = 0.9


class _ChannelLines(AnswerLines):
    """Lines from an SSH channel's stdout, timed when their bytes reached this machine."""

    def __init__(self, chan: paramiko.Channel, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._chan = chan
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

    def _receive(self, timeout: float) -> tuple[bytes, float] | None:
        # Wait on the channel's stdout buffer itself, with our deadline's timeout. Never
        # chan.fileno(): its readiness pipe is shared with stderr, and two threads clearing
        # it at once (this reader and the stderr pump) block one of them in os.read for
        # ever (paramiko issues 537 and 1235).
        try:
            data = self._chan.in_buffer.read(1 << 16, timeout)
        except PipeTimeout:
            return None
        # b"": the buffer was closed (EOF or the channel closed).
        return bytes(data), self._fed_at or time.monotonic()


def _lost_reason(transport: paramiko.Transport | None, wait: float) -> str | None:
    """Why an SSH connection is down, or None if it is up (waiting up to `wait` to tell)."""
    if transport is None:
        return "not connected"
    until = time.monotonic() + wait
    while transport.is_active():
        if time.monotonic() >= until:
            return None
        time.sleep(0.02)
    exc = transport.get_exception()
    return str(exc) if exc and str(exc) else "the SSH connection closed"


class SshStream:
    """The system's wrapper on an SSH exec channel (runners.remote_parts.ExecStream)."""

    def __init__(
        self,
        transport: paramiko.Transport,
        chan: paramiko.Channel,
        log: Callable[[bytes], None],
        max_bytes: int,
    ) -> None:
        self._transport = transport
        self.chan = chan
        self._lines = _ChannelLines(chan, max_bytes)
        self._pump = threading.Thread(
            target=self._pump_stderr, args=(log,), name="ssh-stderr", daemon=True
        )
        self._pump.start()

    @property
    def lines(self) -> _ChannelLines:
        """The channel's stdout."""
        return self._lines

    @property
    def closed(self) -> bool:
        """Whether the channel was closed."""
        return bool(self.chan.closed)

    def write(self, data: bytes) -> None:
        """Send bytes to the system's stdin."""
        with link_errors():
            self.chan.sendall(data)

    def handed_over(self, before: float) -> float:
        """When the socket saw the last bytes leave (paramiko encrypts and queues in this
        thread), else ``before``."""
        handed = last_send(self._transport)
        return handed if handed is not None and handed >= before else before

    def close_stdin(self) -> None:
        """End the system's stdin."""
        with link_errors():
            self.chan.shutdown_write()

    def wait_exit(self, timeout: float) -> bool:
        """Wait for the exit status (or the channel's end)."""
        return bool(self.chan.status_event.wait(timeout))

    def ended(self, wait: float) -> tuple[int | None, str | None]:
        """The exit status sshd reported, or why the connection died."""
        chan = self.chan
        # Set by exit-status and by the channel closing, whichever comes first; a dead
        # connection sets neither, and must be told at once.
        deadline = time.monotonic() + wait
        while not chan.status_event.wait(0.05):
            if not self._transport.is_active() or time.monotonic() > deadline:
                break
        if chan.exit_status != -1:
            self._pump.join(timeout=2.0)  # so the stderr tail is in the log
            return int(chan.exit_status), None
        lost = _lost_reason(self._transport, wait=1.0)
        if lost:
            return None, lost
        self._pump.join(timeout=2.0)
        return None, None

    def close(self) -> None:
        """Close the channel; the wrapper sees its stdin end."""
        with contextlib.suppress(Exception):
            self.chan.close()
        self._pump.join(timeout=2.0)

    def _pump_stderr(self, log: Callable[[bytes], None]) -> None:
        while True:
            try:
                data = self.chan.recv_stderr(1 << 16)
            except Exception:
                return
            if not data:
                return
            log(data)


class SftpFiles:
    """File transfer over SFTP (runners.remote_parts.FileTransfer): inputs on the staging
    session, fetches on a session of their own (runners/ssh_fetch.py)."""

    def __init__(
        self,
        sftp: paramiko.SFTPClient,
        transport: paramiko.Transport,
        fetcher: FetchSession,
        timeout: float,
        on_hung: Callable[[], str] = lambda: "",
    ) -> None:
        self._sftp = sftp
        self._transport = transport
        self._fetcher = fetcher
        self._timeout = timeout
        self._on_hung = on_hung

    def put(self, local: Path, remote: str) -> None:
        """Copy one input to the machine; never writes ``local``.

        Confirmed by the file's size: paramiko's close ignores a server that never
        answers, and the system would be handed a truncated input. A server that does
        not answer within the timeout raises FileServiceHung.
        """
        try:
            with link_errors():
                self._sftp.put(str(local), remote, confirm=True)
        except TimeoutError:
            raise FileServiceHung(self._on_hung()) from None

    def get(self, remote: str, local: Path, limit: int) -> bool:
        """Fetch a file the system wrote, under the hostile-file rules."""
        with link_errors():
            return fetch_file(
                self._sftp, self._transport, remote, local, limit, self._timeout, self._fetcher
            )

    def remove(self, paths: Sequence[str]) -> list[str]:
        """Remove each path; those that failed are left for the next connection."""
        gone = []
        for path in paths:
            try:
                self._sftp.remove(path)
            except FileNotFoundError:
                pass
            except TimeoutError:
                # A hung server answers no other removal either.
                self._on_hung()
                break
            except (OSError, EOFError, paramiko.SSHException):
                continue
            gone.append(path)
        return gone


def _open_sftp(transport: paramiko.Transport) -> paramiko.SFTPClient:
    """An SFTP session whose every request, its version handshake first, times out after
    _REMOTE_OP_SECONDS: a hung server is then an error, never a start that waits forever."""
    channel = transport.open_session(timeout=_REMOTE_OP_SECONDS)
    try:
        channel.settimeout(_REMOTE_OP_SECONDS)
        channel.invoke_subsystem("sftp")
        return paramiko.SFTPClient(channel)
    except BaseException:
        channel.close()
        raise


class SshHost(ShellHost):
    """A participant's machine over SSH with paramiko (runners.remote_parts.RemoteHost)."""

    transport_name = "ssh"
    op_seconds = _REMOTE_OP_SECONDS
    session = "SSH session"

    def __init__(self, opts: SshDevice) -> None:
        self.opts = opts
        self.address = opts.address
        self.account = f"the account {opts.user!r}"
        self._client: paramiko.SSHClient | None = None
        self._transport: paramiko.Transport | None = None
        self._sftp: paramiko.SFTPClient | None = None
        # The connection's own SFTP session for fetching files back (ssh_fetch).
        self._fetcher = FetchSession()
        self._has_sftp = True
        self._meter: RemoteMeter | None = None

    @property
    def transport(self) -> paramiko.Transport | None:
        """The SSH connection while it is up."""
        return self._transport

    @property
    def link_port(self) -> int | None:
        """The local TCP port of the SSH connection while it is up (to find it in server logs)."""
        transport = self._transport
        if transport is None or not transport.is_active():
            return None
        sock = transport.sock
        assert isinstance(sock, socket.socket)  # paramiko's own connections are TCP sockets
        return int(sock.getsockname()[1])

    def connect(self, retry_seconds: float, first: bool) -> list[str]:
        """Log in (the first contact once, with ``first_connect_timeout`` for the TCP
        connect); open the meter and, where the server has it, SFTP."""
        opts = self.opts
        if first:
            client, trusted = connect(opts, 0.0, opts.first_connect_timeout)
        else:
            client, trusted = connect(opts, retry_seconds)
        notes = [trusted] if trusted else []
        warning = key_file_warning(opts)
        if warning:
            logger.warning("%s", warning)
            notes.append(f"warning: {warning}")
        self._client = client
        self._transport = client.get_transport()
        assert self._transport is not None
        self._meter = RemoteMeter(self._transport)
        self._sftp = None
        try:
            self._sftp = _open_sftp(self._transport)
        except TimeoutError:
            # Not remembered: the next connection's server may answer again.
            notes.append(
                f"the SFTP server at {opts.address} did not answer its handshake within "
                f"{_REMOTE_OP_SECONDS:.0f} s; inputs are staged through the exec channel"
            )
        except (OSError, EOFError, paramiko.SSHException) as exc:
            if self._has_sftp:
                notes.append(
                    f"the SSH server at {opts.address} has no SFTP subsystem ({exc}); "
                    "inputs are staged through the exec channel"
                )
            self._has_sftp = False
        return notes

    def connected(self) -> bool:
        """Whether the SSH connection is up."""
        return self._transport is not None and self._transport.is_active()

    def close(self) -> None:
        """Close the meter, the SFTP sessions and the connection."""
        self._fetcher.close()
        for closable in (self._meter, self._sftp, self._client):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()
        self._meter = None
        self._sftp = None
        self._client = None
        self._transport = None

    def lost_reason(self, wait: float) -> str | None:
        """Why the connection is down (paramiko's last error), or None if it is up."""
        return _lost_reason(self._transport, wait)

    def evidence(self) -> Evidence:
        """A new TCP connection to the machine's sshd port, answered (accepted or refused)
        before the kernel would send a lost packet again: the machine and the network were
        up (docs/security.md, "Failures have an owner")."""
        down = host_answers(self.opts, _EVIDENCE_SECONDS)
        if down is None:
            return Evidence(True, "the machine answered a new connection at once")
        return Evidence(False, down)

    def round_trip(self, workdir: str) -> float | None:
        """An SFTP stat of the workdir: one request and its answer on the open connection,
        no process started on the other side. Without SFTP, a line to the resident meter
        shell and back (shell builtins only)."""
        sftp = self._sftp
        if sftp is None:
            return self._meter.ping() if self._meter is not None else None
        t0 = time.monotonic()
        try:
            sftp.stat(workdir)
        except (OSError, EOFError, paramiko.SSHException):
            return None
        return time.monotonic() - t0

    def shell_ended(self, code: int | None) -> str:
        """The account's login shell ended before onsite's command ran."""
        return (
            f"the login shell of {self.address} ended (exit code {code}) before "
            "onsite's command ran: sshd runs every command through it, so its "
            "non-interactive start-up files (~/.bashrc under bash, $BASH_ENV, ~/.zshenv) "
            "must not exit or read stdin"
        )

    def open(self, command: str, timeout: float) -> SshChannel:
        """Run ``command`` on an exec channel of its own."""
        transport = self._transport
        if transport is None:
            raise LinkError("not connected")
        return exec_channel(transport, command, timeout)

    def start(self, command: str, log: Callable[[bytes], None], max_bytes: int) -> SshStream:
        """The wrapper on an exec channel; its stderr pumped into ``log``."""
        chan = self.open(command, _REMOTE_OP_SECONDS).chan
        chan.settimeout(None)
        assert self._transport is not None
        return SshStream(self._transport, chan, log, max_bytes)

    @property
    def files(self) -> FileTransfer:
        """SFTP where the server has it, else ``cat`` over exec channels."""
        if self._sftp is not None and self._transport is not None:
            return SftpFiles(
                self._sftp, self._transport, self._fetcher, _REMOTE_OP_SECONDS, self._sftp_hung
            )
        return ShellFiles(self.open, _REMOTE_OP_SECONDS)

    def _sftp_hung(self) -> str:
        """Give up this connection's SFTP session (its server stopped answering) and say
        so: inputs then go through exec channels, as for a server without SFTP."""
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            with contextlib.suppress(Exception):
                # The channel, not a request that would wait on the hung server again.
                sftp.sock.close()
        return (
            f"the SFTP server at {self.opts.address} did not answer within "
            f"{_REMOTE_OP_SECONDS:.0f} s while its SSH sessions did: a hung file service on "
            "the machine, not the system; inputs go through exec channels from now on"
        )


class SshServeRunner(RemoteServeRunner):
    """A resident system on a participant's machine, speaking the participant protocol over SSH."""

    def __init__(self, spec: SystemSpec, options: Mapping[str, Any] | SshDevice) -> None:
        self.options = settings_from(SshDevice, options)
        self.ssh = SshHost(self.options)
        super().__init__(spec, self.ssh, self.options.workdir, self.options.rtt_interval)

    @property
    def link_port(self) -> int | None:
        """The local TCP port of the SSH connection while it is up (to find it in server logs)."""
        return self.ssh.link_port


def probe(options: Mapping[str, Any] | SshDevice) -> list[CheckStep]:
    """Check an SSH device step by step for ``onsite check``; stops at the first failure.

    A private key file that other users can read is reported as a passing "key file"
    check whose detail starts with "warning:".
    """
    try:
        opts = settings_from(SshDevice, options)
    except ValueError as exc:
        return [CheckStep("settings", False, str(exc))]
    results: list[CheckStep] = []
    warning = key_file_warning(opts)
    if warning:
        results.append(CheckStep("key file", True, f"warning: {warning}"))
    try:
        banner, seconds = read_banner(opts)
    except OSError as exc:
        return [*results, CheckStep("reachable", False, f"{opts.endpoint}: {exc}")]
    if not banner.startswith("SSH-"):
        detail = f"{opts.endpoint} is not an SSH server: {banner!r}"
        return [*results, CheckStep("reachable", False, detail)]
    detail = f"{opts.endpoint}: {banner} ({seconds * 1e3:.1f} ms)"
    results.append(CheckStep("reachable", True, detail))
    try:
        client, trusted = connect_once(opts)
    except HostKeyError as exc:
        return [*results, CheckStep("host key", False, str(exc))]
    except AuthError as exc:
        return [
            *results,
            CheckStep("host key", True, "matches"),
            CheckStep("authentication", False, str(exc)),
        ]
    except (UnreachableError, StartError) as exc:
        return [*results, CheckStep("login", False, str(exc))]
    results.append(CheckStep("host key", True, trusted or "matches"))
    results.append(CheckStep("authentication", True, f"logged in as {opts.address}"))
    try:
        _probe_remote(client, opts, results)
    finally:
        client.close()
    return results


def _probe_remote(client: paramiko.SSHClient, opts: SshDevice, results: list[CheckStep]) -> None:
    """The checks that need a login: a command, SFTP, the workdir, free disk."""
    transport = client.get_transport()
    assert transport is not None
    opener = ssh_opener(transport)
    command = probe_command(opener, _REMOTE_OP_SECONDS)
    results.append(command)
    if not command.ok:
        return
    try:
        client.open_sftp().close()
        results.append(CheckStep("sftp", True, "available"))
    except (OSError, EOFError, paramiko.SSHException):
        detail = (
            f"the SSH server at {opts.address} has no SFTP subsystem; inputs will be "
            "staged through the exec channel (slower for large inputs)"
        )
        results.append(CheckStep("sftp", True, detail))
    results.extend(probe_workdir(opener, _REMOTE_OP_SECONDS, opts.workdir, opts.user))
