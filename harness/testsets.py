"""Test-set loaders: turn a directory into items the controller can send.

References stay in the returned objects on the controller; only the staged
input files and plain input fields ever reach a system.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import Problem, TestSetError

AUDIO_SUFFIXES = (".flac", ".wav", ".ogg", ".sph", ".aiff", ".aif")
_SIDE_FILES = {"text", "conditions.tsv"}


@dataclass(frozen=True)
class TestItem:
    """One item: inputs to stage and send, the reference, and what sizes its budget."""

    __test__ = False  # not a pytest test class

    id: str
    files: Mapping[str, Path]
    fields: Mapping[str, Any]
    reference: Any  # a transcript, a slot frame, a character, faces ... per task kind
    duration: float | None = None
    condition: str | None = None
    units: float | None = None  # characters or frames, for rate budgets


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
    # Sent once in hello before any item, e.g. a face gallery: name -> file.
    setup_files: Mapping[str, Path] = field(default_factory=dict)

    def references(self) -> dict[str, Any]:
        """Item id -> reference, for scoring."""
        return {item.id: item.reference for item in self.items}

    def conditions(self) -> dict[str, str]:
        """Item id -> condition label, for items that have one."""
        return {i.id: i.condition for i in self.items if i.condition is not None}


def read_text_lines(path: Path, encoding: str | None = None) -> list[str]:
    """A test-set file's lines in ``encoding`` (the task's ``encoding``; None: UTF-8).

    TestSetError naming the file, the first line that does not decode and the encoding
    the file reads as (scoring.charsets).
    """
    from scoring.charsets import read_text
    from scoring.errors import FormatError

    try:
        text = read_text(path, encoding)
    except FormatError as exc:
        raise TestSetError([Problem(path, "", exc.problem, exc.fix, exc.line)]) from exc
    return text.splitlines()


def _read_id_table(
    path: Path, separator: str | None, what: str, encoding: str | None = None
) -> dict[str, str]:
    """Lines of '<id><sep><value>'; blank lines and '#' comments are skipped."""
    table: dict[str, str] = {}
    problems: list[Problem] = []
    for number, line in enumerate(read_text_lines(path, encoding), 1):
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


@dataclass(frozen=True)
class AudioInfo:
    """What a test set needs of an audio file's header: channels, rate and length."""

    channels: int
    samplerate: int
    frames: int


# The plain WAV headers read without libsndfile: PCM and IEEE float, at the sample sizes
# libsndfile takes, in rates and channel counts no recorder exceeds. Anything else is
# left to soundfile, so its verdict on odd files stays the one that counts.
_WAV_SAMPLE_BITS = {1: (8, 16, 24, 32), 3: (32, 64)}
_WAV_MAX_CHANNELS = 16
_WAV_RATES = (1000, 384000)
_WAV_HEADER_BYTES = 4096


