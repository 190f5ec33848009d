"""`onsite score`: files in, numbers out, for each family wired so far."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring import listening_plan
from tests.helpers import onsite


def score(*args: str) -> dict:
    proc = onsite("score", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_asr_trn_against_kaldi_text(tmp_path: Path) -> None:
    ref = tmp_path / "ref.trn"
    ref.write_text("hello world (u1)\ngood morning (u2)\n(u3)\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("u1 Hello world\nu2 good evening\nu3 oops\n", encoding="utf-8")
    result = score("asr", "--ref", str(ref), "--hyp", str(hyp))
    # u1 correct (case-insensitive), u2 one substitution, u3 empty ref: one insertion.
    assert result["n_ref"] == 4
    assert (result["correct"], result["substitutions"], result["deletions"]) == (3, 1, 0)
    assert result["insertions"] == 1
    assert result["wer"] == 2 / 4
    assert result["sentences"] == 3 and result["sentence_correct_rate"] == 1 / 3
    assert result["utterances"][1] == {
        "id": "u2",
        "n_ref": 2,
        "correct": 1,
        "substitutions": 1,
        "deletions": 0,
        "insertions": 0,
    }
    sensitive = score("asr", "--ref", str(ref), "--hyp", str(hyp), "--case-sensitive")
    assert sensitive["substitutions"] == 2


def test_asr_char_unit(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("a1 我们 use GPU\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a1 我门 use gpu\n", encoding="utf-8")
    result = score("asr", "--ref", str(ref), "--hyp", str(hyp), "--unit", "char")
    assert (result["n_ref"], result["substitutions"]) == (4, 1)


def test_asr_bad_input_names_file_and_line(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 a\nu1 b\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("u1 a\n", encoding="utf-8")
    proc = onsite("score", "asr", "--ref", str(ref), "--hyp", str(hyp), "--json")
    assert proc.returncode == 2
    assert f"{ref}:2" in proc.stderr and "u1" in proc.stderr
    ref.write_text("u1 a\nu2 b\n", encoding="utf-8")
    proc = onsite("score", "asr", "--ref", str(ref), "--hyp", str(hyp), "--json")
    assert proc.returncode == 2 and "u2" in proc.stderr


def test_command_and_face_verification_families(tmp_path: Path) -> None:
    ref = tmp_path / "ref.jsonl"
    ref.write_text('{"id": "c1", "text": "打开文件"}\n{"id": "c2", "text": "张三"}\n')
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"id": "c1", "text": "打开 文件"}\n{"id": "c2", "text": "张山"}\n')
    result = score("command", "--ref", str(ref), "--hyp", str(hyp))
    assert result["overall"]["correct_rate"] == 0.5

    truth = tmp_path / "truth.jsonl"
    truth.write_text(
        '{"a": "x", "b": "y", "genuine": true}\n{"a": "x", "b": "z", "genuine": false}\n'
    )
    scores = tmp_path / "scores.jsonl"
    scores.write_text('{"a": "x", "b": "y", "score": 0.9}\n{"a": "x", "b": "z", "score": 0.1}\n')
    result = score("faces-verify", "--ref", str(truth), "--hyp", str(scores))
    assert result["eer"] == 0.0


# --- keyword spotting DET and speech synthesis (files without a --ref) ------

T_975_DF1 = 12.706204736174707  # Student t quantile at 0.975: scipy.stats.t.ppf(0.975, df)
T_975_DF2 = 4.302652729749464
T_975_DF3 = 3.182446305284263


def jsonl(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def bad(*args: str) -> str:
    """Run a command that must fail on its input; return stderr."""
    proc = onsite("score", *args, "--json")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    return proc.stderr


def test_kws_det(tmp_path: Path) -> None:
    def det(keyword: str, utterance: str, score: float, is_true: bool) -> dict:
        return {"keyword": keyword, "utterance": utterance, "score": score, "is_true": is_true}

    dets = jsonl(
        tmp_path / "det.jsonl",
        det("k1", "u1", 0.9, True),
        det("k1", "u2", 0.8, False),
        det("k2", "u1", 0.8, True),
        det("k2", "u3", 0.3, False),
    )
    # 2 keywords x 4 utterances = 8 trials, 3 true pairs: 5 non-target trials.
    args = ("kws-det", "--hyp", str(dets), "--n-true", "3", "--n-nontarget", "5")
    result = score(*args)
    assert (result["detections"], result["true_detections"]) == (4, 2)
    # Ties at 0.8 are accepted together; the third true occurrence is never proposed.
    assert [(p["threshold"], p["misses"], p["false_alarms"]) for p in result["points"]] == [
        (None, 3, 0),
        (0.9, 2, 0),
        (0.8, 1, 1),
        (0.3, 1, 2),
    ]
    assert [(p["p_miss"], p["p_fa"]) for p in result["points"]] == [
        (1.0, 0.0),
        (2 / 3, 0.0),
        (1 / 3, 1 / 5),
        (1 / 3, 2 / 5),
    ]
    text = onsite("score", *args)
    assert text.returncode == 0 and "p_miss" in text.stdout

    dets.write_text(
        dets.read_text("utf-8").replace('"is_true": false', '"is_true": "no"', 1), "utf-8"
    )
    err = bad(*args)
    assert f"{dets}:2:" in err and "is_true" in err and "true or false" in err
    # Counts contradicting the file: the message names the file and what to count.
    jsonl(dets, det("k1", "u1", 0.9, True), det("k2", "u1", 0.5, True))
    err = bad("kws-det", "--hyp", str(dets), "--n-true", "1", "--n-nontarget", "5")
    assert f"{dets}: 2 true detections but only 1" in err and "n_true must count" in err


def test_tts_pair(tmp_path: Path) -> None:
    def j(listener: str, sentence: str, first: str, second: str, score: float) -> dict:
        return dict(listener=listener, sentence=sentence, first=first, second=second, score=score)

    judgements = jsonl(
        tmp_path / "pairs.jsonl",
        j("L1", "s1", "A", "B", 2),
        j("L1", "s2", "B", "A", -1),  # B-then-A: counts +1 for A over B
        j("L2", "s1", "B", "A", 0),
        j("L2", "s2", "A", "B", 1.0),  # an integral float is the integer
    )
    result = score("tts-pair", "--hyp", str(judgements), "--unit", "rating")
    assert (result["judgements"], result["listeners"], result["unit"]) == (4, 2, "rating")
    ab, ba = result["pairs"]
    # A over B, per rating: 2, 1, 0, 1 -> mean 1, sd sqrt(2/3), half-width t(3) sd / 2.
    assert (ab["system_a"], ab["system_b"], ab["played_ab"], ab["played_ba"]) == ("A", "B", 2, 2)
    assert ab["n"] == 4 and ab["mean"] == 1.0
    assert ab["sd"] == pytest.approx((2 / 3) ** 0.5, abs=1e-12)
    half = T_975_DF3 * (2 / 3) ** 0.5 / 2
    assert (ab["ci_low"], ab["ci_high"]) == pytest.approx((1 - half, 1 + half), abs=1e-9)
    assert (ba["system_a"], ba["mean"], ba["ci_high"]) == ("B", -1.0, pytest.approx(half - 1))

    # Per listener (the default): L1 mean (2 + 1) / 2 = 1.5, L2 (0 + 1) / 2 = 0.5 -> n 2.
    by_listener = score("tts-pair", "--hyp", str(judgements))
    assert by_listener["unit"] == "listener"
    ab = by_listener["pairs"][0]
    assert (ab["n"], ab["ratings"], ab["mean"]) == (2, 4, 1.0)
    assert ab["sd"] == pytest.approx(0.5**0.5, abs=1e-12)
    assert ab["ci_high"] == pytest.approx(1 + T_975_DF1 * 0.5, abs=1e-9)

    judgements.write_text(
        judgements.read_text("utf-8").replace('"score": -1', '"score": -0.5'), "utf-8"
    )
    err = bad("tts-pair", "--hyp", str(judgements))
    assert f"{judgements}:2:" in err and "-0.5" in err and "use -2, -1, 0, 1 or 2" in err


def test_tts_sus(tmp_path: Path) -> None:
    def r(system: str, listener: str, sentence: str, expected: list, answer: list) -> dict:
        return dict(
            system=system, listener=listener, sentence=sentence, expected=expected, answer=answer
        )

    responses = jsonl(
        tmp_path / "sus.jsonl",
        # Full-width letters and case do not matter.
        r("A", "L1", "t1", ["red", "Ｃａｔ"], ["Red", "cat"]),
        r("A", "L2", "t1", ["red", "cat"], ["bed", None]),
        r("B", "L1", "t2", ["blue", "dog", "sky"], ["blue", "dog", "sky"]),
    )
    result = score("tts-sus", "--hyp", str(responses))
    assert result == {
        "blanks": 7,
        "systems": [
            {"system": "A", "blanks": 4, "correct": 2, "unanswered": 1, "intelligibility": 0.5},
            {"system": "B", "blanks": 3, "correct": 3, "unanswered": 0, "intelligibility": 1.0},
        ],
    }
    jsonl(responses, r("A", "L1", "t1", ["red"], ["red"]), r("A", "L1", "t2", ["a", "b"], ["a"]))
    err = bad("tts-sus", "--hyp", str(responses))
    assert f"{responses}:2:" in err and "1 answers for 2 blanks" in err and "null" in err


def test_tts_mos(tmp_path: Path) -> None:
    def m(system: str, listener: str, score: float) -> dict:
        return {"system": system, "listener": listener, "sentence": "s1", "score": score}

    ratings = jsonl(tmp_path / "mos.jsonl", m("A", "L1", 4), m("B", "L1", 2), m("A", "L2", 5))
    with ratings.open("a", encoding="utf-8") as fh:
        fh.write("\n" + json.dumps(m("A", "L3", 3)) + "\n")  # blank lines are skipped
    result = score("tts-mos", "--hyp", str(ratings), "--confidence", "0.95")
    assert (result["ratings"], result["confidence"]) == (4, 0.95)
    a, b = result["systems"]
    # A: 4, 5, 3 -> mean 4, sd 1, half-width t(2) / sqrt(3); B has one rating: no interval.
    assert (a["system"], a["n"], a["mean"], a["sd"]) == ("A", 3, 4.0, 1.0)
    half = T_975_DF2 / 3**0.5
    # The upper end 4 + half lies above the 1..5 scale: printed as computed, with a
    # warning naming --clip; --clip clips it.
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((4 - half, 4 + half), abs=1e-9)
    assert "system 'A'" in result["warnings"][0] and "--clip" in result["warnings"][0]
    clipped = score("tts-mos", "--hyp", str(ratings), "--clip")
    assert clipped["systems"][0]["ci_high"] == 5 and not clipped["warnings"]
    assert b == {
        "system": "B",
        "n": 1,
        "mean": 2.0,
        "sd": None,
        "ci_low": None,
        "ci_high": None,
        "confidence": 0.95,
    }
    jsonl(ratings, m("A", "L1", 4), m("A", "L2", 4), m("A", "L3", 6))
    err = bad("tts-mos", "--hyp", str(ratings))
    assert f"{ratings}:3:" in err and "outside 1..5" in err


def test_tts_plan(tmp_path: Path) -> None:
    args = ("tts-plan", "--systems", "A", "B", "C", "--listeners", "2", "--seed", "7")
    proc = onsite("score", *args, "--sentences", "2")
    assert proc.returncode == 0, proc.stderr
    trials = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = listening_plan(["A", "B", "C"], ["s1", "s2"], ["L1", "L2"], seed=7)
    assert trials == [t.to_dict() for t in expected]
    # 3 pairs x 2 sentences per listener, each unordered pair once per sentence and listener.
    assert len(trials) == 12
    heard = {(t["listener"], t["sentence"], frozenset((t["first"], t["second"]))) for t in trials}
    assert len(heard) == 12

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("北京欢迎你\n\n今天天气很好\n", encoding="utf-8")
    plan = score(*args, "--sentences", str(sentences))
    assert plan["sentences"] == ["北京欢迎你", "今天天气很好"]
    assert (plan["listeners"], plan["seed"]) == (["L1", "L2"], 7)
    assert plan["trials"] == [
        t.to_dict()
        for t in listening_plan(["A", "B", "C"], plan["sentences"], ["L1", "L2"], seed=7)
    ]

    sentences.write_text("a\nb\na\n", encoding="utf-8")
    err = bad(*args, "--sentences", str(sentences))
    assert f"{sentences}:3:" in err and "duplicate sentence 'a'" in err


def test_asr_conditions_and_plot(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 a b\nu2 c d\nu3 e f\n", encoding="utf-8")
    hyp = tmp_path / "sys1.txt"
    hyp.write_text("u1 a b\nu2 c x\nu3 e\n", encoding="utf-8")
    cond = tmp_path / "conditions.tsv"
    cond.write_text("u1\tclean\nu2\tsnr5\n", encoding="utf-8")
    stem = tmp_path / "plots" / "wer"
    proc = onsite(
        "score",
        "asr",
        "--ref",
        str(ref),
        "--hyp",
        str(hyp),
        "--conditions",
        str(cond),
        "--plot",
        str(stem),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    by = result["by_condition"]
    assert by["clean"]["wer"] == 0.0 and by["snr5"]["wer"] == 0.5
    assert by["unlabelled"]["wer"] == 0.5
    assert stem.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert "snr5" in stem.with_suffix(".svg").read_text()

    cond.write_text("u9\tclean\n", encoding="utf-8")
    proc = onsite("score", "asr", "--ref", str(ref), "--hyp", str(hyp), "--conditions", str(cond))
    assert proc.returncode == 2 and f"{cond}:1" in proc.stderr


def test_roc_plot_for_verification(tmp_path: Path) -> None:
    truth = tmp_path / "truth.jsonl"
    truth.write_text(
        '{"a": "x", "b": "y", "genuine": true}\n{"a": "x", "b": "z", "genuine": false}\n'
        '{"a": "y", "b": "z", "genuine": false}\n'
    )
    scores = tmp_path / "team1.jsonl"
    scores.write_text(
        '{"a": "x", "b": "y", "score": 0.9}\n{"a": "x", "b": "z", "score": 0.4}\n'
        '{"a": "y", "b": "z", "score": 0.95}\n'
    )
    stem = tmp_path / "roc"
    proc = onsite(
        "score", "faces-verify", "--ref", str(truth), "--hyp", str(scores), "--plot", str(stem)
    )
    assert proc.returncode == 0, proc.stderr
    assert "team1" in stem.with_suffix(".svg").read_text()
