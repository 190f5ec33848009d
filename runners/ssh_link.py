"""The SSH link to a participant's machine with paramiko: host key checks, connecting, the
link's liveness, and exec channels as the ``Channel`` the shell capabilities are written
against (runners/remote_parts.py).

Kept apart from the runner so that ``onsite check`` can probe a machine with
the same checks without starting a system. The device's settings (``SshDevice``) are in
runners/ssh_settings.py, which reading a site file imports without paramiko.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import paramiko

from .base import DeviceUnreachable, StartError
from .remote_meter import ShellMeter
from .remote_meter import meter_command as meter_command
from .remote_parts import LinkError, Opener, retry_unreachable
from .ssh_settings import SshDevice as SshDevice

logger = logging.getLogger(__name__)


class HostKeyError(StartError):
    """The machine's host key is unknown, or differs from the pinned one."""


class AuthError(StartError):
    """The machine refused our key."""


class UnreachableError(DeviceUnreachable):
    """No SSH server answered at host:port."""


def fingerprint(key: paramiko.PKey) -> str:
    """The key's SHA256 fingerprint as OpenSSH prints it (ssh-keygen -lf)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def key_line(key: paramiko.PKey) -> str:
    """The "type base64" form to paste as host_key."""
    return f"{key.get_name()} {key.get_base64()}"


def parse_host_key(text: str) -> paramiko.PKey:
    """A pinned key from a line like ssh-keyscan prints (a leading host name is allowed)."""
    tokens = text.split()
    for i, token in enumerate(tokens[:-1]):
        if token.startswith(("ssh-", "ecdsa-", "sk-")):
            try:
                blob = base64.b64decode(tokens[i + 1], validate=True)
                return paramiko.PKey.from_type_string(token, blob)
            except (binascii.Error, ValueError, paramiko.SSHException) as exc:
                raise ValueError(f"host_key {text[:40]!r}...: cannot read the key: {exc}") from exc
    raise ValueError(
        f"host_key {text[:40]!r} is not a key line; give it as ssh-keyscan prints it, "
        'e.g. host_key = "ssh-ed25519 AAAA..."'
    )


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    """Refuse keys we do not know, or record them when trust on first use is on."""

    def __init__(self, opts: SshDevice) -> None:
        self.opts = opts
        self.trusted: str | None = None

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        opts = self.opts
        if opts.trust_on_first_use and opts.known_hosts_file is not None:
            opts.known_hosts_file.parent.mkdir(parents=True, exist_ok=True)
            with open(opts.known_hosts_file, "a", encoding="ascii") as fh:
                fh.write(f"{opts.host_entry} {key_line(key)}\n")
            self.trusted = (
                f"trusted the host key of {opts.endpoint} on first use: {key.get_name()} "
                f"{fingerprint(key)}, appended to {opts.known_hosts_file}"
            )
            logger.warning("%s", self.trusted)
            return
        if opts.trust_on_first_use:
            hint = 'trust_on_first_use needs known_hosts = "path" to record the key in'
        else:
            hint = (
                "confirm the fingerprint with the participant (on their machine: "
                "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then pin it in the "
                f'device settings: host_key = "{key_line(key)}"'
            )
        raise HostKeyError(
            f"host key of device {opts.endpoint} is not known: it offered {key.get_name()} "
            f"{fingerprint(key)}; {hint}"
        )


# Linux's SO_TIMESTAMPNS: the kernel stamps every packet it receives (CLOCK_REALTIME) and
# hands the stamp of the newest one a read returned with that read. Python's socket module
# does not name it.
_SO_TIMESTAMPNS = 35
_STAMP = struct.Struct("qq")  # struct timespec
_ANCILLARY_BYTES = socket.CMSG_SPACE(_STAMP.size)
# A stamp older than this, or from the future, means the wall clock was stepped meanwhile.
_MAX_PACKET_AGE = 30.0


class StampedSocket(socket.socket):
    """A TCP socket that keeps when each read's bytes reached this machine and when each
    thread last handed bytes to the kernel.

    An item's time runs from when its last bytes went out to when the answer's bytes came
    in, both on this machine's clocks: not from before paramiko encrypted and queued the
    item, nor to when its transport thread next got the interpreter lock to read and
    decrypt the answer. With dozens of devices on one controller each of those waits is
    milliseconds, which the system must not be charged for.
    """

    __slots__ = ("_received", "_sends")
    _received: float | None
    _sends: threading.local

    @classmethod
    def adopt(cls, sock: socket.socket) -> StampedSocket:
        """Take over a connected socket (the same descriptor) and turn the stamps on."""
        timeout = sock.gettimeout()
        stamped = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        stamped.settimeout(timeout)
        stamped._received = None
        stamped._sends = threading.local()
        with contextlib.suppress(OSError):  # no stamps: every age is unknown
            stamped.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        return stamped

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY_BYTES, flags)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
                seconds, nanoseconds = _STAMP.unpack_from(payload)
                self._received = seconds + nanoseconds / 1e9
        return data

    def send(self, data: Any, flags: int = 0) -> int:
        # Taken with the interpreter lock held, right before the call that gives it up.
        self._sends.at = time.monotonic()
        return super().send(data, flags)

    def packet_age(self) -> float | None:
        """Seconds since the kernel received the newest bytes the last read returned; None
        when that is unknown (no stamp, or a wall-clock step made it implausible)."""
        if self._received is None:
            return None
        age = time.time() - self._received
        return age if 0.0 <= age <= _MAX_PACKET_AGE else None

    def last_send(self) -> float | None:
        """When the calling thread last handed bytes to the kernel (monotonic clock)."""
        at: float | None = getattr(self._sends, "at", None)
        return at


def _stamping_transport(sock: Any, **kwargs: Any) -> paramiko.Transport:
    """paramiko's Transport over a StampedSocket (a proxy object is kept as it is)."""
    if type(sock) is socket.socket and sock.type == socket.SOCK_STREAM:
        sock = StampedSocket.adopt(sock)
    return paramiko.Transport(sock, **kwargs)


