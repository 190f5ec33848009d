"""festival in the demo: the speech its test sets are made of, and its second synthesizer.

The stock pocketsphinx model follows festival's voices where it missed most of
espeak-ng's words, which is why the demo's speech sets are festival's; the festival
participant (examples/systems/festival_tts.py) runs as a tts system beside espeak-ng.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
from pocketsphinx import Decoder

from datagen.festival import Voice, add_noise, synthesize
from scoring import score_asr
from tests.helpers import REPO, read_outputs, run_site
from tests.test_tts_task import tts_site

FESTIVAL = [sys.executable, "-m", "examples.systems.festival_tts"]
SENTENCE = "we need to buy some bread and milk"


def _recognize(samples: np.ndarray) -> str:
    decoder = Decoder(loglevel="ERROR")
    decoder.start_utt()
    decoder.process_raw(samples.astype(np.int16).tobytes(), full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr if hyp else ""


@pytest.mark.parametrize("voice", [Voice("slt"), Voice("slt", 0.9), Voice("kal")])
def test_pocketsphinx_follows_the_demo_voices(tmp_path: Path, voice: Voice) -> None:
    samples = synthesize(SENTENCE, voice, 16000, tmp_path)
    wer = score_asr({"u": SENTENCE}, {"u": _recognize(samples)}).overall.wer
    assert wer <= 0.25, (voice, _recognize(samples))


def test_noise_is_added_at_the_snr_asked_for(tmp_path: Path) -> None:
    clean = synthesize(SENTENCE, Voice("slt"), 16000, tmp_path)
    for snr in (15.0, 5.0):
        noise = add_noise(clean, snr, seed=7, rate=16000).astype(np.float64) - clean
        measured = 10 * np.log10(np.mean(clean.astype(np.float64) ** 2) / np.mean(noise**2))
        assert measured == pytest.approx(snr, abs=0.1)
        # Low-frequency noise: most of its power lies below 500 Hz.
        spectrum = np.abs(np.fft.rfft(noise)) ** 2
        freqs = np.fft.rfftfreq(len(noise), 1 / 16000)
        assert spectrum[freqs < 500].sum() > 0.8 * spectrum.sum()


def test_festival_participant_speaks_at_the_rate_asked(tmp_path: Path) -> None:
    site = tts_site(tmp_path, {"festival": FESTIVAL}, rate=8000)
    run_dir, _ = run_site(site)
    rows = read_outputs(run_dir, "tts", "festival")
    assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
    for row in rows:
        info = soundfile.info(str(run_dir / row["output"]["audio"]))
        assert (info.channels, info.samplerate, info.subtype) == (1, 8000, "PCM_16")
        assert info.duration > 0.5


def test_festival_participant_exec_mode_is_recognizable(tmp_path: Path) -> None:
    request = tmp_path / "in.json"
    wav = tmp_path / "out.wav"
    request.write_text(json.dumps({"text": SENTENCE, "sample_rate": 16000, "audio_out": str(wav)}))
    done = subprocess.run(
        [*FESTIVAL, "--rate", "0.9", "--exec", str(request), str(tmp_path / "answer.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "answer.json").read_text()) == {"audio": str(wav)}
    samples, rate = soundfile.read(wav, dtype="int16")
    assert rate == 16000
    wer = score_asr({"u": SENTENCE}, {"u": _recognize(samples)}).overall.wer
    assert wer <= 0.25
