"""Systems on an embedded device at the end of a serial line (the "serial" transport).

The wire protocol is docs/device-protocol.md, spoken by devices.host. An item
is one recording sent as 16-bit PCM: the transfer is timed as the item's
stage_seconds, and the processing clock starts when the input had reached the
device (whatever frame then confirmed it; the attempt's ``clock_start`` names
it), or at the item's first byte if the device answered before its input could
have crossed the line. A device silent on its job is pinged: one that answers
PING is alive, and its silence ends as a timeout (its failure). Only a device
that answers nothing (or lost the job) has lost the link: it is reset (soft,
then hard), and one that lost its setup is given HELLO and SETUP again; either
way the attempt comes back with link_lost, spanning from the item's first byte
to the detection, so the controller can charge that time and send the item
again. A device that claims or answers the input before it could hold it is
invalid_output. An item asked to go whole input first (a hidden audit repeat) is sent
so that no first part of it can be rebuilt before its last frame, where the device
keeps DATA beyond a gap; the attempt says whether it went so. The device's settings
(``SerialDevice``) and the transport's registration are in runners/serial_device.py.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import serial
import soundfile as sf

from devices import wire
from devices.host import (
    DeviceLink,
    DeviceRefused,
    JobTimeout,
    LinkCounters,
    LinkInterrupted,
    LinkLost,
    ProtocolViolation,
)

from .base import ItemAttempt, ItemRequest, Outcome, Runner, StartError, StartInfo, SystemSpec
from .exchange import AttemptBuilder
from .serial_settings import SerialDevice
from .transport import settings_from

_RESET_PULSE_SECONDS = 0.1
_SOFT_RESET_SECONDS = 2.0


def read_pcm(path: Path) -> tuple[bytes, int]:
    """Mono 16-bit little-endian PCM and its sample rate; ValueError if not mono."""
    info = sf.info(str(path))
    if info.channels != 1:
        raise ValueError(f"{path.name} has {info.channels} channels; devices take mono")
    samples, rate = sf.read(str(path), dtype="<i2")
    return samples.tobytes(), int(rate)


class SerialRunner(Runner):
    """A participant's recognizer running on a device behind a serial port."""

    def __init__(self, spec: SystemSpec, options: Mapping[str, Any] | SerialDevice) -> None:
        self.spec = spec
        self.options = settings_from(SerialDevice, options)
        self.counters = LinkCounters()
        self._serial: Any = None
        self._link: DeviceLink | None = None
        self._emulator: subprocess.Popen[bytes] | None = None
        self._port_path = self.options.port
        self._ready: wire.Ready | None = None
        self._fresh = False  # the device was just reset and has no job
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> StartInfo:
        t0 = time.monotonic()
        setup_deadline = t0 + self.spec.setup_seconds
        try:
            link = self._open()
            ready = self._handshake(link, min(setup_deadline, t0 + self.options.boot_timeout))
            vocabulary = wire.vocabulary_bytes(self._vocabulary())
            answer = link.run_job(wire.JobKind.SETUP, vocabulary, 0, setup_deadline)
        except (LinkLost, TimeoutError, ProtocolViolation, OSError, serial.SerialException) as exc:
            self._log(f"start failed: {exc}")
            raise StartError(f"device on {self._port_path}: {exc}") from exc
        if answer.error is not None:
            raise StartError(f"device refused the setup: error {answer.error_code}: {answer.error}")
        self._fresh = False
        link.ping(timeout=1.0)
        self._log(f"ready: {ready.name} {ready.software}, boot {ready.boot_id:08x}")
        return StartInfo(ready.name, ready.software, answer.arrived - t0, self._pid())

    def _pid(self) -> int | None:
        return self._emulator.pid if self._emulator is not None else None

    def _open(self) -> DeviceLink:
        if self._link is not None:
            return self._link
        opts = self.options
        if (opts.emulate or opts.emulate_command) and self._emulator is None:
            self._port_path = self._start_emulator()
        try:
            handle = serial.serial_for_url(
                self._port_path, baudrate=opts.baud, timeout=0.02, write_timeout=10.0
            )
        except (serial.SerialException, ValueError) as exc:
            raise StartError(f"cannot open serial port {self._port_path}: {exc}") from exc
        self._serial = handle
        # The answer ceiling travels in HELLO (RESULT payload: 4 bytes of job and code + text).
        host_max = min(wire.MAX_PAYLOAD, self.spec.max_output_bytes + 4)
        self._link = DeviceLink(
            handle, opts.baud, opts.silence_seconds, opts.max_window, host_max_payload=host_max
        )
        self._link.counters = self.counters
        return self._link

    def _start_emulator(self) -> str:
        opts = self.options
        root = Path(__file__).resolve().parents[1]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.spec.workdir), str(root), env.get("PYTHONPATH", "")) if p
        )
        command = [
            sys.executable,
            "-m",
            "devices.emulator",
            *(
                ["--agent", opts.emulate]
                if opts.emulate
                else ["--command", shlex.join(opts.emulate_command)]
            ),
            "--baud",
            str(opts.baud),
            *opts.emulate_args,
        ]
        log = open(self.spec.log_path, "ab")
        try:
            proc = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.spec.workdir,
                env=env,
                start_new_session=True,
            )
        finally:
            log.close()
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        if not line:
            proc.kill()
            proc.wait()
            raise StartError(
                f"the emulator for {opts.emulate or shlex.join(opts.emulate_command)} did not "
                f"start; see {self.spec.log_path}"
            )
        self._emulator = proc
        return line

    def _handshake(self, link: DeviceLink, deadline: float) -> wire.Ready:
        """HELLO until READY; half-way through the boot timeout, a hard reset."""
        half = time.monotonic() + (deadline - time.monotonic()) / 2
        try:
            ready = link.hello(half)
        except LinkLost:
            # A device stuck in its own code ignores HELLO; the reset line does not.
            self._hard_reset()
            ready = link.hello(deadline)
        self._ready = ready
        return ready

    def _hard_reset(self) -> bool:
        """Pulse the reset line (or reboot the emulator); False if there is no way to."""
        if self._emulator is not None and self._emulator.poll() is None:
            self._emulator.send_signal(signal.SIGUSR1)
            self._log("hard reset (emulator)")
            return True
        line = self.options.reset
        if line == "none" or self._serial is None:
            return False
        try:
            setattr(self._serial, line, True)
            time.sleep(_RESET_PULSE_SECONDS)
            setattr(self._serial, line, False)
        except (OSError, serial.SerialException, ValueError) as exc:
            self._log(f"hard reset by {line.upper()} failed: {exc}")
            return False
        self._log(f"hard reset ({line.upper()})")
        return True

    def _vocabulary(self) -> list[str]:
        """The task's vocabulary file (a setup file), one command per line."""
        path = self.spec.setup_files.get("vocabulary")
        if path is None:
            return []
        text = Path(path).read_text(encoding="utf-8")
        return [line.strip() for line in text.splitlines() if line.strip()]

    # --- items -------------------------------------------------------------------------------

    def run_item(self, request: ItemRequest) -> ItemAttempt:
        link, ready = self._link, self._ready
        if link is None or ready is None:
            raise RuntimeError("run_item before start")
        t_stage = time.monotonic()
        before = self.counters.copy()
        # Measured again for this item: BEGIN's answer, then each PONG while it is processed.
        link.round_trip_seconds = None

        # A device never counts as lost unless the attempt says so (it is reset, not killed).
        build = AttemptBuilder(request.anon_id, t_stage, 0.0, lost_on_failure=False)
        # Asked for, whether the input goes whole first: only to a device that keeps DATA
        # beyond a gap (devices.host sends any other in order; the transfer then says
        # whether the device kept what it was sent). Said on every attempt, failed ones
        # too: the audit that compares a repeat with its first answer (harness/engine/audits.py)
        # fails a repeat that failed, wherever it failed.
        order_kw: dict[str, Any] = {}
        if request.whole_input_first:
            order_kw["whole_input_first"] = ready.selective

        def attempt(
            outcome: Outcome, sent: float, done: float, stage: float, **kw: Any
        ) -> ItemAttempt:
            # The clock starts only once the input is on the device, and the link's
            # counters and round trip are read as the attempt ends.
            counts = _describe(self.counters.since(before))
            message = "; ".join(m for m in (kw.pop("message", ""), counts) if m)
            return build(
                outcome,
                done,
                sent=sent,
                stage_seconds=stage,
                message=message,
                round_trip_seconds=link.round_trip_seconds,
                **order_kw,
                **kw,
            )

        try:
            pcm, rate = read_pcm(next(iter(request.files.values())))
        except (StopIteration, ValueError, RuntimeError, OSError) as exc:
            now = time.monotonic()
            return attempt("error", now, now, 0.0, message=f"cannot read the audio: {exc}")
        refusal = _refusal(ready, rate, len(pcm))
        if refusal:
            now = time.monotonic()
            return attempt("error", now, now, 0.0, message=refusal)
        job = link.next_job()
        self._fresh = False

        def first_byte(now: float) -> float:
            # Where an attempt that ends without a clock starts: the item's first byte on
            # the line, from when the device could have begun on it (never a shorter span).
            return now if link.job_first_byte is None else min(now, link.job_first_byte)

        try:
            transfer = link.transfer(
                job,
                wire.JobKind.ITEM,
                pcm,
                rate,
                request.hang_seconds,
                whole_input_first=request.whole_input_first,
            )
        except DeviceRefused as exc:
            now = time.monotonic()
            if exc.code == wire.ErrorCode.NOT_SET_UP:
                start = first_byte(now)
                return self._setup_lost(attempt, start, now, start - t_stage, str(exc))
            return attempt("error", now, now, now - t_stage, message=str(exc))
        except LinkInterrupted:
            now = time.monotonic()
            return attempt("crashed", now, now, now - t_stage, message="interrupted")
        except JobTimeout as exc:
            now = time.monotonic()
            since = min(now, exc.since)
            result = attempt(
                "timeout",
                since,
                now,
                since - t_stage,
                message=f"during transfer, hang_seconds={request.hang_seconds:g}: {exc}; reset",
                system_lost=True,
            )
            self.kill()
            return result
        except ProtocolViolation as exc:
            now = time.monotonic()
            start = first_byte(now)
            return attempt(
                "invalid_output", start, now, start - t_stage, message=f"protocol violation: {exc}"
            )
        except LinkLost as exc:
            now = time.monotonic()
            start = first_byte(now)
            return self._lost(attempt, start, now, start - t_stage, f"during transfer: {exc}")
        # The clock starts when the input had reached the device, not when COMPLETE said so
        # (or at the first byte, when the device answered before the input could cross).
        sent = transfer.clock_start
        stage_seconds = sent - t_stage
        if request.whole_input_first:
            order_kw["whole_input_first"] = transfer.whole_input_first
        clock_kw: dict[str, Any] = {"clock_start": transfer.clock_event}
        ping = self.options.ping_seconds if ready.ping_while_busy else None
        try:
            answer = link.wait_answer(job, sent + request.hang_seconds, ping)
        except TimeoutError as exc:
            now = time.monotonic()
            result = attempt(
                "timeout",
                sent,
                now,
                stage_seconds,
                message=f"no RESULT within hang_seconds={request.hang_seconds:g}: {exc}; reset",
                system_lost=True,
                **clock_kw,
            )
            self.kill()
            return result
        except LinkInterrupted:
            now = time.monotonic()
            return attempt("crashed", sent, now, stage_seconds, message="interrupted")
        except LinkLost as exc:
            now = time.monotonic()
            start = first_byte(now)
            return self._lost(attempt, start, now, start - t_stage, str(exc))
        sent, event, note = transfer.clock_for(answer.arrived)
        stage_seconds = sent - t_stage
        clock_kw = {"clock_start": event}
        if answer.invalid is not None:
            return attempt(
                "invalid_output",
                sent,
                answer.arrived,
                stage_seconds,
                message="; ".join(m for m in (answer.invalid, note) if m),
                **clock_kw,
            )
        if answer.error is not None:
            return attempt(
                "error",
                sent,
                answer.arrived,
                stage_seconds,
                message="; ".join(
                    m for m in (f"device error {answer.error_code}: {answer.error}", note) if m
                ),
                **clock_kw,
            )
        return attempt(
            "result",
            sent,
            answer.arrived,
            stage_seconds,
            output={"text": answer.text},
            message=note,
            **clock_kw,
        )

    def _setup_lost(
        self, attempt: Any, sent: float, done: float, stage: float, why: str
    ) -> ItemAttempt:
        """The device forgot its setup (a reboot whose READY was lost): the venue's failure.

        Handshake and SETUP again at once, and hand the item back as link_lost so
        the controller sends it again as the next attempt without judging it. The
        attempt spans from the item's first byte to the refusal.
        """
        self._log(f"the device lost its setup ({why}); HELLO and SETUP again")
        result = attempt(
            "crashed",
            sent,
            done,
            stage,
            message=f"link lost: the device lost its setup ({why}); handshake repeated",
            link_lost=True,
        )
        link = self._link
        try:
            assert link is not None
            deadline = time.monotonic() + self.options.boot_timeout
            self._ready = link.hello(deadline)
            vocabulary = wire.vocabulary_bytes(self._vocabulary())
            deadline = time.monotonic() + self.spec.setup_seconds
            answer = link.run_job(wire.JobKind.SETUP, vocabulary, 0, deadline)
            if answer.error is not None:
                raise LinkLost(f"SETUP refused: error {answer.error_code}: {answer.error}")
        except (LinkLost, LinkInterrupted, TimeoutError, OSError, serial.SerialException) as exc:
            # No session now: let the controller restart the system the usual way.
            self._log(f"handshake after a lost setup failed: {exc}")
            self._reset_device()
            return replace(result, system_lost=True)
        return result

    def _lost(self, attempt: Any, sent: float, done: float, stage: float, why: str) -> ItemAttempt:
        """The device stopped answering: reset it (soft, then hard) and report the link lost."""
        result = attempt(
            "crashed",
            sent,
            done,
            stage,
            message=f"link lost: {why}",
            link_lost=True,
            system_lost=True,
        )
        self._log(f"link lost: {why}")
        self._reset_device()
        return result

    def _reset_device(self) -> None:
        link = self._link
        if link is None:
            return
        try:
            link.hello(time.monotonic() + _SOFT_RESET_SECONDS, reset=True)
            self._fresh = True
            return
        except (LinkLost, LinkInterrupted, OSError, serial.SerialException):
            pass
        if self._hard_reset():
            with contextlib.suppress(LinkLost, LinkInterrupted, OSError, serial.SerialException):
                link.hello(time.monotonic() + self.options.boot_timeout)
                self._fresh = True

    # --- stopping ----------------------------------------------------------------------------

    def kill(self) -> None:
        """Abandon the device's job at once (RESET, no wait); the port stays open."""
        link = self._link
        if link is not None and not self._fresh:
            with contextlib.suppress(OSError, serial.SerialException, ValueError):
                link.send(wire.FrameType.RESET, flush=True)
            self._fresh = True
        self._ready = None

    def interrupt(self) -> None:
        link = self._link
        if link is not None:
            link.interrupt()

    def restart(self) -> StartInfo:
        self.kill()
        return self.start()

    def stop(self) -> None:
        self.kill()
        if self._serial is not None:
            with contextlib.suppress(Exception):
                self._serial.close()
        self._serial = None
        self._link = None
        proc = self._emulator
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            self._emulator = None

    def _log(self, text: str) -> None:
        with open(self.spec.log_path, "a", encoding="utf-8") as log:
            log.write(f"--- onsite: serial {text} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")


def _refusal(ready: wire.Ready, rate: int, length: int) -> str | None:
    if rate not in ready.sample_rates:
        return f"the device accepts {list(ready.sample_rates)} Hz, the item is {rate} Hz"
    if length > ready.max_input:
        return f"the item has {length} bytes of PCM, the device takes at most {ready.max_input}"
    return None


def _describe(counts: LinkCounters) -> str:
    """Retransmission counts for the attempt's message; empty on a clean line."""
    parts: Sequence[tuple[int, str]] = (
        (counts.retransmitted_frames, "retransmitted frames"),
        (counts.naks, "NAKs"),
        (counts.timeouts, "retransmission timeouts"),
        (counts.bad_frames, "corrupt frames received"),
    )
    text = ", ".join(f"{n} {label}" for n, label in parts if n)
    return f"link: {text}" if text else ""
