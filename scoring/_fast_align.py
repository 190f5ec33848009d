"""Compiled batch form of the sclite alignment in `scoring.asr_align`.

The dynamic programme of ``asr_align`` (weights C=0, S=4, I=3, D=3, back-trace
from the end taking diagonal, then insertion, then deletion) run by numba over
integer-coded tokens, many utterances per call. Only counts and a compact
string of operations come back; ``asr_align`` turns those into `Alignment`
objects and builds the per-token pairs only when someone reads them.

Why numba: the table has to be filled cell by cell with sclite's weights and
tie-break, which no vectorised numpy form or unit-cost Levenshtein library
(rapidfuzz, python-Levenshtein) can do, while pure Python is about a hundred
times too slow for a million-character corpus. numba is a widely used,
actively maintained PyPI package (with llvmlite) that compiles this loop to
machine code; ``cache=True`` keeps the compiled code next to this file so only
the first run on a machine pays the compile.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np
from numba import njit

__all__ = ["OP_C", "OP_D", "OP_I", "OP_S", "align_coded", "encode"]

# Operation codes in the returned bytes are the ASCII letters, so a slice
# decodes straight to e.g. "CCSDI" when that is handy for debugging.
OP_C = ord("C")
OP_S = ord("S")
OP_D = ord("D")
OP_I = ord("I")


def _offsets(lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Start of each list in the concatenation, plus the total at the end."""
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=off[1:])
    return off


