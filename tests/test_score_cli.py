"""`onsite score`: files in, numbers out, for each family wired so far."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import onsite


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
