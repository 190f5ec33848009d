"""Write the cases of tests/test_reference_scripts_cws_ner.py and run the real scripts on them.

Usage: make_fixtures.py SIGHAN_SCORE CONLLEVAL_PL (see README.md for where they come
from). Writes ``cases.jsonl`` beside this file: one JSON object per case with its input
files, the exact command run, the script's exit status, standard output and standard
error. Nothing here is onsite's code: the tests compare onsite with what this recorded.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BOM = "\ufeff"


def cws_cases() -> list[dict[str, object]]:
    """SIGHAN `score`: files with a UTF-8 BOM on line 1 (gold, test, word list)."""
    gold = "我们 在 北京\n他 来 了\n今天 天气 很 好\n"
    test = "我们 在 北京\n他 来了\n今天 天气 很好\n"
    words = "我们\n在\n北京\n他\n今天\n"
    return [
        {"name": "gold-bom", "words": words, "gold": BOM + gold, "test": test},
        {"name": "test-bom", "words": words, "gold": gold, "test": BOM + test},
        {"name": "both-bom", "words": words, "gold": BOM + gold, "test": BOM + test},
        {"name": "words-bom", "words": BOM + words, "gold": gold, "test": test},
        {"name": "bom-then-space", "words": words, "gold": BOM + " " + gold, "test": test},
        {"name": "all-bom", "words": BOM + words, "gold": BOM + gold, "test": BOM + test},
    ]


def _tag(rng: random.Random, types: list[str], bare: bool) -> str:
    kind = rng.choice(types)
    tags = ["O", "O", f"B-{kind}", f"I-{kind}", f"E-{kind}", f"S-{kind}"]
    return rng.choice([*tags, kind] if bare else tags)


def _random_conll(rng: random.Random, bare: bool) -> str:
    types = rng.sample(["PER", "LOC", "ORG"], rng.choice([2, 3]))
    lines = []
    for _ in range(rng.randint(1, 4)):
        for k in range(rng.randint(1, 8)):
            lines.append(f"w{k} {_tag(rng, types, bare)} {_tag(rng, types, bare)}")
        lines.append("")
    return "\n".join(lines) + "\n"


IOBES = (
    "张 S-PER S-PER\n李 S-PER S-PER\n去 O O\n北 B-LOC B-LOC\n京 E-LOC E-LOC\n"
    "上 B-LOC B-LOC\n海 E-LOC I-LOC\n\n王 S-PER B-PER\n五 S-PER E-PER\n"
)
IOB2 = "张 B-PER B-PER\n三 I-PER I-PER\n去 O O\n北 B-LOC B-LOC\n京 I-LOC O\n\n王 B-PER B-LOC\n"
IO = "张 PER PER\n三 PER PER\n去 O O\n北京 LOC LOC\n上海 LOC O\n\n王五 PER LOC\n"


def ner_cases() -> list[dict[str, object]]:
    """conlleval.pl: IOBES files, random tag sequences, the IO scheme, tab-separated columns."""
    rng = random.Random(2004)
    cases: list[dict[str, object]] = [
        {"name": "iobes", "conll": IOBES, "args": ["-d", " "]},
        {"name": "io", "conll": IO, "args": ["-d", " "]},
        {
            "name": "io-as-iob1",
            "conll": "".join(
                " ".join(
                    c if i == 0 or c == "O" else f"I-{c}" for i, c in enumerate(line.split(" "))
                )
                + "\n"
                for line in IO.splitlines()
            ),
            "args": ["-d", " "],
        },
        {"name": "tabs", "conll": IOB2.replace(" ", "\t"), "args": ["-d", "\t"]},
        {"name": "tabs-iobes", "conll": IOBES.replace(" ", "\t"), "args": ["-d", "\t"]},
        # The 2004-01-26 release's default delimiter is a single space (see README.md).
        {"name": "tabs-without-d", "conll": IOB2.replace(" ", "\t"), "args": ["-d", " "]},
    ]
    for k in range(100):
        # Half with bare tags (conlleval.pl's chunks of type ""), half IOBES only.
        conll = _random_conll(rng, bare=k % 2 == 0)
        cases.append({"name": f"random-{k}", "conll": conll, "args": ["-d", " "]})
    return cases


def main(score: str, conlleval: str) -> None:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cws_cases():
            paths = []
            for what in ("words", "gold", "test"):
                path = Path(tmp) / f"{what}.txt"
                path.write_text(str(case[what]), encoding="utf-8")
                paths.append(str(path))
            command = ["perl", score, *paths]
            done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
            out.append(
                {
                    "tool": "sighan",
                    **case,
                    "command": ["perl", "score", "words.txt", "gold.txt", "test.txt"],
                    "returncode": done.returncode,
                    "stdout": done.stdout,
                    "stderr": done.stderr,
                }
            )
        for case in ner_cases():
            command = ["perl", conlleval, *map(str, case["args"])]
            done = subprocess.run(command, input=str(case["conll"]), capture_output=True, text=True)
            out.append(
                {
                    "tool": "conlleval",
                    **case,
                    "command": ["perl", "conlleval.pl", *case["args"]],
                    "returncode": done.returncode,
                    "stdout": done.stdout,
                    "stderr": done.stderr,
                }
            )
    with open(HERE / "cases.jsonl", "w", encoding="utf-8") as fh:
        for row in out:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
