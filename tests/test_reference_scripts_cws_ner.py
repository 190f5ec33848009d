"""onsite against the real SIGHAN `score` script and conlleval.pl, where the defaults differ.

Neither script is a Debian or PyPI package, so their output on the cases below was
recorded by running them (tests/data/sighan_conlleval/: README.md names the copies, their
checksums and the command; make_fixtures.py wrote cases.jsonl). The tests check:

* CWS, a UTF-8 BOM on line 1: `onsite score cws --sighan-quirks` gives the script's
  figures (the BOM stays part of the first word); the default drops the BOM and warns,
  naming the file, the line and the flag.
* NER: `--conlleval` gives conlleval.pl's counts on IOBES files and on 100 random
  sequences of B/I/E/S/O and bare tags; the default (IOBES, as seqeval) warns where
  conlleval.pl chunks differently; bare tags are refused with the fix (`I-PER`), whose
  figures are conlleval.pl's; tab-separated columns give `conlleval -d '\\t'`'s figures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from scoring.cws import score_cws_files
from scoring.errors import FormatError
from scoring.ner import score_ner_file
from tests.helpers import REPO, onsite

CASES = [
    json.loads(line)
    for line in (REPO / "tests" / "data" / "sighan_conlleval" / "cases.jsonl")
    .read_text("utf-8")
    .splitlines()
]
SIGHAN = {c["name"]: c for c in CASES if c["tool"] == "sighan"}
CONLL = {c["name"]: c for c in CASES if c["tool"] == "conlleval"}


# --- the SIGHAN score script ---------------------------------------------------------


def _script_summary(stdout: str) -> dict[str, str]:
    """The script's last line: ### file ins del subst changes true test R P F OOV OOVR IVR."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith("###\t"))
    keys = "ins dels subs changes gold test recall precision f oov_rate oov_recall iv_recall"
    return dict(zip(keys.split(), line.split("\t")[2:], strict=True))


def _as_script(result: dict[str, Any]) -> dict[str, str]:
    """onsite's figures printed as the script prints them (%2.4f, "--" for none)."""

    def rate(value: float | None) -> str:
        return "--" if value is None else f"{value:2.4f}"

    return {
        "ins": str(result["insertions"]),
        "dels": str(result["deletions"]),
        "subs": str(result["substitutions"]),
        "changes": str(result["changes"]),
        "gold": str(result["gold_words"]),
        "test": str(result["test_words"]),
        "recall": rate(result["recall"]),
        "precision": rate(result["precision"]),
        "f": rate(result["f"]),
        "oov_rate": rate(result["oov_rate"]),
        "oov_recall": rate(result["oov_recall"]),
        "iv_recall": rate(result["iv_recall"]),
    }


def _sighan_files(tmp_path: Path, case: dict[str, Any]) -> dict[str, Path]:
    paths = {}
    for what in ("words", "gold", "test"):
        paths[what] = tmp_path / f"{what}.txt"
        paths[what].write_text(case[what], encoding="utf-8")
    return paths


@pytest.mark.parametrize("name", sorted(SIGHAN))
def test_cws_sighan_quirks_equal_the_script_on_a_bom(tmp_path: Path, name: str) -> None:
    case = SIGHAN[name]
    assert case["returncode"] == 0
    paths = _sighan_files(tmp_path, case)
    got = score_cws_files(paths["gold"], paths["test"], paths["words"], script_quirks=True)
    assert _as_script(got) == _script_summary(case["stdout"])
    assert got["warnings"] == []


@pytest.mark.parametrize("name", sorted(SIGHAN))
def test_cws_default_drops_the_bom_and_warns_naming_the_flag(tmp_path: Path, name: str) -> None:
    case = SIGHAN[name]
    paths = _sighan_files(tmp_path, case)
    got = score_cws_files(paths["gold"], paths["test"], paths["words"])
    bommed = [what for what in ("gold", "test", "words") if case[what].startswith("\ufeff")]
    notes = got["warnings"]
    assert len(notes) == len(bommed)
    for what, note in zip(sorted(bommed, key=("gold", "test", "words").index), notes, strict=True):
        assert note.startswith(f"{paths[what]}:1: starts with a byte-order mark")
        assert "--sighan-quirks reproduces that" in note
    # Without the BOM the figures are those of the same files saved without one.
    for what in bommed:
        paths[what].write_text(case[what].removeprefix("\ufeff"), encoding="utf-8")
    plain = score_cws_files(paths["gold"], paths["test"], paths["words"])
    assert {k: v for k, v in got.items() if k != "warnings"} == {
        k: v for k, v in plain.items() if k != "warnings"
    }


