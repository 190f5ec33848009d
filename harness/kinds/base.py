"""What a task kind is: the record each kind module registers, and the values it returns.

A kind module (harness/kinds/<family>.py) builds one `TaskKind` per kind it
owns and lists them in a module-level ``KINDS``; harness/kinds/registry.py
finds them. A kind is the one home of everything about it: its site-file
options, test set, output checks, scorer and headline, the headline as
per-item statistics and their aggregate, speed unit, report figures, the
`onsite export` formats it writes, the `onsite score` families it brings and
how each family reads one of its jobs (`--run`). Export, `score --run` and
re-scoring are written once against this record (harness/export/,
harness/cli/score.py); nothing else names a kind.

Nothing here imports the site file's models: a kind sees its task
configuration as the site's task model, which is the common task keys plus
the kind's own options model (so ``unit`` exists only on the kinds that
define it). Nothing here imports pydantic either: `onsite score` finds its
families through the kinds, and must stay as light as a scorer (the options
models are built when a site file is read, harness/kinds/options.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.collector import cycle_collector_held
from harness.errors import InputError, Problem

if TYPE_CHECKING:
    import argparse

    from harness.kinds.options import KindOptions
    from harness.testsets import TestItem, TestSet

    # Only for annotations: runners (and paramiko) load only where systems run.
    from runners import OutputFile
    from scoring.plots import PlotFiles

# The site's task model for one kind: the common keys (testset, budget, rules ...)
# plus the kind's options. Kinds read their own options from it.
TaskConfig = Any
Outputs = Mapping[str, Mapping[str, Any] | None]
# A report figure: its title and what draws it (scoring.plots style: a file stem in,
# the PNG and SVG written there out).
Plot = tuple[str, "Callable[[Path], PlotFiles]"]
# (task name, headline metric name, scores by system) -> the kind's report figures.
Plots = Callable[[str, str, Mapping[str, Mapping[str, Any]]], "list[Plot]"]


@dataclass(frozen=True)
class SpeedUnit:
    """How a kind's per-item speed is named, shown and summed up over a job.

    ``pooled``: the job's speed is items answered over their total seconds (as
    OLCCR defines V), not the mean of the per-item figures.
    """

    name: str  # the name in the journal, leaderboard JSON and report ("rtf")
    short: str  # terminal label ("rtf", "char/s")
    label: str  # report label ("real-time factor")
    fmt: str = "{:.1f}"  # report format of one figure
    pooled: bool = False

    def mean(self, speeds: Sequence[float], answered_seconds: Sequence[float]) -> float | None:
        """The job's speed from its answered items' speeds (and their seconds, if pooled)."""
        if self.pooled:
            total = sum(answered_seconds)
            return len(answered_seconds) / total if total > 0 else None
        return sum(speeds) / len(speeds) if speeds else None


RTF = SpeedUnit("rtf", "rtf", "real-time factor", "{:.3f}")
CHARS_PER_SECOND = SpeedUnit("chars_per_second", "char/s", "characters / s", pooled=True)
MS_PER_FRAME = SpeedUnit("ms_per_frame", "ms/frame", "ms / frame")


@dataclass(frozen=True)
class Headline:
    """A job's headline figure: its JSON name, the name people read, and the value."""

    name: str  # "cer"
    label: str  # "CER"
    value: float | None


@dataclass(frozen=True)
class Scored:
    """A kind's scores of one job: every figure, the headline and the secondary line."""

    figures: dict[str, Any]
    headline: Headline
    detail: str


# --------------------------------------------------------------------------- a job


@dataclass(frozen=True)
class JobData:
    """One job of a run as its scorer sees it, read back from the run by harness/export's
    `read_run` (the controller's job to run is harness.engine.controller.Job).

    ``testset`` holds the items the job completed (all of them once the job is
    done); ``outputs`` the answers of the answered items; ``lines`` the run's
    output line (docs/run-directory.md) of every completed item; ``seconds``
    each completed item's processing seconds; ``total`` the test set's size.
    """

    run_dir: Path
    task: str
    system: str
    kind: TaskKind
    config: TaskConfig  # the site's task model (common keys and the kind's options)
    testset: TestSet
    outputs: Outputs
    lines: Mapping[str, Mapping[str, Any]]
    seconds: Mapping[str, float]
    total: int

    def answer(self, item: str) -> Mapping[str, Any] | None:
        """The item's output when it was answered, else None."""
        out = self.outputs.get(item)
        return out if isinstance(out, Mapping) else None

    def text(self, item: str) -> str:
        """The item's hypothesis text, empty when the item was not answered."""
        out = self.answer(item)
        text = out.get("text") if out else None
        return text if isinstance(text, str) else ""

    @property
    def complete(self) -> bool:
        """Every item of the test set was completed."""
        return len(self.testset.items) == self.total

    @property
    def run_seconds(self) -> float:
        """The run's own processing seconds of every completed item, failed ones included."""
        return math.fsum(self.seconds.get(item.id, 0.0) for item in self.testset.items)

    def refuse(self, key: str, problem: str, fix: str) -> InputError:
        """An export refused at the job's outputs file: the error names the key (``item u1``,
        ``detections``), the problem and the fix."""
        where = self.run_dir / "outputs" / self.task / f"{self.system}.jsonl"
        return InputError([Problem(where, key, problem, fix)])


