"""Write the ROUGE-1.5.5 fixtures of tests/test_rouge_155.py (README.md says how to run it).

Writes hyp.jsonl and ref.jsonl (onsite's input: the cases), turns them into
ROUGE-1.5.5's SPL files (one sentence per line, a line per "\\n" of the text)
and its configuration XML, runs ROUGE-1.5.5 once per length limit, and keeps
its whole output as rouge-<name>.out. Imports nothing of onsite's: the
expected figures come from the Perl script alone.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
# name -> the length-limit options given to ROUGE-1.5.5 (none, -l 12, -l 0).
RUNS = {"nolimit": [], "l12": ["-l", "12"], "l0": ["-l", "0"]}
OPTIONS = ["-n", "2", "-a", "-d", "-c", "95", "-r", "1000", "-f", "A", "-p", "0.5", "-t", "0"]

# Hand-made cases: what ROUGE-1.5.5 does with hyphens, U+2028, "\r", tabs,
# leading blanks, empty lines, non-ASCII letters, "$" and several references.
HAND: list[tuple[str, str, list[str]]] = [
    ("d01", "a well-known fact", ["a well known fact"]),
    ("d02", "c d\u2028a b", ["a b c d"]),
    ("d03", "The e-mail -- sent at 3.5 p.m. -- cost $20!", ["the email cost 20 dollars"]),
    ("d04", "  leading blanks count\nthen\ttabs\r\nand CR", ["leading blanks then tabs and cr"]),
    ("d05", "first line\n\n\nafter empty lines", ["after empty lines\nfirst line"]),
    ("d06", "Café ÉTÉ naïve résumé", ["caf t na ve r sum"]),
    ("d07", "the cat sat on the mat", ["the cat was on the mat", "a cat sat on a mat"]),
    ("d08", "...", ["nothing here matches"]),
    ("d09", "well - known - - x", ["well known x"]),
    ("d10", "one two three four five six seven eight nine ten eleven twelve thirteen",
     ["one two three\nfour five six seven eight nine ten eleven twelve thirteen fourteen"]),
]  # fmt: skip

WORDS = (
    "the a of council budget approved state-of-the-art well-known e-mail year 2005 "
    "Minister said on Tuesday that plan rejected long-term cost $5 million U.S. "
    "-- ( ) , . ; : ' \" reform vote 42 x-ray it's re-elected north-east party"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))


def _text(rng: random.Random) -> str:
    return "\n".join(_sentence(rng) for _ in range(rng.randint(1, 3)))


def cases() -> list[tuple[str, str, list[str]]]:
    """The hand-made cases and 30 random ones (seed 155)."""
    rng = random.Random(155)
    random_cases = [
        (f"r{i:02d}", _text(rng), [_text(rng) for _ in range(rng.randint(1, 2))])
        for i in range(1, 31)
    ]
    return HAND + random_cases


def _spl(path: Path, text: str) -> None:
    # SPL: one sentence per line; ROUGE reads the file with Perl's <>, a line per "\n".
    path.write_bytes((text + "\n").encode("utf-8"))


def _config(root: Path, rows: list[tuple[str, str, list[str]]]) -> Path:
    evals = []
    for doc, summary, refs in rows:
        _spl(root / "peers" / f"{doc}.txt", summary)
        models = []
        for k, ref in enumerate(refs):
            name = f"{doc}.{chr(ord('A') + k)}.txt"
            _spl(root / "models" / name, ref)
            models.append(f'<M ID="{chr(ord("A") + k)}">{escape(name)}</M>')
        evals.append(
            f'<EVAL ID="{doc}">\n<PEER-ROOT>{root / "peers"}</PEER-ROOT>\n'
            f'<MODEL-ROOT>{root / "models"}</MODEL-ROOT>\n<INPUT-FORMAT TYPE="SPL">'
            f'</INPUT-FORMAT>\n<PEERS><P ID="onsite">{doc}.txt</P></PEERS>\n'
            f"<MODELS>{''.join(models)}</MODELS>\n</EVAL>"
        )
    config = root / "config.xml"
    config.write_text('<ROUGE-EVAL version="1.0">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n")
    return config


def main(rouge_home: Path) -> None:
    """Write the inputs and ROUGE-1.5.5's output for each length limit."""
    rows = cases()
    with (HERE / "hyp.jsonl").open("w", encoding="utf-8") as f:
        for doc, summary, _ in rows:
            f.write(json.dumps({"id": doc, "text": summary}, ensure_ascii=False) + "\n")
    with (HERE / "ref.jsonl").open("w", encoding="utf-8") as f:
        for doc, _, refs in rows:
            for ref in refs:
                f.write(json.dumps({"id": doc, "text": ref}, ensure_ascii=False) + "\n")
    work = Path(tempfile.mkdtemp(prefix="rouge155-"))
    try:
        (work / "peers").mkdir()
        (work / "models").mkdir()
        config = _config(work, rows)
        for name, limit in RUNS.items():
            command = [
                "perl", str(rouge_home / "ROUGE-1.5.5.pl"), "-e", str(rouge_home / "data"),
                *OPTIONS, *limit, str(config),
            ]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            (HERE / f"rouge-{name}.out").write_text(out, encoding="utf-8")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
