"""The task-kind registry (harness/kinds/registry.py): what the rest of onsite derives from it."""

from __future__ import annotations

import pytest

from harness import task_kind, task_kinds
from harness.kinds import metric_label, score_families, speed_unit, speed_units
from harness.site import TASK_MODELS

COMMON = {
    "kind",
    "testset",
    "budget",
    "audit",
    "rules",
    "max_output_bytes",
    "description",
    "encoding",
    "tracks",
}


def test_every_kind_has_a_site_model_with_only_its_own_options() -> None:
    assert list(TASK_MODELS) == list(task_kinds())
    for name, kind in task_kinds().items():
        fields = set(TASK_MODELS[name].model_fields)
        assert fields == COMMON | set(kind.options.model_fields), name
    # unit exists only where it means something.
    assert [n for n, m in TASK_MODELS.items() if "unit" in m.model_fields] == ["asr"]
    assert [n for n, m in TASK_MODELS.items() if "stream" in m.model_fields] == ["face-detect"]


def test_asr_headline_is_named_for_what_it_measures() -> None:
    asr = task_kind("asr")
    char = TASK_MODELS["asr"](kind="asr", testset="x", unit="char")
    scores = {"overall": {"wer": 0.25, "sentence_correct_rate": 0.5}}
    headline = asr.headline(char, scores)
    assert (headline.name, headline.label, headline.value) == ("cer", "CER", 0.25)
    word = TASK_MODELS["asr"](kind="asr", testset="x")
    assert asr.headline(word, scores).label == "WER"


def test_every_speed_unit_has_labels_and_one_definition() -> None:
    units = speed_units()
    assert {k.unit.name for k in task_kinds().values()} == set(units)
    for unit in units.values():
        assert unit.short and unit.label and unit.fmt.format(1.5)
    # The text kinds' units are labelled too (they were missing from the tables).
    assert speed_unit("kchars_per_second").short == "kchar/s"
    assert speed_unit("ms_per_query").label == "ms / query"
    # An unknown name (an old run directory) is shown as it is.
    assert speed_unit("furlongs").short == "furlongs"


def test_pooled_speed_is_items_over_total_seconds() -> None:
    ocr = task_kind("ocr").unit
    assert ocr.pooled and ocr.mean([10.0, 1.0], [0.1, 1.9]) == 1.0
    rtf = task_kind("asr").unit
    assert not rtf.pooled and rtf.mean([0.5, 1.5], [1.0, 1.0]) == 1.0
    assert rtf.mean([], []) is None and ocr.mean([], []) is None


@pytest.mark.parametrize(
    ("metric", "label"),
    [("wer", "WER"), ("cer", "CER"), ("bleu", "BLEU"), ("eer", "EER"), ("nope", "nope")],
)
def test_metric_labels(metric: str, label: str) -> None:
    assert metric_label(metric) == label


def test_kinds_bring_their_score_families() -> None:
    assert "lid" in score_families()
