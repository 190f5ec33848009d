"""The conformance kit: the demo agent passes every clause; each injected defect fails its own."""

from __future__ import annotations

from typing import Any

import pytest

from devices import Emulator
from devices.conformance import CLAUSES, run_conformance
from examples.devices.checksum import ChecksumRecognizer
from tests import device_faults as faults
from tests.helpers import onsite

BAUD = 921600


def test_the_demo_agent_passes_every_clause() -> None:
    with Emulator("examples.devices.sphinx_command", baud=BAUD) as emu:
        proc = onsite("devices", "conformance", emu.path, "--baud", str(BAUD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CLAUSES)} of {len(CLAUSES)} clauses pass" in proc.stdout
    assert "FAIL" not in proc.stdout


@pytest.mark.parametrize(
    ("core", "clause"),
    [
        (faults.AckInsteadOfComplete, "COMPLETE(j, T)"),
        (faults.AcksGaps, "a gap is answered with NAK"),
        (faults.SilentOnCorruptFrames, "a corrupt DATA while receiving"),
        (faults.RestartsOnRepeatedBegin, "a repeated BEGIN"),
        (faults.WrongIdleJob, "PING while idle"),
        (faults.NeverRepeats, "the answer is repeated until RESULT_ACK"),
        (faults.KeepsSetupOnReset, "RESET abandons the job and the setup"),
    ],
)
def test_each_defect_fails_its_clause(core: Any, clause: str) -> None:
    with Emulator(ChecksumRecognizer, baud=BAUD, core=core, seed=2) as emu:
        results = run_conformance(emu.path, BAUD, item_seconds=5.0)
    failed = [r for r in results if not r.passed]
    assert failed, "the defect went unnoticed"
    assert any(clause in r.clause for r in failed), [(r.clause, r.detail) for r in failed]


def test_the_command_names_the_failed_clause_and_its_section() -> None:
    with Emulator(ChecksumRecognizer, baud=BAUD, core=faults.AcksGaps) as emu:
        proc = onsite("devices", "conformance", emu.path, "--baud", str(BAUD))
    assert proc.returncode == 1
    line = next(x for x in proc.stdout.splitlines() if "FAIL" in x)
    assert "§6" in line and "gap" in line


def test_a_silent_port_fails_at_the_handshake(tmp_path: Any) -> None:
    results = run_conformance(str(tmp_path / "nothing"), BAUD)
    assert len(results) == 1 and not results[0].passed
