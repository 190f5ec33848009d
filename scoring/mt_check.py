"""`onsite score mt-check`: is a CWMT result file fit to be submitted?

The CWMT 2008 guidelines (Appendix B and C) ask of a submitted result:

* it mirrors the source file: the ``<tgtset>`` carries the ``<srcset>``'s
  setid, srclang and tgtlang, and every document and segment id of the source,
  no more (checked by `scoring.cwmt_xml.check_mirror`);
* its name follows ``task-site-primary|contrast-system.xml``, and the parts
  agree with the content: the task with ``setid``, the site with the
  ``<system site>`` and the system with the ``<system sysid>`` (compared
  ignoring case, since the guidelines spell the site ``ICT`` in prose and
  ``ict`` in names);
* per task and site: one primary result, at most two contrast ones;
* a ``<system>`` element with ``site`` and ``sysid`` and a description that
  covers the five items of Appendix C: hardware and software environment,
  execution time, technology outline, training data and external technology.
  Each item is recognised by words that name it, in English or Chinese
  (`DESCRIPTION_ITEMS`); an item none of whose words occur is a problem;
* ``score`` attributes within 0..1 and ``<cand>`` sorted by score, high to
  low (`scoring.cwmt_xml.validate_target`).

Each problem is reported once, in file order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cwmt_xml import (
    Mismatch,
    MtFile,
    ResultName,
    check_mirror,
    check_submissions,
    load_mt_file,
    parse_result_name,
    validate_target,
)
from .errors import FormatError

__all__ = [
    "DESCRIPTION_ITEMS",
    "MtCheckReport",
    "check_description",
    "check_results",
    "name_problems",
]

# Appendix C's five items, each with the words (lower case) that show it is covered.
DESCRIPTION_ITEMS: dict[str, tuple[str, ...]] = {
    "hardware and software environment (operating system, CPU, memory)": (
        "hardware",
        "software",
        "operating system",
        "cpu",
        "memory",
        "ram",
        "linux",
        "windows",
        "硬件",
        "软件",
        "操作系统",
        "内存",
        "处理器",
    ),
    "execution time (from accepting the input to generating the output)": (
        "execution time",
        "running time",
        "run time",
        "runtime",
        "time:",
        "seconds",
        "minutes",
        "hours",
        "运行时间",
        "执行时间",
        "耗时",
    ),
    "technology outline (main technology and parameters)": (
        "technology",
        "technique",
        "method",
        "approach",
        "model",
        "algorithm",
        "技术",
        "方法",
        "模型",
        "算法",
    ),
    "training data (training and development data used)": (
        "training data",
        "training corpus",
        "trained on",
        "development data",
        "corpus",
        "corpora",
        "训练数据",
        "训练语料",
        "开发集",
        "语料",
    ),
    "external technology (open source, free, shareware or commercial software used)": (
        "external",
        "open source",
        "open-source",
        "third-party",
        "third party",
        "free software",
        "shareware",
        "commercial",
        "外部",
        "开源",
        "第三方",
        "商业",
    ),
}


def check_description(target: MtFile) -> list[Mismatch]:
    """Appendix C items the ``<system>`` description does not mention (one problem each)."""
    if target.kind != "xml" or target.system is None or not target.system.text:
        return []  # a missing or empty <system> is validate_target's problem
    text = " ".join(target.system.text.lower().split())
    return [
        Mismatch(
            str(target.path),
            target.system.line,
            f"system description does not say the {item}",
        )
        for item, words in DESCRIPTION_ITEMS.items()
        if not any(_mentions(text, w) for w in words)
    ]


def _mentions(text: str, word: str) -> bool:
    # Latin words count whole ("ram" is not in "parameters"); Chinese has no spaces.
    if word.isascii():
        return re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", text) is not None
    return word in text


def _name_against_content(path: Path, name: ResultName, target: MtFile) -> list[Mismatch]:
    out: list[Mismatch] = []
    p = str(path)
    if target.kind != "xml":
        return out
    if target.setid is not None and target.setid.lower() != name.task.lower():
        out.append(
            Mismatch(
                p,
                target.root_line,
                f"file name says task {name.task!r} but setid is {target.setid!r}",
            )
        )
    system = target.system
    if system is None:
        return out
    if system.site and system.site.lower() != name.site.lower():
        out.append(
            Mismatch(
                p,
                system.line,
                f"file name says site {name.site!r} but <system site> is {system.site!r}",
            )
        )
    if system.sysid and system.sysid.lower() != name.system.lower():
        out.append(
            Mismatch(
                p,
                system.line,
                f"file name says system {name.system!r} but <system sysid> is {system.sysid!r}",
            )
        )
    return out


@dataclass(frozen=True)
class MtCheckReport:
    """What `check_results` found: the files, their system elements, the problems."""

    files: tuple[dict[str, Any], ...]
    problems: tuple[Mismatch, ...]

    @property
    def ok(self) -> bool:
        """True when there is nothing to fix."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report; `ok` is false when any problem was found."""
        return {
            "files": list(self.files),
            "problems": [p.to_dict() for p in self.problems],
            "ok": self.ok,
        }


def check_results(
    source_path: str | Path, paths: Sequence[str | Path], encoding: str | None = None
) -> MtCheckReport:
    """Check result files against their source and the CWMT submission rules.

    ``encoding`` is the files' (scoring.charsets; None: UTF-8, or what an XML file's
    declaration names).

    A source file that cannot be read raises `FormatError` (nothing can be
    checked); a result file that cannot be read is one problem and the
    other files are still checked.
    """
    source = load_mt_file(source_path, "source", encoding)
    problems: list[Mismatch] = []
    files: list[dict[str, Any]] = []
    named: list[str | Path] = []
    for path in paths:
        entry: dict[str, Any] = {"path": str(path), "site": None, "sysid": None}
        files.append(entry)
        try:
            name: ResultName | None = parse_result_name(path)
            named.append(path)
        except FormatError as exc:
            problems.append(Mismatch(str(path), None, f"{exc.problem}; {exc.fix}"))
            name = None
        try:
            target = load_mt_file(path, "target", encoding)
        except FormatError as exc:
            problems.append(Mismatch(exc.path, exc.line, f"{exc.problem}; {exc.fix}"))
            continue
        if target.system is not None:
            entry["site"] = target.system.site
            entry["sysid"] = target.system.sysid
        problems += check_mirror(source, target) + validate_target(target)
        problems += check_description(target)
        if name is not None:
            problems += _name_against_content(Path(path), name, target)
    # Only files whose names parse are grouped: a bad name was reported above.
    problems += check_submissions(named)
    return MtCheckReport(tuple(files), tuple(dict.fromkeys(problems)))


def name_problems(path: str | Path, target: MtFile) -> list[Mismatch]:
    """The naming rule as `check_results` checks one file: the name's form (FormatError
    when it breaks the rule) and its parts against the content (task and ``setid``, site
    and system against the ``<system>`` element). For a reader that takes one file."""
    return _name_against_content(Path(path), parse_result_name(path), target)