# (job, --references) -> the text of one export file (docs/formats.md).
Writer = Callable[[JobData, bool], str]


def jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    """JSON lines, one row each, UTF-8 as written (what the families' readers take)."""
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)


# Set-wide data every item's reference shares (the training counts, the word list):
# not the item's reference, and it would repeat on every line.
_SHARED = frozenset({"training", "lexicon"})


def _json_reference(reference: Any) -> Any:
    to_dict = getattr(reference, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if is_dataclass(reference) and not isinstance(reference, type):
        return {
            f.name: _json_reference(getattr(reference, f.name))
            for f in fields(reference)
            if f.name not in _SHARED
        }
    if isinstance(reference, Mapping):
        return {str(k): _json_reference(v) for k, v in reference.items()}
    if isinstance(reference, tuple | list):
        return [_json_reference(v) for v in reference]
    return reference


def write_jsonl(job: JobData, references: bool) -> str:
    """Every kind's `jsonl`: the run's output line (with its verdict) of each completed
    item; with --references each item's own reference."""
    if references:
        return jsonl(
            [{"id": i.id, "reference": _json_reference(i.reference)} for i in job.testset.items]
        )
    return jsonl([job.lines[item.id] for item in job.testset.items])


# --------------------------------------------------------------------------- onsite ingest


@dataclass(frozen=True)
class Submitted:
    """One item's output as a submitted file gives it (`onsite ingest`): the item's id,
    the file's line it stands on (None where the format has no one line per item), and
    the output object, of the shape the kind's systems send."""

    item: str
    line: int | None
    output: dict[str, Any]


# (the file, the task's test set, the task's name, its configuration, --encoding) ->
# every entry of the file in file order, repeats kept (ingest lists them). Raises
# InputError or scoring's FormatError (naming file and line) for a file it cannot read.
Reader = Callable[[Path, "TestSet", str, TaskConfig, "str | None"], Sequence[Submitted]]


def read_jsonl(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """Every kind's `jsonl` submission: one ``{"id": ..., "output": {...}}`` per line, the
    output as the kind's systems send it (a run's outputs file, as `onsite export --format
    jsonl` writes it, reads the same way; its other keys are left out)."""
    from scoring.charsets import iter_lines

    entries: list[Submitted] = []
    for lineno, text in enumerate(iter_lines(path, encoding), start=1):
        text = text.removeprefix("\ufeff").strip()
        if not text:
            continue
        fix = 'write one JSON object per line: {"id": "ITEM", "output": {...}}'
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                [Problem(path, f"line {lineno}", f"not JSON: {exc.msg}", fix)]
            ) from None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise InputError([Problem(path, f"line {lineno}", 'no "id" string', fix)])
        output = row.get("output")
        if not isinstance(output, dict):
            raise InputError([Problem(path, f"line {lineno}", 'no "output" object', fix)])
        entries.append(Submitted(row["id"], lineno, output))
    return entries


# --------------------------------------------------------------------------- onsite score

# One `add_argument` call, declared as data: (flags, options).
Arg = tuple[tuple[str, ...], dict[str, Any]]
# The parsed arguments of a family -> its figures (JSON-ready).
Scorer = Callable[["argparse.Namespace"], dict[str, Any]]


def arg(*flags: str, **options: Any) -> Arg:
    """One `add_argument` call of a family, declared as data."""
    return flags, options


REF_HYP: tuple[Arg, ...] = (
    arg("--ref", required=True, help="the truth file (docs/scoring*.md)"),
    arg("--hyp", required=True, help="the system's output file"),
    arg("--details", action="store_true", help="per-item breakdown too"),
)


def text_encoding(text: str) -> str:
    """An ``--encoding`` argument: a name scoring.charsets reads (gbk, big5, utf-16le ...)."""
    import argparse

    from scoring.charsets import codec_of

    try:
        codec_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip().lower()


ENCODING_ARG: Arg = arg(
    "--encoding",
    type=text_encoding,
    help="the files' encoding: utf-8 (the default; a BOM is allowed), gb2312, gbk, gb18030, "
    "big5, utf-16 (with a BOM), utf-16le; left out, a CWMT XML file's declaration is read",
)


def positive_int(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


@dataclass(frozen=True)
class ScoreFamily:
    """One `onsite score` family: its scorer, help and own arguments (besides --json).

    A kind brings it in ``score_families``; two kinds may list the same family
    object (mt and combination share `mt`), never two families of one name.
    ``panel`` names the judging panel's test (docs/judging.md) whose results
    the family reads with ``--run RUN_DIR --task T`` instead of ``--hyp``.
    """

    scorer: Scorer
    help: str
    args: tuple[Arg, ...] = REF_HYP
    # List-valued result keys shown as tables without --json.
    tables: tuple[str, ...] = ()
    # Without --json, print this list as JSON lines instead of tables (plans, not scores).
    lines: str | None = None
    # Writes the family's figure (PNG and SVG) for --plot STEM.
    plot: Callable[[argparse.Namespace, Path], PlotFiles] | None = None
    panel: str | None = None

    @property
    def has_own_run(self) -> bool:
        """The family has a `--run` of its own (ir: the TREC run file)."""
        return any("--run" in flags for flags, _ in self.args)


@dataclass(frozen=True)
class FromRun:
    """How `onsite score FAMILY --run` reads a job of the kind that declares it.

    ``args`` writes the job's files (the kind's writers) under a directory and
    gives the family's argument values by dest, with the task's settings as the
    family's options, so the family scores them as it scores files. ``same_as``
    says which of the family's figures equal which live figures (family key ->
    key of the live scores, dotted when nested: ``"det.eer"``; a key is looked
    up at the top or under ``overall``); None means the kind's headline, under
    its score key, and an empty mapping a family with no live figure (a checker).
    tests/test_kind_conformance.py holds every kind to it.
    """

    args: Callable[[JobData, Path], dict[str, Any]]
    same_as: Mapping[str, str] | None = None


def write_file(job: JobData, directory: Path, writer: Writer, name: str, references: bool) -> str:
    """Write one export of the job into ``directory`` as ``name``; the path as a string."""
    path = directory / name
    path.write_text(writer(job, references), encoding="utf-8")
    return str(path)


def ref_hyp_files(writer: Writer, suffix: str) -> Callable[[JobData, Path], dict[str, Any]]:
    """--ref and --hyp: the job's references and outputs written by one writer."""

    def args(job: JobData, directory: Path) -> dict[str, Any]:
        return {
            "ref": write_file(job, directory, writer, f"ref{suffix}", True),
            "hyp": write_file(job, directory, writer, f"hyp{suffix}", False),
            "details": False,
        }

    return args


def refuse_outputs_file(path: str, family: str) -> None:
    """A run's outputs file (JSON lines) given where a transcript file goes: say what to do.

    Read as trn or plain text, its JSON would quietly become ids or segments.
    """
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(256).lstrip()
    except OSError:
        return  # the reader names the unreadable path
    if head.startswith('{"'):
        raise ValueError(
            f"{path}: JSON lines (a run's outputs file?), not a {family} file; score the "
            f"run with `onsite score {family} --run RUN_DIR --task T --system S`, or write "
            "the file with `onsite export RUN_DIR --format ...` (docs/formats.md)"
        )


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class ItemStatistics:
    """The headline as per-item sufficient statistics and their aggregate (sacrebleu's design).

    ``items`` gives one statistic per scored item (the job's test set as scored:
    an unanswered item has one too); ``aggregate`` turns any sequence of them,
    the whole set or a resample with repeats, into the headline as the live
    scorer computes it over those items: summed error and word counts for WER,
    summed n-gram counts for BLEU, summed counts for F, per-topic AP for MAP, the
    per-item scores for an EER. So ``aggregate(items(...).values())`` is the
    live headline (tests/test_kind_conformance.py checks it for every kind on a
    real job), and a significance test resamples statistics, never files.
    """

    items: Callable[[TestSet, TaskConfig, Outputs, Mapping[str, float]], Mapping[str, Any]]
    aggregate: Callable[[TaskConfig, Sequence[Any]], float | None]
    # The same headline from summed numbers, when it is one (None: resample `aggregate`).
    additive: AdditiveStatistics | None = None


@dataclass(frozen=True)
class AdditiveStatistics:
    """A headline that is a function of sums: the fast form of ``ItemStatistics.aggregate``.

    ``vector(task, stat)`` gives one item's statistic as named numbers (a name it
    leaves out is 0: BLEU's matches and totals per order and its reference
    length, WER's C, S, D and I, OCR's samples and hits per character);
    ``headline(task, sums)`` turns the names' sums over any selection of items,
    repeats counted, into exactly what ``aggregate`` gives on that selection.
    `onsite compare` then resamples with matrix products instead of one
    ``aggregate`` call per resample (tests/test_additive_statistics.py checks the
    equality on random resamples for every kind that has the form). ``sums`` has
    every name some compared item has, as floats (integers up to 2**53 exactly).
    """

    vector: Callable[[TaskConfig, Any], Mapping[Hashable, float]]
    headline: Callable[[TaskConfig, Mapping[Hashable, float]], float | None]


def rate(hits: Sequence[Any]) -> float:
    """Items right over items (0.0 for none): the aggregate of a per-item hit."""
    return sum(bool(h) for h in hits) / len(hits) if hits else 0.0


def _rate_vector(task: TaskConfig, hit: Any) -> Mapping[Hashable, float]:
    return {"right": int(bool(hit)), "items": 1}


def _rate_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    # As `rate`: an int over an int, so the same float.
    items = int(sums.get("items", 0))
    return int(sums.get("right", 0)) / items if items else 0.0


RATE_ADDITIVE = AdditiveStatistics(_rate_vector, _rate_headline)
"""`rate`'s additive form: summed hits over summed items."""


def _find(scores: Mapping[str, Any], key: str) -> float | None:
    """A figure found in scores["overall"] or at the top of scores."""
    for place in (scores.get("overall"), scores):
        if isinstance(place, Mapping) and isinstance(place.get(key), int | float):
            return float(place[key])
    return None


def score_problem(value: Any, where: str, hint: str = "") -> str | None:
    """Why a system's ``score`` at ``where`` is not one (a finite JSON number), or None."""
    # bool is an int in Python; a true/false score is a mistake, not a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f'{where} needs a number "score"{hint}'
    if not math.isfinite(value):
        return f"{where}.score is {value}: scores must be finite"
    return None


def _no_detail(scores: Mapping[str, Any]) -> str:
    return ""


def audio_options() -> type[KindOptions]:
    """The options of a kind whose items are audio: the sample rates it accepts."""
    from harness.kinds.options import AudioOptions

    return AudioOptions


def _no_options() -> type[KindOptions]:
    from harness.kinds.options import KindOptions

    return KindOptions


@dataclass(frozen=True)
class TaskKind:
    """Everything about one kind of task: options, test set, checks, scores, speed, report,
    export formats and `onsite score` families (docs/task-kinds.md)."""

    name: str
    load: Callable[[Path, TaskConfig], TestSet]
    check_output: Callable[[Mapping[str, Any]], str | None]
    # (test set, task, outputs of answered items, seconds per completed item) -> scores
    score: Callable[[TestSet, TaskConfig, Outputs, Mapping[str, float]], dict[str, Any]]
    # The headline metric's JSON name for this task (asr: "wer", or "cer" for unit = "char").
    metric: Callable[[TaskConfig], str]
    # The headline as per-item statistics and their aggregate (what resampling uses).
    statistics: ItemStatistics
    unit: SpeedUnit
    # Per-item speed in `unit` from the item and its processing seconds.
    speed: Callable[[TestItem, float], float | None]
    # The kind's own site-file keys: a function that builds the pydantic model (a
    # KindOptions subclass), called when a site file is read (see the module docstring).
    options_model: Callable[[], type[KindOptions]] = _no_options
    # Names people read for the headline metric names this kind uses ("cer" -> "CER").
    metric_labels: Mapping[str, str] = field(default_factory=dict)
    # Where the headline sits in the scores when not under its own name
    # (scoring's ASR report names a character error rate "wer").
    score_key: Callable[[TaskConfig], str] | None = None
    # Higher is better for the headline metric (False for error rates).
    higher_is_better: bool = True
    # The secondary figures a leaderboard line shows beside the headline, from the scores.
    detail: Callable[[Mapping[str, Any]], str] = _no_detail
    # Checks an output needs its item for (e.g. one NER tag per token sent).
    check_item: Callable[[TestItem, Mapping[str, Any]], str | None] | None = None
    # The largest answer a system may send for one item (the task's max_output_bytes
    # overrides it); larger is invalid_output, so no system can flood the controller.
    max_output_bytes: int = 1 << 20
    # Files the system writes per item: input key -> suffix (tts: {"audio_out": ".wav"}).
    # The item input carries a path for each; the system answers with it.
    output_files: Mapping[str, str] = field(default_factory=dict)
    # Checks such a file and keeps it in the run directory:
    # (item, output, the file, media dir, anonymous id) -> (output to record, problem).
    # The output recorded names the kept file by its path in the run directory
    # (media/<task>/<name>), which is how a PostgreSQL run keeps a copy of it too.
    keep_output: (
        Callable[
            [TestItem, Mapping[str, Any], OutputFile, Path, str], tuple[dict[str, Any], str | None]
        ]
        | None
    ) = None
    # The kind's own report figures beside the speed distribution every kind gets.
    plots: Plots | None = None
    # The `onsite export --format` files this kind's jobs are written in besides `jsonl`
    # (every kind's): format name -> writer (docs/formats.md shows each file).
    writers: Mapping[str, Writer] = field(default_factory=dict)
    # The `onsite score` families this kind brings (name -> family).
    score_families: Mapping[str, ScoreFamily] = field(default_factory=dict)
    # How `onsite score FAMILY --run` reads this kind's jobs (family name -> arguments).
    from_run: Mapping[str, FromRun] = field(default_factory=dict)
    # The submitted files `onsite ingest --format` reads besides `jsonl` (every kind's):
    # format name -> reader; each gives the outputs the same-named writer writes back.
    readers: Mapping[str, Reader] = field(default_factory=dict)
    # One line for the docs and the CLI: what the kind evaluates.
    summary: str = ""
    # The loader reads the test set's text files in the task's ``encoding`` (gbk, big5,
    # utf-16le ...: scoring.charsets); the site file refuses the key for other kinds.
    text_encodings: bool = False

    @cached_property
    def options(self) -> type[KindOptions]:
        """The pydantic model of the kind's own site-file keys."""
        return self.options_model()

    @cached_property
    def formats(self) -> Mapping[str, Writer]:
        """Every `onsite export --format` of the kind and its writer: its own, then `jsonl`."""
        return MappingProxyType({**self.writers, "jsonl": write_jsonl})

    @cached_property
    def submission_formats(self) -> Mapping[str, Reader]:
        """Every `onsite ingest --format` of the kind and its reader: its own, then `jsonl`."""
        return MappingProxyType({**self.readers, "jsonl": read_jsonl})

    def load_testset(self, root: Path, cfg: TaskConfig) -> TestSet:
        """The task's test set (``load``), read with the cycle collector held off: a set
        of 100,000 items is that many objects that never form a cycle."""
        with cycle_collector_held():
            return self.load(root, cfg)

    @property
    def speed_unit(self) -> str:
        """The speed unit's name, as the journal and the leaderboard JSON carry it."""
        return self.unit.name

    def metric_label(self, metric: str) -> str:
        """The name people read for one of this kind's headline metrics."""
        return self.metric_labels.get(metric, metric)

    def headline_key(self, task: TaskConfig) -> str:
        """Where the headline sits in the scores (at the top or under ``overall``)."""
        return self.score_key(task) if self.score_key is not None else self.metric(task)

    def headline(self, task: TaskConfig, scores: Mapping[str, Any]) -> Headline:
        """The headline figure of a job's scores."""
        name = self.metric(task)
        return Headline(name, self.metric_label(name), _find(scores, self.headline_key(task)))

    def evaluate(
        self, testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
    ) -> Scored:
        """Score a job: every figure, its headline and the secondary line."""
        figures = self.score(testset, task, outputs, seconds)
        return Scored(figures, self.headline(task, figures), self.detail(figures))

    def item_statistics(
        self, testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
    ) -> Mapping[str, Any]:
        """The headline's statistic of each scored item, by item id."""
        return self.statistics.items(testset, task, outputs, seconds)

    def aggregate(self, task: TaskConfig, stats: Sequence[Any]) -> float | None:
        """The headline over any sequence of item statistics (a resample may repeat one)."""
        return self.statistics.aggregate(task, stats)


def pct(value: Any) -> str:
    """A fraction as a percentage with one decimal, "-" when there is none."""
    return f"{100 * value:.1f}%" if isinstance(value, int | float) else "-"


def overall(scores: Mapping[str, Any]) -> Mapping[str, Any]:
    """scores["overall"] when the scorer nests its totals there, else scores."""
    inner = scores.get("overall")
    return inner if isinstance(inner, Mapping) else scores


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm", ".webp")


def real_time_factor(item: TestItem, seconds: float) -> float | None:
    """Seconds of processing per second of audio."""
    return seconds / item.duration if item.duration else None


def units_per_second(item: TestItem, seconds: float) -> float | None:
    """The item's units (characters, samples) per second of processing."""
    return (item.units or 1.0) / seconds if seconds > 0 else None