def encode(
    ref_lists: Sequence[Sequence[str]], hyp_lists: Sequence[Sequence[str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Map tokens to int32 codes, equal tokens to equal codes across both sides.

    Returns ``(ref_codes, ref_offsets, hyp_codes, hyp_offsets)``: the codes of
    all utterances concatenated, and where each utterance starts (plus the
    total at the end). Tokens must be non-empty strings, as `tokenize` makes;
    a `str` stands for the sequence of its characters.
    """
    ref_off = _offsets(ref_lists)
    hyp_off = _offsets(hyp_lists)
    n_ref = int(ref_off[-1])
    n_all = n_ref + int(hyp_off[-1])
    codes = _codes_of_single_chars(chain(ref_lists, hyp_lists), n_all)
    if codes is None:
        tokens = list(chain(chain.from_iterable(ref_lists), chain.from_iterable(hyp_lists)))
        # Distinct tokens in first-seen order; dict.fromkeys and map keep the
        # per-token work in C, which matters at millions of tokens.
        ids = {tok: k for k, tok in enumerate(dict.fromkeys(tokens))}
        codes = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int32, count=n_all)
    return codes[:n_ref], ref_off, codes[n_ref:], hyp_off


def _codes_of_single_chars(seqs: Iterable[Sequence[str]], n_tokens: int) -> np.ndarray | None:
    """Code points of all tokens if every token is one character, else None.

    The usual case for character scoring of CJK text: a join and one UTF-32
    encode replace a dictionary look-up per token. Tokens are non-empty, so
    the joined text has one character per token exactly when none is longer.
    """
    joined = "".join(s if isinstance(s, str) else "".join(s) for s in seqs)
    if len(joined) != n_tokens:
        return None
    try:
        raw = joined.encode("utf-32-le")
    except UnicodeEncodeError:  # lone surrogates, e.g. from surrogateescape decoding
        return None
    # Code points are below 2**21, so int32 holds them; astype makes the byte
    # order native for numba on any machine.
    return np.frombuffer(raw, dtype="<i4").astype(np.int32, copy=False)


@njit(cache=True, nogil=True)
def _align_kernel(
    ref: np.ndarray,
    ref_off: np.ndarray,
    hyp: np.ndarray,
    hyp_off: np.ndarray,
    sub_cost: int,
    ins_cost: int,
    del_cost: int,
    counts: np.ndarray,
    ops: np.ndarray,
    ops_len: np.ndarray,
) -> None:
    """Align every utterance; fill counts (C, S, D, I), ops and ops_len.

    Utterance u's operations go to ``ops[ref_off[u] + hyp_off[u]:]`` (room for
    n + m of them), front to back.
    """
    n_utt = ref_off.shape[0] - 1
    max_cells = 1
    for u in range(n_utt):
        cells = (ref_off[u + 1] - ref_off[u] + 1) * (hyp_off[u + 1] - hyp_off[u] + 1)
        max_cells = max(max_cells, cells)
    # One flat table reused by every utterance: costs[i * w + j] is the min
    # cost of aligning ref[:i] with hyp[:j], exactly as in asr_align. int32
    # holds any cost of a real utterance (at most 4 per token) at half the
    # memory of int64.
    costs = np.empty(max_cells, dtype=np.int32)
    for u in range(n_utt):
        r0 = ref_off[u]
        h0 = hyp_off[u]
        n = ref_off[u + 1] - r0
        m = hyp_off[u + 1] - h0
        w = m + 1
        for j in range(w):
            costs[j] = j * ins_cost
        for i in range(1, n + 1):
            row = i * w
            prev = row - w
            r = ref[r0 + i - 1]
            left = i * del_cost
            costs[row] = left
            for j in range(1, w):
                diag = costs[prev + j - 1] + (0 if r == hyp[h0 + j - 1] else sub_cost)
                up = costs[prev + j] + del_cost
                ins = left + ins_cost
                left = min(diag, up, ins)
                costs[row + j] = left

        # Back-trace from (n, m): diagonal if it reaches the cell's cost, else
        # insertion, else deletion -- the move sclite's stored pointer makes.
        start = r0 + h0
        k = start
        c = s = d = n_ins = 0
        i = n
        j = m
        while i > 0 or j > 0:
            here = costs[i * w + j]
            if i > 0 and j > 0:
                same = ref[r0 + i - 1] == hyp[h0 + j - 1]
                step = 0 if same else sub_cost
                if here == costs[(i - 1) * w + j - 1] + step:
                    if same:
                        ops[k] = OP_C
                        c += 1
                    else:
                        ops[k] = OP_S
                        s += 1
                    k += 1
                    i -= 1
                    j -= 1
                    continue
            if j > 0 and here == costs[i * w + j - 1] + ins_cost:
                ops[k] = OP_I
                n_ins += 1
                j -= 1
            else:
                ops[k] = OP_D
                d += 1
                i -= 1
            k += 1
        # The trace ran end to start; store the operations front to back.
        ops[start:k] = ops[start:k][::-1].copy()
        ops_len[u] = k - start
        counts[u, 0] = c
        counts[u, 1] = s
        counts[u, 2] = d
        counts[u, 3] = n_ins


def align_coded(
    ref: np.ndarray,
    ref_off: np.ndarray,
    hyp: np.ndarray,
    hyp_off: np.ndarray,
    sub_cost: int,
    ins_cost: int,
    del_cost: int,
) -> tuple[list[list[int]], bytes, list[int], list[int]]:
    """Align every utterance of `encode`'s output.

    Returns per-utterance ``[C, S, D, I]`` counts, all operations as one bytes
    object of ``OP_*`` codes, and each utterance's start and length in it.
    """
    n_utt = ref_off.shape[0] - 1
    counts = np.zeros((n_utt, 4), dtype=np.int64)
    ops = np.zeros(int(ref_off[-1] + hyp_off[-1]), dtype=np.uint8)
    ops_len = np.zeros(n_utt, dtype=np.int64)
    _align_kernel(ref, ref_off, hyp, hyp_off, sub_cost, ins_cost, del_cost, counts, ops, ops_len)
    starts = (ref_off[:-1] + hyp_off[:-1]).tolist()
    # tolist(): plain Python ints for the Alignment fields (JSON, equality).
    return counts.tolist(), ops.tobytes(), starts, ops_len.tolist()
