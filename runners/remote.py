"""Serve mode for a system on a remote device, written once against the capabilities of
runners/remote_parts.py: the SSH transport (runners/ssh.py) and the command transport
(runners/command.py) are this runner with their own :class:`RemoteHost`.

The participant protocol runs unchanged over the device's execution stream: stdin and
stdout carry the JSON lines, stderr goes to the system's log. The command runs under the
sh wrapper of runners/remote_wrapper.py, which gives the system its own session and a
clean environment, reports the session id on its first stdout line, and kills everything
the system started when its stdin closes; a hung system is killed by its start's token over
a new command, and what an earlier controller left running is killed before anything is
sent again. Inputs are staged under random names, files the system writes are fetched
back under the hostile-file rules, and a session that dies mid-item is judged by the
device's evidence (docs/security.md, "Failures have an owner").
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
import secrets
import shutil
import time
from collections.abc import Mapping
from typing import Any

from . import protocol
from .base import ItemAttempt, ItemRequest, OutputFile, StartError, StartInfo, SystemSpec
from .exchange import AttemptBuilder, Lines
from .logcap import CappedLog
from .remote_parts import (
    LINK_ERRORS,
    ExecStream,
    FetchRefused,
    FileServiceHung,
    LocalWriteError,
    PrepareError,
    RemoteHost,
)
from .remote_wrapper import stage_dir, system_dir, system_slug, wrapper_command
from .serve import StreamServeRunner, log_note, log_tail

_BYE_GRACE_SECONDS = 2.0
_RECONNECT_SECONDS = 30.0
_PID_PREFIX = b"onsite-pid "
# After its stdin closes, the wrapper gives the system this long to exit on its own.
_WRAPPER_GRACE_SECONDS = 2.0
# What fetching a file the system wrote may raise: each is judged by `_fetch_failed`.
_FETCH_ERRORS: tuple[type[BaseException], ...] = (FetchRefused, *LINK_ERRORS)


class RemoteServeRunner(StreamServeRunner):
    """A resident system on a remote device, speaking the participant protocol over the
    device's execution stream; ``host`` is the transport's implementation of the parts."""

    HANDSHAKE_ERRORS = (*LINK_ERRORS, ValueError)
    WRITE_ERRORS = LINK_ERRORS
    # A reading of /proc on the device is a line to the resident sampler and back.
    SAMPLE_SECONDS = 0.25

    def __init__(
        self, spec: SystemSpec, host: RemoteHost, workdir: str, rtt_interval: float
    ) -> None:
        self.spec = spec
        self.host = host
        self.rtt_interval = rtt_interval
        # How long a reconnect keeps retrying a device that answered before; tests shorten
        # it. A device that has not answered yet is tried once per start(), quickly: the
        # controller waits for it with its own, visible backoff.
        self.reconnect_seconds = _RECONNECT_SECONDS
        self._reached = False  # the device has answered once this session
        self._log = CappedLog(spec.log_path, spec.max_log_bytes)
        self._workdir = workdir
        self._remote_dir = workdir
        self._slug = system_slug(spec.task, spec.name, str(spec.log_path.absolute()))
        self._system_dir = system_dir(self._remote_dir, self._slug)
        self._stream: ExecStream | None = None
        self._pgid: int | None = None
        self._token: str | None = None
        # A start whose processes could not be killed because the link was down.
        self._orphaned = False
        self._staged: set[str] = set()
        self._rtt: float | None = None
        self._rtt_at = float("-inf")
        self._peak: int | None = None
        # Where output files fetched back from the device wait for the controller.
        self._fetched_dir = spec.stage_dir / "fetched"

    # -- public ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The remote system's process id (also its session and process group id) while it runs."""
        return self._pgid

    @property
    def answers(self) -> Lines:
        """The system's stdout, while it runs."""
        assert self._stream is not None
        return self._stream.lines

    @property
    def round_trip_seconds(self) -> float | None:
        """The most recent measurement of the link's round-trip time."""
        return self._rtt

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
        spec, host = self.spec, self.host
        if spec.mode != "serve":
            raise StartError(
                f"mode {spec.mode!r} is not supported on {host.transport_name} devices; "
                "use serve mode"
            )
        self._ensure_connected()
        # Before anything is sent: kill what an earlier start (ours, or a controller that
        # died) left running on the device, and remove the files it staged.
        self._token = secrets.token_hex(16)
        self._prepare_remote(self._token)
        self._mark_log(f"starting {' '.join(spec.command)} on {host.address}")
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
            self._stream = host.start(command, self._log_bytes, spec.max_output_bytes)
        except LINK_ERRORS as exc:
            self._drop_connection()
            raise StartError(f"cannot start {spec.command[0]!r} on {host.address}: {exc}") from exc
        return self._handshake(t0, setup_files)

    def _launched(self, deadline: float) -> bool | bytes | None:
        # The account's start-up files may print before our wrapper runs; that text is
        # logged, and the protocol starts after the wrapper's pid line.
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
            return f"{self.host.shell_ended(code)}; stderr: {self._log_tail()}"
        return f"exited with code {code} before ready; stderr: {self._log_tail()}"

    def _on_ready(self, ready_at: float) -> None:
        self._cpu_mark, self._peak = None, None

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        if self._stream is None:
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
                self.host.files.put(source, remote)
                inputs[key] = remote
        except LINK_ERRORS as exc:
            now = time.monotonic()
            lost = self._lost_reason(wait=0.0)
            if lost:
                loss = self._whose_loss(lost)
            elif isinstance(exc, FileServiceHung):
                # The machine's file service hung, not the system: the venue's, sent again.
                loss = {"message": f"staging failed: {exc}", "link_lost": True}
            else:
                loss = {"message": f"staging failed: {exc or type(exc).__name__}"}
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
        """Copy the item's output files from the device into the local stage directory.

        A missing file is left for the controller to judge (it finds none); a file that is
        not a regular file, or is too large, makes the item invalid_output; a link that
        fails makes it a lost link (the item is sent again).
        """
        t0 = time.monotonic()
        files: dict[str, OutputFile] = {}
        for key, remote in outputs.items():
            host = self._fetched_dir / posixpath.basename(remote)
            try:
                self.host.files.get(remote, host, self.spec.max_output_file_bytes)
            except _FETCH_ERRORS as exc:
                self._drop_fetched(files)
                failed = self._fetch_failed(key, remote, exc)
                return dataclasses.replace(result, fetch_seconds=time.monotonic() - t0, **failed)
            files[key] = OutputFile(host, remote)
        return dataclasses.replace(result, output_files=files, fetch_seconds=time.monotonic() - t0)

    def _fetch_failed(self, key: str, remote: str, exc: BaseException) -> dict[str, Any]:
        """What a fetch that failed makes of the item (the attempt's changed fields)."""
        if isinstance(exc, FetchRefused):
            return {
                "outcome": "invalid_output",
                "message": f"the file written at {key} ({remote}) {exc}",
            }
        if isinstance(exc, LocalWriteError):
            # The controller's disk, not the system: the item is sent again.
            why = f"cannot keep the file written at {key} on the controller: {exc}"
            return {"outcome": "crashed", "message": why, "link_lost": True}
        # A read that failed as the link dropped comes before the transport notices: give
        # it a moment to tell a lost link from a file it cannot read.
        lost = self._lost_reason(wait=1.0)
        if lost is None:
            why = f"cannot fetch the file written at {key} ({remote}): {exc}"
            return {"outcome": "invalid_output", "message": why}
        self.kill()
        return {
            "outcome": "crashed",
            "system_lost": True,
            **self._whose_loss(f"while fetching {key}: {lost}"),
        }

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
        stream = self._stream
        if stream is not None and not stream.closed:
            with contextlib.suppress(*LINK_ERRORS):
                self._write(protocol.BYE)
                stream.close_stdin()
            stream.wait_exit(_BYE_GRACE_SECONDS)
        token, sid = self._token, self._pgid
        if token is not None:
            # Until a clean-up below has killed what this start runs.
            self._orphaned = True
        if not self.host.connected():
            self._forget_start()
            if self._orphaned:
                # The link died under a running system: one quick try to kill what it
                # left behind.
                with contextlib.suppress(StartError):
                    self._ensure_connected(retry_seconds=0.0)
        if self.host.connected():
            # One command for all of it: this start's processes (with the session the
            # controller trusts), every earlier start's, and the directory with what was
            # staged.
            with contextlib.suppress(*LINK_ERRORS):
                if self.host.control.clean_up(self._system_dir, token, sid):
                    self._orphaned = False
                    self._staged.clear()
        self._forget_start()
        self._unstage(list(self._staged))
        meter = self.host.meter
        note = meter.summary() if meter is not None else None
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
        """Close the current start's stream and drop what the controller knew of it."""
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        self._stream = None
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
        stream = self._stream
        if stream is None:
            # Killed from another thread (the controller stopping) while this one read.
            return None, None
        # The device's check (_whose_loss) means something only right after the loss: a
        # stream tells a dead link within seconds, never at the item's hang limit.
        code, lost = stream.ended(5.0)
        return lost, code

    def _whose_loss(self, lost: str) -> dict[str, Any]:
        """An attempt's message and ``link_lost`` for a session that died: the venue's only
        when the venue cannot show the device and the network were up.

        The transport checks the device at once (its evidence): when the device answers,
        the session ended there (its own doing), which is the participant's failure
        (docs/security.md, "Failures have an owner").
        """
        found = self.host.evidence()
        if found.up:
            return {
                "message": f"the {self.host.session} ended ({lost}) while {found.detail}, so "
                "it and the network were up: the participant's failure, not the link's",
                "link_lost": False,
            }
        return {"message": f"link lost: {lost}; {found.detail}", "link_lost": True}

    def _lost_reason(self, wait: float) -> str | None:
        """Why the link is down, or None if it is up (waiting up to `wait` to tell)."""
        return self.host.lost_reason(wait)

    def _write(self, data: bytes) -> None:
        assert self._stream is not None
        self._stream.write(data)

    def _handed_over(self, before: float) -> float:
        assert self._stream is not None
        return self._stream.handed_over(before)

    # -- the link -------------------------------------------------------------------------

    def _ensure_connected(self, retry_seconds: float | None = None) -> None:
        if self.host.connected():
            return
        self._drop_connection()
        if self._reached:
            retry = self.reconnect_seconds if retry_seconds is None else retry_seconds
            notes = self.host.connect(retry, first=False)
        else:
            notes = self.host.connect(0.0, first=True)
            self._reached = True
        for note in notes:
            self._mark_log(note)
        # Leftovers from a link that died: the system it ran and the inputs staged for it.
        if self._orphaned or self._staged:
            with contextlib.suppress(StartError):
                self._prepare_remote(None)
        self._rtt_at = float("-inf")
        self._maybe_measure_rtt()

    def _prepare_remote(self, token: str | None) -> None:
        """Kill what earlier starts of this system left, empty its remote directory, and
        make the stage directory of the start with this token."""
        host = self.host
        if not host.connected():
            # Preparing after a reconnect failed and dropped the link.
            raise StartError(f"the connection to {host.address} was lost while starting")
        try:
            workdir = host.control.prepare(self._workdir, self._slug, token or "none")
        except PrepareError as exc:
            if exc.shell_ended:
                extra = f"; stderr: {exc.why}" if exc.why else ""
                raise StartError(host.shell_ended(exc.code) + extra) from exc
            raise StartError(
                f"cannot prepare the workdir on {host.address}: {exc.why}; make "
                f"{self._workdir!r} a directory {host.account} can write, or set workdir "
                "in the device settings"
            ) from exc
        except LINK_ERRORS as exc:
            self._drop_connection()
            raise StartError(
                f"connected to {host.address} but cannot prepare the workdir "
                f"{self._workdir!r}: {exc}"
            ) from exc
        self._orphaned = False
        self._staged.clear()
        self._remote_dir = workdir
        self._system_dir = system_dir(self._remote_dir, self._slug)

    def _drop_connection(self) -> None:
        self.host.close()

    def _maybe_measure_rtt(self) -> None:
        now = time.monotonic()
        if not self.host.connected() or now - self._rtt_at < self.rtt_interval:
            return
        rtt = self.host.round_trip(self._remote_dir)
        if rtt is not None:
            self._rtt, self._rtt_at = rtt, time.monotonic()

    def _kill_start(self, token: str, sid: int | None) -> bool:
        """Kill every process of one start (over a new command); False if the link is down."""
        if not self.host.connected():
            return False
        try:
            self.host.control.kill(self._system_dir, token, sid)
        except LINK_ERRORS:
            return False
        return True

    def _stage_setup_files(self) -> dict[str, str]:
        """Copy the files hello carries (a gallery) to the remote workdir, at every start:
        a reconnect may follow a reboot that emptied it."""
        staged: dict[str, str] = {}
        token = secrets.token_hex(4)
        try:
            for n, (name, source) in enumerate(self.spec.setup_files.items()):
                remote = posixpath.join(self._stage_dir, f"setup-{token}-{n}{source.suffix}")
                self._staged.add(remote)
                self.host.files.put(source, remote)
                staged[name] = remote
        except LINK_ERRORS as exc:
            raise StartError(f"cannot stage setup files on {self.host.address}: {exc}") from exc
        return staged

    def _unstage(self, paths: list[str]) -> None:
        # What is not removed now stays in _staged: removed after the next connect.
        if paths and self.host.connected():
            self._staged.difference_update(self.host.files.remove(paths))

    # -- resources ------------------------------------------------------------------------

    def _sample(self, now: float) -> tuple[float | None, int | None]:
        """CPU seconds so far and peak RSS of the remote session, read over the link."""
        meter = self.host.meter
        if self._pgid is None or meter is None:
            return None, self._peak
        cpu, peak = meter.sample(self._pgid)
        if peak is not None:
            self._peak = max(self._peak or 0, peak)
        return cpu, self._peak

    # -- the log --------------------------------------------------------------------------

    def _mark_log(self, text: str) -> None:
        self._log.write(f"{log_note(text)}\n".encode())

    def _log_tail(self) -> str:
        return log_tail(self.spec.log_path)

    def _log_bytes(self, data: bytes) -> None:
        self._log.write(data)

    def _close_log(self) -> None:
        self._log.close()
