"""Regenerate the demo vision test sets: OCR, online ink, face detection, identification, video.

Run as ``python -m datagen.make_demo_vision [--sets ocr,ink,faces,faces-id,video] [--root DIR]``.
Every set is synthetic and seeded, so regeneration is repeatable for the same
library versions (fonts, Pillow's FreeType, OpenCV's libjpeg and scikit-image's
bundled images all feed into the bytes).

Needs the Debian package ``fonts-noto-cjk`` (the CJK glyphs) and the Python
packages numpy, opencv-python-headless (<5: 5.0 dropped the Haar cascades the
face example uses), scikit-image and Pillow (a scikit-image dependency).

Sets written under ROOT (default ``site_config/data``):
  ``demo-ocr``       printed GB2312 level-1 characters, clean and degraded
  ``demo-ink``       online "handwriting" traced from glyph skeletons, standard
                     and disordered stroke order
  ``demo-faces``     LFW crops and the astronaut pasted on texture backgrounds
  ``demo-faces-id``  a 16-identity gallery, perturbed probes and verification pairs
  ``demo-video``     a face moving across a background, MJPG in AVI

Each directory's README.md describes its layout and how its truth was made.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont
from skimage import data as skdata
from skimage.morphology import skeletonize

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "site_config" / "data"
ALL_SETS = ("ocr", "ink", "faces", "faces-id", "video")

# Common characters, all in GB2312 level 1 (lead byte 0xB0-0xD7; checked below).
OCR_CHARS = "天人大中国学生日月水火山木电家工年我来花"
INK_CHARS = "人大口日木山水火中字"
FONT_FAMILY = "Noto Sans CJK SC"
FONT_CANDIDATES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto-cjk/NotoSansCJK-Regular.ttc",
)

# Landmarks of skimage's 25x25 LFW crops as fractions of the crop side: (x, y)
# of the image-left eye, image-right eye and mouth centre.  Read off the mean
# of the 100 face crops (dark eye and mouth minima; see demo-faces/README.md).
LFW_LEFT_EYE = (6.5 / 25, 8.5 / 25)
LFW_RIGHT_EYE = (15.0 / 25, 8.5 / 25)
LFW_MOUTH = (11.0 / 25, 18.0 / 25)
# Astronaut (512x512 original) landmarks, measured by hand and checked against
# OpenCV's eye cascade inside the frontal-face box it finds (177, 66, 95, 95).
ASTRONAUT_LANDMARKS = ((202.0, 101.0), (248.0, 103.0), (225.0, 143.0))


def is_gb2312_level1(char: str) -> bool:
    """True for a character in GB2312 level 1 (rows 16-55, lead byte 0xB0-0xD7)."""
    try:
        encoded = char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return len(encoded) == 2 and 0xB0 <= encoded[0] <= 0xD7


def load_font(size: int) -> ImageFont.FreeTypeFont:
    """Open the Simplified Chinese face of Noto Sans CJK at ``size`` pixels."""
    for path in FONT_CANDIDATES:
        if not Path(path).exists():
            continue
        # A .ttc holds one face per region; pick the SC one by name, not index,
        # because the order differs between Noto CJK releases.
        for index in range(10):
            try:
                font = ImageFont.truetype(path, size, index=index)
            except OSError:
                break
            if font.getname()[0] == FONT_FAMILY:
                return font
    raise SystemExit(f"{FONT_FAMILY} not found: apt-get install fonts-noto-cjk")


def render_char(char: str, font: ImageFont.FreeTypeFont, canvas: int) -> np.ndarray:
    """Black glyph centred on a white ``canvas`` x ``canvas`` uint8 image."""
    image = Image.new("L", (canvas, canvas), 255)
    ImageDraw.Draw(image).text((canvas / 2, canvas / 2), char, font=font, fill=0, anchor="mm")
    return np.asarray(image, dtype=np.uint8).copy()


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write one compact JSON object per line (UTF-8, characters unescaped)."""
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def rotate(image: np.ndarray, degrees: float, fill: int | tuple[int, ...]) -> np.ndarray:
    """Rotate about the centre, keeping the size and filling uncovered corners."""
    h, w = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    return cv2.warpAffine(
        image,
        matrix,
        (w, h),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=fill,
    )


# --- demo-ocr ------------------------------------------------------------------


