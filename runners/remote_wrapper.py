"""The POSIX sh that runs a system on a remote device, and the scripts that clean up: process
control by token, the same for every transport that reaches a shell (SSH, a command).

No Python is needed on the remote side. Each start has a random token. The wrapper
exports it as ``ONSITE_SESSION`` and carries it in its own command line, so that every
process of that start can be found again from ``/proc`` even after it left the system's
session (a daemon that called ``setsid``): a process is "of the start" when its
environment or command line holds the token, and a session is "of the start" when its
leader is. The system runs under ``setsid`` with a clean environment (``env -i``) and its
stdin fed through a FIFO by a relay, so that the wrapper sees its stdin close (the
relay reaches end of file) while the system is still running: it then gives the system
``grace`` seconds and kills everything of the start.

Per system the remote workdir holds ``.onsite/<slug>/``: ``<token>.sid`` (the system's
session and process group id), the two FIFOs, and ``<token>/`` with the inputs staged
for the current item and the files the system writes for it (tts audio, fetched back
after the answer), which the wrapper removes when the system ends. A later
controller (after a crash, or a reconnect) reads the tokens left there, kills what still
runs under them, and removes the directory before sending anything.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence

# Whatever the participant's login PATH, the system starts from this one (plus the site's env).
REMOTE_PATH = "/usr/local/bin:/usr/bin:/bin"
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# onsite_kill TOKEN TRUSTED_SIDS: stop, then kill, every process of the start, round after
# round until a scan finds none (a process forked during a round is found in the next).
# Never the scanning shell itself or its parent (a login shell that did not exec us).
_KILL_FUNCTIONS = r"""
onsite_scan() {
  onsite_s=" $2 "; onsite_hit=
  # One grep over every process; the token comes on its stdin, never in its command line.
  # -z: environ and cmdline are NUL-separated, and some greps stop a line at a NUL.
  onsite_g=$(printf '%s\n' "$1" |
    ONSITE_SESSION= grep -zlsF -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline)
  for onsite_f in $onsite_g; do
    onsite_p=${onsite_f#/proc/}; onsite_p=${onsite_p%%/*}
    case " $$ $PPID $onsite_hit " in *" $onsite_p "*) continue ;; esac
    # The processes of the pipeline match too (forks of a marked shell), and are gone now.
    [ -d "/proc/$onsite_p" ] || continue
    onsite_hit="$onsite_hit $onsite_p"
    onsite_s="$onsite_s$onsite_p "
  done
  case $onsite_s in *[0-9]*) ;; *) return 0 ;; esac
  # The processes in those sessions: one cat and one awk over every stat file (a shell's
  # read builtin takes a file a byte at a time: four times the CPU on a busy machine).
  # A zombie is dead already; it stays listed until its parent reaps it.
  onsite_g=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v s="$onsite_s" '
    { l = $0; sub(/^[^(]*\(.*\) /, "", l)
      if (split(l, f, " ") >= 4 && f[1] != "Z" && index(s, " " f[4] " ")) print $1 }')
  for onsite_p in $onsite_g; do
    case " $$ $PPID $onsite_hit " in *" $onsite_p "*) continue ;; esac
    # Without setsid the wrapper's own session is listed: its pipeline is gone now.
    [ -d "/proc/$onsite_p" ] || continue
    onsite_hit="$onsite_hit $onsite_p"
  done
}
onsite_kill() {
  onsite_n=0
  while [ "$onsite_n" -lt 100 ]; do
    onsite_scan "$1" "$2"
    [ -n "$onsite_hit" ] || return 0
    kill -STOP $onsite_hit 2>/dev/null
    kill -KILL $onsite_hit 2>/dev/null
    onsite_n=$((onsite_n + 1))
  done
  return 1
}
"""


def check_env_names(env: Mapping[str, str]) -> None:
    """Raise ValueError for a name the remote shell cannot export."""
    for name in env:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(
                f"env name {name!r} is not a valid shell variable name; use letters, digits "
                "and _ (not starting with a digit)"
            )


def system_slug(task: str, system: str, owner: str) -> str:
    """The name of one system's directory under ``<workdir>/.onsite``.

    ``owner`` names the controller's run (the system's local log path): a resumed run
    finds and cleans what its earlier sessions left, while ``onsite check`` (its own
    scratch run) never touches the systems of a run in progress on the same machine.
    """
    digest = hashlib.sha256(owner.encode()).hexdigest()[:10]
    name = _SLUG_UNSAFE.sub("_", f"{task}.{system}").strip(".") or "system"
    return f"{name}.{digest}"


def system_dir(workdir: str, slug: str) -> str:
    """The remote directory of one system's state files and staged inputs."""
    return posixpath.join(workdir, ".onsite", slug)


def _split(token: str) -> str:
    # Written in two quoted halves, so that a cleanup script's own command line never holds
    # the token and the scan does not find the scanning shell.
    half = len(token) // 2
    return f"'{token[:half]}''{token[half:]}'"


