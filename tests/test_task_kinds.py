"""Every task kind end to end through the controller, scored by scoring/'s metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness import TestSetError, leaderboard, load_site, task_kind
from tests.helpers import FAKE_SERVE, make_testset, read_outputs, run_site, write_site


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def images(root: Path, widths: dict[str, int]) -> None:
    """Small real PNGs; the fake system tells them apart by their width."""
    root.mkdir(parents=True, exist_ok=True)
    for name, width in widths.items():
        cv2.imwrite(str(root / name), np.full((8, width), 128, dtype=np.uint8))


def row_of(site_path: Path) -> dict[str, Any]:
    site = load_site(site_path)
    [row] = leaderboard(site.run_dir)
    return row.to_dict()


def test_command_task_at_8khz(tmp_path: Path, plan_env) -> None:
    root = make_testset(tmp_path / "set", [("c1", 800, "打开文件"), ("c2", 900, "张三")], rate=8000)
    env = plan_env({800: {"text": "打开 文件"}, 900: {"text": "张山"}})
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "command", "sample_rates": [8000]},
    )
    run_site(site)
    row = row_of(site)
    assert row["metric"] == "correct_rate" and row["correct_rate"] == 0.5
    assert row["speed_unit"] == "rtf" and row["rtf_mean"] is not None


def test_command_task_rejects_other_sample_rates(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("c1", 1600, "打开")], rate=16000)
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE}},
        task_keys={"kind": "command", "sample_rates": [8000]},
    )
    testset = task_kind("command").load(root, load_site(site).config.tasks["asr"])
    assert not testset.items
    assert (
        "16000 Hz" in testset.invalid[0].reason and "never resamples" in testset.invalid[0].reason
    )


def test_kws_task(tmp_path: Path, plan_env) -> None:
    root = make_testset(tmp_path / "set", [("k1", 1600, ""), ("k2", 1700, "")])
    (root / "text").unlink()
    jsonl(
        root / "slots.jsonl",
        [
            {"id": "k1", "setting": "transportation", "slots": {"from": ["北京"], "to": ["上海"]}},
            {"id": "k2", "setting": "weather", "slots": {"city": ["广州"]}},
        ],
    )
    env = plan_env(
        {
            1600: {"output": {"slots": {"from": ["北京"], "to": ["南京"]}}},
            1700: {"output": {"slots": {"city": ["广州"]}}},
        }
    )
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "kws"},
    )
    run_site(site)
    row = row_of(site)
    assert row["metric"] == "slot_rate" and row["slot_rate"] == pytest.approx(2 / 3)
    assert row["scores"]["overall"]["sentence_rate"] == 0.5
    assert set(row["scores"]["by_setting"]) == {"transportation", "weather"}


def test_ocr_task_with_chars_per_second(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    images(root, {"s1.png": 100, "s2.png": 200, "s3.png": 300})
    jsonl(
        root / "truth.jsonl",
        [
            {"id": "s1", "char": "天", "subsets": ["standard"]},
            {"id": "s2", "char": "天", "subsets": ["standard"]},
            {"id": "s3", "char": "地", "subsets": ["degraded"]},
        ],
    )
    env = plan_env(
        {
            100: {"output": {"candidates": ["天", "夭"]}},
            200: {"output": {"candidates": ["夭", "天"]}},
            300: {"output": {"candidates": ["地"]}, "delay": 0.3},
        }
    )
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "ocr"},
        budget={"chars_per_second": 5, "hang_seconds": 5},
    )
    run_dir, _ = run_site(site)
    outputs = {r["id"]: r for r in read_outputs(run_dir, "asr", "fake")}
    assert outputs["s1"]["budget_seconds"] == pytest.approx(0.2)
    assert outputs["s3"]["verdict"] == "over_budget"
    row = row_of(site)
    # RS(天) = 1/2, RS(地) = 1: R = mean over characters = 3/4; R^10 = 1.
    assert row["recognition_rate"] == pytest.approx(0.75)
    assert row["scores"]["overall"]["top10_rate"] == 1.0
    assert row["speed_unit"] == "chars_per_second"
    total = sum(r["seconds"] for r in outputs.values())
    assert row["speed_mean"] == pytest.approx(3 / total)


def test_face_detect_task_with_ms_per_frame(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    images(root, {"f1.png": 100, "f2.png": 200})
    face = {"left_eye": [30, 30], "right_eye": [50, 30], "mouth": [40, 50]}
    jsonl(
        root / "faces.jsonl",
        [
            {"image": "f1.png", "subset": "clean", "faces": [face]},
            {"image": "f2.png", "subset": "clean", "faces": [face]},
        ],
    )
    env = plan_env(
        {
            100: {"output": {"boxes": [[20, 20, 40, 40, 0.9], [200, 200, 10, 10, 0.2]]}},
            200: {"output": {"boxes": [[0, 0, 5, 5, 0.5]]}},
        }
    )
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "face-detect"},
        budget={"ms_per_frame": 500, "hang_seconds": 5},
    )
    run_dir, _ = run_site(site)
    assert {r["budget_seconds"] for r in read_outputs(run_dir, "asr", "fake")} == {0.5}
    row = row_of(site)
    assert row["correct_detection_rate"] == 0.5
    assert row["scores"]["overall"]["false_detections"] == 2
    assert row["speed_unit"] == "ms_per_frame" and row["speed_mean"] > 0


def test_face_verify_task(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    images(root, {"a.png": 100, "b.png": 200, "c.png": 300})
    jsonl(
        root / "pairs.jsonl",
        [
            {"a": "a.png", "b": "b.png", "genuine": True},
            {"a": "b.png", "b": "c.png", "genuine": False},
        ],
    )
    env = plan_env({100: {"output": {"score": 0.9}}, 200: {"output": {"score": 0.1}}})
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "face-verify"},
    )
    run_dir, _ = run_site(site)
    assert {r["id"] for r in read_outputs(run_dir, "asr", "fake")} == {"a~b", "b~c"}
    row = row_of(site)
    assert row["metric"] == "eer" and row["eer"] == 0.0 and not row["higher_is_better"]


def test_wrong_output_shape_is_invalid_output(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    images(root, {"s1.png": 100})
    jsonl(root / "truth.jsonl", [{"id": "s1", "char": "天", "subsets": []}])
    env = plan_env({100: {"output": {"candidates": "天"}}})
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "ocr"},
    )
    run_dir, _ = run_site(site)
    [row] = read_outputs(run_dir, "asr", "fake")
    assert row["verdict"] == "invalid_output" and "candidates" in row["message"]


def test_bad_truth_file_names_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "set"
    images(root, {"s1.png": 100})
    (root / "truth.jsonl").write_text('{"id": "s1", "char": "天"}\n{"id": "s2", \n')
    site = write_site(
        tmp_path / "site.toml", root, {"fake": {"command": FAKE_SERVE}}, task_keys={"kind": "ocr"}
    )
    with pytest.raises(TestSetError) as info:
        task_kind("ocr").load(root, load_site(site).config.tasks["asr"])
    assert "truth.jsonl:2" in str(info.value)


def test_face_identify_task_enrols_the_gallery_in_hello(tmp_path: Path, plan_env) -> None:
    root = tmp_path / "set"
    images(root / "gallery", {"id1.png": 50, "id2.png": 60})
    images(root, {"p1.png": 100, "p2.png": 200})
    jsonl(
        root / "probes.jsonl",
        [
            {"probe": "p1.png", "id": "id1", "subset": "pose"},
            {"probe": "p2.png", "id": "id2", "subset": "illumination"},
        ],
    )
    log = tmp_path / "log.jsonl"
    env = plan_env(
        {
            100: {"output": {"candidates": [["id1", 0.9], ["id2", 0.3]]}},
            200: {"output": {"candidates": [["id1", 0.8], ["id2", 0.7]]}},
        },
        FAKE_LOG=str(log),
    )
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task_keys={"kind": "face-identify"},
        # Unsealed: the fake writes what it received to a file the sandbox would hide.
        device={"transport": "local", "sandbox": False},
    )
    run_dir, _ = run_site(site)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"files_exist": {"id1": True, "id2": True}} in logged
    hello = next(m for m in logged if m.get("op") == "hello")
    assert set(hello["files"]) == {"id1", "id2"}
    assert all("gallery" not in path for path in hello["files"].values()), "staged, not the set's"
    row = row_of(site)
    assert row["metric"] == "rank1" and row["rank1"] == 0.5
    assert row["scores"]["overall"]["rank10"] == 1.0
    assert set(row["scores"]["by_subset"]) == {"pose", "illumination"}
    assert not list((run_dir / "stage" / "fake").iterdir()), "gallery unstaged at the end"
