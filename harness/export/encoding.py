"""The bytes `onsite export` writes: a field file's text in the encoding asked for.

The encoding is `--encoding`'s, else the task's ``encoding`` (the site file: the test
set's encoding, so references and outputs go back to the organizers as their set came),
else UTF-8. A CWMT XML file's declaration names it (scoring.cwmt_write.xml_bytes).
"""

from __future__ import annotations

import os

from harness.errors import InputError, Problem
from harness.kinds.base import JobData

__all__ = ["export_bytes", "export_encoding"]


def export_encoding(job: JobData, encoding: str | None) -> str | None:
    """`--encoding` if given, else the task's ``encoding`` key (None: UTF-8)."""
    return encoding if encoding is not None else getattr(job.config, "encoding", None)


def export_bytes(
    job: JobData, text: str, encoding: str | None, where: str | os.PathLike[str]
) -> bytes:
    """``text`` (an `export_job` result) encoded for the file ``where``.

    InputError naming ``--encoding`` when the text holds a character the encoding lacks.
    """
    from scoring.charsets import encode_text
    from scoring.cwmt_write import xml_bytes

    chosen = export_encoding(job, encoding)
    try:
        if text.startswith("<?xml"):
            return xml_bytes(text, chosen, where)
        return encode_text(text, chosen, where)
    except ValueError as exc:
        raise InputError([Problem(job.run_dir, "--encoding", str(exc), "")]) from None