def degrade(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Small rotation, blur, lower contrast and Gaussian noise, like a poor scan."""
    out = rotate(image, float(rng.uniform(-8, 8)), 255)
    out = cv2.GaussianBlur(out, (0, 0), float(rng.uniform(0.8, 1.6)))
    lo, hi = float(rng.uniform(40, 80)), float(rng.uniform(190, 230))
    out = lo + out.astype(np.float64) * (hi - lo) / 255.0
    out = out + rng.normal(0.0, float(rng.uniform(12, 24)), out.shape)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def make_ocr(out: Path, seed: int = 2003) -> None:
    """demo-ocr: each character rendered at 64 px, once clean and once degraded."""
    out.mkdir(parents=True, exist_ok=True)
    font = load_font(64)
    rows = []
    for n, char in enumerate(OCR_CHARS, start=1):
        assert is_gb2312_level1(char), char
        clean = render_char(char, font, 96)
        # A per-item generator keeps each image stable if the list changes.
        rng = np.random.default_rng([seed, n])
        for subset, image in (("clean", clean), ("degraded", degrade(clean, rng))):
            item_id = f"c{n:02d}_{subset}"
            cv2.imwrite(str(out / f"{item_id}.png"), image, [cv2.IMWRITE_PNG_COMPRESSION, 9])
            rows.append({"id": item_id, "char": char, "subsets": ["level1", subset]})
    write_jsonl(out / "truth.jsonl", rows)


# --- demo-ink ------------------------------------------------------------------

_NEIGHBOURS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def trace_skeleton(skeleton: np.ndarray, min_points: int = 6) -> list[list[tuple[int, int]]]:
    """Split a one-pixel-wide skeleton into pen paths of (x, y) pixel points.

    Paths start at end points (one neighbour) when there are any, else at any
    unvisited pixel (closed loops), and follow unvisited neighbours preferring
    the current direction, so a junction ends one path and starts another.
    """
    on = {(int(y), int(x)) for y, x in zip(*np.nonzero(skeleton), strict=True)}

    def neighbours(p: tuple[int, int]) -> list[tuple[int, int]]:
        return [(p[0] + dy, p[1] + dx) for dy, dx in _NEIGHBOURS if (p[0] + dy, p[1] + dx) in on]

    visited: set[tuple[int, int]] = set()
    paths: list[list[tuple[int, int]]] = []
    while True:
        todo = sorted(on - visited)
        if not todo:
            break
        ends = [p for p in todo if len([q for q in neighbours(p) if q not in visited]) <= 1]
        # Top-most, then left-most start: how a writer begins most strokes.
        start = ends[0] if ends else todo[0]
        path = [start]
        visited.add(start)
        direction = (0, 0)
        while True:
            current = path[-1]
            options = [q for q in neighbours(current) if q not in visited]
            if not options:
                break
            nxt = max(
                options,
                key=lambda q: (
                    (q[0] - current[0]) * direction[0] + (q[1] - current[1]) * direction[1]
                ),
            )
            direction = (nxt[0] - current[0], nxt[1] - current[1])
            visited.add(nxt)
            path.append(nxt)
        if len(path) >= min_points:
            paths.append([(x, y) for y, x in path])
    return paths


def strokes_with_time(
    paths: list[list[tuple[int, int]]], rng: np.random.Generator, step: int = 3
) -> list[list[list[int]]]:
    """Subsample paths and stamp them: 10 ms per sample, 120-250 ms pen-up gaps."""
    strokes: list[list[list[int]]] = []
    t = 0
    for path in paths:
        points = path[::step]
        if points[-1] != path[-1]:
            points.append(path[-1])
        stroke = []
        for x, y in points:
            stroke.append([x, y, t])
            t += 10
        strokes.append(stroke)
        t += int(rng.integers(120, 250))
    return strokes


def disorder(
    paths: list[list[tuple[int, int]]], rng: np.random.Generator
) -> list[list[tuple[int, int]]]:
    """Shuffle the stroke order and reverse some strokes (OLCCR-2003's disordered set)."""
    order = rng.permutation(len(paths))
    if len(paths) > 1 and np.array_equal(order, np.arange(len(paths))):
        order = order[::-1]  # never hand back the standard order unchanged
    out = []
    for i in order:
        path = paths[int(i)]
        out.append(path[::-1] if rng.random() < 0.5 else path)
    return out


def make_ink(out: Path, seed: int = 18790) -> None:
    """demo-ink: glyph skeletons traced into timed strokes, standard and disordered."""
    out.mkdir(parents=True, exist_ok=True)
    canvas = 160
    font = load_font(128)
    rows = []
    for n, char in enumerate(INK_CHARS, start=1):
        assert is_gb2312_level1(char), char
        glyph = render_char(char, font, canvas)
        paths = trace_skeleton(skeletonize(glyph < 128))
        # Standard order approximated as top-to-bottom, then left-to-right by
        # start point, in 16 px bands so nearly level starts compare by x.
        paths.sort(key=lambda p: (p[0][1] // 16, p[0][0]))
        rng = np.random.default_rng([seed, n])
        for subset, ordered in (("standard", paths), ("disordered", disorder(paths, rng))):
            item_id = f"k{n:02d}_{subset}"
            ink = {"width": canvas, "height": canvas, "strokes": strokes_with_time(ordered, rng)}
            (out / f"{item_id}.json").write_text(json.dumps(ink) + "\n", encoding="utf-8")
            rows.append({"id": item_id, "char": char, "subsets": [subset]})
    write_jsonl(out / "truth.jsonl", rows)


# --- faces ---------------------------------------------------------------------


def lfw_faces() -> np.ndarray:
    """The 100 face crops of skimage's lfw_subset as uint8 (the other 100 are non-faces)."""
    return np.rint(skdata.lfw_subset()[:100] * 255).astype(np.uint8)


def lfw_landmarks(x: float, y: float, side: float) -> dict[str, list[float]]:
    """Landmarks of an LFW crop pasted with its top-left corner at (x, y), ``side`` px wide."""

    def at(frac: tuple[float, float]) -> list[float]:
        return [round(x + frac[0] * side, 1), round(y + frac[1] * side, 1)]

    return {"left_eye": at(LFW_LEFT_EYE), "right_eye": at(LFW_RIGHT_EYE), "mouth": at(LFW_MOUTH)}


def background(name: str, width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """A random ``width`` x ``height`` crop of a 512x512 skimage texture, softened.

    The blur keeps JPEGs small and stops the texture dominating the faces.
    """
    texture = getattr(skdata, name)()
    x = int(rng.integers(0, 512 - width + 1))
    y = int(rng.integers(0, 512 - height + 1))
    return cv2.GaussianBlur(texture[y : y + height, x : x + width], (0, 0), 1.2)


def paste_faces(
    canvas: np.ndarray, faces: list[np.ndarray], sides: list[int], rng: np.random.Generator
) -> list[dict[str, list[float]]]:
    """Paste faces scaled to ``sides`` at random non-overlapping spots; return landmarks."""
    h, w = canvas.shape
    placed: list[tuple[int, int, int]] = []
    landmarks = []
    for face, side in zip(faces, sides, strict=True):
        for _ in range(200):
            x = int(rng.integers(4, w - side - 4))
            y = int(rng.integers(4, h - side - 4))
            # A margin of half a face keeps detections of neighbours apart.
            if all(
                x + side + s // 2 < px
                or px + s + side // 2 < x
                or y + side + s // 2 < py
                or py + s + side // 2 < y
                for px, py, s in placed
            ):
                break
        else:
            raise RuntimeError("no room for another face")
        canvas[y : y + side, x : x + side] = cv2.resize(
            face, (side, side), interpolation=cv2.INTER_CUBIC
        )
        placed.append((x, y, side))
        landmarks.append(lfw_landmarks(x, y, side))
    return landmarks


def astronaut_image(
    width: int, height: int, scale: float
) -> tuple[np.ndarray, dict[str, list[float]]]:
    """The astronaut photo scaled by ``scale`` and cropped to width x height, with landmarks."""
    photo = cv2.cvtColor(skdata.astronaut(), cv2.COLOR_RGB2GRAY)
    size = round(512 * scale)
    photo = cv2.resize(photo, (size, size), interpolation=cv2.INTER_AREA)
    (lx, ly), (rx, ry), (mx, my) = ASTRONAUT_LANDMARKS
    # Crop so the face sits near the middle of the frame.
    x0 = int(min(max(225 * scale - width / 2, 0), size - width))
    y0 = int(min(max(110 * scale - height / 2, 0), size - height))
    crop = photo[y0 : y0 + height, x0 : x0 + width].copy()

    def at(px: float, py: float) -> list[float]:
        return [round(px * scale - x0, 1), round(py * scale - y0, 1)]

    return crop, {"left_eye": at(lx, ly), "right_eye": at(rx, ry), "mouth": at(mx, my)}


def make_faces(out: Path, seed: int = 4) -> None:
    """demo-faces: 12 grey 320x240 JPEGs with 0-3 faces each and their landmarks."""
    out.mkdir(parents=True, exist_ok=True)
    faces = lfw_faces()
    rng = np.random.default_rng(seed)
    textures = ("brick", "grass", "gravel")
    # (subset, face sides): large faces are easy for a 24x24 cascade, small ones
    # sit near its minimum window, "empty" counts false detections only.
    plan: list[tuple[str, list[int]]] = [
        ("large", [110]), ("large", [96, 90]), ("large", [100]), ("large", [88, 84]),
        ("small", [48, 44, 40]), ("small", [44, 40]), ("small", [36, 40, 48]), ("small", [40]),
        ("empty", []), ("empty", []),
    ]  # fmt: skip
    rows: list[dict[str, Any]] = []
    picks = rng.permutation(len(faces))
    used = 0
    for n, (subset, sides) in enumerate(plan, start=1):
        canvas = background(textures[n % 3], 320, 240, rng)
        chosen = [faces[int(i)] for i in picks[used : used + len(sides)]]
        used += len(sides)
        marks = paste_faces(canvas, chosen, sides, rng)
        name = f"f{n:02d}.jpg"
        cv2.imwrite(str(out / name), canvas, [cv2.IMWRITE_JPEG_QUALITY, 85])
        rows.append({"image": name, "subset": subset, "faces": marks})
    for n, scale in ((len(plan) + 1, 0.7), (len(plan) + 2, 1.0)):
        photo, mark = astronaut_image(320, 240, scale)
        name = f"f{n:02d}.jpg"
        cv2.imwrite(str(out / name), photo, [cv2.IMWRITE_JPEG_QUALITY, 85])
        rows.append({"image": name, "subset": "photo", "faces": [mark]})
    write_jsonl(out / "faces.jsonl", rows)


PROBE_KINDS = ("light", "pose", "blur", "occlusion")


def perturb(face: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A probe made from a gallery image, one capture condition at a time.

    'light': side lighting (a left-right ramp of gain) and a gamma curve; 'pose': turned,
    scaled and shifted, with sensor noise; 'blur': a distant subject (down to 11-14 px and
    back, blurred) with noise; 'occlusion': dark glasses or a scarf over a band of the face.
    """
    side = face.shape[0]
    out: np.ndarray = face.astype(np.float64)
    if kind == "light":
        gamma = float(rng.uniform(0.5, 2.0))
        low, high = sorted(float(g) for g in rng.uniform(0.2, 1.3, 2))
        ramp = np.linspace(low, high, side) if rng.random() < 0.5 else np.linspace(high, low, side)
        out = 255.0 * (out / 255.0) ** gamma * ramp[np.newaxis, :] + float(rng.uniform(0, 30))
    elif kind == "pose":
        matrix = cv2.getRotationMatrix2D(
            (side / 2, side / 2), float(rng.uniform(-20, 20)), float(rng.uniform(0.82, 1.18))
        )
        matrix[:, 2] += rng.uniform(-0.1, 0.1, 2) * side
        out = cv2.warpAffine(out, matrix, (side, side), borderMode=cv2.BORDER_REPLICATE)
        out = out + rng.normal(0.0, 10.0, out.shape)
    elif kind == "blur":
        small = int(rng.integers(11, 15))
        out = cv2.resize(out, (small, small), interpolation=cv2.INTER_AREA)
        out = cv2.resize(out, (side, side), interpolation=cv2.INTER_LINEAR)
        out = cv2.GaussianBlur(out, (0, 0), float(rng.uniform(1.0, 2.0)))
        out = out + rng.normal(0.0, 10.0, out.shape)
    elif kind == "occlusion":
        # Rows of the 100-px crop: the eyes sit near 34, the mouth near 72 (LFW_* above).
        top = int(rng.integers(24, 30)) if rng.random() < 0.5 else int(rng.integers(62, 70))
        out = out.copy()
        out[top : top + int(rng.integers(22, 32)), :] = float(rng.uniform(10, 50))
        out = out + rng.normal(0.0, 4.0, out.shape)
    else:
        raise ValueError(kind)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


# lfw_subset indices of the gallery, picked by eye to be different people (the subset
# has no identity labels): the first five are the original demo's.
FACE_ID_GALLERY = [1, 4, 9, 15, 19, 22, 27, 31, 36, 40, 44, 48, 53, 57, 61, 66]


def make_faces_id(out: Path, seed: int = 5) -> None:
    """demo-faces-id: 16 gallery faces, 4 probes each (one per capture condition), and a
    genuine and an impostor verification pair per probe."""
    (out / "gallery").mkdir(parents=True, exist_ok=True)
    for old in out.glob("p*_*.png"):
        old.unlink()
    faces = lfw_faces()
    rng = np.random.default_rng(seed)
    side = 100
    ids = [f"p{n:02d}" for n in range(1, len(FACE_ID_GALLERY) + 1)]
    gallery = {}
    for gid, index in zip(ids, FACE_ID_GALLERY, strict=True):
        gallery[gid] = cv2.resize(faces[index], (side, side), interpolation=cv2.INTER_CUBIC)
        cv2.imwrite(
            str(out / "gallery" / f"{gid}.png"), gallery[gid], [cv2.IMWRITE_PNG_COMPRESSION, 9]
        )
    probes, pairs = [], []
    for k, gid in enumerate(ids):
        for kind in PROBE_KINDS:
            name = f"{gid}_{kind}.png"
            cv2.imwrite(
                str(out / name), perturb(gallery[gid], kind, rng), [cv2.IMWRITE_PNG_COMPRESSION, 9]
            )
            probes.append({"probe": name, "id": gid, "subset": kind})
            impostor = ids[(k + 1 + int(rng.integers(0, len(ids) - 1))) % len(ids)]
            pairs.append({"a": f"gallery/{gid}.png", "b": name, "genuine": True})
            pairs.append({"a": f"gallery/{impostor}.png", "b": name, "genuine": False})
    write_jsonl(out / "probes.jsonl", probes)
    write_jsonl(out / "pairs.jsonl", pairs)


def make_video(out: Path, seed: int = 6, frames: int = 30, fps: int = 12) -> None:
    """demo-video: an LFW face gliding left to right over grass, MJPG AVI, 320x240."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    width, height, side = 320, 240, 90
    base = background("grass", width, height, rng)
    face = cv2.resize(lfw_faces()[27], (side, side), interpolation=cv2.INTER_CUBIC)
    path = out / "video.avi"
    fourcc: int = cv2.VideoWriter_fourcc(*"MJPG")  # type: ignore[attr-defined]
    writer = cv2.VideoWriter(str(path), fourcc, fps, (width, height), isColor=False)
    if not writer.isOpened():
        raise SystemExit("OpenCV cannot write MJPG AVI here")
    writer.set(cv2.VIDEOWRITER_PROP_QUALITY, 80)
    rows = []
    for n in range(frames):
        x = round(10 + (width - side - 20) * n / (frames - 1))
        y = round(70 + 40 * math.sin(2 * math.pi * n / frames))
        frame = base.copy()
        frame[y : y + side, x : x + side] = face
        writer.write(frame)
        rows.append({"frame": n, "faces": [lfw_landmarks(x, y, side)]})
    writer.release()
    write_jsonl(out / "frames.jsonl", rows)
    check = cv2.VideoCapture(str(path))
    count = 0
    while check.read()[0]:
        count += 1
    check.release()
    if count != frames:
        raise SystemExit(f"{path}: wrote {frames} frames, read back {count}")


MAKERS = {
    "ocr": ("demo-ocr", make_ocr),
    "ink": ("demo-ink", make_ink),
    "faces": ("demo-faces", make_faces),
    "faces-id": ("demo-faces-id", make_faces_id),
    "video": ("demo-video", make_video),
}


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and write the requested sets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, default=DEFAULT_ROOT, help="parent of the set directories"
    )
    parser.add_argument(
        "--sets", default=",".join(ALL_SETS), help=f"comma-separated subset of {ALL_SETS}"
    )
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in MAKERS]
    if unknown:
        parser.error(f"unknown sets: {unknown}")
    for name in wanted:
        directory, maker = MAKERS[name]
        maker(args.root / directory)
        print(f"wrote {args.root / directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
