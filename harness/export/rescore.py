"""`onsite score FAMILY --run RUN_DIR --task T --system S`: a run scored by the offline scorer.

The job is exported to the family's own files (harness/export/writers.py) in a
temporary directory, with the task's settings as the family's options (case,
unit, the training word list, the run's seconds ...), and the family's scorer
reads them as `onsite score FAMILY --ref ... --hyp ...` would: so the number
printed is both the offline scorer's on the exported files and, as the tests
check per kind, the live leaderboard's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..score_cmd import MT_METRICS
from . import Job, read_run
from .writers import WRITERS, write_cwmt_source


@dataclass(frozen=True)
class RunFamily:
    """How one `onsite score` family reads a run: the kinds it scores, and its arguments."""

    kinds: tuple[str, ...]
    # (job, a directory to write files in) -> the family's argument values by dest.
    args: Callable[[Job, Path], dict[str, Any]]


def _write(job: Job, directory: Path, fmt: str, name: str, references: bool) -> str:
    path = directory / name
    path.write_text(WRITERS[fmt](job, references), encoding="utf-8")
    return str(path)


def _pair(fmt: str, suffix: str) -> Callable[[Job, Path], dict[str, Any]]:
    """--ref and --hyp as the job's references and outputs in one format."""

    def args(job: Job, directory: Path) -> dict[str, Any]:
        return {
            "ref": _write(job, directory, fmt, f"ref{suffix}", True),
            "hyp": _write(job, directory, fmt, f"hyp{suffix}", False),
            "details": False,
        }

    return args


def _asr(job: Job, directory: Path) -> dict[str, Any]:
    values = _pair("trn", ".trn")(job, directory)
    conditions = job.testset.conditions()
    path = None
    if conditions:
        path = directory / "conditions.tsv"
        path.write_text("".join(f"{k}\t{v}\n" for k, v in conditions.items()), encoding="utf-8")
    return {
        **values,
        "unit": job.config.unit,
        "case_sensitive": job.config.case_sensitive,
        "unicode": False,
        "conditions": str(path) if path else None,
    }


def _command(job: Job, directory: Path) -> dict[str, Any]:
    return {
        **_pair("score-jsonl", ".jsonl")(job, directory),
        "case_sensitive": job.config.case_sensitive,
    }


def _run_seconds(job: Job) -> float:
    # The run's own processing seconds of every completed item, failed ones included.
    return math.fsum(job.seconds.get(item.id, 0.0) for item in job.testset.items)


def _ocr(job: Job, directory: Path) -> dict[str, Any]:
    return {**_pair("score-jsonl", ".jsonl")(job, directory), "seconds": _run_seconds(job) or None}


def _mt(job: Job, directory: Path) -> dict[str, Any]:
    lang = str(job.testset.items[0].reference.lang) if job.testset.items else "en"
    # CWMT scores system combination by BLEU only, as the live combination kind does.
    metrics = ("bleu",) if job.kind.name == "combination" else MT_METRICS
    return {
        "hyp": _write(job, directory, "cwmt-xml", "hyp.xml", False),
        "ref": [_write(job, directory, "cwmt-xml", "ref.xml", True)],
        "lang": lang,
        "src": None,
        "metrics": metrics,
    }


def _mt_check(job: Job, directory: Path) -> dict[str, Any]:
    source = directory / "source.xml"
    source.write_text(write_cwmt_source(job), encoding="utf-8")
    # The CWMT naming rule: task-site-primary-system.xml, task = the set's id.
    text = WRITERS["cwmt-xml"](job, False)
    from scoring.cwmt_xml import load_mt_file, result_file_name

    hyp = directory / "hyp.xml"
    hyp.write_text(text, encoding="utf-8")
    written = load_mt_file(hyp, "target")
    named = directory / result_file_name(
        written.setid or job.task, job.system, job.system, written.srclang, written.tgtlang
    )
    hyp.rename(named)
    return {"src": str(source), "hyp": [str(named)]}


def _cws(job: Job, directory: Path) -> dict[str, Any]:
    words = job.testset.setup_files.get("words")
    return {
        "gold": _write(job, directory, "sighan", "gold.txt", True),
        "test": _write(job, directory, "sighan", "test.txt", False),
        "words": str(words) if words else None,
        "accepted": None,
        "lcs": False,
        "sighan_quirks": False,
    }


def _ner(job: Job, directory: Path) -> dict[str, Any]:
    return {"conll": _write(job, directory, "conll", "conlleval.txt", True)}