def packet_age(transport: paramiko.Transport | None) -> float | None:
    """``StampedSocket.packet_age`` of a transport's socket (None for any other)."""
    sock = getattr(transport, "sock", None)
    return sock.packet_age() if isinstance(sock, StampedSocket) else None


def last_send(transport: paramiko.Transport | None) -> float | None:
    """``StampedSocket.last_send`` of a transport's socket (None for any other)."""
    sock = getattr(transport, "sock", None)
    return sock.last_send() if isinstance(sock, StampedSocket) else None


def _client(opts: SshDevice) -> tuple[paramiko.SSHClient, _RefuseUnknown]:
    client = paramiko.SSHClient()
    # A pinned key always wins: known_hosts is not consulted at all, so a stale or planted
    # line there can neither let a wrong key in nor lock the right one out.
    if (
        opts.pinned_key is None
        and opts.known_hosts_file is not None
        and opts.known_hosts_file.exists()
    ):
        # Loaded as "system" keys so paramiko never rewrites the operator's file.
        client.load_system_host_keys(str(opts.known_hosts_file))
    if opts.pinned_key:
        pinned = parse_host_key(opts.pinned_key)
        client.get_host_keys().add(opts.host_entry, pinned.get_name(), pinned)
    policy = _RefuseUnknown(opts)
    client.set_missing_host_key_policy(policy)
    return client, policy


def key_file_warning(opts: SshDevice) -> str | None:
    """A warning when the private key file can be read by other users (not fatal)."""
    if opts.key_file is None:
        return None
    try:
        mode = opts.key_file.stat().st_mode
    except OSError:
        return None
    if mode & 0o077 == 0:
        return None
    return (
        f"the private key file {opts.key_file} can be read by other users (mode {mode & 0o777:o}); "
        f"anyone with an account here can log into {opts.address}: chmod 600 {opts.key_file}"
    )


