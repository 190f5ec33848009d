"""The `spkv` kind (harness/kinds/spkv.py, scoring/spkv.py): speaker verification.

Its toy system (below, run as ``python -c``) hears a speaker as the pitch of a pure
tone: two recordings score ``-|log2(f1 / f2)|``, so every answer is known in
advance. Its example job (``EXAMPLES``) is what tests/test_kind_conformance.py
runs the kind's export formats and `onsite score spkv --run` on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from harness import SiteError, TestSetError, leaderboard, load_site, task_kind
from harness.report import build_report, html_text
from scoring.det import DetectionCost
from scoring.spkv import score_trials
from tests.helpers import onsite, read_outputs
from tests.kind_examples import KindExample, run_example

RATE = 16000
# A speaker is a pitch; a recording above 1000 Hz makes the system crash (never answered).
PITCH_SYSTEM = r"""
import json, math, os, sys, wave
def pitch(path):
    with wave.open(path, "rb") as w:
        n, rate, data = w.getnframes(), w.getframerate(), w.readframes(w.getnframes())
    s = [int.from_bytes(data[i:i + 2], "little", signed=True) for i in range(0, len(data), 2)]
    return sum((a < 0) != (b < 0) for a, b in zip(s, s[1:])) * rate / (2 * n)
bad = iter([{"score": True}, {"score": "0.5"}, {"score": None}, {}])
for line in sys.stdin:
    m = json.loads(line)
    if m["op"] == "hello":
        print(json.dumps({"op": "ready", "name": "pitch"}), flush=True)
    elif m["op"] == "item":
        if os.environ.get("SPKV_HOSTILE"):
            out = next(bad, {"score": float("nan")})
        else:
            a, b = pitch(m["input"]["enrol"]), pitch(m["input"]["test"])
            if max(a, b) > 1000:
                os._exit(3)
            out = {"score": -abs(math.log2(a / b))}
        print(json.dumps({"op": "result", "id": m["id"], "output": out}), flush=True)
"""
SYSTEM = [sys.executable, "-c", PITCH_SYSTEM]
VOICES = {"a1": 200, "a2": 210, "b1": 400, "b2": 420, "c1": 800, "d1": 1600, "d2": 1700}
# Three targets (d1~d2 never answered: the system crashes) and four non-targets.
TRIALS = [
    ("a1", "a2", True),
    ("b1", "b2", True),
    ("d1", "d2", True),
    ("a1", "b1", False),
    ("b1", "c1", False),
    ("a2", "b2", False),
    ("c1", "a1", False),
]


def voices(root: Path, pitches: dict[str, int], rate: int = RATE) -> Path:
    """Half a second of a pure tone per recording, and trials.jsonl."""
    root.mkdir(parents=True, exist_ok=True)
    t = np.arange(rate // 2) / rate
    for name, hz in pitches.items():
        wave = (8000 * np.sin(2 * np.pi * hz * t + 0.7)).astype(np.int16)
        soundfile.write(root / f"{name}.wav", wave, rate, "PCM_16")
    return root


def trials(root: Path, rows: list[tuple[str, str, bool]]) -> None:
    lines = [json.dumps({"enrol": f"{e}.wav", "test": f"{t}.wav", "target": g}) for e, t, g in rows]
    (root / "trials.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def example(tmp: Path) -> KindExample:
    """The kind's demo-style job: five answered trials, one crash, EER 1/3."""
    root = voices(tmp / "set", VOICES)
    trials(root, TRIALS)
    return KindExample(root, {"command": SYSTEM})


EXAMPLES = {"spkv": example}


# --------------------------------------------------------------------------- scoring


