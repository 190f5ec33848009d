"""Example face identification and verification: normalised grey-level correlation.

Usage::

    python -m systems.pixel_faces                  # serve mode
    python -m systems.pixel_faces --exec PAIR.json OUTPUT   # verification only

The simplest template matcher, a baseline for systems/lbp_faces.py: each face is
converted to grey, resized to 32x32, its grey levels equalised, and the pixels taken
as one vector with zero mean and unit length. Two faces compare by the correlation of
their vectors, mapped to a similarity ``(1 + r) / 2`` in [0, 1]. Equalisation undoes a
global change of brightness; side lighting, a turned head, blur and occlusion all
change the pixels themselves, and the score with them.

Inputs and outputs are lbp_faces's: hello's ``files`` enrol the gallery;
``{"image"}`` -> ``{"candidates": [[id, similarity], ...]}``;
``{"image_a", "image_b"}`` -> ``{"score": similarity}``.

Needs numpy and opencv-python-headless.
"""

from __future__ import annotations

import sys

import cv2
import numpy as np

from .jsonlines import main
from .lbp_faces import GalleryMatcher

SIZE = 32


def describe(gray: np.ndarray) -> np.ndarray:
    """The face as a zero-mean, unit-length vector of equalised 32x32 grey levels."""
    face = cv2.equalizeHist(cv2.resize(gray, (SIZE, SIZE), interpolation=cv2.INTER_AREA))
    vector = face.astype(np.float64).ravel()
    vector -= vector.mean()
    norm = float(np.linalg.norm(vector))
    # A uniform image has no pattern to correlate: it matches nothing.
    return vector / norm if norm > 0 else vector


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """(1 + correlation) / 2 of two descriptors: 1.0 identical, 0.5 unrelated."""
    return float((1.0 + float(a @ b)) / 2.0)


if __name__ == "__main__":
    matcher = GalleryMatcher("pixel_faces", describe, similarity)
    sys.exit(main("pixel-faces", "1", matcher.recognize, matcher.setup))
