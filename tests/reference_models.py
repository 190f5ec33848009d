"""Independent models of the reference tools, for differential tests and the benchmark.

Each model is written from the tool's documented behaviour, step by step
as the tool does it, and shares no code with `scoring` beyond what is named:

* `sighan_score`: the SIGHAN bakeoff ``score`` script's steps on bytes
  (Perl's line reading, ``s/^\\s*//``, the U+3000/Big5-space substitution,
  ``split /\\s+/``, ``chop`` of word-list lines) driving the *real* GNU
  ``diff -y`` binary, and the script's patterns over its output.
* `conlleval_counts`: conlleval.pl's endOfChunk/startOfChunk state machine.
* `mteval_bleu` / `mteval_nist`: mteval-v13a ``bleu_score`` and
  ``nist_score`` from their definitions, over text as mteval's SGML holds
  it (plain text escaped by a standard SGML writer, `sgml_escape`).
* ASR uses `tests.test_scoring_fast_align.sclite_tokenize` and
  `reference_align` (character-at-a-time tokeniser, cell-by-cell table).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from tests.test_scoring_fast_align import reference_align, sclite_tokenize

__all__ = [
    "HAVE_DIFF",
    "ScriptDied",
    "conlleval_counts",
    "mteval_bleu",
    "mteval_nist",
    "mteval_tokens",
    "sclite_counts",
    "sgml_escape",
    "sighan_score",
]


def _have_diff_and_utf8_locale() -> bool:
    # The models render diff -y as in a UTF-8 locale (wide characters take
    # two columns), so the real diff must run in one.
    if shutil.which("diff") is None or shutil.which("locale") is None:
        return False
    names = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    return any(n.lower().replace("-", "") == "c.utf8" for n in names)


HAVE_DIFF = _have_diff_and_utf8_locale()


class ScriptDied(Exception):
    """The modelled tool stops with a Perl error (e.g. division by zero)."""


# --- sclite ------------------------------------------------------------------


def sclite_counts(ref: str, hyp: str, unit: str = "word") -> tuple[int, int, int, int]:
    """(C, S, D, I) as sclite -e utf-8 [-c NOASCII] reports one utterance."""
    al = reference_align(sclite_tokenize(ref, unit, False), sclite_tokenize(hyp, unit, False))
    return al.correct, al.substitutions, al.deletions, al.insertions


# --- SIGHAN score -----------------------------------------------------------

_PERL_WS = b" \t\n\r\x0b\x0c"


def _perl_lines(data: bytes) -> list[bytes]:
    """Lines as Perl's <FH> returns them, newline kept."""
    return [m.group() for m in re.finditer(rb"[^\n]*\n|[^\n]+$", data)]


def _script_words(line: bytes) -> list[bytes]:
    line = line.lstrip(_PERL_WS).rstrip(_PERL_WS)
    line = re.sub(rb"\xe3\x80\x80|\xa1\x40", b" ", line)
    if not line:
        return []
    fields = re.split(rb"[ \t\n\r\x0b\x0c]+", line)
    while fields and fields[-1] == b"":
        fields.pop()  # Perl's split drops trailing empty fields, keeps a leading one
    return fields