def test_eer_and_min_dcf_by_hand() -> None:
    truth = {("a", "b"): True, ("c", "d"): True, ("a", "c"): False, ("b", "d"): False}
    # A target scored below a non-target: the curve is (1, 0), (1/2, 0), (1/2, 1/2), (0, 1/2),
    # (0, 1): P_miss = P_fa = 1/2 at the third point.
    scores = {("a", "b"): 3.0, ("c", "d"): 1.0, ("a", "c"): 2.0, ("b", "d"): 0.0}
    report = score_trials(scores, truth)
    assert report.eer == 0.5
    # NIST SRE, P_target 0.01, C_miss = C_fa = 1: normalized by 0.01, the best point is
    # (P_miss 1/2, P_fa 0): 0.01 * 0.5 / 0.01.
    assert report.min_dcf == pytest.approx(0.5)
    figures = report.to_dict(include_det=True)
    assert (figures["targets"], figures["nontargets"]) == (2, 2)
    assert figures["p_target"] == 0.01 and figures["c_miss"] == figures["c_fa"] == 1.0
    assert figures["det"]["p_miss"] == [1.0, 0.5, 0.5, 0.0, 0.0]
    assert figures["det"]["p_fa"] == [0.0, 0.0, 0.5, 0.5, 1.0]
    # A prior of 1/2 weighs both errors alike: the normalized cost at (1/2, 0) is 1/2 ... and
    # at (0, 1/2) too; never above the trivial systems' 1.
    even = score_trials(scores, truth, DetectionCost(p_target=0.5))
    assert even.min_dcf == pytest.approx(0.5)
    with pytest.raises(ValueError, match="P_target"):
        DetectionCost(p_target=1.0)


def test_a_trial_left_unanswered_gains_nothing() -> None:
    # Skipping a hard trial is scoring it below everything: for a target that is a miss
    # at every threshold, for a non-target no better than the lowest honest score.
    truth = {("a", "b"): True, ("c", "d"): True, ("a", "c"): False, ("b", "d"): False}
    honest = {("a", "b"): 3.0, ("c", "d"): 1.0, ("a", "c"): 2.0, ("b", "d"): 0.0}
    skipped = {k: v for k, v in honest.items() if k != ("c", "d")}
    low = {**honest, ("c", "d"): -100.0}
    assert score_trials(skipped, truth).eer == score_trials(low, truth).eer
    assert score_trials(skipped, truth).eer >= score_trials(honest, truth).eer
    assert score_trials(skipped, truth).missing_scores == 1
    with pytest.raises(ValueError, match="not in the truth"):
        score_trials({("x", "y"): 1.0}, truth)


# --------------------------------------------------------------------------- the kind


def _site(tmp: Path, root: Path, env: dict[str, str] | None = None, **keys: object) -> Path:
    from tests.helpers import write_site

    return write_site(
        tmp / "site.toml",
        root,
        {"pitch": {"command": SYSTEM, **({"env": env} if env else {})}},
        task="spkv",
        task_keys={"kind": "spkv", **keys},
        budget={"seconds": 20.0, "hang_seconds": 20.0},
    )


def test_bad_trials_file_names_line_and_fix(tmp_path: Path) -> None:
    root = voices(tmp_path / "set", {"a1": 200, "a2": 210})
    (root / "trials.jsonl").write_text('{"enrol": "a1.wav", "test": "a2.wav"}\n', "utf-8")
    with pytest.raises(TestSetError) as caught:
        task_kind("spkv").load(root, load_site(_site(tmp_path, root)).config.tasks["spkv"])
    [problem] = caught.value.problems
    assert "trials.jsonl:1: missing key 'target'" in str(problem)
    assert problem.line == 1 and problem.fix == 'add it, e.g. "target": true'


def test_odd_recordings_are_invalid_items_not_a_crash(tmp_path: Path) -> None:
    root = voices(tmp_path / "set", {"a1": 200, "a2": 210})
    voices(root, {"n8": 300}, rate=8000)
    trials(root, [("a1", "a2", True), ("a1", "n8", False), ("a1", "gone", False)])
    cfg = load_site(_site(tmp_path, root)).config.tasks["spkv"]
    testset = task_kind("spkv").load(root, cfg)
    assert [i.id for i in testset.items] == ["a1~a2"]
    item = testset.items[0]
    assert item.fields == {"sample_rate": RATE} and item.duration == pytest.approx(1.0)
    reasons = {i.id: i.reason for i in testset.invalid}
    assert "sample rate 8000 Hz" in reasons["a1~n8"] and "gone" in reasons["a1~gone"]
    # Both rates accepted, but one trial's recordings at two rates: no one sample_rate.
    cfg = load_site(_site(tmp_path, root, sample_rates=[8000, 16000])).config.tasks["spkv"]
    mixed = {i.id: i.reason for i in task_kind("spkv").load(root, cfg).invalid}
    assert "enrol at 16000 Hz, test at 8000 Hz" in mixed["a1~n8"]


