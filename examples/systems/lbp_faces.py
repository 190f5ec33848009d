"""Example face identification and verification: local binary pattern histograms.

Usage::

    python -m systems.lbp_faces                  # serve mode
    python -m systems.lbp_faces --exec PAIR.json OUTPUT   # verification only

Each face image is converted to grey, resized to 64x64, coded with uniform
8-neighbour radius-1 LBP (59 codes), and described by the concatenated
per-cell code histograms of an 8x8 grid, each normalised to sum 1.  Two faces
compare by chi-square distance averaged over cells; the similarity is
``1 - distance / 2``, in [0, 1] (1 for identical descriptors).

* face-identify: hello's ``files`` (gallery id -> image) are enrolled during
  setup; input ``{"image"}`` -> ``{"candidates": [[id, similarity], ...]}``,
  best first, at most 50.
* face-verify: input ``{"image_a", "image_b"}`` -> ``{"score": similarity}``.

The method assumes roughly aligned frontal crops, as the demo sets are; it
does no detection or alignment of its own.  LBP codes only compare each pixel
with its neighbours, so any monotonic change of grey levels leaves them, and
the descriptor, unchanged.

Needs numpy and opencv-python-headless (image decoding and resizing).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

from .jsonlines import log, main

SIZE = 64
GRID = 8
MAX_CANDIDATES = 50
# Neighbour offsets (dy, dx) in circular order, so "uniform" (at most two 0/1
# transitions round the circle) has its usual meaning.
_OFFSETS = [(-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1)]


def _uniform_table() -> np.ndarray:
    """Map each 8-bit LBP code to its bin: 58 uniform patterns, then one bin for the rest."""
    table = np.full(256, 58, dtype=np.int64)
    next_bin = 0
    for code in range(256):
        bits = [(code >> i) & 1 for i in range(8)]
        transitions = sum(bits[i] != bits[(i + 1) % 8] for i in range(8))
        if transitions <= 2:
            table[code] = next_bin
            next_bin += 1
    assert next_bin == 58
    return table


UNIFORM = _uniform_table()
BINS = 59


def lbp_codes(gray: np.ndarray) -> np.ndarray:
    """Uniform-LBP bin of every interior pixel (the image loses a 1-pixel border)."""
    g = gray.astype(np.int16)
    centre = g[1:-1, 1:-1]
    h, w = centre.shape
    code = np.zeros((h, w), dtype=np.int64)
    for bit, (dy, dx) in enumerate(_OFFSETS):
        neighbour = g[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
        code |= (neighbour >= centre).astype(np.int64) << bit
    return UNIFORM[code]


def describe(gray: np.ndarray) -> np.ndarray:
    """GRID x GRID normalised histograms of LBP bins, shape (GRID * GRID, BINS)."""
    face = cv2.resize(gray, (SIZE + 2, SIZE + 2), interpolation=cv2.INTER_AREA)
    codes = lbp_codes(face)
    cell = SIZE // GRID
    hists = np.empty((GRID * GRID, BINS), dtype=np.float64)
    for r in range(GRID):
        for c in range(GRID):
            block = codes[r * cell : (r + 1) * cell, c * cell : (c + 1) * cell]
            hist = np.bincount(block.ravel(), minlength=BINS).astype(np.float64)
            hists[r * GRID + c] = hist / hist.sum()
    return hists


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """1 - mean chi-square distance / 2 between two descriptors; 1.0 means identical."""
    total = a + b
    diff = (a - b) ** 2
    # Empty bins in both histograms contribute nothing (0/0 is taken as 0).
    chi = np.divide(diff, total, out=np.zeros_like(diff), where=total > 0).sum(axis=1)
    return float(1.0 - chi.mean() / 2.0)


def load_gray(path: Any) -> np.ndarray:
    """Decode an image file as greyscale, or raise ValueError."""
    if not isinstance(path, str):
        raise ValueError("image path missing")
    gray = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if gray is None:
        raise ValueError("cannot decode image")
    return gray


class GalleryMatcher:
    """Holds the enrolled gallery descriptors; matches with the given descriptor and
    similarity (this module's LBP histograms, or another system's)."""

    def __init__(
        self,
        name: str,
        describe: Callable[[np.ndarray], np.ndarray],
        similarity: Callable[[np.ndarray, np.ndarray], float],
    ) -> None:
        self.name = name
        self.describe = describe
        self.similarity = similarity
        self.gallery: dict[str, np.ndarray] = {}

    def setup(self, hello: dict[str, Any]) -> None:
        """Enrol every gallery image named in hello's ``files``."""
        files = hello.get("files") or {}
        if not isinstance(files, dict):
            raise ValueError("hello 'files' is not an object")
        self.gallery = {str(gid): self.describe(load_gray(path)) for gid, path in files.items()}
        log(f"{self.name}: enrolled {len(self.gallery)} gallery images")

    def recognize(self, item_input: dict[str, Any]) -> dict[str, Any]:
        """Verify a pair or identify a probe, depending on the input's fields."""
        if "image_a" in item_input or "image_b" in item_input:
            a = self.describe(load_gray(item_input.get("image_a")))
            b = self.describe(load_gray(item_input.get("image_b")))
            return {"score": round(self.similarity(a, b), 6)}
        if not self.gallery:
            raise ValueError("no gallery enrolled (hello carried no files)")
        probe = self.describe(load_gray(item_input.get("image")))
        scored = [(gid, round(self.similarity(probe, d), 6)) for gid, d in self.gallery.items()]
        scored.sort(key=lambda s: -s[1])
        return {"candidates": [[gid, s] for gid, s in scored[:MAX_CANDIDATES]]}


if __name__ == "__main__":
    matcher = GalleryMatcher("lbp_faces", describe, similarity)
    sys.exit(main("lbp-faces", "1", matcher.recognize, matcher.setup))
