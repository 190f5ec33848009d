"""Timing faults between the host's line model and the line: a stalled emulator, a line
faster than the model, an answer waiting when a timer runs out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from devices import DeviceLink, JobKind, wire
from devices.emulator import Emulator
from examples.devices.checksum import ChecksumRecognizer, expected_text

ROOT = Path(__file__).resolve().parents[1]


def _line(nbytes: int, baud: int) -> float:
    return nbytes * 10 / baud


@pytest.fixture
def emulator_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The emulator in a process of its own, so that the test can stop it like a stalled one."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "devices.emulator", "--agent", "examples.devices.checksum"]
        + ["--baud", "9600", "--seed", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        path = proc.stdout.readline().strip()
        assert path.startswith("/dev/"), path
        yield proc, path
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)


def test_a_stalled_line_never_sends_faster_than_its_baud_afterwards(
    emulator_process: tuple[subprocess.Popen[str], str],
) -> None:
    proc, path = emulator_process
    baud = 9600
    port = serial.serial_for_url(path, baudrate=baud)
    try:
        link = DeviceLink(port, baud)
        link.hello(time.monotonic() + 30)
        # The line is busy with 100 bytes (104 ms) when the emulator stops for 300 ms.
        port.write(b"\x55" * 99 + wire.DELIMITER)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        # Written while it was stopped: these bytes cannot start before they were written,
        # however far behind its schedule the line's thread wakes up.
        padding = b"\x55" * 95 + wire.DELIMITER
        port.write(padding)
        written = time.monotonic()
        proc.send_signal(signal.SIGCONT)
        rtt = link.ping(timeout=5.0)
        assert rtt is not None
        pong = wire.encoded_size(len(wire.pack_pong(0, 0, b"onsite")))
        floor = _line(len(padding) + wire.encoded_size(6) + pong, baud)
        # The PING went right after the padding; its PONG came back no sooner than the
        # three could cross at 9600 baud (a line catching up in a burst answers far sooner).
        assert time.monotonic() - written >= floor - 0.002
    finally:
        port.close()


def test_an_answer_waiting_in_the_port_is_read_after_the_deadline() -> None:
    port = serial.serial_for_url("loop://", timeout=0.02)
    link = DeviceLink(port, 115200)
    port.write(wire.encode_frame(wire.FrameType.PONG, 7, wire.pack_pong(0, 0, b"")))
    time.sleep(0.05)
    frame = link.receive(time.monotonic() - 1.0)
    assert frame is not None and frame.type == wire.FrameType.PONG
    assert link.receive(time.monotonic() - 1.0) is None


def test_a_deadline_shorter_than_the_poll_is_kept() -> None:
    with Emulator(ChecksumRecognizer, baud=115200, seed=2) as emu:
        port = serial.serial_for_url(emu.path, baudrate=emu.baud)
        try:
            link = DeviceLink(port, emu.baud)
            link.hello(time.monotonic() + 10)
            # A second READY (HELLO was sent again while the device booted) may follow.
            while link.receive(time.monotonic() + 0.3) is not None:
                pass
            waits = []
            for _ in range(50):
                start = time.monotonic()
                if link.receive(start + 0.001) is None:
                    waits.append(time.monotonic() - start)
            # The port's own timeout is 20 ms, which a read waits in full when nothing comes.
            assert min(waits) < 0.018
        finally:
            port.close()


def test_a_line_model_ahead_of_the_line_never_credits_the_device() -> None:
    # The host believes 9600 baud, the line runs at 115200: its model says the input
    # arrives a second after it really does. The clock must still not start later
    # than the device's COMPLETE began to cross: COMPLETE came before the input could
    # have crossed at 9600 baud, so the clock runs from the item's first byte, and
    # the note says to check the baud rate (the device is charged the real line time
    # of the input, never credited).
    sleep = 0.3
    with Emulator(lambda: ChecksumRecognizer(sleep=sleep), baud=115200, seed=4) as emu:
        port = serial.serial_for_url(emu.path, baudrate=emu.baud)
        try:
            link = DeviceLink(port, 9600)
            link.hello(time.monotonic() + 10)
            link.run_job(JobKind.SETUP, wire.vocabulary_bytes(["a"]), 0, time.monotonic() + 10)
            data = os.urandom(1200)
            job = link.next_job()
            transfer = link.transfer(job, JobKind.ITEM, data, 8000)
            complete = wire.encoded_size(8) * 10 / 9600
            assert transfer.clock_event == "first_byte"
            assert transfer.clock_start == transfer.first_byte
            assert transfer.clock_start <= transfer.complete_at - complete + 1e-6
            assert "baud" in transfer.note
            answer = link.wait_answer(job, time.monotonic() + 10, None)
            assert answer.text == expected_text(data)
            # Read whole no sooner than the recognizer's sleep after the clock's start.
            result = wire.encoded_size(len(wire.pack_result(job, answer.text)))
            assert answer.arrived + result * 10 / 9600 - transfer.clock_start >= sleep
        finally:
            port.close()
