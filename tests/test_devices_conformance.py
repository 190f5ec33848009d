"""The conformance kit: the demo agent passes every clause; each injected defect fails its own.

A correct device passes every clause every time, however the bytes are cut on
the way (tests/pacing_proxy.py splits, delays and coalesces them as UARTs and
USB adapters do); each mutant device, breaking one rule, fails a clause that
names that rule's section.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tty
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import serial

from devices import AgentSettings, Emulator
from devices.conformance import CLAUSES, ClauseResult, run_conformance
from examples.devices.checksum import ChecksumRecognizer
from tests import device_faults as faults
from tests.helpers import onsite
from tests.pacing_proxy import PacingProxy

pytestmark = pytest.mark.emulator

BAUD = 921600
RUNS = 20
ROOT = Path(__file__).resolve().parents[1]


def _failures(results: list[ClauseResult]) -> list[str]:
    return [f"§{r.section} {r.clause}: {r.detail}" for r in results if not r.passed]


def _series_behind_proxy(device_fd: int, first_seed: int) -> list[str]:
    """RUNS whole kit runs, each behind a new pacing proxy; every failure, by run."""
    failed = []
    for run in range(RUNS):
        with PacingProxy(device_fd, seed=first_seed + run) as proxy:
            results = run_conformance(proxy.path, BAUD, item_seconds=5.0)
        if len(results) != len(CLAUSES):
            failed.append(f"run {run}: {len(results)} results")
        failed += [f"run {run}: {x}" for x in _failures(results)]
    return failed


def _emulator_series() -> list[str]:
    with Emulator(ChecksumRecognizer, baud=BAUD, seed=5) as emu:
        fd = os.open(emu.path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd)
        try:
            return _series_behind_proxy(fd, 100)
        finally:
            os.close(fd)


def _agent_series() -> list[str]:
    """The Python agent (python -m devices.agent) on a pty of its own, no line model."""
    master, slave = os.openpty()
    tty.setraw(slave)
    agent = subprocess.Popen(
        [sys.executable, "-m", "devices.agent", "--agent", "examples.devices.checksum"]
        + ["--port", os.ttyname(slave), "--baud", str(BAUD)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        time.sleep(1.0)  # its boot READY goes nowhere; the kit's HELLO starts every clause
        return _series_behind_proxy(master, 200)
    finally:
        agent.kill()
        agent.wait()
        for fd in (master, slave):
            os.close(fd)


def test_a_correct_device_passes_every_run_behind_a_pacing_proxy() -> None:
    """20 of 20 for the emulator and for the agent, with reads cut anywhere (1 B to 4 KiB)."""
    with ThreadPoolExecutor(2) as pool:
        emulated = pool.submit(_emulator_series)
        agent = pool.submit(_agent_series)
        failures = {"emulator": emulated.result(), "agent": agent.result()}
    assert failures == {"emulator": [], "agent": []}


def test_the_demo_agent_passes_every_clause() -> None:
    with Emulator("examples.devices.sphinx_command", baud=BAUD) as emu:
        proc = onsite("devices", "conformance", emu.path, "--baud", str(BAUD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CLAUSES)} of {len(CLAUSES)} clauses pass" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_a_device_without_flag_bits_1_and_2_passes_every_clause() -> None:
    """A go-back-N, revision-3 device: the clauses of flags it does not advertise pass."""
    settings = AgentSettings(baud=BAUD, selective=False, names_completing_copy=False)
    with Emulator(ChecksumRecognizer, baud=BAUD, settings=settings) as emu:
        results = run_conformance(emu.path, BAUD, item_seconds=5.0)
    assert _failures(results) == [] and len(results) == len(CLAUSES)
    details = {r.clause: r.detail for r in results}
    assert "not advertised" in details[next(c for _, c, _ in CLAUSES if "flag bit 2" in c)]


@pytest.mark.parametrize(
    ("core", "section", "clause"),
    [
        (faults.AckInsteadOfComplete, "6", "COMPLETE(j, T)"),
        (faults.AcksGaps, "6", "a gap is answered with NAK"),
        (faults.SilentOnCorruptFrames, "6", "a corrupt DATA while receiving"),
        (faults.RestartsOnRepeatedBegin, "6", "a repeated BEGIN"),
        (faults.WrongIdleJob, "4", "PING while idle"),
        (faults.NeverRepeats, "5.5", "the answer is repeated until RESULT_ACK"),
        (faults.KeepsSetupOnReset, "5.2", "RESET abandons the job and the setup"),
        (faults.PreviousAlwaysZero, "6", "previous names the DATA"),
        (faults.PreviousCountsEveryData, "6", "previous names the DATA"),
        (faults.DropsDataBeyondGap, "6", "DATA beyond a gap is kept"),
        (faults.RepeatsForever, "5.5", "sent 30 times"),
        (faults.GivesUpAfterTen, "5.5", "sent 30 times"),
        (faults.PongNamesAbandonedJob, "4", "sent 30 times"),
        (faults.CompletesRefusedData, "5.5", "a refused job's ERROR is repeated"),
        (faults.NamesLatestCopy, "7", "name the completing copy"),
    ],
)
def test_each_defect_fails_its_clause(core: Any, section: str, clause: str) -> None:
    with Emulator(ChecksumRecognizer, baud=BAUD, core=core, seed=2) as emu:
        results = run_conformance(emu.path, BAUD, item_seconds=5.0)
    failed = [r for r in results if not r.passed]
    assert failed, "the defect went unnoticed"
    assert any(clause in r.clause and r.section == section for r in failed), _failures(results)


def test_the_command_names_the_failed_clause_and_its_section() -> None:
    with Emulator(ChecksumRecognizer, baud=BAUD, core=faults.AcksGaps) as emu:
        proc = onsite("devices", "conformance", emu.path, "--baud", str(BAUD))
    assert proc.returncode == 1
    line = next(x for x in proc.stdout.splitlines() if "FAIL" in x)
    assert "§6" in line and "gap" in line


def test_a_silent_port_fails_at_the_handshake(tmp_path: Any) -> None:
    results = run_conformance(str(tmp_path / "nothing"), BAUD)
    assert len(results) == 1 and not results[0].passed


def test_drain_keeps_a_frame_cut_by_a_read_from_gluing_to_the_next() -> None:
    """A read cut a frame in two; drain() reads its rest: the next frame still decodes."""
    from devices import wire
    from devices.conformance import _Peer

    master, slave = os.openpty()
    tty.setraw(slave)
    port = serial.serial_for_url(os.ttyname(slave), baudrate=BAUD, timeout=0.02)
    try:
        peer = _Peer(port, BAUD, 1.0)
        answer = wire.encode_frame(wire.FrameType.RESULT, 1, wire.pack_result(1, "x" * 40))
        os.write(master, answer[:20])
        assert list(peer.frames(0.1)) == []  # the first part waits in the decoder
        os.write(master, answer[20:])
        time.sleep(0.05)
        peer.drain()
        os.write(master, wire.encode_frame(wire.FrameType.PONG, 2, wire.pack_pong(0, 1, b"")))
        frame = peer.expect("PONG", lambda f: f.type == wire.FrameType.PONG, seconds=1.0)
        assert frame.seq == 2
    finally:
        port.close()
        os.close(master)
        os.close(slave)
