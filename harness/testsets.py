"""Test-set loaders: turn a directory into items the controller can send.

References stay in the returned objects on the controller; only the staged
input files and plain input fields ever reach a system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import soundfile

from .errors import Problem, TestSetError

AUDIO_SUFFIXES = (".flac", ".wav", ".ogg", ".sph", ".aiff", ".aif")
_SIDE_FILES = {"text", "conditions.tsv"}


@dataclass(frozen=True)
class TestItem:
    """One item: inputs to stage and send, the reference, and what sizes its budget."""

    __test__ = False  # not a pytest test class

    id: str
    files: Mapping[str, Path]
    fields: Mapping[str, Any]
    reference: str
    duration: float | None = None
    condition: str | None = None


@dataclass(frozen=True)
class InvalidItem:
    """An item the test set lists but that cannot be sent, and why."""

    id: str
    path: Path | None
    reason: str


@dataclass(frozen=True)
class TestSet:
    """The usable items of one test set, the unusable ones, and warnings for the operator."""

    __test__ = False

    root: Path
    items: tuple[TestItem, ...]
    invalid: tuple[InvalidItem, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def references(self) -> dict[str, str]:
        """Item id -> reference, for scoring."""
        return {item.id: item.reference for item in self.items}

    def conditions(self) -> dict[str, str]:
        """Item id -> condition label, for items that have one."""
        return {i.id: i.condition for i in self.items if i.condition is not None}


def _read_utf8_lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TestSetError(
            [
                Problem(
                    path,
                    "",
                    f"not UTF-8 (byte {exc.start} on this line)",
                    "convert it, e.g. iconv -f GB18030 -t UTF-8",
                    line,
                )
            ]
        ) from exc
    return text.splitlines()


def _read_id_table(path: Path, separator: str | None, what: str) -> dict[str, str]:
    """Lines of '<id><sep><value>'; blank lines and '#' comments are skipped."""
    table: dict[str, str] = {}
    problems: list[Problem] = []
    for number, line in enumerate(_read_utf8_lines(path), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(separator, 1) if separator else line.strip().split(None, 1)
        key = parts[0].strip()
        value = parts[1].strip() if len(parts) > 1 else ""
        if separator and len(parts) < 2:
            problems.append(
                Problem(path, "", f"expected '<utt-id>\\t<{what}>'", "separate with a tab", number)
            )
            continue
        if key in table:
            problems.append(
                Problem(path, "", f"utt-id {key!r} appears twice", "keep one line per id", number)
            )
            continue
        table[key] = value
    if problems:
        raise TestSetError(problems)
    return table


def load_asr_testset(root: Path, sample_rates: Sequence[int] = (16000,)) -> TestSet:
    """An ASR test set: audio files, a `text` file of '<utt-id> <transcript>' lines,
    and optionally `conditions.tsv` of '<utt-id>\\t<label>' lines.

    A whole-set problem (no `text` file, wrong encoding, duplicate ids) raises
    TestSetError. An item that cannot be used (no audio, undecodable, not mono,
    a sample rate the task does not accept) is returned in ``invalid`` so the
    run can go on without it.
    """
    text_path = root / "text"
    if not text_path.is_file():
        raise TestSetError(
            [
                Problem(
                    text_path,
                    "",
                    "the test set has no 'text' file",
                    "add one line per item: '<utt-id> <reference transcript>'",
                )
            ]
        )
    references = _read_id_table(text_path, None, "transcript")
    conditions_path = root / "conditions.tsv"
    conditions = _read_id_table(conditions_path, "\t", "label") if conditions_path.is_file() else {}
    audio: dict[str, list[Path]] = {}
    for path in sorted(root.iterdir()):
        if path.is_file() and path.suffix.lower() in AUDIO_SUFFIXES:
            audio.setdefault(path.stem, []).append(path)

    warnings = [
        f"{paths[0]}: audio file with no line in {text_path}; it is not used"
        for stem, paths in audio.items()
        if stem not in references
    ]
    warnings += [
        f"{conditions_path}: utt-id {key!r} is not in {text_path}; ignored"
        for key in conditions
        if key not in references
    ]
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    accepted = ", ".join(str(r) for r in sample_rates)
    for utt_id, reference in references.items():
        paths = audio.get(utt_id, [])
        if not paths:
            invalid.append(InvalidItem(utt_id, None, f"no audio file named {utt_id}.* in {root}"))
            continue
        if len(paths) > 1:
            names = ", ".join(p.name for p in paths)
            invalid.append(InvalidItem(utt_id, paths[0], f"several audio files: {names}"))
            continue
        path = paths[0]
        try:
            info = soundfile.info(str(path))
        except (RuntimeError, soundfile.LibsndfileError) as exc:
            invalid.append(InvalidItem(utt_id, path, f"cannot be decoded: {exc}"))
            continue
        if info.channels != 1:
            invalid.append(InvalidItem(utt_id, path, f"has {info.channels} channels; need mono"))
            continue
        if info.samplerate not in sample_rates:
            invalid.append(
                InvalidItem(
                    utt_id,
                    path,
                    f"sample rate {info.samplerate} Hz; the task accepts {accepted} Hz",
                )
            )
            continue
        if info.frames <= 0:
            invalid.append(InvalidItem(utt_id, path, "has no samples"))
            continue
        items.append(
            TestItem(
                id=utt_id,
                files={"audio": path},
                fields={"sample_rate": info.samplerate},
                reference=reference,
                duration=info.frames / info.samplerate,
                condition=conditions.get(utt_id),
            )
        )
    if not items and not invalid:
        raise TestSetError([Problem(text_path, "", "the test set lists no items", "add items")])
    return TestSet(root, tuple(items), tuple(invalid), tuple(warnings))