def test_site_file_knows_spkv_and_its_options_only(tmp_path: Path) -> None:
    root = voices(tmp_path / "set", {"a1": 200})
    with pytest.raises(SiteError) as caught:
        load_site(_site(tmp_path, root, unit="char"))
    [problem] = caught.value.problems
    assert problem.where == "tasks.spkv.unit" and "sample_rates" in problem.fix


def test_spkv_run_end_to_end(tmp_path: Path) -> None:
    run_dir = run_example("spkv", example(tmp_path), tmp_path)
    verdicts = {r["id"]: r["verdict"] for r in read_outputs(run_dir, "spkv", "sys")}
    assert verdicts.pop("d1~d2") == "crashed" and set(verdicts.values()) == {"ok"}
    [row] = leaderboard(run_dir)
    assert row.metric == "eer" and not row.higher_is_better
    # Targets a1~a2, b1~b2 above every non-target; d1~d2 never scored (a miss at every
    # threshold): P_miss stays 1/3 while P_fa climbs, equal at 1/3.
    assert row.score == pytest.approx(1 / 3)
    assert row.scores["min_dcf"] == pytest.approx(1 / 3)
    assert row.scores["missing_scores"] == 1 and row.speed_unit == "rtf"
    assert row.detail == "minDCF 0.333 (P_target 0.01)"
    page = html_text(build_report(run_dir))
    assert "spkv: DET" in page  # the systems' DET curves, drawn in the report
    # export, re-read offline, and --run: the live numbers (as a user runs them).
    ref, hyp = tmp_path / "trials.jsonl", tmp_path / "scores.jsonl"
    for path, extra in ((hyp, ()), (ref, ("--references",))):
        out = onsite("export", str(run_dir), "--format", "score-jsonl", "-o", str(path), *extra)
        assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in hyp.read_text("utf-8").splitlines()]
    assert len(lines) == 6 and {"enrol": "a1.wav", "test": "a2.wav"}.items() <= lines[0].items()
    offline = onsite("score", "spkv", "--ref", str(ref), "--hyp", str(hyp), "--json")
    by_run = onsite("score", "spkv", "--run", str(run_dir), "--json")
    for proc in (offline, by_run):
        assert proc.returncode == 0, proc.stderr
        figures = json.loads(proc.stdout)
        assert figures["eer"] == row.score and figures["min_dcf"] == row.scores["min_dcf"]
    plot = tmp_path / "det"
    drawn = onsite("score", "spkv", "--ref", str(ref), "--hyp", str(hyp), "--plot", str(plot))
    assert drawn.returncode == 0 and (tmp_path / "det.png").is_file(), drawn.stderr


def test_scores_that_are_no_numbers_are_invalid_outputs(tmp_path: Path) -> None:
    root = voices(tmp_path / "set", {k: v for k, v in VOICES.items() if v < 1000})
    trials(root, [t for t in TRIALS if t[0][0] != "d"])
    run_dir = run_example(
        "spkv", KindExample(root, {"command": SYSTEM, "env": {"SPKV_HOSTILE": "1"}}), tmp_path
    )
    verdicts = [r["verdict"] for r in read_outputs(run_dir, "spkv", "sys")]
    # true, "0.5", null, no score, NaN: none is a score, none counts.
    assert set(verdicts) <= {"invalid_output", "error"} and verdicts.count("invalid_output") >= 4
    [row] = leaderboard(run_dir)
    assert row.scores["missing_scores"] == len(verdicts)
    # Nothing scored is chance, never better: every trial rejected until all are accepted.
    assert row.score == 0.5
