"""`onsite combination-set`: the system-combination test set from a finished MT run (CWMT).

CWMT collects the MT systems' n-best lists and releases them to the
combination participants as ``<tgtset>`` files whose ``<cand>`` elements are
sorted by score, the systems' names replaced. This command does that from a
run directory: it refuses a run whose MT jobs are not all finished, copies the
MT test set's source, ``lang`` and references unchanged (so the combination's
BLEU is against the same references), and writes ``candidates/sysNN.xml``, one
per MT system in a random order. The key from sysNN back to the real name goes
to a separate file, never into the set. harness/kinds/combination.py reads it.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem
from scoring.cwmt_write import TargetCandidate, TargetEntry, ranked, tgtset_xml
from scoring.cwmt_xml import MtFile, combination_task_id, load_mt_file
from scoring.errors import FormatError

if TYPE_CHECKING:
    from harness.store.events import Completed
    from harness.store.run_model import RunModel

# Verdicts whose output counts, as the leaderboard scores them.
_ANSWERED = frozenset({"ok", "over_budget"})
_SOURCES = ("source.txt", "source.xml")
DESCRIPTION = "an MT system of the evaluation, its name withheld for system combination"


@dataclass(frozen=True)
class CombinationSet:
    """What `build_combination_set` wrote: the set's directory, the key file, the names."""

    directory: Path
    key: Path
    systems: Mapping[str, str]  # sysNN -> the MT system's name in the run
    segments: int
    setid: str  # the combination task's set id, in every XML file of the set


def _problem(where: Path, key: str, message: str, fix: str) -> InputError:
    return InputError([Problem(where, key, message, fix)])


def _candidates(output: Mapping[str, Any]) -> tuple[TargetCandidate, ...]:
    """The n-best list best score first, or the best translation alone when there is none."""
    nbest = output.get("nbest")
    if not nbest:
        return (TargetCandidate(str(output["text"])),)
    # Ranked again (stable) so the order is the scores' even if a check was relaxed.
    return ranked(TargetCandidate(str(c["text"]), float(c["score"])) for c in nbest)


def _entry(seg_place: tuple[str, str], record: Completed | None) -> TargetEntry:
    doc_id, seg_id = seg_place
    output = record.output if record is not None and record.verdict in _ANSWERED else None
    if not output:
        # No translation from this system: an empty segment, no candidates.
        return TargetEntry(doc_id, seg_id, "")
    cands = _candidates(output)
    return TargetEntry(doc_id, seg_id, str(output["text"]), cands[0].score, cands)


