"""devices.host against the agent on the pty emulator: transfers, errors, garbage, reboots."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
import serial

from devices import DeviceLink, Emulator, JobKind, LinkLost, wire
from examples.devices.checksum import ChecksumRecognizer, expected_text


def _open(emu: Emulator) -> tuple[serial.Serial, DeviceLink]:
    port = serial.serial_for_url(emu.path, baudrate=emu.baud)
    link = DeviceLink(port, emu.baud)
    link.hello(time.monotonic() + 5)
    answer = link.run_job(
        JobKind.SETUP, wire.vocabulary_bytes(["yes", "no"]), 0, time.monotonic() + 5
    )
    assert answer.text == ""
    return port, link


@pytest.fixture
def fast_emu() -> Iterator[Emulator]:
    with Emulator(ChecksumRecognizer, baud=921600, seed=3) as emu:
        yield emu


def _item(link: DeviceLink, data: bytes) -> str | None:
    answer = link.run_job(JobKind.ITEM, data, 8000, time.monotonic() + 60)
    return answer.text


def test_handshake_reports_identity_and_capabilities(fast_emu: Emulator) -> None:
    port, link = _open(fast_emu)
    try:
        assert link.ready is not None
        assert (link.ready.name, link.ready.sample_rates) == ("checksum", (8000, 16000))
        assert link.ready.max_payload >= 64 and link.ready.window >= 1
        assert link.ping() is not None
    finally:
        port.close()


def test_items_arrive_intact(fast_emu: Emulator) -> None:
    port, link = _open(fast_emu)
    try:
        for size in (0, 2, 1000, 50_000):
            data = os.urandom(size)
            assert _item(link, data) == expected_text(data)
        assert link.counters.retransmitted_frames == 0
    finally:
        port.close()


def test_refused_sample_rate(fast_emu: Emulator) -> None:
    port, link = _open(fast_emu)
    try:
        answer = link.run_job(JobKind.ITEM, b"\x00\x00", 11025, time.monotonic() + 5)
        assert answer.error_code == wire.ErrorCode.UNSUPPORTED_RATE
    finally:
        port.close()


def test_garbage_on_the_line_is_survived(fast_emu: Emulator) -> None:
    port, link = _open(fast_emu)
    try:
        fast_emu.inject(b"\xde\xad" * 50 + b"\x00half a frame", to_host=True)
        fast_emu.inject(b"\x13\x37" * 50 + b"\x00\x05\x01\x02", to_host=False)
        data = os.urandom(20_000)
        assert _item(link, data) == expected_text(data)
        port.write(b"noise without end" * 20)
        assert _item(link, data) == expected_text(data)
    finally:
        port.close()


@pytest.mark.parametrize("rate", [1e-4, 1e-3])
def test_bit_errors_never_corrupt_a_result(rate: float) -> None:
    with Emulator(ChecksumRecognizer, baud=921600, bit_error_rate=rate, seed=11) as emu:
        port, link = _open(emu)
        try:
            for n in range(3):
                data = os.urandom(8_000 + 3_000 * n)
                assert _item(link, data) == expected_text(data)
            assert emu.stats().bits_flipped > 0
            assert link.counters.retransmitted_frames > 0
        finally:
            port.close()


def test_reboot_is_noticed() -> None:
    with Emulator(lambda: ChecksumRecognizer(sleep=3.0), baud=921600, boot_seconds=0.2) as emu:
        port, link = _open(emu)
        try:
            job = link.next_job()
            link.transfer(job, JobKind.ITEM, b"\x01\x00" * 100, 8000)
            emu.reboot()
            with pytest.raises(LinkLost):
                link.wait_answer(job, time.monotonic() + 10)
        finally:
            port.close()