def test_cws_bom_through_the_command_line(tmp_path: Path) -> None:
    case = SIGHAN["gold-bom"]
    paths = _sighan_files(tmp_path, case)
    args = ["score", "cws", "--gold", str(paths["gold"]), "--test", str(paths["test"])]
    args += ["--words", str(paths["words"]), "--json"]
    default = json.loads(onsite(*args).stdout)
    quirks = json.loads(onsite(*args, "--sighan-quirks").stdout)
    assert _as_script(quirks) == _script_summary(case["stdout"])
    assert default["f"] > quirks["f"]
    [note] = default["warnings"]
    assert "'我们' is read as U+FEFF + '我们'" in note and "--sighan-quirks" in note


def test_cws_bom_then_blank_is_a_word_of_its_own(tmp_path: Path) -> None:
    paths = _sighan_files(tmp_path, SIGHAN["bom-then-space"])
    [note] = score_cws_files(paths["gold"], paths["test"], paths["words"])["warnings"]
    assert "the BOM counts as a word of its own on line 1" in note


def test_cws_other_script_warnings_name_the_flag(tmp_path: Path) -> None:
    gold = tmp_path / "gold.txt"
    gold.write_text("\u3000我们 在\n北京\n", encoding="utf-8")
    words = tmp_path / "words.txt"
    words.write_text("我们\n北京", encoding="utf-8")
    notes = score_cws_files(gold, gold, words)["warnings"]
    assert len(notes) == 3  # U+3000 in gold and in test (the same file), chop
    assert all("(--sighan-quirks reproduces that)" in n for n in notes)


# --- conlleval.pl ----------------------------------------------------------------------

_OVERALL = re.compile(
    r"processed (\d+) tokens with (\d+) phrases; found: (\d+) phrases; correct: (\d+)\.\n"
    r"accuracy: +([\d.]+)%; precision: +([\d.]+)%; recall: +([\d.]+)%; FB1: +([\d.]+)\n"
)
_PER_TYPE = re.compile(
    r"^ *(\S*): precision: +([\d.]+)%; recall: +([\d.]+)%; FB1: +([\d.]+) +(\d+)$", re.M
)


def _conlleval_figures(stdout: str) -> dict[str, Any]:
    """conlleval.pl's output (6 decimals: see README.md) as numbers and strings."""
    found = _OVERALL.search(stdout)
    assert found is not None, stdout
    tokens, gold, pred, correct, acc, p, r, f = found.groups()
    per_type = {m[0]: m[1:] for m in _PER_TYPE.findall(stdout)}
    return {
        "counts": (int(tokens), int(gold), int(pred), int(correct)),
        "rates": (acc, p, r, f),
        "per_type": per_type,
    }


def _onsite_figures(result: dict[str, Any]) -> dict[str, Any]:
    def pct(x: float) -> str:
        return f"{100 * x:.6f}"

    counts = ("tokens", "gold_chunks", "predicted_chunks", "correct_chunks")
    return {
        "counts": tuple(result[k] for k in counts),
        "rates": tuple(pct(result[k]) for k in ("accuracy", "precision", "recall", "f1")),
        "per_type": {
            t: (pct(s["precision"]), pct(s["recall"]), pct(s["f1"]), str(s["predicted"]))
            for t, s in result["per_type"].items()
        },
    }


def _conll_file(tmp_path: Path, case: dict[str, Any]) -> Path:
    path = tmp_path / f"{case['name']}.conll"
    path.write_text(case["conll"], encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CONLL))