def sighan_score(gold: bytes, test: bytes, words: bytes | None = None) -> dict[str, float | int]:
    """The script's totals for file contents `gold`, `test` and a word list.

    Raises ScriptDied where the script dies (a test line without words for
    a gold line with words, or no words at all).
    """
    dictionary: set[bytes] = set()
    for line in _perl_lines(words or b""):
        dictionary.add(line[:-1].lstrip(_PERL_WS).rstrip(_PERL_WS))  # chop: last byte, always
    tot = {k: 0 for k in ("ins", "del", "subst", "true", "test", "rr", "rp", "oov", "iv")}
    tot.update(oov_missed=0, iv_missed=0)
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    with tempfile.TemporaryDirectory() as tmp:
        f1, f2 = Path(tmp, "1"), Path(tmp, "2")
        for g_line, t_line in zip(_perl_lines(gold), _perl_lines(test), strict=False):
            g, t = _script_words(g_line), _script_words(t_line)
            if not g:
                continue
            if not t:
                raise ScriptDied("Illegal division by zero (a test line without words)")
            f1.write_bytes(b"".join(w + b"\n" for w in g))
            f2.write_bytes(b"".join(w + b"\n" for w in t))
            out = subprocess.run(["diff", "-y", str(f1), str(f2)], capture_output=True, env=env)
            rr = rp = 0
            for row in out.stdout.splitlines(keepends=True):
                if re.search(rb"\s\|\s", row):
                    tot["subst"] += 1
                elif re.search(rb"\s>\s", row):
                    tot["ins"] += 1
                elif re.search(rb"\s<\s", row):
                    tot["del"] += 1
                first = re.match(rb"([^\s]+)\s", row)
                if first:
                    known = first.group(1) in dictionary
                    tot["iv" if known else "oov"] += 1
                    if re.match(rb"[^\s]+\s.*\s[|><]\s", row):
                        tot["iv_missed" if known else "oov_missed"] += 1
                        rr += 1
                if re.search(rb"\s[|><]\s.*[^\s]$", row):
                    rp += 1
            tot["true"] += len(g)
            tot["test"] += len(t)
            tot["rr"] += len(g) - rr
            tot["rp"] += len(t) - rp
    if not tot["true"] or not tot["test"]:
        raise ScriptDied("Illegal division by zero (no words)")
    r, p = tot["rr"] / tot["true"], tot["rp"] / tot["test"]
    return {
        **tot,
        "recall": r,
        "precision": p,
        "f": 2 * p * r / (p + r) if p + r else math.nan,
        "oov_rate": tot["oov"] / tot["true"],
    }


# --- conlleval ---------------------------------------------------------------


def _split_tag(tag: str) -> tuple[str, str]:
    m = re.match(r"^([^-]*)-(.*)$", tag)
    prefix, kind = (m.group(1), m.group(2)) if m else (tag, "")
    return prefix, kind if kind not in ("", "0") else ""  # Perl: "0" is false, read as no type


