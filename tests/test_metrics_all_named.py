"""Wherever `--metrics all` is called the CWMT/HTRDP set, it says ICT and Woodpecker are
absent (their definitions and data are not public), in the docs and in the help."""

from __future__ import annotations

import re

from tests.helpers import REPO, onsite


def test_every_mention_of_the_cwmt_htrdp_set_names_what_is_absent() -> None:
    for page in sorted((REPO / "docs").glob("*.md")):
        # A paragraph that names the set must say which metrics it lacks.
        for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            if ("CWMT/HTRDP" in paragraph and "`all`" in paragraph) or "all, the CWMT" in paragraph:
                assert "ICT" in paragraph and "Woodpecker" in paragraph, (page.name, paragraph)


def test_score_mt_help_says_ict_and_woodpecker_are_absent() -> None:
    result = onsite("score", "mt", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "CWMT/HTRDP" in text and "ICT and Woodpecker are absent" in text