# The root element's start tag, and a setid attribute in it (quoted or not).
_ROOT_TAG = re.compile(rb"<(srcset|refset|tgtset|tstset)\b([^>]*)>", re.IGNORECASE)
_SETID = re.compile(rb"""\bsetid\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)


def _with_setid(data: bytes, setid: str) -> bytes | None:
    """The XML file's bytes with the root's setid set to ``setid`` (None: no root found).

    Only the attribute changes: encoding, declaration and every segment stay as written.
    """
    root = _ROOT_TAG.search(data)
    if root is None:
        return None
    value = f'setid="{setid}"'.encode("ascii")
    attrs = root.group(2)
    if _SETID.search(attrs):
        attrs = _SETID.sub(lambda _: value, attrs, count=1)
    else:
        attrs = b" " + value + attrs
    start = root.start(2)
    return data[:start] + attrs + data[root.end(2) :]


def _copy_with_setid(
    path: Path, target: Path, setid: str, role: str, encoding: str | None = None
) -> None:
    """Copy a source or reference file (in ``encoding``; None: UTF-8 or an XML file's
    declaration), an XML one under the combination's set id, its bytes as written."""
    try:
        loaded = load_mt_file(path, "source" if role == "source" else "reference", encoding)
    except FormatError as exc:
        raise InputError([Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]) from exc
    if loaded.kind != "xml":
        # Plain text carries no set id: the combination task's name gives it (export).
        shutil.copyfile(path, target)
        return
    data = _with_setid(path.read_bytes(), setid)
    if data is None:
        raise _problem(path, "setid", "no <srcset>/<refset> root element", "give CWMT XML")
    target.write_bytes(data)
    if (
        load_mt_file(target, loaded.role, encoding).setid != setid
    ):  # pragma: no cover - a regex slip
        raise _problem(path, "setid", "could not set the combination set id", "report a bug")


def _unfinished(
    model: RunModel, task: str, systems: Sequence[str], item_ids: Sequence[str]
) -> list[str]:
    out = []
    for system in systems:
        done = model.state.completed.get((task, system), {})
        count = sum(1 for i in item_ids if i in done)
        summary = model.state.jobs.get((task, system))
        if count < len(item_ids) or summary is None or summary.in_progress:
            out.append(f"{system} ({count} of {len(item_ids)} items)")
    return out


def build_combination_set(
    run_dir: Path,
    task: str,
    out_dir: Path,
    key_path: Path | None = None,
    seed: int | None = None,
    setid: str | None = None,
    encoding: str | None = None,
) -> CombinationSet:
    """Write the combination test set of MT task `task` of a finished run to `out_dir`.

    `key_path` (default ``<out_dir>.key.json``) receives sysNN -> system name;
    `seed` fixes the anonymous order (default: a fresh random one); `setid` is the
    combination task's set id (default: the MT set's with ``_combi``, zh_en_news_combi);
    `encoding` the MT test set's files' (scoring.charsets; default: the task's
    ``encoding``, else UTF-8 or an XML file's declaration). The candidate lists are
    written in UTF-8, which holds every participant's output, and say so in their
    declaration; the source and references are copied as they are.
    """
    from harness.store.run_model import RunModel

    model = RunModel.open(run_dir)
    site = model.site
    if task not in site.config.tasks:
        raise _problem(
            run_dir, "--task", f"no task {task!r}", f"use one of: {', '.join(site.config.tasks)}"
        )
    cfg = site.config.tasks[task]
    if cfg.kind != "mt":
        raise _problem(
            run_dir, "--task", f"task {task!r} is kind {cfg.kind}, not mt", "give an MT task"
        )
    # The MT kind reads its test set in the task's encoding: so does its copy here.
    encoding = encoding or getattr(cfg, "encoding", None)
    systems = [s for t, s in site.jobs() if t == task]
    if not systems:
        raise _problem(run_dir, "--task", f"no system runs task {task!r}", "give another task")
    testset = model.testset(task)
    item_ids = [i.id for i in testset.items]
    unfinished = _unfinished(model, task, systems, item_ids)
    if unfinished:
        raise _problem(
            run_dir,
            "--task",
            f"the MT run is not finished: {', '.join(unfinished)}",
            "finish it first (`onsite run SITE` resumes it), then make the combination set",
        )
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise _problem(out_dir, "-o", "exists and is not empty", "give a new directory")
    key_path = key_path or out_dir.with_name(out_dir.name + ".key.json")
    if key_path.resolve().is_relative_to(out_dir.resolve()):
        # The key says who is who: it must not travel with the set.
        raise _problem(key_path, "--key", "is inside the set", "put the key outside -o DIR")

    root = site.testset_path(task)
    [source_path] = [root / n for n in _SOURCES if (root / n).is_file()]
    try:
        source: MtFile = load_mt_file(source_path, "source", encoding)
    except FormatError as exc:
        raise InputError([Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]) from exc
    lang = str(testset.items[0].reference.lang)
    places = [(s.doc_id, s.seg_id) for s in source.segments]
    srclang, tgtlang = source.srclang or "", source.tgtlang or lang
    combi = setid or combination_task_id(source.setid or task, srclang, tgtlang)
    if not re.fullmatch(r"[a-z]{2}_[a-z]{2}_[a-z]+_[a-z]+", combi):
        raise _problem(
            run_dir,
            "--setid",
            f"{combi!r} is not a CWMT task id",
            "give src_tgt_domain_task in lower case, e.g. zh_en_news_combi",
        )

    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    order = list(systems)
    rng.shuffle(order)
    width = max(2, len(str(len(order))))
    names = {f"sys{n:0{width}d}": system for n, system in enumerate(order, 1)}

    (out_dir / "candidates").mkdir(parents=True, exist_ok=True)
    for path in root.iterdir():
        # The MT test set as the mt kind reads it: source, lang and the references.
        if not path.is_file():
            continue
        if path.name == "lang":
            shutil.copyfile(path, out_dir / path.name)
        elif path.name in _SOURCES:
            _copy_with_setid(path, out_dir / path.name, combi, "source", encoding)
        elif path.name.startswith("ref") and path.suffix in (".txt", ".xml"):
            _copy_with_setid(path, out_dir / path.name, combi, "reference", encoding)
    for anon, system in names.items():
        done = model.state.completed.get((task, system), {})
        pairs = zip(places, item_ids, strict=True)
        entries = [_entry(place, done.get(item_id)) for place, item_id in pairs]
        xml = tgtset_xml(
            entries,
            setid=combi,
            srclang=srclang,
            tgtlang=tgtlang,
            site=anon,
            sysid=anon,
            description=DESCRIPTION,
        )
        (out_dir / "candidates" / f"{anon}.xml").write_text(xml, encoding="utf-8")
    key = {"run": str(run_dir.resolve()), "task": task, "setid": combi, "systems": names}
    key_path.write_text(json.dumps(key, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return CombinationSet(out_dir, key_path, names, len(item_ids), combi)
