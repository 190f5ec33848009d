"""The ``--encoding`` of an `onsite score` family that also reads the judging panel."""

from __future__ import annotations

import argparse


def hyp_encoding(args: argparse.Namespace) -> str | None:
    """The encoding named for the family's --hyp files (None: UTF-8).

    With --run the family reads the panel's records, which onsite wrote itself in
    UTF-8: an encoding named there is a ValueError saying so, as `onsite score --run`
    says for a run's outputs.
    """
    encoding: str | None = getattr(args, "encoding", None)
    if encoding is not None and getattr(args, "run", None) is not None:
        raise ValueError(
            "--encoding goes with --hyp files; the judging panel's records (--run) are read "
            "as onsite wrote them: leave --encoding out"
        )
    return encoding