def _load_key(opts: SshDevice) -> paramiko.PKey | None:
    if opts.key_file is None:
        return None
    try:
        return paramiko.PKey.from_path(opts.key_file)
    except FileNotFoundError as exc:
        raise AuthError(f"key file {opts.key_file} for {opts.address} does not exist") from exc
    except paramiko.PasswordRequiredException as exc:
        raise AuthError(
            f"key file {opts.key_file} is protected by a passphrase; load it into ssh-agent and "
            "leave key unset, or use a key without a passphrase"
        ) from exc
    except (OSError, ValueError, paramiko.SSHException) as exc:
        raise AuthError(f"cannot read key file {opts.key_file}: {exc}") from exc


def _retryable(exc: BaseException) -> bool:
    """Network trouble worth retrying; key and login problems are not."""
    if isinstance(exc, OSError | EOFError):
        return True
    text = str(exc)
    return isinstance(exc, paramiko.SSHException) and (
        "banner" in text or "Error reading SSH protocol" in text or "closed" in text
    )


def connect_once(
    opts: SshDevice, tcp_timeout: float | None = None
) -> tuple[paramiko.SSHClient, str | None]:
    """Connect and log in once; returns the client and a note if a key was trusted on first use.

    ``tcp_timeout`` bounds the TCP connect alone (default ``connect_timeout``); the SSH
    handshake and login keep ``connect_timeout``, since a machine that accepted the
    connection is up, only perhaps busy.
    """
    try:
        client, policy = _client(opts)
    except ValueError as exc:
        raise HostKeyError(str(exc)) from exc
    pkey = _load_key(opts)
    try:
        client.connect(
            opts.host,
            port=opts.port,
            username=opts.user,
            pkey=pkey,
            allow_agent=pkey is None,
            look_for_keys=False,
            timeout=opts.connect_timeout if tcp_timeout is None else tcp_timeout,
            banner_timeout=opts.connect_timeout,
            auth_timeout=opts.connect_timeout,
            transport_factory=_stamping_transport,
        )
    except StartError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostKeyError(
            f"host key of device {opts.endpoint} does not match the pinned one: it offered "
            f"{exc.key.get_name()} {fingerprint(exc.key)}, "
            f"expected {fingerprint(exc.expected_key)}. "
            "Either the participant's machine was reinstalled or someone is in the way; "
            "confirm the new fingerprint with the participant, then pin it: "
            f'host_key = "{key_line(exc.key)}" (and remove the old {opts.host_entry} line '
            "from known_hosts)"
        ) from exc
    except paramiko.AuthenticationException as exc:
        client.close()
        how = f"key {opts.key_file}" if opts.key_file else "the keys in the SSH agent"
        raise AuthError(
            f"authentication failed for {opts.address} with {how}: {exc}; add the public key "
            f"to ~{opts.user}/.ssh/authorized_keys on the participant's machine"
        ) from exc
    except Exception as exc:
        client.close()
        if _retryable(exc):
            raise UnreachableError(f"cannot reach {opts.endpoint}: {exc}") from exc
        raise StartError(f"ssh to {opts.address} failed: {exc}") from exc
    transport = client.get_transport()
    if transport is not None:
        watch_link(transport, opts.link_timeout)
    return client, policy.trusted


def watch_link(transport: paramiko.Transport, timeout: float) -> None:
    """Make a dead link show within ``timeout`` seconds, not at an item's hang limit.

    A keep-alive goes out every second the connection is quiet, and the kernel gives up
    on a connection whose sent bytes stay unacknowledged for ``timeout``
    (TCP_USER_TIMEOUT, with TCP keep-alive probes while nothing else is sent): the
    transport then ends and the runner sees the link lost.
    """
    transport.set_keepalive(1)
    sock = transport.sock
    if not isinstance(sock, socket.socket):
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(timeout * 1000))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, int(timeout)))


