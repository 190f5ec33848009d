"""The bubblewrap sandbox a local system runs in (docs/security.md).

Inside, the system sees the operating system read-only, its own workdir read-only, its
current inputs read-only at :data:`IN_DIR`, a private writable HOME, TMPDIR, /onsite/out
and /tmp in RAM file systems of bounded size (never the run directory's disk), a fresh
/proc of its own PID namespace, and nothing of the run: the run directory, the site file,
the test sets and other systems' files are either never mounted or hidden under an empty
tmpfs (``Sandbox.hidden``).

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
# Users of their own for sealed systems of a root controller: numbers no account uses, a
# block of them per run directory (docs/security.md).
AUTO_UID_BASE = 1_600_000_000
_AUTO_UID_BLOCKS = 4096
_AUTO_UID_BLOCK = 4096

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

    def clear(self) -> None:
        """Remove them: nothing of the system stays in the run directory after it stops."""
        for path in (self.inputs, self.outputs, self.home, self.tmp):
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
    source: str
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
        self.program_files = tuple(Path(os.path.abspath(p)) for p in program_files)
        self.tools = tuple(tools)
        if user is not None:
            self._check_readable()

    def _readonly_sources(self) -> list[Path]:
        """Directories and files bound read-only at their own paths, outermost only."""
        wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
        wanted.add(Path(sys.executable).resolve().parent.parent)
        wanted.add(self.workdir)
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
        for path in self.program_files:
            if not any(_inside(path.resolve(), kept) for kept in outermost):
                outermost.append(path)
        return outermost

    def _check_readable(self) -> None:
        assert self.user is not None
        for path in [self.workdir, *self.program_files]:
            if not _world_readable(path):
                raise StartError(
                    f"{path} is not readable by the sandbox user {self.user.name!r}; "
                    f"make it readable by others (chmod o+rX) or set user on the device"
                )

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
        for mount in self._mounts():
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
            elif os.path.isdir(target):
                args += ["--perms", "0755", "--tmpfs", str(target)]
            else:
                args += ["--ro-bind", "/dev/null", str(target)]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # One RAM file system of bounded size for everything the system writes under
        # /onsite; its inputs and our tools are bound read-only into it.
        args += ["--perms", "0755", "--size", str(self.sandbox.scratch_bytes)]
        args += ["--tmpfs", str(ONSITE_DIR)]
        for writable in (OUT_DIR, HOME_DIR, TMP_DIR):
            args += ["--perms", "1777", "--dir", str(writable)]
        args += ["--ro-bind", str(self.scratch.inputs), str(IN_DIR)]
        if self.tools:
            args += ["--perms", "0755", "--dir", str(TOOLS_DIR)]
            for tool in self.tools:
                args += ["--ro-bind", str(tool), str(TOOLS_DIR / tool.name)]
        if self.user is not None:
            # The supervisor keeps only what it needs to become the system's user.
            args += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                args += ["--cap-add", cap]
        args += ["--chdir", str(chdir or self.workdir)]
        args.append("--")
        args += ["/bin/sh", "-c", SUPERVISOR, "onsite-init"]
        args += self._drop(command)
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


def program_files(command: Sequence[str], workdir: Path) -> list[Path]:
    """Absolute paths in a command that name files outside the workdir (the system's program)."""
    found = []
    for arg in command:
        if arg.startswith("/") and "{" not in arg:
            path = Path(arg)
            if path.is_file() and not _inside(path.resolve(), workdir.resolve()):
                found.append(path)
    return found