def _pos(job: Job, directory: Path) -> dict[str, Any]:
    train = job.testset.setup_files.get("train")
    return {
        "gold": _write(job, directory, "sighan", "gold.pos", True),
        "test": _write(job, directory, "sighan", "test.pos", False),
        "train": str(train) if train else None,
    }


def _textcat(job: Job, directory: Path) -> dict[str, Any]:
    return {
        "gold": _write(job, directory, "tsv", "gold.tsv", True),
        "pred": _write(job, directory, "tsv", "pred.tsv", False),
        "seconds": _run_seconds(job),
    }


def _ir(job: Job, directory: Path) -> dict[str, Any]:
    # complete: an unanswered topic scores 0 (trec_eval -c), as live.
    return {
        "qrels": _write(job, directory, "trec", "qrels", True),
        "run": _write(job, directory, "trec", "run", False),
        "complete": True,
    }


def _lid(job: Job, directory: Path) -> dict[str, Any]:
    values = _pair("score-jsonl", ".jsonl")(job, directory)
    del values["details"]
    return values


def _summary_lang(job: Job) -> str:
    return str(job.testset.items[0].reference.lang) if job.testset.items else "en"


def _rouge(job: Job, directory: Path) -> dict[str, Any]:
    # The summaries are written as scored (cut at the limit when the task truncates):
    # no --length-limit is needed, and none is given.
    return {
        "hyp": _write(job, directory, "score-jsonl", "hyp.jsonl", False),
        "ref": [_write(job, directory, "score-jsonl", "ref.jsonl", True)],
        "lang": _summary_lang(job),
        "formula": "A",
        "alpha": 0.5,
        "length_limit": None,
        "length_unit": "char",
        "details": False,
    }


def _cesta(job: Job, directory: Path) -> dict[str, Any]:
    return {
        "hyp": _write(job, directory, "score-jsonl", "hyp.jsonl", False),
        "ref": _write(job, directory, "score-jsonl", "ref.jsonl", True),
        "lang": _summary_lang(job),
        "threshold": 1.0,
        "details": False,
    }


def _kws_det(job: Job, directory: Path) -> dict[str, Any]:
    from .writers import kws_trial_counts

    n_true, n_nontarget = kws_trial_counts(job)
    return {
        "hyp": _write(job, directory, "kws-det", "detections.jsonl", False),
        "n_true": n_true,
        "n_nontarget": n_nontarget,
    }


_SCORE_JSONL = _pair("score-jsonl", ".jsonl")

RUN_FAMILIES: dict[str, RunFamily] = {
    "asr": RunFamily(("asr",), _asr),
    "command": RunFamily(("command",), _command),
    "kws": RunFamily(("kws",), _SCORE_JSONL),
    "ocr": RunFamily(("ocr",), _ocr),
    "faces-detect": RunFamily(("face-detect",), _SCORE_JSONL),
    "faces-identify": RunFamily(("face-identify",), _SCORE_JSONL),
    "faces-verify": RunFamily(("face-verify",), _SCORE_JSONL),
    "kws-det": RunFamily(("kws",), _kws_det),
    "mt": RunFamily(("mt", "combination"), _mt),
    "mt-check": RunFamily(("mt", "combination"), _mt_check),
    "cws": RunFamily(("cws",), _cws),
    "ner": RunFamily(("ner",), _ner),
    "pos": RunFamily(("pos",), _pos),
    "textcat": RunFamily(("textcat",), _textcat),
    "ir": RunFamily(("ir",), _ir),
    "lid": RunFamily(("lid",), _lid),
    "rouge": RunFamily(("summarization",), _rouge),
    "cesta": RunFamily(("summarization",), _cesta),
}


def run_arguments(
    family: str, run_dir: Path, task: str | None, system: str | None, directory: Path
) -> tuple[Job, dict[str, Any]]:
    """The job and the family's argument values, its files written under ``directory``."""
    spec = RUN_FAMILIES[family]
    job = read_run(run_dir, task, system, spec.kinds)
    if job.kind.name not in spec.kinds:
        from ..errors import InputError, Problem

        raise InputError(
            [
                Problem(
                    run_dir,
                    "--task",
                    f"task {job.task!r} is of kind {job.kind.name}, which "
                    f"`onsite score {family}` does not score",
                    f"give a task of kind {' or '.join(spec.kinds)}",
                )
            ]
        )
    return job, spec.args(job, directory)
