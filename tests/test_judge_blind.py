"""Blind judging: nothing in a media response tells systems apart, and play-once holds.

The attacks: a judge (or a participant who briefed one) reads the audio responses'
headers, sizes and bytes to tell which system is A, and replays a play-once sample
with byte ranges the panel did not count. Real parts: systems synthesize the audio
in a real run, the panel is uvicorn on 127.0.0.1, requests are written on sockets.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness.judge.panel import PanelServer, open_panel
from harness.judge.store import PanelError
from tests.judge_helpers import (
    LAYOUT_SYSTEMS,
    SENTENCES,
    TTS_TASK,
    call,
    copy_run,
    make_layout_run,
    make_tts_run,
    onsite,
    raw,
    serving,
)
from tests.systems.wav_layouts import samples

# Headers that may differ between two media responses: the time of the response and the
# length of the audio (its duration, which is the audio's own).
_MAY_DIFFER = {"date", "content-length"}


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def layout_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_layout_run(tmp_path_factory.mktemp("layouts"))


def _media_of_every_trial(base: str, token: str) -> list[tuple[str, list[tuple[dict, bytes]]]]:
    """Walk a judge's trials: per trial its item's view id and each medium's headers and bytes.

    Answers every trial (score 0) to reach the next one.
    """
    out: list[tuple[str, list[tuple[dict, bytes]]]] = []
    while True:
        status, view = call(base, "GET", f"/api/judge/{token}/next")
        assert status == 200, view
        if view["done"]:
            return out
        got = []
        for url in view["media"]:
            status, headers, body = raw(base, f"GET {url} HTTP/1.1")
            assert status == 200, body
            got.append((headers, body))
        out.append((view["trial"], got))
        reply = call(
            base,
            "POST",
            f"/api/judge/{token}/answer",
            {"trial": view["trial"], "answer": {"score": 0}, "plays": 1},
        )
        assert reply[0] == 200, reply


def _on_disk(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (run / "media").glob("*/*.wav")}


def test_systems_writing_other_wav_layouts_are_served_byte_identical(
    layout_run: Path, tmp_path: Path
) -> None:
    """Four systems write the same samples as a plain WAV, with a LIST chunk, as float and
    as 24-bit: on disk each layout names its system by size and header; served, a pair's
    A and B are the same bytes, with the same headers."""
    run = copy_run(layout_run, tmp_path)
    disk = _on_disk(run)
    # The attack is real: the files the systems wrote differ in size per layout.
    assert len({len(b) for b in disk.values()}) >= len(LAYOUT_SYSTEMS) * 2
    with serving(run, TTS_TASK, "pair", judges=2, seed=3) as (base, store):
        by_item: dict[str, set[bytes]] = {}
        header_sets = []
        walked: list[str] = []
        with sqlite3.connect(store.path) as db:
            items = dict(db.execute("SELECT trial, item FROM trials").fetchall())
        for token in store.tokens().values():
            for trial, media in _media_of_every_trial(base, token):
                a, b = media
                # Same samples: the same bytes, whichever system is A and which is B.
                assert a[1] == b[1]
                for headers, body in media:
                    assert body[:4] == b"RIFF" and body[8:16] == b"WAVEfmt "
                    header_sets.append({k: v for k, v in headers.items() if k not in _MAY_DIFFER})
                    by_item.setdefault(items[trial], set()).add(body)
                walked.append(trial)
    assert walked
    # One served form per sentence, whichever of the four systems it came from.
    assert set(by_item) == set(SENTENCES) and all(len(v) == 1 for v in by_item.values())
    assert all(h == header_sets[0] for h in header_sets)
    for name in ("last-modified", "etag", "content-disposition", "accept-ranges"):
        assert name not in header_sets[0], name
    # The canonical form: a 44-byte header, 16-bit PCM, mono, at the task's rate.
    for item, (body,) in ((i, tuple(v)) for i, v in by_item.items()):
        channels, rate, bits = struct.unpack("<HI6xH", body[22:36])
        assert (body[12:16], body[16:20], body[20:22]) == (b"fmt ", b"\x10\0\0\0", b"\x01\0")
        assert (channels, bits) == (1, 16) and body[36:40] == b"data"
        assert body[44:] == samples(f"{SENTENCES[item]}", rate).astype("<i2").tobytes()
        assert struct.unpack("<I", body[40:44])[0] == len(body) - 44
        assert struct.unpack("<I", body[4:8])[0] == len(body) - 8


def test_real_synthesizers_differ_only_by_duration(tts_run: Path, tmp_path: Path) -> None:
    """espeak-ng at three settings: served headers are the same set, sizes follow the frames."""
    run = copy_run(tts_run, tmp_path)
    frames = {
        soundfile.info(str(p)).frames for p in (run / "media").glob("*/*.wav")
    }  # every duration the systems produced
    with serving(run, TTS_TASK, "pair", judges=1, seed=8) as (base, store):
        [token] = store.tokens().values()
        served = [m for _, media in _media_of_every_trial(base, token) for m in media]
    heads = [{k: v for k, v in h.items() if k not in _MAY_DIFFER} for h, _ in served]
    assert all(h == heads[0] for h in heads)
    assert "last-modified" not in heads[0] and "etag" not in heads[0]
    # Everything but the two length fields is the same 44-byte header.
    assert len({b[8:40] for _, b in served}) == 1
    assert {(len(b) - 44) // 2 for _, b in served} <= frames
    for headers, body in served:
        assert int(headers["content-length"]) == len(body)


def test_media_are_served_from_memory(tts_run: Path, tmp_path: Path) -> None:
    """Loaded when the panel starts: no disk access whose time depends on the file."""
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "mos", judges=1, seed=0) as (base, store):
        shutil.rmtree(run / "media")
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        status, audio = call(base, "GET", view["media"][0])
        assert status == 200 and audio[:4] == b"RIFF"


# --- play once ---------------------------------------------------------------------------


def _plays(store, event: str = "played") -> Counter:
    return Counter(r["data"].get("media") for r in store.journal_rows() if r["event"] == event)


@pytest.mark.parametrize(
    "first",
    [None, "bytes=0-", "bytes=1-", "bytes=00-", "bytes=-100", "bytes=0-0,10-20", "bytes=x"],
)
def test_any_request_of_a_play_once_sample_is_a_play_and_the_next_is_refused(
    tts_run: Path, tmp_path: Path, first: str | None
) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=1, seed=2) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        assert view["play_once"] and not view["played"]
        a, b = view["media"]
        a_id = a.rsplit("/", 1)[1][:-4]
        head = f"GET {a} HTTP/1.1" + (f"\r\nRange: {first}" if first else "")
        status, headers, body = raw(base, head)
        # The whole sample in one answer: one play is one request.
        assert status == 200 and body[:4] == b"RIFF" and "content-range" not in headers
        assert int(headers["content-length"]) == len(body)
        assert _plays(store) == Counter({a_id: 1})
        # The panel knows the trial was played: a reloaded page does not offer it again.
        assert call(base, "GET", f"/api/judge/{token}/next")[1]["played"] is True
        for again in ("bytes=1-", "bytes=00-", "bytes=-100", "bytes=0-0,1-2", None, "bytes=0-"):
            head = f"GET {a} HTTP/1.1" + (f"\r\nRange: {again}" if again else "")
            status, _, body = raw(base, head)
            assert status == 410 and b"once" in body and b"RIFF" not in body, again
        refused = [r for r in store.journal_rows() if r["event"] == "refused"]
        assert len(refused) == 6 and all(r["data"]["media"] == a_id for r in refused)
        ranges = [r["data"].get("range") for r in refused]
        assert ranges[:3] == ["bytes=1-", "bytes=00-", "bytes=-100"]
        # B is the other half of the same play: once, then refused too.
        assert raw(base, f"GET {b} HTTP/1.1\r\nRange: bytes=1-")[0] == 200
        assert raw(base, f"GET {b} HTTP/1.1")[0] == 410
        assert sum(_plays(store).values()) == 2


def test_concurrent_requests_of_a_play_once_sample_serve_it_once(
    tts_run: Path, tmp_path: Path
) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=1, seed=2) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        url = view["media"][0]
        gate = threading.Barrier(8)
        statuses: list[int] = []

        def fetch(n: int) -> None:
            gate.wait(10)
            statuses.append(raw(base, f"GET {url} HTTP/1.1\r\nRange: bytes={n}-")[0])

        threads = [threading.Thread(target=fetch, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(statuses) == [200] + [410] * 7
        assert sum(_plays(store).values()) == 1


def test_head_of_a_sample_is_no_play_and_no_bytes(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=1, seed=2) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        status, headers, _ = raw(base, f"HEAD {view['media'][0]} HTTP/1.1")
        assert status == 405 and "content-range" not in headers
        assert sum(_plays(store).values()) == 0
        assert raw(base, f"GET {view['media'][0]} HTTP/1.1")[0] == 200


def test_replayable_samples_count_every_request(tts_run: Path, tmp_path: Path) -> None:
    """MOS (and SUS) audio may be heard again: every request is served and journaled."""
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "mos", judges=1, seed=2) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        assert not view["play_once"]
        url = view["media"][0]
        for ranged in ("bytes=0-", "bytes=1-", None):
            head = f"GET {url} HTTP/1.1" + (f"\r\nRange: {ranged}" if ranged else "")
            assert raw(base, head)[0] == 200
        assert sum(_plays(store).values()) == 3


def _first_media_file(run: Path) -> Path:
    return sorted((run / "media").glob("*/*.wav"))[0]


@pytest.mark.parametrize("damage", ["missing", "other rate", "stereo"])
def test_a_panel_whose_audio_cannot_be_served_blind_does_not_start(
    tts_run: Path, tmp_path: Path, damage: str
) -> None:
    run = copy_run(tts_run, tmp_path)
    args = ["judge", str(run), "--test", "pair", "--task", TTS_TASK]
    assert onsite(*args, "--judges", "1", "--plan-only")[0] == 0
    victim = _first_media_file(run)
    if damage == "missing":
        victim.unlink()
    else:
        data, rate = soundfile.read(str(victim), dtype="int16")
        if damage == "stereo":
            soundfile.write(str(victim), np.stack([data, data], axis=1), rate)
        else:
            soundfile.write(str(victim), data, rate // 2)
    store, _ = open_panel(run, TTS_TASK, "pair", None, None)
    try:
        with pytest.raises(PanelError, match=str(victim) if damage != "other rate" else "Hz"):
            PanelServer(store, "127.0.0.1", 0)
    finally:
        store.close()
    # The command says so and stops before serving (it would otherwise serve for ever).
    code, out = onsite(*args, "--listen", "127.0.0.1:0")
    assert code == 2 and "serving" not in out
