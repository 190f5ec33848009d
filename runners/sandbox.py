"""The bubblewrap sandbox a local system runs in (docs/security.md).

Inside, the system sees the operating system read-only, its own workdir read-only at
:data:`WORK_DIR`, its current inputs read-only at :data:`IN_DIR`, a private writable HOME,
TMPDIR, /onsite/out, /tmp and /dev/shm in RAM file systems of bounded size (never the
run directory's disk), a fresh /proc of its own PID namespace, and nothing of the run:
the run directory, the site file, the test sets and other systems' files are either never
mounted or hidden under an empty tmpfs (``Sandbox.hidden``). No host path that names the
site, the run or the system is visible, /proc/self/mountinfo included.

The namespace's first process is a small supervisor of ours (:data:`SUPERVISOR`), which
starts the system and holds the namespace: when it dies, the kernel kills every process
of the namespace, daemons included. It dies with bubblewrap, and bubblewrap with the
controller, whatever user the controller runs as (a change of user clears a process's
parent-death signal, so the system itself could not be the one to hold it). When the
controller runs as root the system runs as a user of its own (``Sandbox.uid``) or as
``Sandbox.user``; otherwise bubblewrap makes an unprivileged user namespace.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import Sandbox, StartError

# Where a system finds its things inside the sandbox; neutral names that say nothing of the run.
ONSITE_DIR = Path("/onsite")
IN_DIR = ONSITE_DIR / "in"
OUT_DIR = ONSITE_DIR / "out"
HOME_DIR = ONSITE_DIR / "home"
TMP_DIR = ONSITE_DIR / "tmp"
TOOLS_DIR = ONSITE_DIR / "tools"
# The system's workdir, read-only: never at its host path, which names the site and the
# system. A root controller's sandbox shows it as an overlay of a bind made at
# _WORK_BIND and then detached, so that not even /proc/self/mountinfo's root field, the
# bound directory's path within its file system, names it (_OVERLAY_SETUP).
WORK_DIR = ONSITE_DIR / "work"
# Program files the command names outside the workdir, as copies bound from the
# system's private stage (their host paths would name the site and the system).
PROGRAM_DIR = ONSITE_DIR / "program"
_WORK_BIND = ONSITE_DIR / ".w"
_WORK_TOP = ONSITE_DIR / ".top"
# Users of their own for sealed systems of a root controller: numbers no account uses, a
# block of them per run directory (docs/security.md).
AUTO_UID_BASE = 1_600_000_000
_AUTO_UID_BLOCKS = 4096
_AUTO_UID_BLOCK = 4096

# Run first by a root controller's supervisor, which holds CAP_SYS_ADMIN until the
# system below it drops every capability. Arguments: how many hidden paths, each
# relative to the workdir, then the supervisor's own. The overlay's upper layer is an
# empty directory of the workdir's owner and mode (an overlay needs two layers without a
# writable one); a bind's submounts (the tmpfs hiding paths at _WORK_BIND) do not show
# through an overlay, so the hidden paths are hidden again in it. Where the kernel
# makes no overlay, the bind itself is moved to WORK_DIR, hidden paths and all: the
# system sees the same, and mountinfo names the workdir's path.
_OVERLAY_SETUP = (
    "{ mkdir /onsite/.top && mount -t tmpfs -o size=4k onsite /onsite/.top"
    " && chown --reference=/onsite/.w /onsite/.top"
    " && chmod --reference=/onsite/.w /onsite/.top || exit 125;"
    " n=$1; shift;"
    " if mount -t overlay onsite -o ro,nosuid,nodev,lowerdir=/onsite/.top:/onsite/.w"
    " /onsite/work; then"
    ' while [ "$n" -gt 0 ]; do'
    ' if [ -d "/onsite/work/$1" ]; then'
    ' mount -t tmpfs -o ro,size=4k,mode=0755 onsite "/onsite/work/$1" || exit 125;'
    ' else mount --bind /dev/null "/onsite/work/$1" || exit 125; fi;'
    " shift; n=$((n - 1)); done;"
    ' else shift "$n"; mount --rbind /onsite/.w /onsite/work || exit 125; fi;'
    " umount -l /onsite/.top /onsite/.w && rmdir /onsite/.top /onsite/.w || exit 125;"
    " cd /onsite/work || exit 125; unset OLDPWD; } 1>&2; "
)

# The sandbox's first process (PID 1 in its namespace): starts the system with the
# sandbox's stdin and stdout, lets go of its own copies (so that a system that closes
# its stdout is seen to), and exits with the system's status. The shell gives an
# asynchronous command /dev/null for stdin, hence the copy on descriptor 3.
SUPERVISOR = (
    'exec 3<&0; "$@" 0<&3 3<&- & child=$!; exec 0</dev/null 1>/dev/null 3<&-; '
    'wait "$child"; exit $?'
)

_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# Files under /etc a system has no business reading even where they are readable.
_MASKED_ETC = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d")

_HOW_TO_PROCEED = (
    "install bubblewrap (Debian package bubblewrap, `make` installs it), allow user "
    "namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0), "
    "or set sandbox = false on the device (the report then marks the system unsealed)"
)


@dataclass(frozen=True)
class Account:
    """Who the system runs as inside the sandbox: None when bubblewrap maps the caller."""

    name: str
    uid: int
    gid: int


# Where staged inputs live when the machine has one: a RAM file system. Staging writes a
# file per item and removes it after; on disk that is a block allocation and a discard
# each time (0.3 ms here), in RAM a few microseconds. The directory is private to the
# system's stage (named by a hash of its path), emptied at every start and removed at stop.
MEMORY_ROOT = Path("/dev/shm")


def memory_inputs_dir(stage_dir: Path) -> Path | None:
    """The RAM directory for one stage directory's inputs, or None where there is none."""
    if os.environ.get("ONSITE_STAGE_ON_DISK") or not os.access(MEMORY_ROOT, os.W_OK | os.X_OK):
        return None
    key = hashlib.sha256(str(stage_dir.absolute()).encode("utf-8")).hexdigest()[:24]
    return MEMORY_ROOT / f"onsite-{os.getuid()}-{key}" / "in"


