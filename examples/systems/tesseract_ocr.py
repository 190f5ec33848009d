"""Example single-character recognizer built on the Tesseract CLI (chi_sim model).

Usage::

    python -m systems.tesseract_ocr               # serve mode, printed images
    python -m systems.tesseract_ocr --ink         # serve mode, online ink files
    python -m systems.tesseract_ocr [--ink] --exec INPUT OUTPUT

Each item runs ``tesseract IMAGE stdout -l chi_sim --psm 10 -c lstm_choice_mode=2
hocr``: page segmentation mode 10 treats the image as one character, and
``lstm_choice_mode=2`` makes the hOCR list the LSTM's alternative characters,
which become candidates 2..10 after Tesseract's own answer.

With ``--ink`` the input is ``{"ink": path}`` to a JSON file
``{"strokes": [[[x, y, t_ms], ...], ...], "width", "height"}``; the strokes are
drawn as thick lines and the picture recognized as printed text, so the stroke
order and timing are ignored (which makes the disordered subset no harder).

Needs the Debian packages tesseract-ocr and tesseract-ocr-chi-sim, plus numpy
and opencv-python-headless.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .jsonlines import exec_main, log, serve

MAX_CANDIDATES = 10
# Tesseract's LSTM lines are trained on text about 30-50 px high; a white
# margin keeps the glyph from touching the border, which hurts segmentation.
PAD = 16
INK_SIZE = 96
INK_THICKNESS = 6

_WORD = re.compile(r"<span class='ocrx_word'[^>]*>([^<]*)")
_CHOICE = re.compile(
    r"<span class='ocrx_cinfo' id='choice_[^']*' title='x_confs ([0-9.]+)'>([^<]*)<"
)


def is_cjk(char: str) -> bool:
    """True for CJK characters (U+2E80 on), not CJK punctuation or fullwidth forms."""
    code = ord(char)
    return code >= 0x2E80 and not 0x3000 <= code <= 0x303F and not 0xFF00 <= code <= 0xFFEF


def parse_hocr(hocr: str, cjk_only: bool = True) -> list[str]:
    """Candidates from hOCR: each word's text first, then LSTM choices by confidence.

    Only single non-space characters count, each once: the task answers one
    character per image.  With ``cjk_only`` Latin letters, digits and
    punctuation are dropped too, as the test sets hold Chinese characters only.
    """
    ranked: list[str] = []
    for word in _WORD.findall(hocr):
        ranked.extend(html.unescape(word).strip())
    choices = [(float(conf), html.unescape(text).strip()) for conf, text in _CHOICE.findall(hocr)]
    # sorted() is stable, so equal confidences keep Tesseract's own order.
    ranked.extend(text for _, text in sorted(choices, key=lambda c: -c[0]))
    out: list[str] = []
    for char in ranked:
        if len(char) != 1 or char.isspace() or char in out:
            continue
        if not cjk_only or is_cjk(char):
            out.append(char)
    return out[:MAX_CANDIDATES]


def rasterize_ink(ink: dict[str, Any], size: int = INK_SIZE) -> np.ndarray:
    """Draw the strokes black on white, scaled to fit ``size`` px with the aspect kept."""
    strokes = ink.get("strokes")
    if not isinstance(strokes, list) or not strokes:
        raise ValueError("ink has no strokes")
    points = [p for stroke in strokes for p in stroke]
    xs = np.array([p[0] for p in points], dtype=np.float64)
    ys = np.array([p[1] for p in points], dtype=np.float64)
    # Fit the ink's own extent rather than width/height: writers use a small
    # part of a large tablet, and the recognizer wants a glyph-sized image.
    span = max(xs.max() - xs.min(), ys.max() - ys.min(), 1.0)
    scale = (size - 2 * INK_THICKNESS) / span
    cx, cy = (xs.max() + xs.min()) / 2, (ys.max() + ys.min()) / 2
    image = np.full((size, size), 255, dtype=np.uint8)
    for stroke in strokes:
        pts = np.array(
            [[(p[0] - cx) * scale + size / 2, (p[1] - cy) * scale + size / 2] for p in stroke]
        )
        pts = np.rint(pts).astype(np.int32).reshape(-1, 1, 2)
        if len(pts) == 1:
            cv2.circle(image, tuple(int(v) for v in pts[0, 0]), INK_THICKNESS // 2, 0, -1)
        else:
            cv2.polylines(image, [pts], False, 0, INK_THICKNESS, lineType=cv2.LINE_AA)
    return image


class TesseractRecognizer:
    """Runs one tesseract process per item on a padded greyscale copy of the input."""

    def __init__(self, ink: bool = False, lang: str = "chi_sim") -> None:
        self.ink = ink
        self.lang = lang
        self.workdir: tempfile.TemporaryDirectory[str] | None = None

    def version(self) -> str:
        """Tesseract's version line, e.g. 'tesseract 5.3.0'."""
        try:
            result = subprocess.run(["tesseract", "--version"], capture_output=True, text=True)
        except FileNotFoundError:
            return "unknown"  # setup() reports the missing binary to the harness
        return (result.stdout or result.stderr).splitlines()[0].strip()

    def setup(self, hello: dict[str, Any] | None = None) -> None:
        """Check that tesseract and the language model are installed."""
        try:
            langs = subprocess.run(
                ["tesseract", "--list-langs"], capture_output=True, text=True, check=True
            ).stdout.split()
        except FileNotFoundError as exc:
            raise RuntimeError("tesseract not installed (apt-get install tesseract-ocr)") from exc
        if self.lang not in langs:
            raise RuntimeError(f"tesseract has no {self.lang!r} model: {langs}")
        self.workdir = tempfile.TemporaryDirectory(prefix="tesseract_ocr_")
        log(f"{self.version()}, lang={self.lang}, ink={self.ink}")

    def image_for(self, item_input: dict[str, Any]) -> np.ndarray:
        """The greyscale image to recognize for one item."""
        if self.ink:
            # Exec mode hands over an ink .json file's contents as the input itself.
            if "strokes" in item_input:
                return rasterize_ink(item_input)
            path = item_input.get("ink")
            if not isinstance(path, str):
                raise ValueError("input has no 'ink' path")
            return rasterize_ink(json.loads(Path(path).read_text(encoding="utf-8")))
        # The exec-mode helper names a bare (non-JSON) input file "audio".
        path = item_input.get("image", item_input.get("audio"))
        if not isinstance(path, str):
            raise ValueError("input has no 'image' path")
        image = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise ValueError("cannot decode image")
        return image

    def recognize(self, item_input: dict[str, Any]) -> dict[str, Any]:
        """Return ``{"candidates": [...]}``, best first, at most ten."""
        if self.workdir is None:
            self.setup()
        assert self.workdir is not None
        image = self.image_for(item_input)
        padded = cv2.copyMakeBorder(image, PAD, PAD, PAD, PAD, cv2.BORDER_CONSTANT, value=255)
        # Our own PNG in our own directory: the staged input may be any format
        # or name, and tesseract picks its reader from the file contents.
        target = Path(self.workdir.name) / "item.png"
        cv2.imwrite(str(target), padded)
        result = subprocess.run(
            [
                "tesseract",
                str(target),
                "stdout",
                "-l",
                self.lang,
                "--psm",
                "10",
                "-c",
                "lstm_choice_mode=2",
                "hocr",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=60,
        )
        if result.returncode != 0:
            raise RuntimeError(f"tesseract failed: {result.stderr.strip()[-200:]}")
        return {"candidates": parse_hocr(result.stdout, cjk_only=self.lang.startswith("chi"))}


def main(argv: list[str] | None = None) -> int:
    """Parse options, then serve or handle one exec-mode item."""
    parser = argparse.ArgumentParser(description="Tesseract single-character recognizer")
    parser.add_argument("--ink", action="store_true", help="items are online ink JSON files")
    parser.add_argument("--lang", default="chi_sim", help="tesseract language model")
    parser.add_argument("--exec", nargs=2, metavar=("INPUT", "OUTPUT"))
    args = parser.parse_args(argv)
    recognizer = TesseractRecognizer(ink=args.ink, lang=args.lang)
    if args.exec:
        return exec_main(recognizer.recognize, args.exec[0], args.exec[1], recognizer.setup)
    name = "tesseract-ink" if args.ink else "tesseract-ocr"
    return serve(name, recognizer.version(), recognizer.recognize, recognizer.setup)


if __name__ == "__main__":
    sys.exit(main())
