"""The resident resource sampler on a remote device: one POSIX sh per connection, read over
any channel (runners/remote_parts.py ``Channel``), the same for every transport with a shell.

A channel per sample would cost a fork in the device's login machinery and the account's
shell each time, so the sampler is started once and answers requests line by line.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
import time

from .remote_parts import LINK_ERRORS, Channel, Opener

# The resident resource sampler, one per connection, started once. It keeps
# the list of the system's processes ("pid:starttime", so that a reused pid is not taken for
# one of them) and answers two requests:
#   s SID  read the stat and status files of the processes on the list: shell builtins only,
#          nothing forked, a few files read however many processes the machine runs;
#   r SID  find the processes again first (also done for a new SID): the leader's descendants
#          through /proc/PID/task/*/children where the kernel has them, else one pass of
#          cat+awk over /proc/*/stat for the session's processes and their descendants.
# The controller decides when "r" is worth its cost (ShellMeter below): scanning /proc is
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
# A request that failed: the link, the sampler's end, or an answer that makes no sense.
_FAILURES: tuple[type[BaseException], ...] = (*LINK_ERRORS, ValueError, IndexError)
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


class ShellMeter:
    """CPU seconds and summed VmHWM of a remote system's processes, read from /proc over the link.

    Mirrors runners.proctree.TreeMeter on the far side: the processes are the session
    leader's descendants (found through ``/proc/PID/task/*/children``), or on kernels
    without those files the session's processes and their descendants (one pass over
    ``/proc/*/stat``). Finding them again costs what the machine's process count costs,
    so it is done at most every ``scan_seconds`` and only while the sampler's own CPU
    time stays within ``budget`` of one core since it started; in between, a sample reads
    the files of the processes already known. None when /proc cannot be read.

    The sampler is started through ``open`` (a transport's way to start a command); every
    request waits at most ``timeout``. Requests from several threads take turns.
    """

    def __init__(
        self,
        open: Opener,
        timeout: float = 5.0,
        scan_seconds: float = 1.0,
        budget: float = 0.005,
        proc_root: str = "/proc",
        children: bool = True,
    ) -> None:
        self._opener = open
        self._timeout = timeout
        self._lock = threading.Lock()
        self._scan_seconds = scan_seconds
        self._budget = budget
        self._proc_root = proc_root
        self._children = children
        self._chan: Channel | None = None
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

    def _open(self) -> Channel:
        chan = self._opener(meter_command(self._proc_root, self._children), self._timeout)
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

    def _read_until(self, chan: Channel, end: bytes) -> bytes:
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
        with self._lock:
            try:
                if self._chan is not None and self._chan.closed:
                    self._close()
                if self._chan is None:
                    self._chan = self._open()
                now = time.monotonic()
                scan = self._scan_due(sid, now)
                self._chan.sendall(f"{'r' if scan else 's'} {sid}\n".encode())
                out = self._read_until(self._chan, _METER_END)
            except _FAILURES:
                self._close()
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
        with self._lock:
            try:
                if self._chan is None or self._chan.closed:
                    self._chan = self._open()
                t0 = time.monotonic()
                self._chan.sendall(b"ping\n")
                self._read_until(self._chan, _METER_END)
                return time.monotonic() - t0
            except _FAILURES:
                self._close()
                return None

    def close(self) -> None:
        """Close the meter's channel; the next sample opens a new one."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._chan is not None:
            self._used_seconds += self._own_ticks / self._ticks
            self._start_seconds += (self._start_ticks or 0) / self._ticks
            self._own_ticks = 0
            self._start_ticks = None
            with contextlib.suppress(Exception):
                self._chan.close()
        self._chan = None