@dataclass(frozen=True)
class ScratchDirs:
    """The host directories behind a system's inputs and, unsealed, its writable places.

    ``inputs`` is under the stage directory, or in RAM (``memory_inputs_dir``). A sealed
    system's HOME, TMPDIR, /tmp and /onsite/out are RAM file systems inside its sandbox,
    of bounded size and gone with it (``host_scratch`` False): nothing it writes reaches
    the run directory's disk. An unsealed system gets ``outputs``, ``home`` and ``tmp``
    under the stage directory.
    """

    inputs: Path
    outputs: Path
    home: Path
    tmp: Path
    host_scratch: bool = True

    @classmethod
    def under(
        cls, stage_dir: Path, inputs: Path | None = None, host_scratch: bool = True
    ) -> ScratchDirs:
        """The directories of one system's stage directory (inputs elsewhere if given)."""
        return cls(
            inputs if inputs is not None else stage_dir / "in",
            stage_dir / "out",
            stage_dir / "home",
            stage_dir / "tmp",
            host_scratch,
        )

    @property
    def stage(self) -> Path:
        """The system's stage directory."""
        return self.outputs.parent

    def _memory(self) -> Path | None:
        # The RAM directory holding the inputs, when they are not in the stage directory.
        return None if self.inputs.parent == self.stage else self.inputs.parent

    def _host_dirs(self) -> tuple[Path, ...]:
        if self.host_scratch:
            return (self.inputs, self.outputs, self.home, self.tmp)
        return (self.inputs,)

    @property
    def programs(self) -> Path:
        """Where a sealed system's program files outside its workdir are copied, beside
        its inputs: emptied with them at every start."""
        memory = self._memory()
        return (memory if memory is not None else self.stage) / "program"

    def clear(self) -> None:
        """Remove them: nothing of the system stays in the run directory after it stops."""
        for path in (self.inputs, self.outputs, self.home, self.tmp, self.programs):
            if path.exists() or path.is_symlink():
                _remove(path)
        memory = self._memory()
        if memory is not None and memory.is_dir():
            _remove(memory)

    def reset(self, owner: Account | None) -> None:
        """Empty and recreate them: nothing of an earlier session or start survives.

        Inputs stay owned by the controller (the system only reads them); the others
        belong to the system's account so that it can write there.
        """
        memory = self._memory()
        for place in (self.stage, memory):
            if place is not None and place.is_dir():
                # Everything, including what a killed session left (staged inputs, scratch).
                for child in place.iterdir():
                    _remove(child)
        if memory is not None:
            memory.mkdir(mode=0o755, exist_ok=True)
            memory.chmod(0o755)
        for path in self._host_dirs():
            path.mkdir(parents=True)
        self.inputs.chmod(0o755)
        for path in self._host_dirs()[1:]:
            path.chmod(0o700)
            if owner is not None:
                os.chown(path, owner.uid, owner.gid)


