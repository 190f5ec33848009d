"""Every registered task kind keeps the kind contract (harness/kinds/base.py), on a real job.

For each kind the registry finds, a demo-style job (tests/kind_examples.py: a small
test set, a real system, odd and hostile answers) is run, and then:

* the headline as per-item statistics: ``aggregate`` of every item's statistic is the
  live headline, to the last bit; over the items but the last it is what the kind's
  own scorer gives for those items; every item counted twice changes nothing;
* every export format the kind declares writes the job (hypotheses and references),
  and the files are read back where scoring/ has a reader for the format;
* every `onsite score FAMILY --run` the kind declares, run as a user runs it (a
  subprocess), gives the live figures it claims (the kind's ``same_as``).

A kind added later is covered without changing this file: its example comes from its
own test module (``EXAMPLES`` in tests/test_kind_<name>.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness import leaderboard, task_kind
from harness.export import export_job, read_run
from harness.kinds.registry import task_kinds
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite
from tests.kind_examples import Builder, KindExample, own_examples, run_example
from tests.test_export_formats import (
    CITIES,
    KWS_FAKE,
    asr_set,
    combination_set,
    command_set,
    cws_set,
    face_detect_set,
    face_identify_set,
    face_verify_set,
    ir_set,
    jsonl,
    lid_set,
    mt_set,
    ner_set,
    ocr_set,
    pos_set,
    summarization_set,
    textcat_set,
)
from tests.test_tts_task import ESPEAK, tts_testset


def _fake(build: Callable[[Path], tuple[Path, dict[str, Any]]], **keys: Any) -> Builder:
    """An example answered by the scripted fake system (tests/systems/fake_system.py)."""

    def example(tmp: Path) -> KindExample:
        root, plan = build(tmp)
        env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})}
        return KindExample(root, {"command": FAKE_SERVE, "env": env}, keys)

    return example


def kws_example(tmp: Path) -> KindExample:
    """Slots and scored detections against a keyword list: both families have a job."""
    root = make_testset(tmp / "set", [("k1", 1600, ""), ("k2", 1700, ""), ("k3", 1800, "")])
    (root / "text").unlink()
    jsonl(
        root / "slots.jsonl",
        [
            {"id": "k1", "setting": "trip", "slots": {"from": ["boston"], "to": ["denver"]}},
            {"id": "k2", "setting": "weather", "slots": {"city": ["dallas"]}},
            {"id": "k3", "setting": "trip", "slots": {"from": ["dallas"]}},
        ],
    )
    settings = {"trip": {"from": CITIES, "to": CITIES}, "weather": {"city": CITIES}}
    (root / "keywords.json").write_text(json.dumps({"settings": settings}), "utf-8")
    plan = {
        1600: {"slots": {"from": ["boston"]}, "scores": {"boston": 0.9, "denver": 0.4}},
        1700: {"slots": {"city": ["dallas"]}, "scores": {"dallas": 0.7, "boston": 0.5}},
        1800: {"do": "crash"},
    }
    env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})}
    return KindExample(root, {"command": KWS_FAKE, "env": env})


def tts_example(tmp: Path) -> KindExample:
    """Real speech from espeak-ng, checked and kept by the controller."""
    return KindExample(
        tts_testset(tmp / "set"),
        {"command": ESPEAK, "workdir": str(REPO)},
        {"sample_rates": [16000]},
        {"seconds": 30.0, "hang_seconds": 30.0},
        {"transport": "local", "sandbox": False},
    )


# The kinds that came before this test; a kind added later brings its own.
EARLIER: dict[str, Builder] = {
    "asr": _fake(asr_set),
    "command": _fake(command_set),
    "kws": kws_example,
    "ocr": _fake(ocr_set),
    "face-detect": _fake(face_detect_set),
    "face-identify": _fake(face_identify_set),
    "face-verify": _fake(face_verify_set),
    "mt": _fake(mt_set),
    "cws": _fake(cws_set),
    "ner": _fake(ner_set),
    "pos": _fake(pos_set),
    "textcat": _fake(textcat_set),
    "ir": _fake(ir_set),
    "tts": tts_example,
    "combination": _fake(combination_set),
    "lid": _fake(lid_set),
    "summarization": _fake(summarization_set, length_limit=8, length_unit="word"),
}


def _all_examples() -> dict[str, Builder]:
    brought = own_examples()
    both = sorted(set(brought) & set(EARLIER))
    assert not both, f"kinds {both} have two examples: keep the one in their own test"
    return {**EARLIER, **brought}


def test_every_registered_kind_has_an_example() -> None:
    assert set(_all_examples()) == set(task_kinds())


def _figure(scores: Mapping[str, Any], key: str) -> Any:
    """A figure at the top of the scores or under ``overall``; dotted keys go down."""
    head, _, rest = key.partition(".")
    for place in (scores, scores.get("overall") or {}):
        if head in place:
            return _figure(place[head], rest) if rest else place[head]
    raise KeyError(f"{key} not in {sorted(scores)}")


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _readers() -> dict[str, tuple[Callable[[Path], Any], Callable[[Path], Any] | None]]:
    """Format -> (hypothesis reader, reference reader) from scoring/, where it has one."""
    from scoring.asr_formats import read_ctm, read_stm, read_transcripts
    from scoring.cwmt_xml import load_mt_file
    from scoring.cws import read_segmentation
    from scoring.ir import read_qrels, read_run
    from scoring.ner import read_conll
    from scoring.textcat import read_category_file

    return {
        "jsonl": (_lines, _lines),
        "kws-det": (_lines, _lines),
        "score-jsonl": (_lines, None),  # references: the family's truth file (lid: its lang)
        "trn": (read_transcripts, read_transcripts),
        "kaldi": (read_transcripts, read_transcripts),
        "ctm": (read_ctm, read_stm),
        "cwmt-xml": (
            lambda p: load_mt_file(p, "target"),
            lambda p: load_mt_file(p, "reference"),
        ),
        "trec": (read_run, read_qrels),
        "conll": (lambda p: p.read_text("utf-8"), read_conll),
        "sighan": (read_segmentation, read_segmentation),
        "tsv": (lambda p: read_category_file(p, system=True), read_category_file),
    }


@pytest.fixture(scope="module")
def examples() -> dict[str, Builder]:
    return _all_examples()


@pytest.mark.parametrize("kind", list(task_kinds()))
def test_kind_keeps_the_contract_on_a_real_job(
    kind: str, examples: dict[str, Builder], tmp_path: Path
) -> None:
    tmp_path.chmod(0o755)  # a sealed system reads its test set as another user
    run_dir = run_example(kind, examples[kind](tmp_path), tmp_path)
    [row] = leaderboard(run_dir)
    assert row.score is not None, row
    the_kind = task_kind(kind)
    job = read_run(run_dir, None, None)
    cfg = job.config

    # The headline from per-item statistics: the whole job, a resample, repeats.
    stats = the_kind.item_statistics(job.testset, cfg, job.outputs, job.seconds)
    assert list(stats) == [item.id for item in job.testset.items]
    assert the_kind.aggregate(cfg, list(stats.values())) == row.score
    fewer = replace(job.testset, items=job.testset.items[:-1])
    outputs = {k: v for k, v in job.outputs.items() if k in stats and k != job.testset.items[-1].id}
    scored = the_kind.evaluate(fewer, cfg, outputs, job.seconds).headline.value
    assert the_kind.aggregate(cfg, [stats[i.id] for i in fewer.items]) == scored
    twice = the_kind.aggregate(cfg, [*stats.values(), *stats.values()])
    assert twice == pytest.approx(row.score, rel=1e-12, abs=1e-15)

    # Every export format writes the job; read back where scoring/ has a reader.
    readers = _readers()
    for fmt in the_kind.formats:
        for references in (False, True):
            text = export_job(job, fmt, references)
            path = tmp_path / "export" / f"{fmt}-{'ref' if references else 'hyp'}"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            reader = readers.get(fmt, (None, None))[references]
            if reader is not None and text:
                assert reader(path) is not None, (fmt, references)

    # `onsite score FAMILY --run`, as a user runs it: the live figures it claims.
    for family, how in the_kind.from_run.items():
        proc = onsite("score", family, "--run", str(run_dir), "--json")
        assert proc.returncode == 0, (family, proc.stderr)
        result = json.loads(proc.stdout)
        key = the_kind.headline_key(cfg)
        claims = how.same_as if how.same_as is not None else {key: key}
        for ours, live in claims.items():
            assert _figure(result, ours) == _figure(row.scores, live), (family, ours, live)
        if not claims:  # a checker: its verdict
            assert result.get("ok") is True, (family, result)


def test_kind_modules_load_no_pydantic() -> None:
    # `onsite score` finds its families through the kinds: they must stay as light as a
    # scorer (the options models are built when a site file is read).
    import subprocess

    code = (
        "import sys\n"
        "from harness.kinds.registry import task_kinds, score_families\n"
        "task_kinds(); score_families()\n"
        "print(sorted(m for m in ('pydantic', 'numpy') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"
