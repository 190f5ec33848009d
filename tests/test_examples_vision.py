"""Run the example vision systems as real subprocesses speaking the serve protocol."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "site_config" / "data"

# The components are installed by `make test`; a missing one fails, never skips.
assert importlib.util.find_spec("cv2"), "opencv-python-headless missing: run make test"
assert shutil.which("tesseract"), "tesseract-ocr missing: run make test (Debian tesseract-ocr)"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Objects of a JSON-lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def need(path: Path) -> Path:
    """A committed demo file (regenerate with python -m datagen.make_demo_vision)."""
    assert path.exists(), f"{path} missing: python -m datagen.make_demo_vision"
    return path


def converse(
    module: str,
    inputs: list[dict[str, Any]],
    *args: str,
    hello_extra: dict[str, Any] | None = None,
    kind: str = "ocr",
) -> list[dict[str, Any]]:
    """Send hello, the items and bye in one go; return the item replies in order.

    The serve loop answers lines in order and exits on bye, so a single
    communicate() is enough and a hung system hits the timeout.
    """
    hello = {"op": "hello", "protocol": 1, "task": "t", "kind": kind, **(hello_extra or {})}
    lines = [hello]
    lines += [{"op": "item", "id": f"i{n}", "input": inp} for n, inp in enumerate(inputs)]
    lines.append({"op": "bye"})
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert replies[0]["op"] == "ready", replies[0]
    assert isinstance(replies[0]["name"], str) and isinstance(replies[0]["version"], str)
    items = replies[1:]
    assert [r.get("id") for r in items] == [f"i{n}" for n in range(len(inputs))]
    for reply in items:
        assert reply["op"] == "result", reply
    return [r["output"] for r in items]


def check_candidates(output: dict[str, Any]) -> list[str]:
    """Assert the OCR output shape; return the candidates."""
    assert set(output) == {"candidates"}
    candidates = output["candidates"]
    assert isinstance(candidates, list) and len(candidates) <= 10
    assert all(isinstance(c, str) and len(c) == 1 for c in candidates)
    assert len(set(candidates)) == len(candidates)
    return candidates


def test_tesseract_ocr_reads_clean_characters() -> None:
    demo = DATA / "demo-ocr"
    truth = read_jsonl(need(demo / "truth.jsonl"))
    chosen = [t for t in truth if "clean" in t["subsets"]][:2]
    chosen += [t for t in truth if "degraded" in t["subsets"]][:1]
    outputs = converse(
        "examples.systems.tesseract_ocr", [{"image": str(demo / f"{t['id']}.png")} for t in chosen]
    )
    candidates = [check_candidates(o) for o in outputs]
    # Printed 64 px glyphs: the first clean one (天) is read right by chi_sim.
    assert candidates[0][:1] == [chosen[0]["char"]]


def test_tesseract_ink_reads_standard_strokes() -> None:
    demo = DATA / "demo-ink"
    truth = read_jsonl(need(demo / "truth.jsonl"))[:3]
    outputs = converse(
        "examples.systems.tesseract_ocr",
        [{"ink": str(demo / f"{t['id']}.json")} for t in truth],
        "--ink",
    )
    candidates = [check_candidates(o) for o in outputs]
    hits = sum(c[:1] == [t["char"]] for c, t in zip(candidates, truth, strict=True))
    assert hits >= 1, candidates


def check_boxes(output: dict[str, Any]) -> list[list[float]]:
    """Assert the face-detect output shape; return the boxes."""
    assert set(output) == {"boxes"}
    for box in output["boxes"]:
        assert len(box) == 5 and all(isinstance(v, int | float) for v in box)
        assert box[2] > 0 and box[3] > 0
    return output["boxes"]


def inside(point: list[float], box: list[float]) -> bool:
    return box[0] <= point[0] <= box[0] + box[2] and box[1] <= point[1] <= box[1] + box[3]


def test_cascade_finds_large_face_and_nothing_on_empty() -> None:
    demo = DATA / "demo-faces"
    refs = read_jsonl(need(demo / "faces.jsonl"))
    large = next(r for r in refs if r["subset"] == "large" and len(r["faces"]) == 1)
    empty = next(r for r in refs if r["subset"] == "empty")
    photo = next(r for r in refs if r["subset"] == "photo")
    chosen = [large, empty, photo]
    outputs = converse(
        "examples.systems.cascade_faces",
        [{"image": str(demo / r["image"])} for r in chosen],
        kind="face-detect",
    )
    boxes = [check_boxes(o) for o in outputs]
    face = large["faces"][0]
    assert any(inside(face["mouth"], b) and inside(face["left_eye"], b) for b in boxes[0])
    assert boxes[1] == []


def test_cascade_accepts_video_frame_inputs(tmp_path: Path) -> None:
    import cv2

    video = need(DATA / "demo-video" / "video.avi")
    frames = read_jsonl(DATA / "demo-video" / "frames.jsonl")
    capture = cv2.VideoCapture(str(video))
    inputs = []
    for n in range(2):
        ok, frame = capture.read()
        assert ok
        path = tmp_path / f"{n}.png"
        cv2.imwrite(str(path), frame)
        inputs.append({"image": str(path), "frame": n, "pts": n / 12})
    capture.release()
    outputs = converse("examples.systems.cascade_faces", inputs, kind="face-detect")
    for output, truth in zip(outputs, frames, strict=False):
        face = truth["faces"][0]
        assert any(inside(face["mouth"], b) for b in check_boxes(output))


def test_lbp_identifies_and_verifies() -> None:
    demo = DATA / "demo-faces-id"
    probes = read_jsonl(need(demo / "probes.jsonl"))
    gallery = {p.stem: str(p) for p in sorted((demo / "gallery").glob("*.png"))}
    chosen = [p for p in probes if p["subset"] == "light"][:2] + [probes[1]]
    pair = read_jsonl(demo / "pairs.jsonl")[:2]
    inputs: list[dict[str, Any]] = [{"image": str(demo / p["probe"])} for p in chosen]
    inputs += [{"image_a": str(demo / q["a"]), "image_b": str(demo / q["b"])} for q in pair]
    outputs = converse(
        "examples.systems.lbp_faces", inputs, hello_extra={"files": gallery}, kind="face-identify"
    )
    for output in outputs[: len(chosen)]:
        assert set(output) == {"candidates"}
        ids = [c[0] for c in output["candidates"]]
        assert sorted(ids) == sorted(gallery)
        sims = [c[1] for c in output["candidates"]]
        assert sims == sorted(sims, reverse=True)
    # A grey-level change leaves LBP codes unchanged: the right identity ranks first.
    for output, probe in zip(outputs[:2], chosen[:2], strict=True):
        assert output["candidates"][0][0] == probe["id"]
    genuine, impostor = outputs[len(chosen) :]
    assert pair[0]["genuine"] and not pair[1]["genuine"]
    assert genuine["score"] > impostor["score"]