def _remove(path: Path) -> None:
    """Remove a tree a system may have filled with odd modes (read-only dirs)."""

    def retry(func: Callable[[str], object], name: str, _exc: object) -> None:
        os.chmod(os.path.dirname(name), 0o700)
        func(name)

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=retry)
    else:
        path.unlink()


def bwrap_path() -> str | None:
    """The bubblewrap executable, or None when it is not installed."""
    return shutil.which("bwrap") or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None
    )


def auto_uid(place: Path, index: int | None = None) -> int:
    """A user number no account uses, for a sealed system of a root controller.

    The controller gives each system of a run the ``index``-th number of a block of its
    own per run directory ``place``, so that no two systems of a run, nor of two runs on
    one machine, share a user; without an index the number comes from ``place`` alone
    (a system's stage directory).
    """
    digest = hashlib.sha256(str(place.absolute()).encode("utf-8")).digest()
    if index is None:
        return AUTO_UID_BASE + int.from_bytes(digest[:4], "big") % (
            _AUTO_UID_BLOCKS * _AUTO_UID_BLOCK
        )
    block = int.from_bytes(digest[:4], "big") % _AUTO_UID_BLOCKS
    return AUTO_UID_BASE + block * _AUTO_UID_BLOCK + index % _AUTO_UID_BLOCK


def account(sandbox: Sandbox, place: Path | None = None) -> Account | None:
    """The account a sandboxed system runs as when we are root, else None.

    ``sandbox.user`` names an existing unprivileged account; without one the system runs
    as ``sandbox.uid``, or a number drawn from ``place`` (``auto_uid``): a user number of
    its own (refused if an account has it).
    """
    if os.geteuid() != 0:
        return None
    if sandbox.user is None:
        uid = sandbox.uid if sandbox.uid is not None else auto_uid(place or Path("."))
        try:
            taken = pwd.getpwuid(uid).pw_name
        except KeyError:
            return Account(f"uid {uid}", uid, uid)
        raise StartError(
            f"the user number {uid} picked for the sandbox is the account {taken!r}; set "
            "user on the device to an unprivileged account of its own"
        )
    try:
        entry = pwd.getpwnam(sandbox.user)
    except KeyError:
        raise StartError(
            f"sandbox user {sandbox.user!r} does not exist on this machine; "
            "create it (useradd --system) or leave user out on the device (each system "
            "then runs as a user number of its own)"
        ) from None
    if entry.pw_uid == 0:
        raise StartError(
            f"sandbox user {sandbox.user!r} is root; set user on the device to an "
            "unprivileged account, or leave it out"
        )
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def leftover_pids(uid: int) -> list[int]:
    """Processes of ``uid`` on this machine (a system's own user: what an earlier
    controller left running)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                found.append(int(name))
        except OSError:
            continue
    return found


# (bwrap, network) pairs that worked: asked once per controller. A failure is not kept,
# so that a probe that timed out on a loaded machine is tried again at the next start.
_PROBED: set[tuple[str, bool]] = set()


def _probe(bwrap: str, network: bool) -> str | None:
    """None when bubblewrap can create the namespaces here, else its complaint."""
    if (bwrap, network) in _PROBED:
        return None
    complaint = _probe_once(bwrap, network)
    if complaint is None:
        _PROBED.add((bwrap, network))
    return complaint


def _probe_once(bwrap: str, network: bool) -> str | None:
    args = [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent"]
    if not network:
        args.append("--unshare-net")
    args += ["--", "/bin/true"]
    try:
        done = subprocess.run(args, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
    return None


def check_available(sandbox: Sandbox) -> str:
    """The bubblewrap executable to use, or StartError saying why not and how to proceed."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise StartError(
            f"cannot seal the system: bubblewrap (bwrap) is not installed; {_HOW_TO_PROCEED}"
        )
    complaint = _probe(bwrap, sandbox.network)
    if complaint is not None:
        raise StartError(
            f"cannot seal the system: bubblewrap cannot create its namespaces here "
            f"({complaint}); {_HOW_TO_PROCEED}"
        )
    return bwrap


