"""Example keyword-spotting participant: PocketSphinx's keyphrase search over the task's list.

hello's ``files.keywords`` (the task's keywords.json: setting -> slot ->
keywords) gives the keywords to spot; there is no built-in list. Every keyword
the US-English dictionary knows is searched at a loose threshold, so the
search proposes many hypotheses, each sent as a detection scored by
PocketSphinx's posterior (``prob``). The slots come from the surer ones: of
detections that overlap in time the most probable is kept, those at or above
``ACCEPT`` fill, in time order, the first empty slot of the item's setting that
lists the keyword (so the first city spoken is "from", the second "to").

Usage: ``python -m systems.sphinx_kws``. Audio must be mono at 16 kHz.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import soundfile as sf
from pocketsphinx import Decoder

from .jsonlines import log, serve
from .sphinx_asr import pocketsphinx_version

# The keyphrase search's threshold: loose, so that near misses are proposed too
# (the DET curve needs scored false alarms as well as hits).
SEARCH_THRESHOLD = "1e-40"
# Posterior at which a detection fills a slot (set on the demo recordings).
ACCEPT = 0.82
FRAMES_PER_SECOND = 100


@dataclass(frozen=True)
class Hit:
    """One proposed keyword: where it is (frames) and how sure the search is."""

    keyword: str
    start: int
    end: int
    score: float


def keep_surest(hits: list[Hit]) -> list[Hit]:
    """Of hits that overlap in time keep the most probable; the rest in time order."""
    kept: list[Hit] = []
    for hit in sorted(hits, key=lambda h: -h.score):
        if all(hit.end < k.start or hit.start > k.end for k in kept):
            kept.append(hit)
    return sorted(kept, key=lambda h: h.start)


def fill_slots(hits: list[Hit], slots: dict[str, list[str]]) -> dict[str, list[str]]:
    """Accepted hits, in time order, each into the first empty slot that lists it."""
    filled: dict[str, list[str]] = {}
    for hit in keep_surest(hits):
        if hit.score < ACCEPT:
            continue
        for name, words in slots.items():
            if name not in filled and hit.keyword in words:
                filled[name] = [hit.keyword]
                break
    return filled


class SphinxKws:
    """One decoder whose keyphrase search holds the task's keywords."""

    def __init__(self) -> None:
        self.decoder: Decoder | None = None
        self.settings: dict[str, dict[str, list[str]]] = {}
        self.searches: dict[str, str] = {}  # setting -> its keyphrase search
        self.spelling: dict[str, dict[str, str]] = {}  # setting -> as decoded -> as listed

    def setup(self, hello: dict[str, Any]) -> None:
        """Read the keyword list from hello and build the keyphrase search."""
        path = (hello.get("files") or {}).get("keywords")
        if not path:
            raise ValueError("hello carries no keyword list (files.keywords)")
        self.settings = json.loads(Path(path).read_text(encoding="utf-8"))["settings"]
        decoder = Decoder(loglevel="WARN")
        for n, (setting, slots) in enumerate(sorted(self.settings.items())):
            keywords = sorted({w for words in slots.values() for w in words})
            known = [k for k in keywords if all(decoder.lookup_word(w) for w in k.lower().split())]
            if len(known) < len(keywords):
                log(f"{setting}: not in the dictionary, not spotted: {set(keywords) - set(known)}")
            if not known:
                continue
            # One search per setting: an item is searched for its own setting's keywords only.
            with tempfile.NamedTemporaryFile("w", suffix=".kws", delete=False) as fh:
                fh.write("".join(f"{k.lower()} /{SEARCH_THRESHOLD}/\n" for k in known))
            decoder.add_kws(f"setting{n}", fh.name)
            Path(fh.name).unlink()
            self.searches[setting] = f"setting{n}"
            self.spelling[setting] = {k.lower(): k for k in known}
        self.decoder = decoder
        log(f"spotting keywords of {len(self.searches)} of {len(self.settings)} settings")

    def spot(self, item: dict[str, Any]) -> dict[str, Any]:
        """Detections (every proposed keyword, scored) and the slots of the item's setting."""
        assert self.decoder is not None, "setup runs first"
        path = item.get("audio")
        if not isinstance(path, str):
            raise ValueError("input has no 'audio' path")
        samples, rate = sf.read(path, dtype="int16")
        if samples.ndim != 1 or rate != 16000:
            raise ValueError(f"need mono 16 kHz audio, got {rate} Hz")
        setting = str(item.get("setting", ""))
        search = self.searches.get(setting)
        if search is None:
            return {"slots": {}, "detections": []}  # none of its keywords can be spotted
        self.decoder.activate_search(search)
        self.decoder.reinit_feat()  # no state carried over from the previous item
        self.decoder.start_utt()
        self.decoder.process_raw(samples.tobytes(), full_utt=True)
        self.decoder.end_utt()
        spelling = self.spelling[setting]
        hits = [
            Hit(spelling[seg.word.strip()], seg.start_frame, seg.end_frame, float(seg.prob))
            for seg in (self.decoder.seg() or [])
            if seg.word.strip() in spelling
        ]
        slots = self.settings[setting]
        return {
            "slots": fill_slots(hits, slots),
            "detections": [
                {
                    "keyword": h.keyword,
                    "score": round(h.score, 6),
                    "start": h.start / FRAMES_PER_SECOND,
                    "end": h.end / FRAMES_PER_SECOND,
                }
                for h in hits
            ],
        }


def main() -> int:
    """Serve mode only: the keyword list comes in hello."""
    system = SphinxKws()
    return serve("sphinx-kws", f"pocketsphinx {pocketsphinx_version()}", system.spot, system.setup)


if __name__ == "__main__":
    sys.exit(main())
