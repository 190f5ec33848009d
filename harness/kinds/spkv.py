"""The `spkv` kind: speaker verification. Two recordings in, a score out.

Test set (docs/kind-spkv.md): mono audio files and ``trials.jsonl``, one line per
trial ``{"enrol": "<file>", "test": "<file>", "target": true}`` (target: the two
recordings are one speaker). Item input: ``{"enrol", "test", "sample_rate"}``;
the answer ``{"score": <number>}``, higher meaning more likely the same speaker.

Scores (scoring.spkv): the EER (the headline, lower is better), minDCF at NIST
SRE's primary operating point (P_target = 0.01, C_miss = C_fa = 1, normalized)
and the DET curve, drawn in the report. A trial never answered is rejected at
every threshold. Speed: real-time factor over both recordings.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import Problem, TestSetError
from harness.kinds.base import (
    ENCODING_ARG,
    RTF,
    FromRun,
    JobData,
    Plot,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    audio_options,
    real_time_factor,
    ref_hyp_files,
    score_problem,
)
from harness.kinds.trials import (
    EER_HEADLINE,
    det_plot,
    scored_trials,
    system_curves,
    trial_id,
    trials_jsonl,
)
from harness.testsets import (
    AUDIO_SUFFIXES,
    InvalidItem,
    TestItem,
    TestSet,
    audio_info,
    file_testset,
    read_truth,
)

if TYPE_CHECKING:
    from scoring.plots import PlotFiles

TRIALS = "trials.jsonl"
_TRIALS_FIX = (
    'one line per trial: {"enrol": "<audio file>", "test": "<audio file>", "target": true}'
)


def _load(root: Path, task: TaskConfig) -> TestSet:
    from scoring.spkv import read_trials

    encoding = getattr(task, "encoding", None)
    truth = read_truth(root / TRIALS, lambda path: read_trials(path, encoding), _TRIALS_FIX)
    refs: dict[str, Any] = {}
    for (enrol, test), target in truth.items():
        name = trial_id(enrol, test)
        if name in refs:
            problem = f"two trials are named {name!r} (files of one name with two suffixes?)"
            raise TestSetError([Problem(root / TRIALS, "", problem, "give each recording a name")])
        refs[name] = ((enrol, test), target)
    files = {name: {"enrol": e, "test": t} for name, ((e, t), _) in refs.items()}
    rates = set(task.sample_rates)

    def check(key: str, path: Path) -> str | None:
        try:
            info = audio_info(path)
        except ValueError as exc:
            return f"cannot be decoded: {exc}"
        if info.channels != 1:
            return f"has {info.channels} channels; need mono"
        if info.samplerate not in rates:
            accepted = ", ".join(str(r) for r in sorted(rates))
            return f"sample rate {info.samplerate} Hz; the task accepts {accepted} Hz"
        return None if info.frames > 0 else "has no samples"

    testset = file_testset(root, refs, files, AUDIO_SUFFIXES, units=None, check=check)
    items: list[TestItem] = []
    invalid = list(testset.invalid)
    for item in testset.items:
        a, b = (audio_info(item.files[k]) for k in ("enrol", "test"))
        if a.samplerate != b.samplerate:
            # One sample_rate goes with the item: a trial's two recordings share it.
            why = f"enrol at {a.samplerate} Hz, test at {b.samplerate} Hz: use one rate"
            invalid.append(InvalidItem(item.id, item.files["test"], why))
            continue
        seconds = a.frames / a.samplerate + b.frames / b.samplerate
        items.append(replace(item, fields={"sample_rate": a.samplerate}, duration=seconds))
    return replace(testset, items=tuple(items), invalid=tuple(invalid))


def _check_output(output: Mapping[str, Any]) -> str | None:
    return score_problem(output.get("score"), "output", " (higher: more likely one speaker)")


def _score(scores: dict[Any, float], targets: dict[Any, bool]) -> dict[str, Any]:
    from scoring.spkv import score_trials

    return score_trials(scores, targets).to_dict(include_det=True)


def _detail(scores: Mapping[str, Any]) -> str:
    if not isinstance(scores.get("min_dcf"), int | float):
        return ""
    return f"minDCF {scores['min_dcf']:.3f} (P_target {scores['p_target']:g})"


def _plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    """The systems' DET curves."""
    curves = system_curves(scores, "det", "p_fa", "p_miss")
    return [det_plot(task, curves)] if curves else []


# --------------------------------------------------------------------------- onsite score


def _report(args: argparse.Namespace) -> Any:
    from scoring.det import DetectionCost
    from scoring.spkv import read_trial_scores, read_trials, score_trials

    cost = DetectionCost(args.p_target, args.c_miss, args.c_fa)
    encoding = getattr(args, "encoding", None)
    return score_trials(
        read_trial_scores(args.hyp, encoding), read_trials(args.ref, encoding), cost
    )


def _plot_det(args: argparse.Namespace, stem: Path) -> PlotFiles:
    from scoring.plots import plot_det

    report = _report(args)
    return plot_det({Path(args.hyp).stem: (report.roc.far, report.roc.frr)}, stem)


write_spkv_jsonl = trials_jsonl("enrol", "test", "target")


def _run_args(job: JobData, directory: Path) -> dict[str, Any]:
    from scoring.det import SRE_COST

    # The live figures' operating point: NIST SRE's primary one.
    files = ref_hyp_files(write_spkv_jsonl, ".jsonl")(job, directory)
    return {**files, **SRE_COST.to_dict()}


SPKV = TaskKind(
    name="spkv",
    text_encodings=True,
    summary="speaker verification: two recordings in, a same-speaker score out",
    options_model=audio_options,
    max_output_bytes=4 << 10,
    load=_load,
    check_output=_check_output,
    score=scored_trials(_score),
    **EER_HEADLINE,
    unit=RTF,
    speed=real_time_factor,
    detail=_detail,
    plots=_plots,
    writers={"score-jsonl": write_spkv_jsonl},
    score_families={
        "spkv": ScoreFamily(
            lambda args: _report(args).to_dict(include_det=args.details),
            "speaker verification: EER, minDCF (NIST SRE), DET",
            (
                arg("--ref", required=True, help='trials {"enrol", "test", "target"}'),
                arg("--hyp", required=True, help='scores {"enrol", "test", "score"}'),
                arg("--p-target", type=float, default=0.01, help="minDCF prior (default 0.01)"),
                arg("--c-miss", type=float, default=1.0, help="cost of a miss (default 1)"),
                arg("--c-fa", type=float, default=1.0, help="cost of a false alarm (default 1)"),
                arg("--details", action="store_true", help="the DET curve's points too"),
                ENCODING_ARG,
            ),
            plot=_plot_det,
        )
    },
    from_run={"spkv": FromRun(_run_args, same_as={"eer": "eer", "min_dcf": "min_dcf"})},
)

KINDS = (SPKV,)
