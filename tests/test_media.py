"""Image, ink and video inputs: bad files become clear invalid items; video stream timing."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from harness import leaderboard, load_site, task_kind
from tests.helpers import FAKE_SERVE, read_outputs, run_site, write_site
from tests.test_task_kinds import images, jsonl

FACE = {"left_eye": [30, 30], "right_eye": [50, 30], "mouth": [40, 50]}


def make_video(path: Path, frames: int, fps: float) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (96, 80))
    for n in range(frames):
        image = np.full((80, 96, 3), 40 + 10 * n, dtype=np.uint8)
        writer.write(image)
    writer.release()


def test_unreadable_image_and_malformed_ink_are_invalid_items(tmp_path: Path) -> None:
    root = tmp_path / "set"
    images(root, {"s1.png": 100})
    (root / "s2.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    (root / "s3.json").write_text(json.dumps({"strokes": [[[0, 0, 0], [1, 1, 10]], [[2, 2]]]}))
    (root / "s4.json").write_text(json.dumps({"strokes": [[[0, 0, 5], [1, 1, 3]]]}))
    (root / "s5.json").write_text(json.dumps({"strokes": [[[0, 0, 0], [4, 4, 20]]]}))
    jsonl(root / "truth.jsonl", [{"id": f"s{i}", "char": "天", "subsets": []} for i in range(1, 6)])
    site = write_site(
        tmp_path / "site.toml", root, {"fake": {"command": FAKE_SERVE}}, task_keys={"kind": "ocr"}
    )
    testset = task_kind("ocr").load(root, load_site(site).config.tasks["asr"])
    assert [i.id for i in testset.items] == ["s1", "s5"]
    assert testset.items[1].files == {"ink": root / "s5.json"}
    reasons = {bad.id: bad.reason for bad in testset.invalid}
    assert "cannot be decoded as an image" in reasons["s2"]
    assert "stroke 1 point 0 is not [x, y, t_ms]" in reasons["s3"]
    assert "time goes backwards" in reasons["s4"]


def test_truncated_video_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    make_video(root / "clip.avi", 12, 10)
    data = (root / "clip.avi").read_bytes()
    (root / "clip.avi").write_bytes(data[: len(data) // 2])
    jsonl(root / "frames.jsonl", [{"frame": n, "faces": [FACE]} for n in range(12)])
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE}},
        task_keys={"kind": "face-detect"},
    )
    testset = task_kind("face-detect").load(root, load_site(site).config.tasks["asr"])
    assert len(testset.items) < 12, "the frames after the damage are not sent"
    assert testset.invalid and "is not in clip.avi" in testset.invalid[-1].reason
    run_dir, results = run_site(site)
    assert results[0].failed is None, "the run goes on"


def test_stream_mode_counts_late_frames(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    root.mkdir()
    make_video(root / "clip.avi", 10, 5)  # a frame every 0.2 s
    jsonl(root / "frames.jsonl", [{"frame": n, "faces": [FACE]} for n in range(10)])
    boxes = {"output": {"boxes": [[20, 20, 40, 40, 0.9]]}}
    # Frame 3 takes 0.7 s: it is late, and so are frames 4 and 5 queued behind it
    # (answered 0.5 s and 0.3 s after they were due); frame 6 catches up.
    plan = {f"f{n}": dict(boxes) for n in range(10)} | {"f3": {**boxes, "delay": 0.7}}
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": plan_env({}) | {"FAKE_PLAN": json.dumps(plan)}}},
        task_keys={"kind": "face-detect", "stream": True},
        budget={"ms_per_frame": 400, "hang_seconds": 5},
    )
    run_dir, _ = run_site(site)
    rows = {r["id"]: r for r in read_outputs(run_dir, "asr", "fake")}
    late = sorted(k for k, r in rows.items() if r["late"])
    assert late == ["frame000003", "frame000004", "frame000005"]
    assert rows["frame000003"]["verdict"] == "over_budget"
    [row] = leaderboard(run_dir)
    assert row.late_rate == 0.3
    assert row.latency_p95 is not None and row.latency_p95 > 0.2
    assert row.score == 1.0, "every frame's face was found"