def wrapper_command(
    workdir: str,
    sysdir: str,
    token: str,
    env: Mapping[str, str],
    argv: Sequence[str],
    grace_seconds: float,
) -> str:
    """The exec request that runs ``argv`` in ``workdir`` under the wrapper.

    The first line the system's stdout carries is ``onsite-pid <sid>``.
    """
    check_env_names(env)
    q = shlex.quote
    assigns = " ".join(q(f"{k}={v}") for k, v in env.items())
    command = " ".join(q(a) for a in argv)
    script = f"""umask 077
d={q(sysdir)}; t={q(token)}; g={grace_seconds:g}
ONSITE_SESSION=$t; export ONSITE_SESSION
cd {q(workdir)} || {{ echo "onsite: cannot enter the workdir {workdir}" >&2; exit 126; }}
mkdir -p "$d" && rm -f "$d/$t.in" "$d/$t.ctl" && mkfifo "$d/$t.in" "$d/$t.ctl" || {{
  echo "onsite: cannot create $d (is the workdir writable?)" >&2; exit 126; }}
{_KILL_FUNCTIONS}
exec 3>&1 4>&2 5<&0 6<>"$d/$t.ctl" 1>/dev/null 0</dev/null
trap 'echo hup >&6' HUP TERM INT
if command -v setsid >/dev/null 2>&1; then s=setsid; else s=; fi
l='echo "$$" >"$1" && echo "onsite-pid $$" && shift && exec env -i "$@"'
set -- PATH={q(REMOTE_PATH)} HOME="$HOME" LANG="${{LANG:-C.UTF-8}}" PYTHONUNBUFFERED=1
set -- "$@" ONSITE_SESSION="$t" {assigns}
set -- "$@" {command}
( $s sh -c "$l" onsite-system "$d/$t.sid" "$@" <"$d/$t.in" >&3 2>&4 3>&- 4>&- 5<&- 6>&-
  echo "exit $?" >&6 ) &
( cat <&5 >"$d/$t.in" 2>/dev/null; echo eof >&6 ) 3>&- 4>&- &
exec 3>&- 4>&- 5<&-
rc=129; timer=
while IFS= read -r m <&6; do
  case $m in
    exit*) rc=${{m#exit }}; break ;;
    timeout) break ;;
    *) if [ -z "$timer" ]; then timer=1; ( sleep "$g"; echo timeout >&6 ) >/dev/null 2>&1 & fi ;;
  esac
done
sid=; {{ read -r sid <"$d/$t.sid"; }} 2>/dev/null
onsite_kill "$t" "$sid"
rm -rf "$d/$t" "$d/$t.in" "$d/$t.ctl" "$d/$t.sid"
exit "$rc"
"""
    # Run under sh whatever the account's login shell is.
    return f"sh -c {q(script)} onsite-wrapper"


def _kill_start_lines(sysdir: str, token: str, sid: int | None) -> str:
    """Script lines (after _KILL_FUNCTIONS) that kill one start, by its token and the
    session the controller trusts, and remove its state files."""
    q = shlex.quote
    return f"""t={_split(token)}
onsite_kill "$t" {q(str(sid) if sid else "")}
rm -rf {q(sysdir)}/"$t" {q(sysdir)}/"$t".*
"""


def kill_command(sysdir: str, token: str, sid: int | None) -> str:
    """Kill every process of one start and remove its state files."""
    script = f"""{_KILL_FUNCTIONS}
{_kill_start_lines(sysdir, token, sid)}exit 0
"""
    return f"sh -c {shlex.quote(script)}"


def stage_dir(sysdir: str, token: str) -> str:
    """The remote directory of the inputs staged for one start."""
    return posixpath.join(sysdir, token)


def prepare_command(workdir: str, slug: str, token: str) -> str:
    """Kill what earlier starts of this system left running, empty its directory, recreate it
    with the stage directory of the start to come.

    Prints ``onsite-workdir <absolute path>``; exits 3 when the workdir cannot be written.
    """
    q = shlex.quote
    script = f"""{_KILL_FUNCTIONS}
w={q(workdir)}; t={q(token)}
mkdir -p "$w" 2>/dev/null; cd "$w" 2>/dev/null || {{
  echo "the remote workdir $w cannot be created or entered" >&2; exit 3; }}
w=$(pwd -P); d="$w/.onsite/"{q(slug)}
for f in "$d"/*.sid "$d"/*.ctl "$d"/*.in; do
  [ -e "$f" ] || continue
  t0=${{f##*/}}; t0=${{t0%.*}}
  onsite_kill "$t0" ""
done
rm -rf "$d"
{{ mkdir -p "$d/$t" 2>/dev/null || mkdir -p "$d/$t" 2>/dev/null; }} && f="$d/.write-test" &&
  : >"$f" 2>/dev/null && rm -f "$f" || {{
  echo "the remote workdir $w is not writable" >&2; exit 3; }}
echo "onsite-workdir $w"
"""
    return f"sh -c {q(script)}"


def cleanup_command(sysdir: str, token: str | None = None, sid: int | None = None) -> str:
    """Kill everything of this system's starts and remove its directory (at stop).

    With ``token`` (and the ``sid`` the controller trusts), the current start is killed
    first, as ``kill_command`` kills it: one channel at stop instead of two.
    """
    q = shlex.quote
    current = _kill_start_lines(sysdir, token, sid) if token is not None else ""
    script = f"""{_KILL_FUNCTIONS}
d={q(sysdir)}
{current}for f in "$d"/*.sid "$d"/*.ctl "$d"/*.in; do
  [ -e "$f" ] || continue
  t=${{f##*/}}; t=${{t%.*}}
  onsite_kill "$t" ""
done
rm -rf "$d"
rmdir "${{d%/*}}" 2>/dev/null
exit 0
"""
    return f"sh -c {q(script)}"
