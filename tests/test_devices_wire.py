"""The serial wire format: COBS, frames, CRC, resynchronisation, payload layouts."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest

from devices import wire


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\x00\x00", b"\x11\x22\x00\x33", bytes(range(1, 255)), bytes(range(1, 256))]
    + [bytes([1]) * n for n in (253, 254, 255, 508, 509)],
)
def test_cobs_round_trip_and_no_zero(data: bytes) -> None:
    encoded = wire.cobs_encode(data)
    assert 0 not in encoded
    assert wire.cobs_decode(encoded) == data


def test_cobs_random() -> None:
    rng = random.Random(7)
    for _ in range(300):
        data = bytes(rng.choice([0, 0, 1, 2, 255]) for _ in range(rng.randrange(0, 700)))
        assert wire.cobs_decode(wire.cobs_encode(data)) == data


def test_frame_round_trip_and_crc() -> None:
    encoded = wire.encode_frame(wire.FrameType.DATA, 7, wire.pack_data(3, 1024, b"abc"), ack=5)
    assert encoded.endswith(b"\x00") and 0 not in encoded[:-1]
    frame = wire.decode_frame(encoded[:-1])
    assert (frame.type, frame.seq, frame.ack) == (wire.FrameType.DATA, 7, 5)
    assert wire.unpack_data(frame.payload) == (3, 1024, b"abc")
    body = wire.cobs_decode(encoded[:-1])
    assert int.from_bytes(body[-4:], "little") == zlib.crc32(body[:-4])
    corrupt = bytearray(encoded[:-1])
    corrupt[5] ^= 0x04
    with pytest.raises(wire.WireError):
        wire.decode_frame(bytes(corrupt).replace(b"\x00", b"\x01"))


def test_decoder_resynchronises_after_garbage_and_partial_frames() -> None:
    good = [wire.encode_frame(wire.FrameType.PING, n, b"x" * n) for n in range(5)]
    # A sender starts with 0x00 after idle, so a banner costs nothing but itself.
    stream = b"boot banner\r\n\x00" + good[0] + good[1][:7] + good[2] + b"\xff" * 40 + b"\x00"
    stream += good[3] + good[4]
    decoder = wire.FrameDecoder()
    frames = []
    for i in range(0, len(stream), 3):  # arrives in pieces
        frames += list(decoder.feed(stream[i : i + 3]))
    # good[1] was cut and runs into good[2]: both lost, nothing else.
    assert [f.seq for f in frames] == [0, 3, 4]
    assert decoder.bad == 3


def test_decoder_bounds_a_line_without_delimiters() -> None:
    decoder = wire.FrameDecoder(max_encoded=100)
    assert list(decoder.feed(b"\x01" * 1000)) == []
    frame = wire.encode_frame(wire.FrameType.PING, 9)
    assert [f.seq for f in decoder.feed(b"\x00" + frame)] == [9]


def test_ready_layout() -> None:
    ready = wire.Ready(1, 1, 1024, 8, 0xDEADBEEF, 1 << 20, (8000, 16000), "dev", "1.0")
    assert wire.Ready.unpack(ready.pack()) == ready
    begin = wire.Begin(1, wire.JobKind.ITEM, 8000, 32000, 0x12345678)
    assert wire.Begin.unpack(begin.pack()) == begin
    assert len(begin.pack()) == 16


def test_documented_hex_examples() -> None:
    """The hex dumps in docs/device-protocol.md are what the code produces."""
    hello = wire.encode_frame(wire.FrameType.HELLO, 0, wire.Hello(1, 4096).pack())
    assert hello.hex(" ") == "02 01 01 01 04 ff ff 04 02 01 01 06 10 c1 f3 97 6a 00"
    ping = wire.encode_frame(wire.FrameType.PING, 0x0102, b"", ack=0xFFFF)
    assert ping.hex(" ") == wire.encode_frame(0x20, 0x0102).hex(" ")


def _section_9_frames() -> list[tuple[bytes, bytes]]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "device-protocol.md").read_text()
    section = text[text.index("## 9.") : text.index("## 10.")]
    frames = []
    for block in section.split("```")[1::2]:
        parts = block.split("wire:")
        raw = bytes.fromhex(parts[0].replace("raw :", ""))
        frames.append((raw, bytes.fromhex(parts[1])))
    return frames


def test_section_9_is_a_session_that_follows_sections_5_and_6() -> None:
    frames = _section_9_frames()
    decoded = []
    for raw, encoded in frames:
        assert encoded.endswith(b"\x00") and wire.cobs_decode(encoded[:-1]) == raw
        decoded.append(wire.decode_frame(encoded[:-1]))
    host = [f for f in decoded if f.type in (0x01, 0x10, 0x11, 0x17)]
    device = [f for f in decoded if f not in host]
    # Each side counts its own frames from 0; the host never acknowledges.
    assert [f.seq for f in host] == list(range(len(host)))
    assert [f.seq for f in device] == list(range(len(device)))
    assert all(f.ack == wire.NO_ACK for f in host)
    # The boot READY is unsolicited; every later device frame answers the host's last frame.
    names = [wire.FrameType(f.type).name for f in decoded]
    assert names == [
        "READY", "HELLO", "READY", "BEGIN", "ACK", "DATA", "COMPLETE", "RESULT", "RESULT_ACK",
        "BEGIN", "ACK", "DATA", "COMPLETE", "RESULT", "RESULT_ACK",
    ]  # fmt: skip
    last_host = wire.NO_ACK
    for f in decoded:
        if f in host:
            last_host = f.seq
        else:
            assert f.ack == last_host
    # SETUP before ITEM, with an ACK(j, 0) after each BEGIN.
    assert wire.Begin.unpack(decoded[3].payload).kind == wire.JobKind.SETUP
    assert wire.Begin.unpack(decoded[9].payload).kind == wire.JobKind.ITEM
    assert wire.unpack_job_offset(decoded[4].payload) == (1, 0)
    assert wire.unpack_job_offset(decoded[10].payload) == (2, 0)
    assert wire.unpack_result(decoded[13].payload) == (2, "stop")


def test_section_9_is_what_the_reference_agent_writes() -> None:
    """Every example in section 9 is generated from the code (devices.protocol_examples)."""
    from devices.protocol_examples import render

    doc = (Path(__file__).resolve().parents[1] / "docs" / "device-protocol.md").read_text()
    section = doc[doc.index("## 9. Examples") : doc.index("## 10.")]
    assert render() in section
    # READY flag bit 1: no DATA read since BEGIN names 0xFFFF in `previous` (section 6).
    frames = _section_9_frames()
    for n in (4, 10):
        ack = wire.decode_frame(frames[n][1][:-1])
        assert wire.unpack_previous(ack.payload) == wire.NO_ACK