def host_answers(opts: SshDevice, timeout: float) -> str | None:
    """None when the machine's kernel answers a new TCP connection to its sshd's port at
    once (within ``timeout``, less than the kernel's first retransmission), accepting or
    refusing it: the machine and the network are up. Otherwise why not (no answer, no
    route). The venue's independent evidence of whose failure a dead session is
    (docs/security.md, "Failures have an owner")."""
    try:
        with socket.create_connection((opts.host, opts.port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return None  # the machine answered: nothing listens there now (its own doing)
    except OSError as exc:
        return f"a new connection to {opts.endpoint} failed: {exc.strerror or exc}"


def connect(
    opts: SshDevice, retry_seconds: float, tcp_timeout: float | None = None
) -> tuple[paramiko.SSHClient, str | None]:
    """Connect, retrying network failures with exponential backoff for about retry_seconds.

    With ``retry_seconds`` 0 it tries once. ``tcp_timeout`` as in :func:`connect_once`.
    """
    hint = (
        f"is the machine on and sshd running? try: ssh -p {opts.port} {opts.user}@{opts.host} true"
    )
    return retry_unreachable(lambda: connect_once(opts, tcp_timeout), retry_seconds, hint)


def read_banner(opts: SshDevice) -> tuple[str, float]:
    """Open a TCP connection and read the server's version line; returns it and the seconds."""
    t0 = time.monotonic()
    with socket.create_connection((opts.host, opts.port), timeout=opts.connect_timeout) as sock:
        sock.settimeout(opts.connect_timeout)
        data = b""
        while b"\n" not in data and len(data) < 1024:
            chunk = sock.recv(256)
            if not chunk:
                break
            data += chunk
    return data.decode("ascii", errors="replace").strip(), time.monotonic() - t0


@contextlib.contextmanager
def link_errors() -> Iterator[None]:
    """paramiko's own errors raised as LinkError (an OSError): the family the runner catches."""
    try:
        yield
    except paramiko.SSHException as exc:
        raise LinkError(str(exc) or type(exc).__name__) from exc


class SshChannel:
    """An exec channel as a ``Channel`` (runners/remote_parts.py)."""

    def __init__(self, chan: paramiko.Channel) -> None:
        self.chan = chan

    @property
    def closed(self) -> bool:
        """Whether the channel was closed (by either side)."""
        return bool(self.chan.closed)

    def sendall(self, data: bytes) -> None:
        """Write all of ``data`` to the command's stdin."""
        with link_errors():
            self.chan.sendall(data)

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes of stdout; b"" at its end."""
        with link_errors():
            return bytes(self.chan.recv(size))

    def recv_stderr(self, size: int) -> bytes:
        """Up to ``size`` bytes of stderr; b"" at its end."""
        with link_errors():
            return bytes(self.chan.recv_stderr(size))

    def shutdown_write(self) -> None:
        """End the command's stdin."""
        with link_errors():
            self.chan.shutdown_write()

    def exit_status(self, timeout: float) -> int | None:
        """The exit status sshd reported, waiting up to ``timeout``; None if none came."""
        self.chan.status_event.wait(timeout)
        status = int(self.chan.exit_status)
        return None if status == -1 else status

    def close(self) -> None:
        """Close the channel."""
        with contextlib.suppress(Exception):
            self.chan.close()


def exec_channel(transport: paramiko.Transport, command: str, timeout: float) -> SshChannel:
    """Run ``command`` on a new exec channel of ``transport`` (each wait bounded by
    ``timeout``)."""
    with link_errors():
        chan = transport.open_session(timeout=timeout)
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
        except BaseException:
            chan.close()
            raise
    return SshChannel(chan)


def ssh_opener(transport: paramiko.Transport) -> Opener:
    """Start commands on exec channels of ``transport`` (:func:`exec_channel`)."""
    return functools.partial(exec_channel, transport)


class RemoteMeter(ShellMeter):
    """The resident resource sampler (runners/remote_meter.py) on an exec channel of
    ``transport``."""

    def __init__(self, transport: paramiko.Transport, **options: Any) -> None:
        super().__init__(ssh_opener(transport), **options)
