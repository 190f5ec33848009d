"""Checks and conversions for image, ink and video inputs, so a bad file is a clear
invalid item before any system sees it (OpenCV decodes images and video)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VIDEO_SUFFIXES = (".avi", ".mp4", ".mkv", ".mov", ".webm")


def check_image(path: Path) -> str | None:
    """None when OpenCV can decode the image, else why not."""
    import cv2  # imported here: it takes a while and only image tasks need it

    try:
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:  # pragma: no cover - imread reports failure by returning None
        return f"cannot be decoded as an image: {exc}"
    if image is None:
        return "cannot be decoded as an image (corrupt, truncated, or not an image format)"
    return None


def check_ink(path: Path) -> str | None:
    """None when the file holds valid ink, else which stroke or point is wrong.

    The layout (docs/task-kinds.md), after GB/T 18790's online samples:
    ``{"width": W, "height": H, "strokes": [[[x, y, t_ms], ...], ...]}``: pen-down
    point sequences in writing order, times in milliseconds from the first point.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return f"not UTF-8 JSON (byte {exc.start})"
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if not isinstance(data, dict) or not isinstance(data.get("strokes"), list):
        return 'needs {"strokes": [[[x, y, t_ms], ...], ...]}'
    if not data["strokes"]:
        return "has no strokes"
    last_t = None
    for s, stroke in enumerate(data["strokes"]):
        if not isinstance(stroke, list) or not stroke:
            return f"stroke {s} is not a non-empty list of [x, y, t_ms] points"
        for p, point in enumerate(stroke):
            if (
                not isinstance(point, list)
                or len(point) != 3
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in point)
            ):
                return f"stroke {s} point {p} is not [x, y, t_ms]: {point!r}"
            if last_t is not None and point[2] < last_t:
                return f"stroke {s} point {p}: time goes backwards ({point[2]} < {last_t})"
            last_t = point[2]
    return None


@dataclass(frozen=True)
class Frames:
    """Frames decoded from a video: their files (PNG) and the stream's rate."""

    paths: tuple[Path, ...]
    fps: float
    error: str | None  # why decoding stopped early, if it did


def frames_cache_root() -> Path:
    """Where decoded video frames are cached: files the harness made, not the test set's."""
    return Path(tempfile.gettempdir()) / "onsite-frames"


def extract_frames(video: Path, cache: Path | None = None) -> Frames:
    """Decode every frame of a video to PNG files, once: they are cached by content hash.

    A truncated video yields the frames before the damage and says where it stopped.
    """
    import cv2

    digest = hashlib.sha256(video.read_bytes()).hexdigest()[:16]
    out = (cache or frames_cache_root()) / digest
    meta = out / "frames.json"
    if meta.is_file():
        info: dict[str, Any] = json.loads(meta.read_text())
        return Frames(tuple(out / n for n in info["files"]), info["fps"], info["error"])
    capture = cv2.VideoCapture(str(video))
    if not capture.isOpened():
        return Frames((), 0.0, "cannot be opened as a video")
    fps = float(capture.get(cv2.CAP_PROP_FPS)) or 25.0
    expected = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        name = f"frame{len(names):06d}.png"
        cv2.imwrite(str(out / name), frame)
        names.append(name)
    capture.release()
    error = None
    if expected and len(names) < expected:
        error = f"decoding stopped after frame {len(names)} of {expected} (truncated?)"
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(json.dumps({"files": names, "fps": fps, "error": error}))
    tmp.replace(meta)
    return Frames(tuple(out / n for n in names), fps, error)
