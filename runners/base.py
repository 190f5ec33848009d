"""The Runner interface every transport implements, and the values it passes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Mode = Literal["serve", "exec"]
Outcome = Literal["result", "error", "timeout", "crashed", "invalid_output"]


class StartError(RuntimeError):
    """A system could not be started or did not complete its handshake."""


class DeviceUnreachable(StartError):
    """The device did not answer at all (nothing to start the system on): the venue's failure.

    Unlike other start errors it says nothing about the participant's system; the
    controller waits for the device with backoff instead of counting a start try.
    """


@dataclass(frozen=True)
class Sandbox:
    """How a local system is sealed off from the run (docs/security.md).

    ``enabled`` False runs the system unsealed (the report marks it). ``network`` opens
    the network, closed by default. ``hidden`` are paths that must not exist inside even
    when they lie under a directory the sandbox shows (the run directory, every run under
    the runs directory, the test sets, site files, key files): an empty tmpfs covers them.

    When the controller is root the system runs as ``user`` (a named account, never root)
    or, when ``user`` is None, as ``uid``: a number of its own no account uses, so that no
    two systems share a user (signals, process counts). ``memory_bytes`` and
    ``max_processes`` are the system's own limits, kept by a control group of its own
    where the controller can make one (else RLIMIT_AS and RLIMIT_NPROC);
    ``scratch_bytes`` is the size of each of its writable RAM file systems (HOME, TMPDIR
    and /onsite/out share one, /tmp and /dev/shm are the others).
    """

    enabled: bool = True
    network: bool = False
    user: str | None = None
    uid: int | None = None
    hidden: tuple[Path, ...] = ()
    max_processes: int = 1024
    memory_bytes: int | None = 4 << 30
    scratch_bytes: int = 1 << 30


# Default ceilings; task kinds and devices may set their own.
DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
DEFAULT_MAX_LOG_BYTES = 50 << 20
# A file a system writes for an item (tts audio) is larger than an answer line; a remote
# runner refuses to fetch one above this (docs/ssh.md).
DEFAULT_MAX_OUTPUT_FILE_BYTES = 64 << 20


@dataclass(frozen=True)
class SystemSpec:
    """How to start one participant system for one task."""

    name: str
    task: str
    kind: str
    mode: Mode
    command: tuple[str, ...]
    workdir: Path
    log_path: Path
    stage_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    setup_seconds: float = 120.0
    # Files the system receives once, in hello, before any item (e.g. a face gallery to enrol):
    # name -> file. They are staged under anonymous names; the names are not secret.
    setup_files: Mapping[str, Path] = field(default_factory=dict)
    sandbox: Sandbox = field(default_factory=Sandbox)
    # An answer larger than this is invalid_output (an answer line, or exec mode's output file).
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    # The system's stderr log keeps its head and tail within this size, noting the cut.
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    # A file the system writes for an item (ItemRequest.outputs) larger than this is
    # invalid_output: a remote runner stops fetching it there.
    max_output_file_bytes: int = DEFAULT_MAX_OUTPUT_FILE_BYTES


@dataclass(frozen=True)
class StartInfo:
    """What the handshake told us: the system's own name and version, and its setup time."""

    name: str
    version: str
    setup_seconds: float
    pid: int | None


@dataclass(frozen=True)
class ItemRequest:
    """One item to send: files to stage under anonymous names plus plain input fields.

    ``outputs`` names files the system writes for the item (tts audio): input field ->
    file suffix. The runner picks a path for each where the system can write, gives it
    to the system in that field, and brings the file to the controller's side
    (ItemAttempt.output_files).

    ``whole_input_first``: the system must not be able to make use of any part of the
    input before it holds all of it (hidden audit repeats, harness/engine/audits.py). The
    serial runner sends the DATA frames in an order from which no first part of the
    input can be rebuilt before the last one (docs/device-protocol.md section 6) and
    says in ItemAttempt.whole_input_first whether it could. The local and SSH runners
    do nothing for it: they send the item once its file is staged whole (an SSH
    participant's own machine could still watch the upload; this does not stop it).
    """

    anon_id: str
    files: Mapping[str, Path]
    fields: Mapping[str, Any]
    hang_seconds: float
    outputs: Mapping[str, str] = field(default_factory=dict)
    whole_input_first: bool = False


@dataclass(frozen=True)
class OutputFile:
    """A file a system wrote for one item: where the controller reads it after the answer
    (``host``), and the path the system was told (``seen``: the same for an unsealed local
    system, a path inside the sandbox or on the remote machine otherwise)."""

    host: Path
    seen: str


@dataclass(frozen=True)
class ItemAttempt:
    """What happened when one item was sent once, timed on the controller's monotonic clock."""

    anon_id: str
    outcome: Outcome
    sent: float
    done: float
    stage_seconds: float
    output: Mapping[str, Any] | None = None
    message: str = ""
    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    round_trip_seconds: float | None = None
    # The runner killed the system (timeout, crash, stream out of step): restart it.
    system_lost: bool = False
    # The link to the device failed, not the system: the item is run again, not judged.
    link_lost: bool = False
    # What starting the item's process cost, from the request to the program's start, as
    # far as the runner can see it (exec mode); part of ``seconds``, shown apart.
    spawn_seconds: float | None = None
    # Serial devices: the frame that confirmed the input had arrived, which started the
    # processing clock ("complete", "ack" or "answer"); None for other runners.
    clock_start: str | None = None
    # The files of ItemRequest.outputs, per input field, on the controller's side after a
    # "result" (the file may be missing there if the system wrote none). The controller
    # removes them once it has kept what it wants.
    output_files: Mapping[str, OutputFile] = field(default_factory=dict)
    # Remote runners: what bringing the output files back cost, after ``done`` (the
    # venue's transfer, like staging, and not part of ``seconds``).
    fetch_seconds: float | None = None
    # ItemRequest.whole_input_first asked of a runner that sends the input piece by piece
    # (serial): True when it went so that no first part could be rebuilt before its last
    # piece, False when the device could not be sent it so (it takes DATA only in order,
    # or dropped what came out of order). None when not asked, or when the runner stages
    # the input whole anyway.
    whole_input_first: bool | None = None

    @property
    def seconds(self) -> float:
        """Processing time: from the request leaving the controller to the answer arriving."""
        return self.done - self.sent


class Runner(ABC):
    """Controller side of one transport: start a system, feed it items, stop it.

    A runner never judges budgets; it reports what happened and when. The
    controller turns that into verdicts.
    """

    spec: SystemSpec

    @abstractmethod
    def start(self) -> StartInfo:
        """Start the system and complete the handshake, or raise StartError."""

    @abstractmethod
    def run_item(self, request: ItemRequest) -> ItemAttempt:
        """Stage the inputs, send one item and wait for its answer within request.hang_seconds.

        On timeout the system is killed with all its children before this returns.
        """

    @abstractmethod
    def stop(self) -> None:
        """Say bye, give the system a moment to exit, then kill whatever is left."""

    @abstractmethod
    def kill(self) -> None:
        """Kill the system and every process it started, at once."""

    def interrupt(self) -> None:
        """Kill the system from another thread; the thread in run_item then returns.

        Unlike kill(), this leaves the runner's own streams for that thread to
        close, so it never pulls a descriptor out from under a read.
        """
        self.kill()

    def restart(self) -> StartInfo:
        """Kill whatever is left of the system and start it again."""
        self.kill()
        return self.start()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
