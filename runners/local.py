"""Systems that run as local processes, in serve mode (resident, JSON lines) or exec mode."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from . import protocol
from .base import ItemAttempt, ItemRequest, Runner, StartError, StartInfo, SystemSpec
from .exchange import attempt_builder, await_answer
from .lines import LineReader, LineTooLong
from .proctree import TreeMeter, child_setup, kill_tree

_BYE_GRACE_SECONDS = 2.0
_LOG_MARKER = "--- onsite: "


def _child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The controller's environment with its own interpreter's bin directory first on PATH.

    So that a command starting with "python" means the Python the harness was
    installed into (the project's virtual environment), not whatever is first on
    the operator's PATH.
    """
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra)
    return env


def _tail(path: Path, limit: int = 400) -> str:
    """The end of a system's log since its last start, for error messages."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    marker = text.rfind(_LOG_MARKER)
    if marker >= 0:
        text = text[marker:].partition("\n")[2]
    return text.strip().replace("\n", " | ")


def stage_file(source: Path, stage_dir: Path, anon_id: str, key: str) -> Path:
    """Place one input under an anonymous name; a hard link when possible, else a copy."""
    target = stage_dir / f"{anon_id}-{key}{source.suffix}"
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return target


class _LocalRunner(Runner):
    """What serve and exec mode share: staging, logging, CPU pinning."""

    def __init__(self, spec: SystemSpec, cpus: Sequence[int] | None = None) -> None:
        self.spec = spec
        self.cpus = tuple(cpus) if cpus else None
        self._env = _child_env(spec.env)
        spec.stage_dir.mkdir(parents=True, exist_ok=True)
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] | None = None
        self._setup_staged: dict[str, str] | None = None

    def _open_log(self) -> IO[bytes]:
        if self._log is None or self._log.closed:
            self._log = open(self.spec.log_path, "ab")
        return self._log

    def _mark_log(self, text: str) -> None:
        log = self._open_log()
        log.write(f"{_LOG_MARKER}{text} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        log.flush()

    def _stage(self, request: ItemRequest) -> tuple[dict[str, Any], list[Path]]:
        inputs: dict[str, Any] = dict(request.fields)
        staged: list[Path] = []
        for key, source in request.files.items():
            path = stage_file(source, self.spec.stage_dir, request.anon_id, key)
            staged.append(path)
            inputs[key] = str(path)
        return inputs, staged

    def _stage_setup_files(self) -> dict[str, str]:
        """Stage the files every start sends in hello (a gallery), once per runner."""
        if self._setup_staged is None:
            token = secrets.token_hex(4)
            self._setup_staged = {
                name: str(stage_file(path, self.spec.stage_dir, f"setup-{token}-{n}", "file"))
                for n, (name, path) in enumerate(self.spec.setup_files.items())
            }
        return self._setup_staged

    @staticmethod
    def _unstage(paths: Sequence[Path]) -> None:
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._setup_staged is not None:
            self._unstage([Path(p) for p in self._setup_staged.values()])
            self._setup_staged = None


class LocalServeRunner(_LocalRunner):
    """A resident local process speaking the participant protocol on stdin/stdout."""

    def __init__(self, spec: SystemSpec, cpus: Sequence[int] | None = None) -> None:
        super().__init__(spec, cpus)
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: LineReader | None = None
        self._meter: TreeMeter | None = None
        self._cpu_mark: float | None = None

    @property
    def pid(self) -> int | None:
        """The system's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> StartInfo:
        spec = self.spec
        self._mark_log(f"starting {' '.join(spec.command)}")
        setup_files = self._stage_setup_files()
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                spec.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._open_log(),
                cwd=spec.workdir,
                env=self._env,
                start_new_session=True,
                preexec_fn=child_setup(self.cpus),
                bufsize=0,
            )
        except OSError as exc:
            raise StartError(
                f"cannot start {spec.command[0]!r} in {spec.workdir}: {exc.strerror or exc}"
            ) from exc
        self._proc = proc
        assert proc.stdout is not None
        self._reader = LineReader(proc.stdout.fileno())
        self._meter = TreeMeter(proc.pid)
        deadline = t0 + spec.setup_seconds
        try:
            self._write(protocol.hello(spec.task, spec.kind, setup_files))
            line = self._reader.readline(deadline)
        except (OSError, LineTooLong) as exc:
            self.kill()
            raise StartError(f"handshake failed: {exc}") from exc
        if line is None:
            self.kill()
            raise StartError(
                f"no ready message within setup_seconds={spec.setup_seconds:g}; "
                f"stderr: {_tail(spec.log_path)}"
            )
        if line == b"":
            code = proc.wait()
            raise StartError(
                f"exited with code {code} before ready; stderr: {_tail(spec.log_path)}"
            )
        ready_at = self._reader.arrived
        try:
            message = protocol.parse_message(line)
        except protocol.ProtocolError as exc:
            self.kill()
            raise StartError(f"expected a ready message, got {exc}") from exc
        if not isinstance(message, protocol.Ready):
            self.kill()
            raise StartError(f"expected a ready message, got op {message.op!r}")
        self._cpu_mark, _ = self._meter.sample(ready_at)
        return StartInfo(message.name, message.version, ready_at - t0, proc.pid)

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
            return self._exchange(request, data, stage_seconds)
        finally:
            self._unstage(staged)

    def _exchange(self, request: ItemRequest, data: bytes, stage_seconds: float) -> ItemAttempt:
        assert self._proc is not None and self._reader is not None
        sent = time.monotonic()
        deadline = sent + request.hang_seconds

        attempt = attempt_builder(request.anon_id, sent, stage_seconds, self._measure)

        try:
            self._write(data)
        except OSError:
            return self._crashed(attempt, sent)
        assert self._reader is not None
        return await_answer(
            self._reader,
            deadline,
            request.anon_id,
            request.hang_seconds,
            attempt,
            self.kill,
            lambda: self._crashed(attempt, sent),
        )

    def _crashed(self, attempt: Any, sent: float) -> ItemAttempt:
        assert self._proc is not None
        now = time.monotonic()
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        result = attempt(
            "crashed",
            now,
            message=f"exited with code {code}; stderr: {_tail(self.spec.log_path)}",
        )
        self.kill()
        return result

    def _measure(self, now: float) -> tuple[float | None, int | None]:
        if self._meter is None:
            return None, None
        cpu, peak = self._meter.sample(now)
        used = None
        if cpu is not None and self._cpu_mark is not None:
            used = max(0.0, cpu - self._cpu_mark)
        if cpu is not None:
            self._cpu_mark = cpu
        return used, peak

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
            try:
                proc.wait(timeout=_BYE_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self._close_log()

    def kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        kill_tree(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._meter is not None:
            self._meter.close()
        self._proc = None
        self._reader = None
        self._meter = None


class LocalExecRunner(_LocalRunner):
    """A system started afresh for every item from a command template.

    ``{input}`` becomes the staged input file and ``{output}`` the path the
    system must write its answer to: a JSON object, or plain UTF-8 text that
    is taken as ``{"text": ...}``. The item's time includes the process start,
    since that is what the system costs per item.
    """

    _current: int | None = None

    def start(self) -> StartInfo:
        self._mark_log("exec mode: a process per item")
        return StartInfo(self.spec.name, "", 0.0, None)

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        t_stage = time.monotonic()
        inputs, staged = self._stage(request)
        if staged:
            input_path = staged[0]
        else:
            input_path = self.spec.stage_dir / f"{request.anon_id}-input.json"
            input_path.write_text(json.dumps(inputs, ensure_ascii=False), encoding="utf-8")
            staged.append(input_path)
        output_path = self.spec.stage_dir / f"{request.anon_id}-output"
        staged.append(output_path)
        command = [
            arg.replace("{input}", str(input_path)).replace("{output}", str(output_path))
            for arg in self.spec.command
        ]
        stage_seconds = time.monotonic() - t_stage
        try:
            return self._run(request, command, output_path, stage_seconds)
        finally:
            self._unstage(staged)

    def _run(
        self, request: ItemRequest, command: list[str], output_path: Path, stage_seconds: float
    ) -> ItemAttempt:
        sent = time.monotonic()
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._open_log(),
                stderr=subprocess.STDOUT,
                cwd=self.spec.workdir,
                env=self._env,
                start_new_session=True,
                preexec_fn=child_setup(self.cpus),
            )
        except OSError as exc:
            return ItemAttempt(
                request.anon_id,
                "crashed",
                sent,
                time.monotonic(),
                stage_seconds,
                message=f"cannot start {command[0]!r}: {exc.strerror or exc}",
            )
        deadline = sent + request.hang_seconds
        self._current = proc.pid
        try:
            status, usage, done = self._wait(proc.pid, deadline)
        finally:
            self._current = None
        if status is None:
            kill_tree(proc.pid)
            _, usage, _ = self._wait(proc.pid, time.monotonic() + 10)
            proc.returncode = -9
            return ItemAttempt(
                request.anon_id,
                "timeout",
                sent,
                done,
                stage_seconds,
                message=f"no exit within hang_seconds={request.hang_seconds:g}; killed",
                **self._usage(usage),
            )
        proc.returncode = os.waitstatus_to_exitcode(status)
        kill_tree(proc.pid)  # leftovers the command forked into the background
        usage_fields = self._usage(usage)
        if proc.returncode != 0:
            return ItemAttempt(
                request.anon_id,
                "crashed",
                sent,
                done,
                stage_seconds,
                message=f"exited with code {proc.returncode}; log: {_tail(self.spec.log_path)}",
                **usage_fields,
            )
        return self._read_output(request, output_path, sent, done, stage_seconds, usage_fields)

    @staticmethod
    def _wait(pid: int, deadline: float) -> tuple[int | None, Any, float]:
        pause = 0.0005
        while True:
            got, status, usage = os.wait4(pid, os.WNOHANG)
            now = time.monotonic()
            if got == pid:
                return status, usage, now
            if now >= deadline:
                return None, None, now
            time.sleep(min(pause, max(0.0, deadline - now)))
            pause = min(pause * 2, 0.01)

    @staticmethod
    def _usage(usage: Any) -> dict[str, Any]:
        if usage is None:
            return {}
        return {
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_bytes": usage.ru_maxrss * 1024,
        }

    @staticmethod
    def _read_output(
        request: ItemRequest,
        output_path: Path,
        sent: float,
        done: float,
        stage_seconds: float,
        usage_fields: dict[str, Any],
    ) -> ItemAttempt:
        def invalid(message: str) -> ItemAttempt:
            return ItemAttempt(
                request.anon_id,
                "invalid_output",
                sent,
                done,
                stage_seconds,
                message=message,
                **usage_fields,
            )

        try:
            raw = output_path.read_bytes()
        except FileNotFoundError:
            return invalid("exited 0 but wrote no output file at {output}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return invalid(f"output file is not UTF-8 (byte {exc.start}); write UTF-8")
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                output = json.loads(stripped)
            except json.JSONDecodeError as exc:
                return invalid(f"output file starts with '{{' but is not JSON: {exc}")
        else:
            output = {"text": stripped}
        return ItemAttempt(
            request.anon_id, "result", sent, done, stage_seconds, output=output, **usage_fields
        )

    def stop(self) -> None:
        self._close_log()

    def kill(self) -> None:
        """Nothing stays resident between items in exec mode."""

    def interrupt(self) -> None:
        pid = self._current
        if pid is not None:
            kill_tree(pid)
