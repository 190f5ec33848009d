"""The SSH link to a participant's machine: host key checks, connecting, remote commands.

Kept apart from the runner so that ``onsite check`` can probe a machine with
the same checks without starting a system. The device's settings (``SshDevice``) are in
runners/ssh_device.py, which reading a site file imports without paramiko.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import posixpath
import shlex
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import paramiko

from .base import DeviceUnreachable, StartError
from .ssh_device import SshDevice

logger = logging.getLogger(__name__)

# Delays between connection attempts; their sum bounds how long start() keeps trying.
_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0)


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
    started = time.monotonic()
    tries = 0
    while True:
        tries += 1
        try:
            return connect_once(opts, tcp_timeout)
        except UnreachableError as exc:
            delay = _BACKOFF_SECONDS[min(tries - 1, len(_BACKOFF_SECONDS) - 1)]
            # Attempts themselves can take up to connect_timeout: count them, not just sleeps.
            spent = time.monotonic() - started
            if spent + delay > retry_seconds:
                counted = f" ({tries} tries over {spent:.1f} s)" if tries > 1 else ""
                raise UnreachableError(
                    f"{exc}{counted}; is the machine on and sshd "
                    f"running? try: ssh -p {opts.port} {opts.user}@{opts.host} true"
                ) from exc
            time.sleep(delay)


def run_remote(
    transport: paramiko.Transport, command: str, timeout: float = 10.0
) -> tuple[int, bytes, bytes]:
    """Run a short command on its own channel: exit status (-1 if none), stdout, stderr.

    Only for commands with small output: stdout is read to the end before stderr.
    """
    chan = transport.open_session(timeout=timeout)
    try:
        chan.settimeout(timeout)
        chan.exec_command(command)
        chan.shutdown_write()
        out = bytearray()
        while chunk := chan.recv(1 << 16):
            out += chunk
        err = bytearray()
        while chunk := chan.recv_stderr(1 << 16):
            err += chunk
        chan.status_event.wait(timeout)
        return chan.exit_status, bytes(out), bytes(err)
    finally:
        chan.close()


def exec_put(
    transport: paramiko.Transport, local: Path, remote: str, timeout: float = 10.0
) -> None:
    """Copy a file over an exec channel (``cat > remote``), for servers without SFTP."""
    chan = transport.open_session(timeout=timeout)
    try:
        chan.settimeout(timeout)
        chan.exec_command("cat > " + shlex.quote(remote))
        # The local file is only ever read: the remote copy is what the system gets.
        with open(local, "rb") as fh:
            while chunk := fh.read(1 << 15):
                chan.sendall(chunk)
        chan.shutdown_write()
        err = bytearray()
        while chunk := chan.recv_stderr(1 << 16):
            err += chunk
        chan.status_event.wait(timeout)
        if chan.exit_status != 0:
            text = err.decode(errors="replace").strip() or f"exit status {chan.exit_status}"
            raise OSError(f"cannot write {remote}: {text}")
    finally:
        chan.close()


def sftp_makedirs(sftp: paramiko.SFTPClient, path: str) -> str:
    """mkdir -p over SFTP; returns the absolute path."""
    parts = path.split("/")
    current = "/" if path.startswith("/") else ""
    for part in parts:
        if not part:
            continue
        current = posixpath.join(current, part) if current else part
        try:
            sftp.stat(current)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                sftp.mkdir(current)
    return sftp.normalize(path)


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


# The resident resource sampler on the participant's machine, one per connection, started once
# (a channel per sample would cost a fork in sshd and the account's shell each time). It keeps
# the list of the system's processes ("pid:starttime", so that a reused pid is not taken for
# one of them) and answers two requests:
#   s SID  read the stat and status files of the processes on the list: shell builtins only,
#          nothing forked, a few files read however many processes the machine runs;
#   r SID  find the processes again first (also done for a new SID): the leader's descendants
#          through /proc/PID/task/*/children where the kernel has them, else one pass of
#          cat+awk over /proc/*/stat for the session's processes and their descendants.
# The controller decides when "r" is worth its cost (RemoteMeter below): scanning /proc is
# what grew with every process on a shared machine, so it is never done per item.
# Each answer ends with the sampler's own CPU ticks ("self"), so that its cost is known.
_METER_SCRIPT = r"""
P=${1:-/proc}
t=$(getconf CLK_TCK 2>/dev/null); case $t in ''|*[!0-9]*) t=100 ;; esac
w=0; [ "$2" != scan ] && [ -r "$P/$$/task/$$/children" ] && w=1
echo "onsite-meter $t $w $$"
onsite_walk() {
  q=$1; m=; n=0
  while :; do
    set -- $q
    [ "$#" -gt 0 ] && [ "$n" -lt 4096 ] || break
    p=$1; shift; q=$*; n=$((n + 1))
    case $p in *[!0-9]*) continue ;; esac
    { read -r l <"$P/$p/stat"; } 2>/dev/null || continue
    set -- ${l##*) }
    m="$m $p:${20}"
    for c in "$P/$p"/task/*/children; do
      k=; { read -r k <"$c"; } 2>/dev/null; q="$q $k"
    done
  done
}
onsite_scan() {
  m=$(cat "$P"/[0-9]*/stat 2>/dev/null | awk -v s="$1" '
    { l = $0; sub(/^[^(]*\(.*\) /, "", l); split(l, f, " ")
      pp[$1] = f[2]; st[$1] = f[20]; if (f[4] == s) hit[$1] = 1 }
    END { more = 1
      while (more) { more = 0
        for (p in pp) if (!(p in hit) && (pp[p] in hit)) { hit[p] = 1; more = 1 } }
      for (p in hit) printf " %s:%s", p, st[p] }' 2>/dev/null)
}
m=; ms=
while read -r op sid; do
  case $op in ping) echo onsite-end; continue ;; s|r) ;; *) echo onsite-end; continue ;; esac
  case $sid in ''|*[!0-9]*) echo onsite-end; continue ;; esac
  [ "$sid" = "$ms" ] || { ms=$sid; op=r; }
  if [ "$op" = r ]; then
    if [ "$w" = 1 ]; then onsite_walk "$sid"; else onsite_scan "$sid"; fi
    [ -n "$m" ] || onsite_walk "$sid"
  fi
  for e in $m; do
    p=${e%%:*}
    { read -r l <"$P/$p/stat"; } 2>/dev/null || continue
    set -- ${l##*) }
    [ "${20}" = "${e#*:}" ] || continue
    h=0
    { while read -r k v u; do
        if [ "$k" = VmHWM: ]; then h=$v; break; fi
      done <"$P/$p/status"; } 2>/dev/null
    echo "$p ${12} ${13} ${14} ${15} $h"
  done
  { read -r l <"$P/$$/stat"; } 2>/dev/null &&
    { set -- ${l##*) }; echo "self ${12} ${13} ${14} ${15}"; }
  echo onsite-end
done
"""
_METER_BANNER = b"onsite-meter "
_METER_END = b"onsite-end\n"
# Lines the account's shell may print before the sampler's banner (its startup files).
_METER_NOISE_LINES = 200


def meter_command(proc_root: str = "/proc", children: bool = True) -> str:
    """The exec request that starts the resident sampler.

    ``proc_root`` is /proc but in tests; ``children=False`` makes it scan /proc even where
    the kernel lists children (to test that way on any kernel).
    """
    how = "walk" if children else "scan"
    return f"sh -c {shlex.quote(_METER_SCRIPT)} onsite-meter {shlex.quote(proc_root)} {how}"


class RemoteMeter:
    """CPU seconds and summed VmHWM of a remote system's processes, read from /proc over the link.

    Mirrors runners.proctree.TreeMeter on the far side: the processes are the session
    leader's descendants (found through ``/proc/PID/task/*/children``), or on kernels
    without those files the session's processes and their descendants (one pass over
    ``/proc/*/stat``). Finding them again costs what the machine's process count costs,
    so it is done at most every ``scan_seconds`` and only while the sampler's own CPU
    time stays within ``budget`` of one core since it started; in between, a sample reads
    the files of the processes already known. None when /proc cannot be read.
    """

    def __init__(
        self,
        transport: paramiko.Transport,
        timeout: float = 5.0,
        scan_seconds: float = 1.0,
        budget: float = 0.005,
        proc_root: str = "/proc",
        children: bool = True,
    ) -> None:
        self._transport = transport
        self._timeout = timeout
        self._scan_seconds = scan_seconds
        self._budget = budget
        self._proc_root = proc_root
        self._children = children
        self._chan: paramiko.Channel | None = None
        self._buf = bytearray()
        self._ticks = 100
        self._sid: int | None = None
        self._opened_at = 0.0
        self._scanned_at = float("-inf")
        self._own_ticks = 0
        self._start_ticks: int | None = None  # as of the first answer: start-up, first look
        self._used_seconds = 0.0  # of samplers this meter opened and closed before
        self._start_seconds = 0.0
        self._samples = 0
        self._scans = 0
        self._walks: bool | None = None
        self._remote_pid: int | None = None

    @property
    def own_cpu_seconds(self) -> float:
        """CPU seconds the sampler (and what it forked) used on the machine, as last reported."""
        return self._used_seconds + self._own_ticks / self._ticks

    @property
    def start_cpu_seconds(self) -> float:
        """Of :attr:`own_cpu_seconds`, what starting the sampler and its first answer cost
        (the account's shell and its start-up files included)."""
        ticks = self._start_ticks or 0
        return self._start_seconds + ticks / self._ticks

    @property
    def samples(self) -> int:
        """Samples answered so far (scans included)."""
        return self._samples

    @property
    def scans(self) -> int:
        """How many times the system's processes were looked for again."""
        return self._scans

    @property
    def walks_children(self) -> bool | None:
        """True when the machine's kernel lists children (no /proc scan), None before it said."""
        return self._walks

    @property
    def remote_pid(self) -> int | None:
        """The sampler shell's pid on the machine while it runs."""
        return self._remote_pid if self._chan is not None else None

    def summary(self) -> str | None:
        """One line for the system's log on what sampling cost the machine (None if unused)."""
        if not self._samples:
            return None
        how = "children lists" if self._walks else "scans of /proc"
        return (
            f"resource sampler on the machine: {self.own_cpu_seconds:.3f} s of CPU for "
            f"{self._samples} samples ({self.start_cpu_seconds:.3f} s of it to start), "
            f"{self._scans} of them {how}"
        )

    def _open(self) -> paramiko.Channel:
        chan = self._transport.open_session(timeout=self._timeout)
        chan.settimeout(self._timeout)
        chan.exec_command(meter_command(self._proc_root, self._children))
        self._buf.clear()
        for _ in range(_METER_NOISE_LINES):
            line = self._read_until(chan, b"\n")
            if line.startswith(_METER_BANNER):
                break
        else:
            raise ValueError("the remote sampler did not start")
        fields = line[len(_METER_BANNER) :].split()
        self._ticks = int(fields[0]) or 100
        self._walks = fields[1] == b"1"
        self._remote_pid = int(fields[2])
        self._opened_at = time.monotonic()
        self._scanned_at = float("-inf")
        self._own_ticks = 0
        self._start_ticks = None
        self._sid = None
        return chan

    def _read_until(self, chan: paramiko.Channel, end: bytes) -> bytes:
        while True:
            at = self._buf.find(end)
            if at >= 0:
                data = bytes(self._buf[:at])
                del self._buf[: at + len(end)]
                return data
            chunk = chan.recv(1 << 16)
            if not chunk:
                raise EOFError("the remote meter shell exited")
            self._buf += chunk

    def _scan_due(self, sid: int, now: float) -> bool:
        if sid != self._sid:
            return True
        if now - self._scanned_at < self._scan_seconds:
            return False
        return self._own_ticks / self._ticks <= self._budget * (now - self._opened_at)

    def sample(self, sid: int) -> tuple[float | None, int | None]:
        """Total CPU seconds (including reaped children) and summed peak RSS in bytes."""
        try:
            if self._chan is not None and self._chan.closed:
                self.close()
            if self._chan is None:
                self._chan = self._open()
            now = time.monotonic()
            scan = self._scan_due(sid, now)
            self._chan.sendall(f"{'r' if scan else 's'} {sid}\n".encode())
            out = self._read_until(self._chan, _METER_END)
        except (OSError, EOFError, ValueError, IndexError, paramiko.SSHException):
            self.close()
            return None, None
        self._samples += 1
        if scan:
            self._scans += 1
            self._scanned_at = now
            self._sid = sid
        ticks = 0
        hwm_kb = 0
        seen = False
        for row in out.split(b"\n"):
            fields = row.split()
            try:
                if len(fields) == 5 and fields[0] == b"self":
                    self._own_ticks = sum(int(f) for f in fields[1:5])
                    if self._start_ticks is None:
                        self._start_ticks = self._own_ticks
                    continue
                if len(fields) != 6:
                    continue
                ticks += sum(int(f) for f in fields[1:5])
                hwm_kb += int(fields[5])
            except ValueError:
                continue
            seen = True
        if not seen:
            return None, None
        return ticks / self._ticks, hwm_kb * 1024 or None

    def ping(self) -> float | None:
        """Seconds for one line to the resident shell and its answer back (None if it failed)."""
        try:
            if self._chan is None or self._chan.closed:
                self._chan = self._open()
            t0 = time.monotonic()
            self._chan.sendall(b"ping\n")
            self._read_until(self._chan, _METER_END)
            return time.monotonic() - t0
        except (OSError, EOFError, ValueError, IndexError, paramiko.SSHException):
            self.close()
            return None

    def close(self) -> None:
        """Close the meter's channel; the next sample opens a new one."""
        if self._chan is not None:
            self._used_seconds += self._own_ticks / self._ticks
            self._start_seconds += (self._start_ticks or 0) / self._ticks
            self._own_ticks = 0
            self._start_ticks = None
            with contextlib.suppress(Exception):
                self._chan.close()
        self._chan = None
