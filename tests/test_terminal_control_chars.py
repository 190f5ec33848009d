"""What a participant writes reaches the operator's terminal without control characters.

tests/systems/escape_system.py puts ESC sequences (screen clear, colour, window
title), CR and BEL in its ready name and version, its stderr, its error messages
and its crash. `onsite run` (plain lines), the progress display (a terminal) and
`onsite devices`-style tables must show none of them.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.console import Console

from harness.cli.render import ProgressListener
from harness.cli.terminal import printable, table
from harness.store.journal import read_events
from tests.helpers import REPO, onsite, write_site

ESCAPE_SYSTEM = [sys.executable, str(REPO / "tests" / "systems" / "escape_system.py")]
# What the system writes that a terminal would act on.
PAYLOAD = ("\x1b[2J", "\x1b[31m", "\x1b]0;", "pwned", "\rCR", "\x07")


def test_printable_drops_escapes_and_controls() -> None:
    assert printable("evil\x1b[2J\x1b[31mRED\x1b[0m\rCR\x1b]0;pwned\x07\x07") == "evilRED CR "
    assert printable("a\x1b]8;;http://x\x1b\\link\x1bc") == "alink"  # hyperlink, reset
    assert printable("c1 \x9b31m csi") == "c1  csi"
    assert printable("line\nbreak\ttab\u2028sep") == "line break tab sep"
    assert printable("rtl \u202eevil\u202c") == "rtl evil"
    assert printable("中文 café ok") == "中文 café ok"


def test_table_cells_are_neither_markup_nor_controls() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=120)
    console.print(table("t", ("device", "detail"), [("[bold]x[/]", "a\x1b]0;pwned\x07b\r")]))
    text = out.getvalue()
    assert "[bold]x[/]" in text  # shown as written, not taken for markup
    assert "pwned" not in text and "\r" not in text


def _site(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    (root / "docs").mkdir(parents=True)
    docs = {"a": "first document", "b": "second document", "z": "CRASH now"}
    for doc, text in docs.items():
        (root / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    refs = "".join(json.dumps({"id": d, "text": "a summary"}) + "\n" for d in docs)
    (root / "ref1.jsonl").write_text(refs, encoding="utf-8")
    (root / "lang").write_text("en\n", encoding="utf-8")
    return write_site(
        tmp_path / "site.toml",
        root,
        {"evil": {"command": ESCAPE_SYSTEM}},
        task="summ",
        task_keys={"kind": "summarization", "length_limit": 20},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )


def test_a_run_shows_no_participant_control_characters(tmp_path: Path) -> None:
    site = _site(tmp_path)
    run = onsite("run", str(site), "--runs", str(tmp_path / "runs"))
    shown = run.stdout + run.stderr
    assert "evil" in shown and "cannot" in shown and "RED" in shown, shown
    for bad in PAYLOAD:
        assert bad not in shown, (bad, shown)
    assert "\x1b" not in shown  # plain output: no escape at all
    # The same events on a terminal (the progress bars, rich's own escapes allowed).
    [journal] = (tmp_path / "runs").rglob("journal*.jsonl")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=160)
    with ProgressListener(console, verbose_items=True) as listener:
        for event in read_events(journal):
            listener(event)  # type: ignore[arg-type]
    fancy = out.getvalue()
    assert "RED" in fancy and "cannot" in fancy
    for bad in PAYLOAD:
        assert bad not in fancy, (bad, fancy)
