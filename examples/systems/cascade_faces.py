"""Example face detector: OpenCV's Viola-Jones Haar cascade (frontal faces).

Usage::

    python -m systems.cascade_faces                    # serve mode
    python -m systems.cascade_faces --box-scale 1.0    # the cascade's raw boxes
    python -m systems.cascade_faces --exec INPUT OUTPUT

Input ``{"image": path}`` (video stream items also carry ``frame`` and ``pts``,
which a per-frame detector ignores); output ``{"boxes": [[x, y, w, h, score]]}``
with the score being the cascade's final-stage weight (higher is surer).

Boxes are shrunk about their centre by ``--box-scale`` (default 0.8): the
cascade's box spans forehead to chin, about 2.7 eye distances wide on the demo
faces, while the scoring rule (FD&FR-04) rejects a box whose area reaches 6x
the eye-eye-mouth rectangle.  Measured on demo-faces, see its README.

Needs opencv-python-headless < 5 (OpenCV 5 no longer ships the Haar cascades).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .jsonlines import exec_main, log, serve

CASCADE = "haarcascade_frontalface_default.xml"


class CascadeDetector:
    """One loaded cascade and the detectMultiScale settings used for every image."""

    def __init__(self, box_scale: float = 0.8, min_neighbors: int = 4, min_size: int = 24) -> None:
        self.box_scale = box_scale
        self.min_neighbors = min_neighbors
        self.min_size = min_size
        self.cascade: Any = None

    def setup(self, hello: dict[str, Any] | None = None) -> None:
        """Load the cascade file bundled with opencv-python."""
        if not hasattr(cv2, "CascadeClassifier"):
            raise RuntimeError(f"OpenCV {cv2.__version__} has no CascadeClassifier (need < 5)")
        path = Path(cv2.data.haarcascades) / CASCADE  # type: ignore[attr-defined]
        cascade = cv2.CascadeClassifier(str(path))
        if cascade.empty():
            raise RuntimeError(f"cannot load {path}")
        self.cascade = cascade
        log(f"OpenCV {cv2.__version__}, {CASCADE}, box_scale={self.box_scale}")

    def detect(self, gray: np.ndarray) -> list[list[float]]:
        """Boxes [x, y, w, h, score] for one greyscale image, best score first."""
        # Equalising makes the cascade's fixed thresholds work on dim or flat images.
        gray = cv2.equalizeHist(gray)
        rects, _levels, weights = self.cascade.detectMultiScale3(
            gray,
            scaleFactor=1.1,
            minNeighbors=self.min_neighbors,
            minSize=(self.min_size, self.min_size),
            outputRejectLevels=True,
        )
        boxes = []
        for (x, y, w, h), weight in zip(rects, np.ravel(weights), strict=True):
            sw, sh = w * self.box_scale, h * self.box_scale
            boxes.append(
                [
                    round(float(x + (w - sw) / 2), 1),
                    round(float(y + (h - sh) / 2), 1),
                    round(float(sw), 1),
                    round(float(sh), 1),
                    round(float(weight), 3),
                ]
            )
        boxes.sort(key=lambda b: -b[4])
        return boxes

    def recognize(self, item_input: dict[str, Any]) -> dict[str, Any]:
        """Detect faces in ``item_input["image"]``."""
        if self.cascade is None:
            self.setup()
        path = item_input.get("image")
        if not isinstance(path, str):
            raise ValueError("input has no 'image' path")
        gray = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if gray is None:
            raise ValueError("cannot decode image")
        return {"boxes": self.detect(gray)}


def exec_recognize(detector: CascadeDetector) -> Any:
    """Wrap ``recognize`` for exec mode, whose helper names a bare input file ``audio``."""

    def recognize(item_input: dict[str, Any]) -> dict[str, Any]:
        if "image" not in item_input and "audio" in item_input:
            item_input = {"image": item_input["audio"]}
        return detector.recognize(item_input)

    return recognize


def main(argv: list[str] | None = None) -> int:
    """Parse options, then serve or handle one exec-mode item."""
    parser = argparse.ArgumentParser(description="OpenCV Haar cascade face detector")
    parser.add_argument("--box-scale", type=float, default=0.8, help="shrink boxes by this factor")
    parser.add_argument("--min-neighbors", type=int, default=4)
    parser.add_argument("--min-size", type=int, default=24, help="smallest face side in pixels")
    parser.add_argument("--exec", nargs=2, metavar=("INPUT", "OUTPUT"))
    args = parser.parse_args(argv)
    detector = CascadeDetector(args.box_scale, args.min_neighbors, args.min_size)
    if args.exec:
        return exec_main(exec_recognize(detector), args.exec[0], args.exec[1], detector.setup)
    return serve("cascade-faces", cv2.__version__, detector.recognize, detector.setup)


if __name__ == "__main__":
    sys.exit(main())