def clean_env(extra: Mapping[str, str], home: Path, tmp: Path) -> dict[str, str]:
    """PATH, HOME, LANG and the site's env: nothing else of the controller's environment.

    The controller's interpreter's bin directory comes first on PATH so that a
    command starting with "python" means the Python the harness was installed into
    (the project's virtual environment).
    """
    bindir = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


def _path_in_text(path: Path) -> re.Pattern[str]:
    # The path where it ends or goes on below it: not "/srv/a" in "/srv/ab".
    return re.compile(re.escape(str(path)) + r"(?=/|$|[^\w.\-])")


def _world_readable(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & need == need


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


@dataclass(frozen=True)
class _Mount:
    kind: str  # "ro", "hide", "tmpfs", "symlink"
    source: str  # for "hide": the host path hidden, where the target is elsewhere
    target: Path


class SandboxCommand:
    """Builds the bwrap command line that runs one system's program sealed.

    ``program_files`` are files outside the workdir the command names (the system's
    script given by absolute path); they are bound read-only at their own paths.
    ``tools`` are the controller's own helper files the sandbox needs (the exec-mode
    spawner), bound read-only under :data:`TOOLS_DIR`. ``per_process_memory`` puts the
    memory limit on each process (RLIMIT_AS) where no control group holds it.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        bwrap: str,
        workdir: Path,
        scratch: ScratchDirs,
        user: Account | None,
        program_files: Iterable[Path] = (),
        tools: Iterable[Path] = (),
        per_process_memory: bool = False,
    ) -> None:
        self.sandbox = sandbox
        # No control group holds the memory limit: each process gets RLIMIT_AS instead.
        self.per_process_memory = per_process_memory
        self.bwrap = bwrap
        self.workdir = workdir.resolve()
        self.scratch = scratch
        self.user = user
        self.named_files = tuple(Path(os.path.abspath(p)) for p in program_files)
        # Those outside every tree the sandbox shows at its own path (the interpreter
        # and the system directories are there) are copied in (_program_copies).
        shown = [*self._readonly_sources(), *(Path(d).resolve() for d in _SYSTEM_DIRS)]
        self.program_files = tuple(
            p for p in self.named_files if not any(_inside(p.resolve(), s) for s in shown)
        )
        self.tools = tuple(tools)
        if user is not None:
            self._check_readable()

    def _readonly_sources(self) -> list[Path]:
        """Directories and files bound read-only at their own paths, outermost only."""
        wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
        wanted.add(Path(sys.executable).resolve().parent.parent)
        system = {Path(d) for d in _SYSTEM_DIRS}
        resolved = sorted(
            {p.resolve() for p in wanted if p.exists()} - system, key=lambda p: len(p.parts)
        )
        outermost: list[Path] = []
        for path in resolved:
            if any(_inside(path, kept) for kept in outermost):
                continue
            if any(_inside(path, Path(d)) for d in _SYSTEM_DIRS if not Path(d).is_symlink()):
                continue
            outermost.append(path)
        return outermost

    def _check_readable(self) -> None:
        assert self.user is not None
        for path in [self.workdir, *self.named_files]:
            if not _world_readable(path):
                raise StartError(
                    f"{path} is not readable by the sandbox user {self.user.name!r}; "
                    f"make it readable by others (chmod o+rX) or set user on the device"
                )

    @property
    def _overlay(self) -> bool:
        # Mounting an overlay takes capabilities only a root controller's supervisor has.
        return self.user is not None

    def _program_target(self, index: int) -> Path:
        return PROGRAM_DIR / f"p{index}{self.program_files[index].suffix}"

    def inside(self, text: str) -> str:
        """``text`` (an argument, an environment value) with the host paths of the
        workdir and of the program files replaced by where the system finds them."""
        for index, path in enumerate(self.program_files):
            text = _path_in_text(path).sub(str(self._program_target(index)), text)
        return _path_in_text(self.workdir).sub(str(WORK_DIR), text)

    def _program_copies(self) -> list[tuple[Path, Path]]:
        """(copy, target) of each program file: copied at the first start after a reset,
        so that the bind's source (which mountinfo shows) is a neutral path."""
        place = self.scratch.programs
        pairs = []
        for index, path in enumerate(self.program_files):
            target = self._program_target(index)
            copy = place / target.name
            if not copy.exists():
                place.mkdir(mode=0o755, parents=True, exist_ok=True)
                shutil.copy2(path, copy)
                copy.chmod(0o755 if os.access(path, os.X_OK) else 0o644)
            pairs.append((copy, target))
        return pairs

    def _hidden_in_workdir(self) -> list[str]:
        """The hidden paths under the workdir, relative to it."""
        found = []
        for path in self.sandbox.hidden:
            real = Path(path).resolve()
            if real != self.workdir and _inside(real, self.workdir) and real.exists():
                found.append(real.relative_to(self.workdir))
        # Outermost only: what lies inside a hidden directory is gone with it.
        found.sort(key=lambda p: len(p.parts))
        outermost: list[Path] = []
        for path in found:
            if not any(_inside(path, kept) for kept in outermost):
                outermost.append(path)
        return sorted(str(p) for p in outermost)

    def _mounts(self) -> list[_Mount]:
        mounts: list[_Mount] = []
        for name in _SYSTEM_DIRS:
            path = Path(name)
            if path.is_symlink():
                mounts.append(_Mount("symlink", os.readlink(path), path))
            elif path.is_dir():
                mounts.append(_Mount("ro", name, path))
        for path in self._readonly_sources():
            mounts.append(_Mount("ro", str(path), path))
        bound = [m.target for m in mounts if m.kind == "ro"]
        hidden = [Path(name) for name in _MASKED_ETC if os.path.lexists(name)]
        for path in self.sandbox.hidden:
            real = Path(path).resolve()
            if any(_inside(real, b) for b in bound) and real.exists():
                hidden.append(real)
        for path in hidden:
            mounts.append(_Mount("hide", "", path))
        # The workdir at a neutral place, its hidden paths hidden there too.
        work = _WORK_BIND if self._overlay else WORK_DIR
        mounts.append(_Mount("ro", str(self.workdir), work))
        for relative in self._hidden_in_workdir():
            mounts.append(_Mount("hide", str(self.workdir / relative), work / relative))
        mounts.append(_Mount("tmpfs", "", Path("/tmp")))
        # Parents before children, so a bind inside a hidden tree lands on the tmpfs.
        mounts.sort(key=lambda m: len(m.target.parts))
        return mounts

    def argv(self, command: Sequence[str], chdir: Path | None = None) -> list[str]:
        """The bwrap command line that runs ``command`` inside the sandbox."""
        args = [
            self.bwrap,
            "--unshare-pid",
            # Our supervisor is the namespace's first process, so no bwrap process whose
            # command line names host paths is visible inside.
            "--as-pid-1",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "onsite",
        ]
        if not self.sandbox.network:
            args.append("--unshare-net")
        made: set[Path] = {Path("/")}
        bound: list[Path] = []
        mounts = self._mounts()
        # What lands under /onsite is mounted after the RAM file system made there.
        later = [m for m in mounts if _inside(m.target, ONSITE_DIR)]
        args += self._mount_args([m for m in mounts if m not in later], made, bound)
        args += ["--proc", "/proc", "--dev", "/dev"]
        # POSIX semaphores and shared memory (multiprocessing.Lock, a Queue, torch's
        # DataLoader) live in /dev/shm: a private RAM file system of the same bounded size,
        # charged to the system's memory like the others.
        args += ["--perms", "1777", "--size", str(self.sandbox.scratch_bytes)]
        args += ["--tmpfs", "/dev/shm"]
        # One RAM file system of bounded size for everything the system writes under
        # /onsite; its inputs, its workdir and our tools are bound read-only into it.
        args += ["--perms", "0755", "--size", str(self.sandbox.scratch_bytes)]
        args += ["--tmpfs", str(ONSITE_DIR)]
        for writable in (OUT_DIR, HOME_DIR, TMP_DIR):
            args += ["--perms", "1777", "--dir", str(writable)]
        args += ["--ro-bind", str(self.scratch.inputs), str(IN_DIR)]
        if self.tools:
            args += ["--perms", "0755", "--dir", str(TOOLS_DIR)]
            for tool in self.tools:
                args += ["--ro-bind", str(tool), str(TOOLS_DIR / tool.name)]
        if self.program_files:
            args += ["--perms", "0755", "--dir", str(PROGRAM_DIR)]
            for copy, target in self._program_copies():
                args += ["--ro-bind", str(copy), str(target)]
        made.add(ONSITE_DIR)
        args += ["--perms", "0755", "--dir", str(WORK_DIR)]
        made.add(WORK_DIR)
        args += self._mount_args(later, made, bound)
        if self.user is not None:
            # The supervisor keeps only what it needs to show the workdir (_OVERLAY_SETUP)
            # and to become the system's user.
            args += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_SYS_ADMIN"):
                args += ["--cap-add", cap]
        if chdir is not None:
            args += ["--chdir", str(chdir)]
        else:
            args += ["--chdir", str(ONSITE_DIR if self._overlay else WORK_DIR)]
        args.append("--")
        args += ["/bin/sh", "-c"]
        if self._overlay:
            hidden = self._hidden_in_workdir()
            args += [_OVERLAY_SETUP + SUPERVISOR, "onsite-init", str(len(hidden)), *hidden]
        else:
            args += [SUPERVISOR, "onsite-init"]
        args += self._drop([self.inside(arg) for arg in command])
        return args

    def _mount_args(self, mounts: list[_Mount], made: set[Path], bound: list[Path]) -> list[str]:
        """bwrap's arguments for ``mounts``, making the parents they need."""
        args: list[str] = []
        for mount in mounts:
            target = mount.target
            if mount.kind == "symlink":
                args += ["--symlink", mount.source, str(target)]
                continue
            if mount.kind != "hide":
                # bwrap would create missing parents 0700, which the sandbox user cannot
                # cross; parents inside a bound directory exist already.
                for parent in reversed(target.parents):
                    if parent in made or any(_inside(parent, b) for b in bound):
                        continue
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
                made.add(target)
            if mount.kind == "ro":
                args += ["--ro-bind", mount.source, str(target)]
                bound.append(target)
            elif mount.kind == "tmpfs":
                size = str(self.sandbox.scratch_bytes)
                args += ["--perms", "1777", "--size", size, "--tmpfs", str(target)]
            elif os.path.isdir(mount.source or target):
                args += ["--perms", "0755", "--tmpfs", str(target)]
            else:
                args += ["--ro-bind", "/dev/null", str(target)]
        return args

    def _drop(self, command: Sequence[str]) -> list[str]:
        """Become the sandbox user (when root) with no capabilities and no way back, under
        the process limits (and, without a control group, the memory limit)."""
        limits = [f"--nproc={self.sandbox.max_processes}"]
        if self.per_process_memory and self.sandbox.memory_bytes is not None:
            limits.append(f"--as={self.sandbox.memory_bytes}")
        limited = ["/usr/bin/prlimit", *limits, "--", *command]
        if self.user is None:
            return limited
        return [
            "/usr/bin/setpriv",
            f"--reuid={self.user.uid}",
            f"--regid={self.user.gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
            *limited,
        ]


def unreadable_for_sandbox(sandbox: Sandbox, workdir: Path, command: Sequence[str]) -> list[Path]:
    """What a sealed system's own user could not read: its workdir, and the files its
    command names (by absolute path, or relative to the workdir).

    Empty where the system runs as the controller's user (an unsealed system, or a
    controller that is not root). A start would fail on these every time, so the
    controller refuses the site before any system starts rather than retry.
    """
    if not sandbox.enabled or os.geteuid() != 0:
        return []
    workdir = workdir.resolve()
    named = [workdir, *program_files(command, workdir)]
    for arg in command:
        if arg and not arg.startswith(("/", "-")) and "{" not in arg:
            path = workdir / arg
            if path.is_file():
                named.append(path)
    # A missing path is not this check's: the start names it.
    return [path for path in named if path.exists() and not _world_readable(path)]


def program_files(command: Sequence[str], workdir: Path) -> list[Path]:
    """Absolute paths in a command that name files outside the workdir (the system's program)."""
    found = []
    for arg in command:
        if arg.startswith("/") and "{" not in arg:
            path = Path(arg)
            if path.is_file() and not _inside(path.resolve(), workdir.resolve()):
                found.append(path)
    return found