def _end(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    pairs = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    return (prev, tag) in pairs or (prev not in ("O", ".") and prev_type != kind)


def _start(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    pairs = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
    return (prev, tag) in pairs or (tag not in ("O", ".") and prev_type != kind)


def conlleval_counts(lines: Sequence[str]) -> dict[str, object]:
    """conlleval's counters over whitespace-separated lines (tags last two)."""
    correct_chunk = found_correct = found_guessed = correct_tags = tokens = 0
    per_type: dict[str, list[int]] = {}
    in_correct = False
    last_c = last_g = "O"
    last_ct = last_gt = ""
    for line in [*lines, ""]:
        cols = line.split()
        if not cols or cols[0] == "-X-":
            cols = ["-X-", "O", "O"]
        c, ct = _split_tag(cols[-2])
        g, gt = _split_tag(cols[-1])
        end_c, end_g = _end(last_c, c, last_ct, ct), _end(last_g, g, last_gt, gt)
        if in_correct:
            if end_c and end_g and last_gt == last_ct:
                in_correct = False
                correct_chunk += 1
                per_type.setdefault(last_ct, [0, 0, 0])[0] += 1
            elif end_c != end_g or gt != ct:
                in_correct = False
        start_c, start_g = _start(last_c, c, last_ct, ct), _start(last_g, g, last_gt, gt)
        if start_c and start_g and gt == ct:
            in_correct = True
        if start_c:
            found_correct += 1
            per_type.setdefault(ct, [0, 0, 0])[1] += 1
        if start_g:
            found_guessed += 1
            per_type.setdefault(gt, [0, 0, 0])[2] += 1
        if cols[0] != "-X-":
            correct_tags += c == g and gt == ct
            tokens += 1
        last_c, last_g, last_ct, last_gt = c, g, ct, gt
    return {
        "correct": correct_chunk,
        "gold": found_correct,
        "predicted": found_guessed,
        "correct_tags": correct_tags,
        "tokens": tokens,
        "per_type": {k: tuple(v) for k, v in sorted(per_type.items())},
    }


# --- mteval -----------------------------------------------------------------


def sgml_escape(text: str) -> str:
    """What a standard SGML writer puts between <seg> tags for plain `text`."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mteval_tokens(raw: str) -> list[str]:
    """mteval-v13a NormalizeText on raw SGML text, case kept (-c)."""
    t = raw.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        t = t.replace(entity, char)
    t = f" {t} "
    t = re.sub(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 ", t)
    t = re.sub(r"([^0-9])([\.,])", r"\1 \2 ", t)
    t = re.sub(r"([\.,])([^0-9])", r" \1 \2", t)
    t = re.sub(r"([0-9])(-)", r"\1 \2 ", t)
    perl_space = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
    return [w for w in re.split(f"[{perl_space}]+", t) if w]


def mteval_nist(hyps: Sequence[str], refs: Sequence[Sequence[str]], max_n: int = 5) -> float:
    """mteval-v13a NIST of raw SGML texts (refs[k][i]: reference k of segment i)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for ref_set in refs:
        for text in ref_set:
            toks = mteval_tokens(text)
            counts[()] += len(toks)
            for n in range(1, max_n + 1):
                for i in range(len(toks) - n + 1):
                    counts[tuple(toks[i : i + n])] += 1
    info = {g: -math.log2(c / counts[g[:-1]]) for g, c in counts.items() if g}
    matched = [0.0] * max_n
    total = [0] * max_n
    hyp_len = ref_len = 0
    for i, h in enumerate(hyps):
        ht = mteval_tokens(h)
        rts = [mteval_tokens(r[i]) for r in refs]
        hyp_len += len(ht)
        ref_len += sum(len(r) for r in rts)
        for n in range(1, max_n + 1):
            hc = Counter(tuple(ht[k : k + n]) for k in range(len(ht) - n + 1))
            best: Counter[tuple[str, ...]] = Counter()
            for rt in rts:
                rc = Counter(tuple(rt[k : k + n]) for k in range(len(rt) - n + 1))
                for g, c in rc.items():
                    best[g] = max(best[g], c)
            total[n - 1] += sum(hc.values())
            for g, c in hc.items():
                if best[g]:
                    matched[n - 1] += min(c, best[g]) * info[g]
    score = sum(matched[n] / total[n] for n in range(max_n) if total[n])
    ratio = hyp_len / (ref_len / len(refs))
    beta = -math.log(0.5) / math.log(1.5) ** 2
    penalty = math.exp(-beta * math.log(ratio) ** 2) if 0 < ratio < 1 else (1.0 if ratio else 0.0)
    return score * penalty


def mteval_bleu(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """mteval-v13a ``bleu_score`` (smoothed, closest reference length) of raw SGML texts."""
    matched = [0] * 4
    total = [0] * 4
    hyp_len = ref_len = 0
    for i, h in enumerate(hyps):
        ht = mteval_tokens(h)
        rts = [mteval_tokens(r[i]) for r in refs]
        hyp_len += len(ht)
        # closest reference length, the shorter one on a tie
        ref_len += min((abs(len(r) - len(ht)), len(r)) for r in rts)[1]
        for n in range(1, 5):
            hc = Counter(tuple(ht[k : k + n]) for k in range(len(ht) - n + 1))
            best: Counter[tuple[str, ...]] = Counter()
            for rt in rts:
                rc = Counter(tuple(rt[k : k + n]) for k in range(len(rt) - n + 1))
                for g, c in rc.items():
                    best[g] = max(best[g], c)
            total[n - 1] += sum(hc.values())
            matched[n - 1] += sum(min(c, best[g]) for g, c in hc.items())
    if not hyp_len:
        return 0.0  # exp_len_score stays 0
    score = 0.0
    smooth = 1
    for n in range(4):
        if total[n] == 0:
            iscore = 0.0
        elif matched[n] == 0:
            smooth *= 2
            iscore = math.log(1 / (smooth * total[n]))
        else:
            iscore = math.log(matched[n] / total[n])
        score += iscore
    return math.exp(score / 4) * math.exp(min(0.0, 1 - ref_len / hyp_len))