def test_ner_conlleval_flag_equals_conlleval_pl(tmp_path: Path, name: str) -> None:
    case = CONLL[name]
    if case["returncode"] != 0:
        assert name == "tabs-without-d"  # the script stops; onsite reads tabs (below)
        return
    got = score_ner_file(_conll_file(tmp_path, case), conlleval=True)
    assert _onsite_figures(got) == _conlleval_figures(case["stdout"])


@pytest.mark.parametrize("name", sorted(CONLL))
def test_ner_default_warns_where_conlleval_pl_chunks_differently(tmp_path: Path, name: str) -> None:
    case = CONLL[name]
    if case["returncode"] != 0:
        return
    path = _conll_file(tmp_path, case)
    try:
        got = score_ner_file(path)
    except FormatError as exc:
        # Bare tags (the IO scheme) are refused, naming the line and the fix.
        assert "a bare type (the IO scheme)" in str(exc) and "write I-" in str(exc)
        assert "--conlleval" in str(exc)
        return
    theirs = _conlleval_figures(case["stdout"])
    if _onsite_figures(got)["counts"] != theirs["counts"]:
        [note] = got["warnings"]
        assert note.startswith(f"{path}:") and "--conlleval reproduces conlleval.pl" in note
        assert f"conlleval.pl gives F1 {float(theirs['rates'][3]) / 100:.4f}" in note
    if not got["warnings"]:
        assert _onsite_figures(got) == theirs


def test_ner_iobes_warning_names_the_first_line(tmp_path: Path) -> None:
    path = _conll_file(tmp_path, CONLL["iobes"])
    [note] = score_ner_file(path)["warnings"]
    assert note.startswith(f"{path}:1: ")
    assert "gold tags 'S-PER S-PER'" in note


def test_ner_random_cases_hit_the_differences() -> None:
    # The random cases are only a test of the flag if the flag matters on some of them.
    differ = refused = 0
    for name, case in CONLL.items():
        if not name.startswith("random-"):
            continue
        tags = [t for line in case["conll"].splitlines() if line for t in line.split()[1:]]
        refused += any("-" not in t and t != "O" for t in tags)
        differ += any(t.startswith(("S-", "E-")) for t in tags)
    assert refused > 30 and differ > 70


def test_ner_io_scheme_refused_with_the_fix_that_gives_conlleval_figures(
    tmp_path: Path,
) -> None:
    io = _conll_file(tmp_path, CONLL["io"])
    with pytest.raises(FormatError) as exc:
        score_ner_file(io)
    assert exc.value.line == 1
    assert "malformed gold tag 'PER': a bare type (the IO scheme)" in exc.value.problem
    assert exc.value.fix.startswith("write I-PER for PER (IOB1")
    iob1 = _conll_file(tmp_path, CONLL["io-as-iob1"])
    got = score_ner_file(iob1)
    assert got["warnings"] == []
    assert _onsite_figures(got) == _conlleval_figures(CONLL["io-as-iob1"]["stdout"])


def test_ner_tabs_read_as_conlleval_d_tab(tmp_path: Path) -> None:
    case = CONLL["tabs"]
    assert case["command"] == ["perl", "conlleval.pl", "-d", "\t"]
    got = score_ner_file(_conll_file(tmp_path, case))
    assert got["warnings"] == []
    assert _onsite_figures(got) == _conlleval_figures(case["stdout"])
    # Without -d the script stops on the same file.
    stopped = CONLL["tabs-without-d"]
    assert stopped["returncode"] != 0 and "unexpected number of features" in stopped["stderr"]


def test_ner_conlleval_through_the_command_line(tmp_path: Path) -> None:
    case = CONLL["iobes"]
    path = _conll_file(tmp_path, case)
    flagged = json.loads(
        onsite("score", "ner", "--conll", str(path), "--conlleval", "--json").stdout
    )
    assert _onsite_figures(flagged) == _conlleval_figures(case["stdout"])
    assert flagged["chunking"] == "conlleval"
    done = onsite("score", "ner", "--conll", str(path))
    assert done.returncode == 0 and "--conlleval reproduces conlleval.pl" in done.stdout
