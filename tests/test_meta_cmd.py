"""`onsite meta`: each command end to end on a worked example checked by hand or scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from scoring.errors import FormatError
from scoring.meta_files import read_score_table

stats = pytest.importorskip("scipy.stats")
hierarchy = pytest.importorskip("scipy.cluster.hierarchy")

SYSTEMS = """system,bleu,nist,wer
A,0.30,7.0,0.40
B,0.25,6.5,0.45
C,0.10,4.0,0.70
D,0.20,6.0,0.50
"""
HUMAN = """system\tadequacy\tfluency
A\t3.5\t3.2
B\t3.6\t3.0
C\t2.0\t2.1
D\t3.0\t2.9
"""
BLEU = [0.30, 0.25, 0.10, 0.20]
ADEQUACY = [3.5, 3.6, 2.0, 3.0]
FLUENCY = [3.2, 3.0, 2.1, 2.9]


def meta(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["meta", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    systems, human = tmp_path / "systems.csv", tmp_path / "human.tsv"
    systems.write_text(SYSTEMS)
    human.write_text(HUMAN)
    return systems, human


def test_correlate_system_level(files, capsys) -> None:
    systems, human = files
    result = meta(capsys, "correlate", "--metrics", str(systems), "--human", str(human))
    assert result["level"] == "system" and result["pairs"] == 4
    rows = {(r["metric"], r["human"]): r for r in result["correlations"]}
    assert len(rows) == 6
    bleu_adequacy = rows["bleu", "adequacy"]
    assert bleu_adequacy["pearson"] == pytest.approx(stats.pearsonr(BLEU, ADEQUACY)[0])
    # Ranks by hand: bleu A>B>D>C, adequacy B>A>D>C: one swap, rho = 1 - 6*2/60 = 0.8.
    assert bleu_adequacy["spearman"] == pytest.approx(0.8)
    assert rows["bleu", "fluency"]["spearman"] == pytest.approx(1.0)
    assert rows["wer", "fluency"]["spearman"] == pytest.approx(-1.0)
    # Metric-metric and human-human matrices (Tables 36 and 38).
    between = {r[""]: r for r in result["metrics_pearson"]}
    assert between["bleu"]["nist"] == pytest.approx(stats.pearsonr(BLEU, [7, 6.5, 4, 6])[0])
    humans = {r[""]: r for r in result["human_spearman"]}
    assert humans["adequacy"]["fluency"] == pytest.approx(0.8)


def test_correlate_tables_without_json(files, capsys) -> None:
    systems, human = files
    assert main(["meta", "correlate", "--metrics", str(systems), "--human", str(human)]) == 0
    out = capsys.readouterr().out
    for title in ("correlations", "metrics_pearson", "human_spearman"):
        assert title in out
    assert "0.953227" in out  # Pearson bleu/adequacy, six digits


def test_correlate_segment_level_with_length(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(3)
    rows_m, rows_h = ["system,doc,segment,bleu,length"], ["system,doc,segment,adequacy"]
    bleu, adequacy, length = [], [], []
    for s in ("A", "B"):
        for d in ("d1", "d2"):
            for g in range(1, 6):
                b, a, n = float(rng.random()), float(rng.integers(1, 6)), int(rng.integers(3, 40))
                bleu.append(b), adequacy.append(a), length.append(n)
                rows_m.append(f"{s},{d},{g},{b},{n}")
                rows_h.append(f"{s},{d},{g},{a}")
    (tmp_path / "m.csv").write_text("\n".join(rows_m) + "\n")
    (tmp_path / "h.csv").write_text("\n".join(rows_h) + "\n")
    result = meta(
        capsys,
        "correlate",
        "--metrics",
        str(tmp_path / "m.csv"),
        "--human",
        str(tmp_path / "h.csv"),
        "--length",
        "length",
    )
    assert result["level"] == "segment" and result["pairs"] == 20
    (row,) = result["correlations"]
    assert row["metric"] == "bleu"
    assert row["pearson"] == pytest.approx(stats.pearsonr(bleu, adequacy)[0])
    assert row["spearman"] == pytest.approx(stats.spearmanr(bleu, adequacy)[0])
    (by_length,) = result["length"]
    assert by_length["spearman"] == pytest.approx(stats.spearmanr(bleu, length)[0])


def test_correlate_refuses_misaligned_files(files, tmp_path: Path, capsys) -> None:
    systems, _ = files
    human = tmp_path / "h.csv"
    human.write_text("system,adequacy\nA,3\nB,2\nC,1\nE,4\n")
    assert main(["meta", "correlate", "--metrics", str(systems), "--human", str(human)]) == 2
    err = capsys.readouterr().err
    assert "h.csv" in err and "do not line up" in err
    assert main(["meta", "correlate", "--metrics", str(systems), "--human", str(systems),
                 "--metric", "ter"]) == 2  # fmt: skip
    assert "no column 'ter'; use one of bleu, nist, wer" in capsys.readouterr().err


def test_profile_by_hand(files, capsys) -> None:
    systems, _ = files
    result = meta(
        capsys, "profile", "--scores", str(systems), "--range", "nist=0:15",
        "--lower-is-better", "wer",
    )  # fmt: skip
    rows = {r["metric"]: r for r in result["metrics"]}
    # BLEU on 0..1: mean 0.85/4 = 0.2125; best - worst = 0.30 - 0.10 = 0.2.
    assert rows["bleu"]["difficulty"] == pytest.approx(0.2125)
    assert rows["bleu"]["discriminability"] == pytest.approx(0.2)
    # NIST on 0..15: mean 23.5/4 = 5.875 -> 0.391667; spread 3 -> 0.2.
    assert rows["nist"]["difficulty"] == pytest.approx(5.875 / 15)
    assert rows["nist"]["discriminability"] == pytest.approx(0.2)
    # An error rate: the best system is the lowest, and the difficulty is read from the
    # best end of 0..1: mean WER 2.05/4 = 0.5125 -> 1 - 0.5125 = 0.4875.
    assert (rows["wer"]["best"], rows["wer"]["worst"]) == (0.40, 0.70)
    assert rows["wer"]["difficulty"] == pytest.approx(0.4875)
    assert rows["wer"]["higher_is_better"] is False and rows["bleu"]["higher_is_better"]


def test_profile_error_rate_difficulty_reads_hard(tmp_path: Path, capsys) -> None:
    # The case: systems at mWER 0.70 on average found the set hard, so its
    # difficulty (higher = easier) is 0.30, not 0.70; unflagged it would read "easy".
    scores = tmp_path / "mwer.csv"
    scores.write_text("system,mwer\nA,0.65\nB,0.75\n")
    flagged = meta(capsys, "profile", "--scores", str(scores), "--lower-is-better", "mwer")
    assert flagged["metrics"][0]["difficulty"] == pytest.approx(0.30)
    plain = meta(capsys, "profile", "--scores", str(scores))
    assert plain["metrics"][0]["difficulty"] == pytest.approx(0.70)


def test_profile_bad_range_is_a_usage_error(files, capsys) -> None:
    systems, _ = files
    with pytest.raises(SystemExit):
        main(["meta", "profile", "--scores", str(systems), "--range", "nist=15:0"])
    assert "LOW < HIGH" in capsys.readouterr().err


def test_stability_curve(tmp_path: Path, capsys) -> None:
    values = {"A": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "B": [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]}
    lines = ["system,segment,bleu"] + [
        f"{s},{i},{v}" for s, vs in values.items() for i, v in enumerate(vs, 1)
    ]
    path = tmp_path / "seg.csv"
    path.write_text("\n".join(lines) + "\n")
    stem = tmp_path / "plots" / "stability"
    args = ["stability", "--segments", str(path), "--metric", "bleu", "--sizes", "1,3,6"]
    result = meta(capsys, *args, "--repeats", "20", "--plot", str(stem))
    full = {r["system"]: r["full"] for r in result["full"]}
    assert full == pytest.approx({"A": 0.35, "B": 0.5})
    curve = {(r["system"], r["size"]): r for r in result["curves"]}
    # The whole set every time: mean = full, no spread; a constant system never varies.
    assert curve["A", 6]["mean"] == pytest.approx(0.35) and curve["A", 6]["sd"] == pytest.approx(0)
    assert curve["B", 3]["sd"] == 0.0
    # One segment at a time spreads most; values stay inside the data's range.
    assert curve["A", 1]["sd"] > curve["A", 3]["sd"] > 0
    assert 0.1 <= curve["A", 1]["low"] <= curve["A", 1]["high"] <= 0.6
    assert stem.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in stem.with_suffix(".svg").read_bytes()[:500]
    # Same seed, same subsets.
    again = meta(capsys, *args, "--repeats", "20")
    assert again["curves"] == result["curves"]
    assert main(["meta", *args[:-1], "7"]) == 2
    assert "size 7 is more than the 6 segments" in capsys.readouterr().err


def test_cluster_matches_scipy(files, tmp_path: Path, capsys) -> None:
    systems, _ = files
    stem = tmp_path / "dendrogram"
    args = ["cluster", "--scores", str(systems), "--lower-is-better", "wer"]
    result = meta(capsys, *args, "--clusters", "2", "--plot", str(stem))
    x = np.array([[0.30, 7.0, -0.40], [0.25, 6.5, -0.45], [0.10, 4.0, -0.70], [0.20, 6.0, -0.50]])
    want = hierarchy.linkage(stats.zscore(x), method="average")
    assert [m["distance"] for m in result["merges"]] == pytest.approx(want[:, 2].tolist())
    assert [m["size"] for m in result["merges"]] == want[:, 3].tolist()
    assert [(m["a"], m["b"]) for m in result["merges"]][0] == ("A", "B")
    assert result["clusters"] == [
        {"cluster": 1, "systems": "A B D"},
        {"cluster": 2, "systems": "C"},
    ]
    assert stem.with_suffix(".png").exists() and stem.with_suffix(".svg").exists()
    assert main(["meta", *args]) == 0
    out = capsys.readouterr().out
    assert "merges" in out and "leaf_order" in out


def test_score_files_json_forms_and_errors(tmp_path: Path) -> None:
    as_dict = tmp_path / "s.json"
    as_dict.write_text('{"A": {"bleu": 0.3}, "B": {"bleu": 0.2}}')
    assert read_score_table(as_dict).by_system() == {"A": {"bleu": 0.3}, "B": {"bleu": 0.2}}
    commented = tmp_path / "c.csv"
    commented.write_text("# BLEU of the 2005 run\nsystem,bleu\n# sysA first\nA,0.3\n")
    assert read_score_table(commented).by_system() == {"A": {"bleu": 0.3}}
    as_list = tmp_path / "l.json"
    as_list.write_text('[{"system": "A", "bleu": 0.3}, {"system": "B", "bleu": 0.2}]')
    assert read_score_table(as_list).by_system()["B"] == {"bleu": 0.2}
    lines = tmp_path / "seg.jsonl"
    lines.write_text(
        '{"system": "A", "segment": 1, "bleu": 0.3}\n{"system": "A", "segment": 2, "bleu": 0.1}\n'
    )
    table = read_score_table(lines)
    assert table.level == "segment" and table.column("bleu")[("A", "1")] == 0.3

    bad = tmp_path / "bad.csv"
    for text, problem in [
        ("system,bleu\nA,0.3\nB,\n", r"bad.csv:3: bleu is empty"),
        ("system,bleu\nA,0.3\nB,high\n", r"bad.csv:3: bleu 'high' is not a number"),
        ("system,bleu\nA,nan\n", r"bad.csv:2: bleu is 'nan'"),
        ("system,bleu\nA,0.3\nA,0.2\n", r"bad.csv:3: A given twice"),
        ("system,bleu\nA,0.3,1\n", r"bad.csv:2: 3 cells, the header has 2"),
        ("name,bleu\nA,0.3\n", r"no 'system' column"),
        ("system\nA\n", r"no score columns"),
        ("", r"no scores"),
    ]:
        bad.write_text(text)
        with pytest.raises(FormatError, match=problem):
            read_score_table(bad)


def test_a_runs_report_csv_is_a_system_table(tmp_path: Path, capsys) -> None:
    from harness.report.tables import CSV_COLUMNS

    rows = [
        ("asr-2x", "sysA", "wer", "0.30"),
        ("asr-2x", "sysB", "wer", "0.25"),
        ("asr-2x", "sysC", "wer", "0.50"),
        ("ocr", "sysA", "char_accuracy", "0.9"),
        ("ocr", "sysB", "char_accuracy", ""),  # not scored: the task is left out
        ("ocr", "sysC", "char_accuracy", "0.7"),
    ]
    lines = [",".join(CSV_COLUMNS)]
    for task, system, metric, score in rows:
        values = dict.fromkeys(CSV_COLUMNS, "")
        values.update(task=task, system=system, metric=metric, score=score, verdict="VALID")
        lines.append(",".join(values[c] for c in CSV_COLUMNS))
    report = tmp_path / "report.csv"
    report.write_text("\n".join(lines) + "\n")
    table = read_score_table(report)
    assert table.columns == ("asr-2x:wer",)
    assert table.by_system() == {
        "sysA": {"asr-2x:wer": 0.30},
        "sysB": {"asr-2x:wer": 0.25},
        "sysC": {"asr-2x:wer": 0.50},
    }
    assert table.notes == ("task ocr left out: not scored for every system",)
    result = meta(capsys, "profile", "--scores", str(report), "--lower-is-better", "asr-2x:wer")
    assert result["metrics"][0]["best"] == 0.25
    assert main(["meta", "profile", "--scores", str(report)]) == 0
    assert "note: " in capsys.readouterr().err