def _plain_wav_info(path: Path) -> AudioInfo | None:
    """The header of a plain RIFF/WAVE file (see _WAV_SAMPLE_BITS), or None for anything
    else: another format, an unusual header, a data chunk the file does not hold whole."""
    # A bare descriptor, not a file object: a test set is read a file at a time.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        head = os.read(fd, _WAV_HEADER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    if struct.unpack_from("<I", head, 4)[0] + 8 != size:
        return None
    fmt: tuple[int, int, int, int, int] | None = None
    at = 12
    while at + 8 <= len(head):
        chunk, length = head[at : at + 4], struct.unpack_from("<I", head, at + 4)[0]
        body = at + 8
        if chunk == b"fmt ":
            if fmt is not None or length < 16 or body + 16 > len(head):
                return None
            tag, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", head, body)
            fmt = (tag, channels, rate, align, bits)
        elif chunk == b"data":
            if fmt is None or body + length > size:
                return None
            tag, channels, rate, align, bits = fmt
            if (
                bits not in _WAV_SAMPLE_BITS.get(tag, ())
                or not 1 <= channels <= _WAV_MAX_CHANNELS
                or not _WAV_RATES[0] <= rate <= _WAV_RATES[1]
                or align != channels * bits // 8
                or length % align
            ):
                return None
            return AudioInfo(channels, rate, length // align)
        at = body + length + (length & 1)  # chunks are padded to an even size
    return None


def audio_info(path: Path) -> AudioInfo:
    """An audio file's channels, sample rate and frames; ValueError when it cannot be read.

    A plain WAV header is read here; any other file is asked of soundfile (libsndfile),
    imported only then: loading a test set of WAV files (as `onsite status` does) needs
    neither it nor numpy.
    """
    found = _plain_wav_info(path)
    if found is not None:
        return found
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise ValueError(str(exc)) from exc
    return AudioInfo(info.channels, info.samplerate, info.frames)


def _audio_files(root: Path) -> dict[str, list[Path]]:
    # Names from one scandir (its file types need no stat per file), split into stem and
    # suffix as Path splits them: a file of 100,000 is listed in a fraction of a second.
    with os.scandir(root) as entries:
        names = sorted(entry.name for entry in entries if entry.is_file())
    audio: dict[str, list[Path]] = {}
    for name in names:
        dot = name.rfind(".")
        if 0 < dot < len(name) - 1 and name[dot:].lower() in AUDIO_SUFFIXES:
            audio.setdefault(name[:dot], []).append(root / name)
    return audio


def _one_file(
    item_id: str, found: dict[str, list[Path]], root: Path, what: str = "file"
) -> tuple[Path | None, InvalidItem | None]:
    paths = found.get(item_id, [])
    if not paths:
        return None, InvalidItem(item_id, None, f"no {what} named {item_id}.* in {root}")
    if len(paths) > 1:
        names = ", ".join(p.name for p in paths)
        return None, InvalidItem(item_id, paths[0], f"several files: {names}")
    return paths[0], None


def audio_testset(
    root: Path,
    references: Mapping[str, Any],
    sample_rates: Sequence[int],
    conditions: Mapping[str, str] | None = None,
    listed_in: Path | None = None,
) -> TestSet:
    """Items for references keyed by utt-id, each with the audio file named after it.

    An audio file that cannot be used (undecodable, not mono, a sample rate
    the task does not accept, empty) becomes an invalid item, never a crash.
    """
    conditions = conditions or {}
    audio = _audio_files(root)
    listed = listed_in or root
    warnings = [
        f"{paths[0]}: audio file with no line in {listed}; it is not used"
        for stem, paths in audio.items()
        if stem not in references
    ]
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    accepted = ", ".join(str(r) for r in sample_rates)
    for utt_id, reference in references.items():
        path, bad = _one_file(utt_id, audio, root, "audio file")
        if path is None:
            assert bad is not None
            invalid.append(bad)
            continue
        try:
            info = audio_info(path)
        except ValueError as exc:
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
                    f"sample rate {info.samplerate} Hz; the task accepts {accepted} Hz "
                    "(onsite never resamples)",
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
        raise TestSetError([Problem(listed, "", "the test set lists no items", "add items")])
    return TestSet(root, tuple(items), tuple(invalid), tuple(warnings))


def _text_and_conditions(
    root: Path, what: str, encoding: str | None = None
) -> tuple[dict[str, str], dict[str, str], Path]:
    text_path = root / "text"
    if not text_path.is_file():
        raise TestSetError(
            [
                Problem(
                    text_path,
                    "",
                    "the test set has no 'text' file",
                    f"add one line per item: '<utt-id> <{what}>'",
                )
            ]
        )
    references = _read_id_table(text_path, None, what, encoding)
    conditions_path = root / "conditions.tsv"
    conditions = (
        _read_id_table(conditions_path, "\t", "label", encoding)
        if conditions_path.is_file()
        else {}
    )
    unknown = [k for k in conditions if k not in references]
    if unknown:
        raise TestSetError(
            [
                Problem(
                    conditions_path,
                    "",
                    f"utt-ids not in {text_path}: {', '.join(unknown[:5])}",
                    "remove them or add their transcripts",
                )
            ]
        )
    return references, conditions, text_path


def load_asr_testset(
    root: Path, sample_rates: Sequence[int] = (16000,), encoding: str | None = None
) -> TestSet:
    """An ASR test set: audio files, a `text` file of '<utt-id> <transcript>' lines,
    and optionally `conditions.tsv` of '<utt-id>\\t<label>' lines, in ``encoding``
    (the task's; None: UTF-8).

    A whole-set problem (no `text` file, wrong encoding, duplicate ids) raises
    TestSetError. An item that cannot be used is returned in ``invalid`` so the
    run can go on without it.
    """
    references, conditions, text_path = _text_and_conditions(root, "reference transcript", encoding)
    return audio_testset(root, references, sample_rates, conditions, text_path)


def load_command_testset(
    root: Path, sample_rates: Sequence[int] = (8000,), encoding: str | None = None
) -> TestSet:
    """Command recognition: the ASR layout, `text` holding each recording's command word,
    and optionally `vocabulary.txt` (one command per line), handed to the system at setup
    (in hello's files; over a serial line as the SETUP transfer)."""
    references, conditions, text_path = _text_and_conditions(root, "command", encoding)
    testset = audio_testset(root, references, sample_rates, conditions, text_path)
    vocabulary = root / "vocabulary.txt"
    if vocabulary.is_file():
        testset = replace(testset, setup_files={"vocabulary": vocabulary})
    return testset


def read_truth(path: Path, reader: Callable[[Path], Any], fix: str) -> Any:
    """Read a truth file with one of scoring's readers, turning its errors into TestSetError."""
    if not path.is_file():
        raise TestSetError([Problem(path, "", "the test set has no such file", fix)])
    from scoring.errors import FormatError

    try:
        return reader(path)
    except FormatError as exc:
        # The reader's own fix (the encoding to name, the key to add) is the one to give.
        raise TestSetError([Problem(path, "", exc.problem, exc.fix, exc.line)]) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise TestSetError([Problem(path, "", str(exc), fix)]) from exc


def file_testset(
    root: Path,
    references: Mapping[str, Any],
    files: Mapping[str, Mapping[str, str]],
    suffixes: Sequence[str],
    subsets: Mapping[str, str] | None = None,
    units: float | None = 1.0,
    check: Callable[[str, Path], str | None] | None = None,
) -> TestSet:
    """Items whose inputs are files in root named by stem (images), e.g. {"image": "p001"}.

    ``files`` maps item id -> input key -> file stem. A missing or empty file,
    or one ``check(key, path)`` finds fault with, makes the item invalid.
    """
    found: dict[str, list[Path]] = {}
    for entry in sorted(root.iterdir()):
        if entry.is_file() and entry.suffix.lower() in suffixes:
            found.setdefault(entry.stem, []).append(entry)
            found.setdefault(entry.name, []).append(entry)
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    for item_id, reference in references.items():
        inputs: dict[str, Path] = {}
        for key, stem in files[item_id].items():
            path: Path | None
            if "/" in stem:
                # A path below the test set (e.g. gallery/p01.png), not a name to look up.
                path = root / stem if (root / stem).is_file() else None
                bad = None if path else InvalidItem(item_id, None, f"no file {root / stem}")
            else:
                path, bad = _one_file(stem, found, root)
            if path is None:
                assert bad is not None
                invalid.append(InvalidItem(item_id, None, f"{key}: {bad.reason}"))
                break
            if path.stat().st_size == 0:
                invalid.append(InvalidItem(item_id, path, f"{key}: the file is empty"))
                break
            problem = check(key, path) if check else None
            if problem:
                invalid.append(InvalidItem(item_id, path, f"{path.name} {problem}"))
                break
            inputs[key] = path
        else:
            items.append(
                TestItem(
                    id=item_id,
                    files=inputs,
                    fields={},
                    reference=reference,
                    condition=(subsets or {}).get(item_id),
                    units=units,
                )
            )
    if not items and not invalid:
        raise TestSetError([Problem(root, "", "the test set lists no items", "add items")])
    return TestSet(root, tuple(items), tuple(invalid))
