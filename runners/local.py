"""Systems that run as local processes, in serve mode (resident, JSON lines) or exec mode.

Both run sealed in a bubblewrap sandbox unless the device says ``sandbox = false``
(runners/sandbox.py, docs/security.md); either way a system gets a clean environment,
copies of its inputs, and a stderr log capped at ``max_log_bytes``. The device's settings
(``LocalDevice``) and the transport's registration are in runners/local_device.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import psutil

from . import protocol
from .base import (
    ItemAttempt,
    ItemRequest,
    OutputFile,
    Runner,
    StartError,
    StartInfo,
    SystemSpec,
)
from .cgroups import SystemCgroup
from .exchange import AttemptBuilder
from .lines import LineReader, LineTooLong
from .logcap import LogCap
from .proctree import TreeMeter, kill_tree
from .sandbox import (
    HOME_DIR,
    IN_DIR,
    OUT_DIR,
    TMP_DIR,
    TOOLS_DIR,
    Account,
    SandboxCommand,
    ScratchDirs,
    account,
    check_available,
    clean_env,
    leftover_pids,
    memory_inputs_dir,
    program_files,
)
from .serve import StreamServeRunner, log_note, log_tail
from .spawn import spawn, wait_exit
from .system_files import FileRefused, read_system_file

_BYE_GRACE_SECONDS = 2.0
_SPAWNER = Path(__file__).with_name("spawner.py")


def stage_file(source: Path, stage_dir: Path, anon_id: str, key: str) -> str:
    """Place a copy of one input under an anonymous name, read-only; its path.

    Never a link: a system writing into its input must not reach the test set's file.
    The copy is created exclusively (O_EXCL) so that nothing already there is reused.
    """
    # A string, not a Path: this runs once per item.
    target = f"{stage_dir}{os.sep}{anon_id}-{key}{source.suffix}"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        # A bare descriptor, not a file object: this runs once per item.
        src = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(src).st_size
            copied = 0
            while copied < size:
                sent = os.sendfile(fd, src, copied, size - copied)
                if sent == 0:
                    break
                copied += sent
        finally:
            os.close(src)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise
    os.fchmod(fd, 0o444)
    os.close(fd)
    return target


class _LocalRunner(Runner):
    """What serve and exec mode share: the sandbox, staging, the capped log, CPU pinning."""

    def __init__(self, spec: SystemSpec, cpus: Sequence[int] | None = None) -> None:
        self.spec = spec
        self.cpus = tuple(cpus) if cpus else None
        # Sealed, a system sees its inputs only at /onsite/in, wherever they are on the host:
        # they are staged in RAM. Unsealed, it is handed host paths: they stay in the run's
        # stage directory, where an operator debugging the system looks for them.
        memory = memory_inputs_dir(spec.stage_dir) if spec.sandbox.enabled else None
        self.scratch = ScratchDirs.under(
            spec.stage_dir, memory, host_scratch=not spec.sandbox.enabled
        )
        self.sealed = spec.sandbox.enabled
        self._account: Account | None = None
        self._sandbox: SandboxCommand | None = None
        # The system's own control group (memory, processes), where one can be made.
        self._cgroup: SystemCgroup | None = None
        self._oom_mark = 0
        # The sandbox's first process (our supervisor), on the host: the system's files
        # are read through its root (/proc/PID/root), the RAM file systems it holds.
        self._init_pid: int | None = None
        # Its /onsite/out, held open: the files it writes are read through this, not
        # through a pid that could be reused once the sandbox is gone.
        self._out_fd: int | None = None
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: LogCap | None = None
        self._setup_staged: dict[str, str] | None = None

    # -- where things are, seen from the system ----------------------------------------

    def _seen(self, path: Path) -> str:
        """The path the system uses for a file in one of its scratch directories."""
        if not self.sealed:
            return str(path)
        if path.parent == self.scratch.inputs:
            return str(IN_DIR / path.name)
        return str(path)

    @property
    def sandbox_root(self) -> Path | None:
        """The sealed system's file system as the controller reaches it (through the
        supervisor's /proc root) while it runs; None unsealed or stopped."""
        if self._init_pid is None:
            return None
        return Path(f"/proc/{self._init_pid}/root")

    def _output_place(self, name: str) -> OutputFile:
        """Where the system writes a file ``name`` for the controller, and where the
        controller reads it: the scratch output directory, or, sealed, /onsite/out in the
        sandbox's RAM file system, reached through the supervisor's root."""
        if not self.sealed:
            host = self.scratch.outputs / name
            return OutputFile(host, str(host))
        place = f"/proc/self/fd/{self._out_fd}" if self._out_fd is not None else "/nonexistent"
        return OutputFile(Path(f"{place}/{name}"), f"{OUT_DIR}/{name}")

    def _find_init(self, outer_pid: int) -> None:
        """Note the sandbox's first process (our supervisor): the first below bubblewrap's,
        and open its /onsite/out."""
        self._release_out()
        self._init_pid = _system_process(outer_pid) if self.sealed else None
        if self._init_pid is None:
            return
        flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        with contextlib.suppress(OSError):
            self._out_fd = os.open(f"/proc/{self._init_pid}/root{OUT_DIR}", flags)

    def _release_out(self) -> None:
        """Close the sandbox's /onsite/out (its RAM file system goes with the sandbox)."""
        fd, self._out_fd, self._init_pid = self._out_fd, None, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _oom_message(self) -> str:
        """Why the kernel killed the system, if it was for memory (else "")."""
        group = self._cgroup
        if group is None:
            return ""
        kills = group.oom_kills()
        if kills <= self._oom_mark:
            return ""
        self._oom_mark = kills
        limit = self.spec.sandbox.memory_bytes
        shown = f"{limit / (1 << 20):.0f} MiB" if limit is not None else "the machine's"
        return f"out of memory: killed by the kernel at its memory_limit ({shown}); "

    @property
    def env(self) -> dict[str, str]:
        """The system's whole environment."""
        if self.sealed:
            env = clean_env(self.spec.env, HOME_DIR, TMP_DIR)
            if self._sandbox is not None:
                # The workdir is at a neutral path inside (runners/sandbox.py, WORK_DIR).
                env = {name: self._sandbox.inside(value) for name, value in env.items()}
            return env
        return clean_env(self.spec.env, self.scratch.home, self.scratch.tmp)

    def _prepare(self) -> None:
        """Check the sandbox can be made, end what an earlier start or controller left of
        the system, and empty the scratch directories (every start)."""
        if self.sealed:
            # Made again at every start (the stop removed it); an earlier controller's
            # group of the same key is emptied first.
            key = (
                "sys-"
                + hashlib.sha256(str(self.spec.stage_dir.absolute()).encode("utf-8")).hexdigest()[
                    :24
                ]
            )
            self._cgroup = SystemCgroup.make(
                key, self.spec.sandbox.memory_bytes, self.spec.sandbox.max_processes
            )
        if self.sealed and self._sandbox is None:
            bwrap = check_available(self.spec.sandbox)
            self._account = account(self.spec.sandbox, self.spec.stage_dir)
            self._sandbox = SandboxCommand(
                self.spec.sandbox,
                bwrap,
                self.spec.workdir,
                self.scratch,
                self._account,
                program_files(self.spec.command, self.spec.workdir),
                tools=[_SPAWNER],
                per_process_memory=self._cgroup is None,
            )
        self._end_leftovers()
        try:
            self.scratch.reset(self._account)
        except OSError as exc:
            raise StartError(f"cannot prepare {self.spec.stage_dir}: {exc}") from exc
        self._setup_staged = None

    def _end_leftovers(self) -> None:
        """Kill whatever still runs of this system: an earlier start, or what a controller
        killed with -9 left (found by the system's own control group, or its own user)."""
        if self._cgroup is not None:
            self._cgroup.kill_all()
            self._oom_mark = self._cgroup.oom_kills()
        elif self._account is not None and self.spec.sandbox.user is None:
            # A user number of its own: every process of it is this system's.
            for pid in leftover_pids(self._account.uid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def _wrap(self, command: Sequence[str], pdeathsig: bool) -> list[str]:
        """The command line that starts ``command`` sealed, or dying with the controller."""
        if self._sandbox is not None:
            argv = self._sandbox.argv(command)
            return argv if self._cgroup is None else [*self._cgroup.join_prefix(), *argv]
        if not pdeathsig:
            return list(command)
        return ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--", *command]

    def _spawn(
        self, command: Sequence[str], pdeathsig: bool = True, **popen: Any
    ) -> subprocess.Popen[bytes]:
        cwd = None if self.sealed else self.spec.workdir
        try:
            return spawn(
                self._wrap(command, pdeathsig),
                self.cpus,
                cwd=cwd,
                env=self.env,
                stderr=self._open_log().write_fd,
                **popen,
            )
        except OSError as exc:
            raise StartError(
                f"cannot start {command[0]!r} in {self.spec.workdir}: {exc.strerror or exc}"
            ) from exc

    # -- the log -----------------------------------------------------------------------

    def _open_log(self) -> LogCap:
        if self._log is None:
            self._log = LogCap(self.spec.log_path, self.spec.max_log_bytes)
        return self._log

    def _mark_log(self, text: str) -> None:
        self._open_log().note(log_note(text))

    def _log_tail(self) -> str:
        if self._log is not None:
            self._log.settle()
        return log_tail(self.spec.log_path)

    # -- staging -----------------------------------------------------------------------

    def _stage(self, request: ItemRequest) -> tuple[dict[str, Any], list[str | Path]]:
        inputs: dict[str, Any] = dict(request.fields)
        staged: list[str | Path] = []
        for key, source in request.files.items():
            path = stage_file(source, self.scratch.inputs, request.anon_id, key)
            staged.append(path)
            # In the inputs directory by construction: no search of the scratch dirs.
            inputs[key] = f"{IN_DIR}{os.sep}{os.path.basename(path)}" if self.sealed else path
        for key, output in self._output_files(request).items():
            inputs[key] = output.seen
        return inputs, staged

    def _output_files(self, request: ItemRequest) -> dict[str, OutputFile]:
        """Where the system writes the item's output files (``_output_place``), read there
        after the answer."""
        return {
            key: self._output_place(f"{request.anon_id}-{key}{suffix}")
            for key, suffix in request.outputs.items()
        }

    def _with_outputs(self, request: ItemRequest, result: ItemAttempt) -> ItemAttempt:
        """The attempt with the output files to read, after an answer."""
        if result.outcome != "result" or not request.outputs:
            return result
        return dataclasses.replace(result, output_files=self._output_files(request))

    def _stage_setup_files(self) -> dict[str, str]:
        """Stage the files every start sends in hello (a gallery), once per start."""
        if self._setup_staged is None:
            token = secrets.token_hex(4)
            self._setup_staged = {
                name: self._seen(
                    Path(stage_file(path, self.scratch.inputs, f"setup-{token}-{n}", "file"))
                )
                for n, (name, path) in enumerate(self.spec.setup_files.items())
            }
        return self._setup_staged

    @staticmethod
    def _unstage(paths: Sequence[str | Path]) -> None:
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _close_log(self) -> None:
        """After the system is gone: close the log, remove its inputs, scratch and group."""
        if self._log is not None:
            self._log.close()
            self._log = None
        self._setup_staged = None
        self._release_out()
        with contextlib.suppress(OSError):
            self.scratch.clear()
        if self._cgroup is not None:
            self._cgroup.remove()


def _kill_and_close(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process with everything it started, reap it, and close our pipe ends."""
    kill_tree(proc.pid)
    wait_exit(proc, 10.0)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _system_process(pid: int) -> int:
    """The first process below bubblewrap's (the sandbox's supervisor, which holds the
    system's whole tree): measured without bwrap's memory, and the root of its files."""
    try:
        proc = psutil.Process(pid)
        while proc.name() == "bwrap":
            children = proc.children()
            if len(children) != 1:
                break
            proc = children[0]
        return proc.pid
    except psutil.Error:
        return pid


class LocalServeRunner(_LocalRunner, StreamServeRunner):
    """A resident local process speaking the participant protocol on stdin/stdout."""

    def __init__(self, spec: SystemSpec, cpus: Sequence[int] | None = None) -> None:
        super().__init__(spec, cpus)
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: LineReader | None = None
        self._meter: TreeMeter | None = None
        self._system_pid: int | None = None
        # Pipes no process of the system held when it was killed mid-item.
        self._closed_at_loss: list[str] = []

    @property
    def pid(self) -> int | None:
        """The process id of the system's outermost process (bubblewrap's when sealed)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def answers(self) -> LineReader:
        """The system's stdout, while it runs."""
        assert self._reader is not None
        return self._reader

    def _check_program(self) -> None:
        """Refuse a program that is not there, in the words of a failed exec.

        Sealed, the failure would otherwise surface as the sandbox's exit code 127.
        """
        program = self.spec.command[0] if self.spec.command else ""
        if "/" in program:
            found = os.access(self.spec.workdir / program, os.X_OK)
        else:
            found = shutil.which(program, path=self.env["PATH"]) is not None
        if not found:
            raise StartError(
                f"cannot start {program!r} in {self.spec.workdir}: No such file or directory"
            )

    def start(self) -> StartInfo:
        spec = self.spec
        self._prepare()
        self._check_program()
        self._mark_log(f"starting {' '.join(spec.command)}")
        setup_files = self._stage_setup_files()
        t0 = time.monotonic()
        proc = self._spawn(spec.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._proc = proc
        assert proc.stdout is not None
        self._reader = LineReader(proc.stdout.fileno(), spec.max_output_bytes)
        return self._handshake(t0, setup_files)

    def _ended_before_ready(self) -> str:
        assert self._proc is not None
        code = wait_exit(self._proc, 5.0)
        tail = self._log_tail()
        if code is None:
            return f"closed its stdout before ready; stderr: {tail}"
        return f"exited with code {code} before ready; stderr: {tail}"

    def _on_ready(self, ready_at: float) -> None:
        assert self._proc is not None
        self._find_init(self._proc.pid)
        self._system_pid = self._init_pid or self._proc.pid
        self._meter = TreeMeter(self._system_pid)

    def _write(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        view = memoryview(data)
        fd = self._proc.stdin.fileno()
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        if self._proc is None or self._reader is None:
            raise RuntimeError("run_item before start")
        t_stage = time.monotonic()
        inputs, staged = self._stage(request)
        data = protocol.item(request.anon_id, inputs)
        stage_seconds = time.monotonic() - t_stage
        try:
            return self._with_outputs(request, self._exchange(request, data, stage_seconds))
        finally:
            self._unstage(staged)

    def lose_system(self) -> None:
        # Sealed, bubblewrap keeps its own copies of the pipes, so a system that closed
        # its end looks like a hang; tell the two apart before the evidence is gone.
        self._closed_at_loss = self._closed_pipes()
        self.kill()

    def _answered(self, result: ItemAttempt) -> ItemAttempt:
        closed, self._closed_at_loss = self._closed_at_loss, []
        if closed and result.outcome == "timeout":
            return dataclasses.replace(
                result,
                outcome="crashed",
                message=f"closed its {' and '.join(closed)} while still running (the "
                "protocol keeps stdin and stdout open until bye); killed",
            )
        return result

    def _closed_pipes(self) -> list[str]:
        """Which of its stdin and stdout pipes no process of the system holds any more.

        Any descriptor counts (a system may move the protocol off fd 1 to keep library
        chatter out of it), in the system's process or any it started.
        """
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            return []
        if self._system_pid is None:
            return []
        try:
            wanted = {
                "stdin": f"pipe:[{os.fstat(proc.stdin.fileno()).st_ino}]",
                "stdout": f"pipe:[{os.fstat(proc.stdout.fileno()).st_ino}]",
            }
            root = psutil.Process(self._system_pid)
            pids = [root.pid, *(p.pid for p in root.children(recursive=True))]
        except (OSError, ValueError, psutil.Error):
            return []
        held: set[str] = set()
        for pid in pids:
            try:
                names = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for name in names:
                try:
                    held.add(os.readlink(f"/proc/{pid}/fd/{name}"))
                except OSError:
                    continue
        return [stream for stream, target in wanted.items() if target not in held]

    def _stream_ended(self, attempt: AttemptBuilder, stream: str) -> ItemAttempt:
        """The system's end of a pipe closed: it exited, or it closed the pipe and lives on."""
        assert self._proc is not None
        now = time.monotonic()
        code = wait_exit(self._proc, 1.0)
        tail = self._log_tail()
        if code is None:
            message = (
                f"closed its {stream} while still running (the protocol keeps stdin and "
                f"stdout open until bye); killed; stderr: {tail}"
            )
        else:
            message = f"{self._oom_message()}exited with code {code}; stderr: {tail}"
        result = attempt("crashed", now, message=message)
        self.kill()
        return result

    def _sample(self, now: float) -> tuple[float | None, int | None]:
        if self._meter is None:
            return None, None
        return self._meter.sample(now)

    def interrupt(self) -> None:
        proc = self._proc
        if proc is not None:
            kill_tree(proc.pid)

    def stop(self) -> None:
        proc = self._proc
        if proc is None:
            self._close_log()
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                self._write(protocol.BYE)
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            wait_exit(proc, _BYE_GRACE_SECONDS)
        self.kill()
        self._close_log()

    def kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        _kill_and_close(proc)
        if self._meter is not None:
            self._meter.close()
        self._proc = None
        self._reader = None
        self._meter = None
        self._system_pid = None
        self._release_out()


class LocalExecRunner(_LocalRunner):
    """A system started afresh for every item from a command template.

    ``{input}`` becomes the staged input file and ``{output}`` the path the
    system must write its answer to: a JSON object, or plain UTF-8 text that
    is taken as ``{"text": ...}``. The item's time includes the process start,
    since that is what the system costs per item.

    Each item's process is started by a small resident spawner (runners/spawner.py)
    that lives where the system runs (inside its sandbox): it starts the program with
    posix_spawn and waits for it on a pidfd, so the controller neither forks itself nor
    builds a sandbox per item, and an item's time holds no polling delay.
    """

    def __init__(self, spec: SystemSpec, cpus: Sequence[int] | None = None) -> None:
        super().__init__(spec, cpus)
        self._spawner: subprocess.Popen[bytes] | None = None
        self._replies: LineReader | None = None

    @property
    def spawner_pid(self) -> int | None:
        """The spawner's outermost process (bubblewrap's when sealed), while it runs."""
        return self._spawner.pid if self._spawner is not None else None

    def start(self) -> StartInfo:
        self._kill_spawner()
        self._prepare()
        self._mark_log("exec mode: a process per item")
        self._start_spawner()
        return StartInfo(self.spec.name, "", 0.0, None)

    def _start_spawner(self) -> None:
        script = str(TOOLS_DIR / _SPAWNER.name) if self.sealed else str(_SPAWNER)
        # Unsealed, the spawner is not killed with the controller but sees its stdin end,
        # and kills the item it runs before it goes (a SIGKILL would leave the item behind).
        proc = self._spawn(
            [sys.executable, "-I", "-S", script],
            pdeathsig=False,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert proc.stdout is not None
        self._spawner = proc
        self._replies = LineReader(proc.stdout.fileno())
        line = self._replies.readline(time.monotonic() + max(self.spec.setup_seconds, 10.0))
        if not line or b"ready" not in line:
            self._kill_spawner()
            raise StartError(
                "the exec-mode spawner did not start"
                + ("" if line is None else f" (said {line[:200]!r})")
                + f"; log: {self._log_tail()}"
            )
        self._find_init(proc.pid)

    def _kill_spawner(self) -> None:
        proc = self._spawner
        if proc is None:
            return
        _kill_and_close(proc)
        self._spawner = None
        self._replies = None
        self._release_out()

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        if self._spawner is None:
            # Killed after a timeout or lost: a fresh one, before the item's clock starts.
            self._start_spawner()
        t_stage = time.monotonic()
        inputs, staged = self._stage(request)
        if staged:
            input_path = Path(staged[0])
        else:
            input_path = self.scratch.inputs / f"{request.anon_id}-input.json"
            input_path.write_text(json.dumps(inputs, ensure_ascii=False), encoding="utf-8")
            staged.append(input_path)
        output = self._output_place(f"{request.anon_id}-output")
        output_path = output.host
        staged.append(output_path)
        # Sealed, the workdir and program files are at neutral paths inside
        # (runners/sandbox.py): the template's host paths name them there.
        template = (
            [self._sandbox.inside(arg) for arg in self.spec.command]
            if self._sandbox is not None
            else self.spec.command
        )
        command = [
            arg.replace("{input}", self._seen(input_path)).replace("{output}", output.seen)
            for arg in template
        ]
        stage_seconds = time.monotonic() - t_stage
        try:
            result = self._run(request, command, output_path, stage_seconds)
            return self._with_outputs(request, result)
        finally:
            self._unstage(staged)

    def _run(
        self, request: ItemRequest, command: list[str], output_path: Path, stage_seconds: float
    ) -> ItemAttempt:
        assert self._spawner is not None and self._replies is not None
        assert self._spawner.stdin is not None
        data = (json.dumps({"argv": command}) + "\n").encode()
        sent = time.monotonic()
        deadline = sent + request.hang_seconds

        def attempt(outcome: str, done: float, **fields: Any) -> ItemAttempt:
            return ItemAttempt(
                request.anon_id,
                outcome,  # type: ignore[arg-type]
                fields.pop("started", sent),
                done,
                stage_seconds,
                **fields,
            )

        try:
            os.write(self._spawner.stdin.fileno(), data)
            line = self._replies.readline(deadline)
        except (OSError, LineTooLong) as exc:
            self._kill_spawner()
            return attempt("crashed", time.monotonic(), message=f"exec-mode spawner failed: {exc}")
        if line is None:
            done = time.monotonic()
            self._kill_spawner()
            return attempt(
                "timeout",
                done,
                message=f"no exit within hang_seconds={request.hang_seconds:g}; killed",
            )
        done = self._replies.arrived
        if line == b"":
            self._kill_spawner()
            return attempt(
                "crashed",
                done,
                message="the process that starts each item ended (killed by the system?); "
                f"log: {self._log_tail()}",
            )
        reply = json.loads(line)
        if "error" in reply:
            return attempt("crashed", done, message=reply["error"])
        fields: dict[str, Any] = {
            "cpu_seconds": reply["cpu"],
            "peak_rss_bytes": reply["maxrss"],
            "spawn_seconds": max(0.0, reply["spawned"] - reply["started"]),
        }
        # The spawner read the shared monotonic clock right before posix_spawn and right
        # after the exit woke it: the item's own span without the two pipe hops (the
        # controller's overhead). The system cannot reach the spawner (not dumpable, no
        # handle on its pipes); a span outside the controller's own is not believed.
        if sent <= reply["started"] <= reply["exited"] <= done:
            fields["started"] = reply["started"]
            done = reply["exited"]
        code = os.waitstatus_to_exitcode(reply["status"])
        if code != 0:
            return attempt(
                "crashed",
                done,
                message=f"{self._oom_message()}exited with code {code}; log: {self._log_tail()}",
                **fields,
            )
        return self._read_output(output_path, self.spec.max_output_bytes, attempt, done, fields)

    @staticmethod
    def _read_output(
        output_path: Path,
        max_bytes: int,
        attempt: Any,
        done: float,
        fields: dict[str, Any],
    ) -> ItemAttempt:
        def invalid(message: str) -> ItemAttempt:
            return attempt("invalid_output", done, message=message, **fields)

        try:
            raw = read_system_file(output_path, max_bytes, f"max_output_bytes={max_bytes}")
        except FileRefused as exc:
            return invalid(f"the output file at {{output}} {exc}")
        if raw is None:
            return invalid("exited 0 but wrote no output file at {output}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return invalid(f"output file is not UTF-8 (byte {exc.start}); write UTF-8")
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                # orjson, as for answer lines: its depth limit turns nesting deep enough
                # to exhaust the stdlib parser's recursion into a plain decode error.
                output = orjson.loads(stripped)
            except orjson.JSONDecodeError as exc:
                return invalid(f"output file starts with '{{' but is not JSON: {exc}")
        else:
            output = {"text": stripped}
        return attempt("result", done, output=output, **fields)

    def stop(self) -> None:
        self._kill_spawner()
        self._close_log()

    def kill(self) -> None:
        """Nothing of the system stays resident between items; the spawner is ours."""

    def interrupt(self) -> None:
        proc = self._spawner
        if proc is not None:
            kill_tree(proc.pid)
