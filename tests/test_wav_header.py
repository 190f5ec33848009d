"""harness.testsets.audio_info: plain WAV headers read without libsndfile, the same answer.

Every file here is also read by soundfile (libsndfile), whose answer (channels, rate,
frames, or an error) is what counts: the header reader must agree with it on the files it
reads itself and leave every other file to it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness.testsets import _plain_wav_info, audio_info, load_asr_testset


def _libsndfile(path: Path) -> tuple[int, int, int] | str:
    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        return f"error: {exc}"
    return info.channels, info.samplerate, info.frames


def _ours(path: Path) -> tuple[int, int, int] | str:
    try:
        info = audio_info(path)
    except ValueError as exc:
        return f"error: {exc}"
    return info.channels, info.samplerate, info.frames


def _wav(path: Path, frames: int, channels: int, rate: int, subtype: str) -> Path:
    data = np.zeros((frames, channels), dtype=np.float32)
    soundfile.write(str(path), data, rate, subtype=subtype, format="WAV")
    return path


@pytest.mark.parametrize(
    "subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE", "ULAW", "ALAW"]
)
@pytest.mark.parametrize("channels", [1, 2, 3])
@pytest.mark.parametrize("frames", [0, 1, 7, 16000])
def test_written_wavs_agree_with_libsndfile(
    tmp_path: Path, subtype: str, channels: int, frames: int
) -> None:
    path = _wav(tmp_path / "a.wav", frames, channels, 16000, subtype)
    assert _ours(path) == _libsndfile(path)


@pytest.mark.parametrize("rate", [8000, 11025, 44100, 48000, 96000])
def test_sample_rates_agree(tmp_path: Path, rate: int) -> None:
    path = _wav(tmp_path / "a.wav", 1234, 1, rate, "PCM_16")
    assert _plain_wav_info(path) is not None
    assert _ours(path) == _libsndfile(path) == (1, rate, 1234)


def _riff(*chunks: tuple[bytes, bytes], size_delta: int = 0) -> bytes:
    body = b"WAVE"
    for name, data in chunks:
        body += name + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body) + size_delta) + body


def _fmt(
    tag: int = 1, channels: int = 1, rate: int = 16000, bits: int = 16, align: int = 0
) -> tuple[bytes, bytes]:
    align = align or channels * bits // 8
    return b"fmt ", struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)


ODD_FILES = {
    "plain": _riff(_fmt(), (b"data", b"\0" * 200)),
    "list chunk before data": _riff(
        _fmt(), (b"LIST", b"INFOISFT\x05\0\0\0abcd\0"), (b"data", b"\0" * 20)
    ),
    "odd chunk padded": _riff(_fmt(), (b"junk", b"abc"), (b"data", b"\0" * 20)),
    "chunk after data": _riff(_fmt(), (b"data", b"\0" * 20), (b"LIST", b"INFO")),
    "data before fmt": _riff((b"data", b"\0" * 20), _fmt()),
    "no data chunk": _riff(_fmt()),
    "no fmt chunk": _riff((b"data", b"\0" * 20)),
    "odd data length": _riff(_fmt(), (b"data", b"\0" * 21)),
    "wrong block align": _riff(_fmt(align=4), (b"data", b"\0" * 20)),
    "zero channels": _riff(_fmt(channels=0, align=2), (b"data", b"\0" * 20)),
    "zero rate": _riff(_fmt(rate=0), (b"data", b"\0" * 20)),
    "12-bit pcm": _riff(_fmt(bits=12, align=2), (b"data", b"\0" * 20)),
    "adpcm tag": _riff(_fmt(tag=2), (b"data", b"\0" * 20)),
    "extensible tag": _riff(_fmt(tag=0xFFFE), (b"data", b"\0" * 20)),
    "riff size too small": _riff(_fmt(), (b"data", b"\0" * 20), size_delta=-10),
    "riff size too large": _riff(_fmt(), (b"data", b"\0" * 20), size_delta=1000),
    "empty": b"",
    "riff only": b"RIFF",
    "not wave": b"RIFF\x04\0\0\0AVI ",
    "rifx big endian": b"RIFX" + _riff(_fmt(), (b"data", b"\0" * 20))[4:],
    "text": b"hello world, no audio here\n",
}


@pytest.mark.parametrize("name", sorted(ODD_FILES))
def test_odd_headers_agree_with_libsndfile(tmp_path: Path, name: str) -> None:
    path = tmp_path / "odd.wav"
    path.write_bytes(ODD_FILES[name])
    assert _ours(path) == _libsndfile(path)


def test_a_truncated_file_is_left_to_libsndfile(tmp_path: Path) -> None:
    whole = _wav(tmp_path / "whole.wav", 1000, 1, 16000, "PCM_16").read_bytes()
    for cut in (10, 30, 44, 45, 100, len(whole) - 1):
        path = tmp_path / f"cut{cut}.wav"
        path.write_bytes(whole[:cut])
        assert _plain_wav_info(path) is None
        assert _ours(path) == _libsndfile(path)


def test_other_formats_are_read_by_libsndfile(tmp_path: Path) -> None:
    for fmt, suffix in (("FLAC", ".flac"), ("OGG", ".ogg"), ("AIFF", ".aiff")):
        path = tmp_path / f"a{suffix}"
        soundfile.write(str(path), np.zeros(800, dtype=np.int16), 16000, format=fmt)
        assert _plain_wav_info(path) is None
        assert _ours(path) == _libsndfile(path)


def test_the_test_set_loader_gives_the_same_items_and_reasons(tmp_path: Path) -> None:
    root = tmp_path / "ts"
    root.mkdir()
    _wav(root / "ok.wav", 3200, 1, 16000, "PCM_16")
    _wav(root / "stereo.wav", 3200, 2, 16000, "PCM_16")
    _wav(root / "rate.wav", 3200, 1, 8000, "PCM_16")
    _wav(root / "empty.wav", 0, 1, 16000, "PCM_16")
    (root / "garbage.wav").write_bytes(b"not audio at all")
    soundfile.write(str(root / "flac.flac"), np.zeros(1600, dtype=np.int16), 16000)
    names = ["ok", "stereo", "rate", "empty", "garbage", "flac"]
    (root / "text").write_text("".join(f"{n} hello\n" for n in names), encoding="utf-8")
    testset = load_asr_testset(root)
    assert {i.id: i.duration for i in testset.items} == {"ok": 0.2, "flac": 0.1}
    reasons = {bad.id: bad.reason for bad in testset.invalid}
    assert reasons["stereo"] == "has 2 channels; need mono"
    assert reasons["rate"].startswith("sample rate 8000 Hz; the task accepts 16000 Hz")
    assert reasons["empty"] == "has no samples"
    assert reasons["garbage"].startswith("cannot be decoded: ")
    assert str(_libsndfile(root / "garbage.wav")).removeprefix("error: ") in reasons["garbage"]


def test_audio_files_are_listed_as_paths_name_them(tmp_path: Path) -> None:
    """The loader lists a directory with one scandir and splits names itself: the same
    stems and files as Path.stem / Path.suffix / Path.is_file give, on odd names."""
    from harness.testsets import AUDIO_SUFFIXES, _audio_files

    names = [
        "a.wav",
        "b.WAV",
        "c.b.wav",
        ".wav",
        "..wav",
        "d.",
        "e.flac",
        "e.wav",
        "f.txt",
        "g.wav.txt",
        "h wav.wav",
        "中文.wav",
        "i.Aif",
        "j",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "dir.wav").mkdir()
    (tmp_path / "link.wav").symlink_to(tmp_path / "a.wav")
    (tmp_path / "dangling.wav").symlink_to(tmp_path / "missing.wav")
    expected: dict[str, list[Path]] = {}
    for path in sorted(tmp_path.iterdir()):
        if path.is_file() and path.suffix.lower() in AUDIO_SUFFIXES:
            expected.setdefault(path.stem, []).append(path)
    assert _audio_files(tmp_path) == expected
    assert expected["e"] == [tmp_path / "e.flac", tmp_path / "e.wav"]
