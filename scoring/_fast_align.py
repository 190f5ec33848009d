"""Batched form of the sclite alignment in `scoring.asr_align`, in numpy.

The dynamic programme of ``asr_align`` (weights C=0, S=4, I=3, D=3, back-trace
from the end taking diagonal, then insertion, then deletion) over
integer-coded tokens, many utterances per numpy operation. Only counts and a
compact string of operations come back; ``asr_align`` turns those into
`Alignment` objects and builds the per-token pairs only when someone reads
them.

How the table is filled without a per-cell loop: utterances of similar length
are stacked into one ``(rows, utterances, columns)`` table, and each row is
computed for all of them at once. Within a row, cell ``j`` is the minimum of
its diagonal and upper candidates (known from the row above) and of the
cell to its left plus the insertion weight; unrolled, that is
``min over k <= j of (candidate[k] + (j - k) * ins)``, a running minimum of
``candidate - j * ins``, which ``np.minimum.accumulate`` computes. The
back-trace then walks every utterance of the stack one step per iteration.
Padding cells (beyond an utterance's own length) are filled but never read:
no cell depends on a cell below or to its right.

Why not numba, as before: loading numba and its cached machine code costs
about 0.9 s of CPU in each new process, more than the whole alignment of a
million characters costs here, and a command-line scorer pays it every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

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
    # order native on any machine.
    return np.frombuffer(raw, dtype="<i4").astype(np.int32, copy=False)


# Table cells per stack of utterances: large enough that each numpy call
# works on long vectors (the per-call cost stays small), small enough that the
# table (2 bytes a cell for all but very long utterances) stays a few MB.
_STACK_CELLS = 1 << 22


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
    n = np.diff(ref_off)
    m = np.diff(hyp_off)
    counts = np.zeros((n_utt, 4), dtype=np.int64)
    starts = np.zeros(n_utt, dtype=np.int64)
    lengths = np.zeros(n_utt, dtype=np.int64)
    pieces: list[bytes] = []
    done = 0
    # Stacks of similar size waste little on padding: order by the longer side.
    order = np.argsort(np.maximum(n, m), kind="stable")
    longest = np.maximum(n, m)[order]
    # One sentinel after each side's codes: padding reads it, and the two
    # sentinels differ, so padding never looks like a match.
    ref_x = np.append(ref.astype(np.int32, copy=False), np.int32(-1))
    hyp_x = np.append(hyp.astype(np.int32, copy=False), np.int32(-2))
    first = 0
    while first < n_utt:
        side = int(longest[min(first + _STACK_CELLS // (int(longest[first]) + 1) ** 2, n_utt) - 1])
        last = min(n_utt, first + max(1, _STACK_CELLS // (side + 1) ** 2))
        idx = order[first:last]
        ops, op_counts = _align_stack(
            _padded(ref_x, ref_off[idx], n[idx]),
            n[idx],
            _padded(hyp_x, hyp_off[idx], m[idx]),
            m[idx],
            sub_cost,
            ins_cost,
            del_cost,
        )
        kept = ops != 0
        row_len = kept.sum(axis=1)
        # Each row holds its operations right-aligned, front to back, so the
        # kept cells in row order are every utterance's operations in turn.
        pieces.append(ops[kept].tobytes())
        lengths[idx] = row_len
        starts[idx] = done + np.cumsum(row_len) - row_len
        counts[idx] = op_counts
        done += int(row_len.sum())
        first = last
    # tolist(): plain Python ints for the Alignment fields (JSON, equality).
    return counts.tolist(), b"".join(pieces), starts.tolist(), lengths.tolist()


def _padded(codes: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(1 + longest, utterances)`` codes: each column one utterance after a sentinel.

    Token ``k`` (from 1) of an utterance is in row ``k``; row 0 and the rows
    past the utterance's end hold the sentinel, the last of `codes`.
    """
    width = int(lengths.max()) if lengths.size else 0
    rows = np.arange(width + 1, dtype=np.int64)[:, None]
    inside = (rows >= 1) & (rows <= lengths[None, :])
    pos = np.where(inside, offsets[None, :] + rows - 1, codes.shape[0] - 1)
    return codes[pos]


def _cost_dtype(rows: int, cols: int, weight: int) -> type[np.signedinteger]:
    """The narrowest integer type that holds every shifted cost of such a table.

    A shifted cost lies between ``-cols * weight`` and ``(rows + cols) *
    weight``; int16 halves the memory traffic of the table whenever it holds that.
    """
    if (rows + cols + 1) * weight < np.iinfo(np.int16).max:
        return np.int16
    return np.int32


def _align_stack(
    ref: np.ndarray,
    n: np.ndarray,
    hyp: np.ndarray,
    m: np.ndarray,
    sub_cost: int,
    ins_cost: int,
    del_cost: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Align a stack of `_padded` utterances (see the module docstring).

    Returns ``(ops, counts)``: per utterance a row of operation codes,
    right-aligned and front to back, zero before them; and its
    ``[C, S, D, I]`` counts.

    The table is kept shifted: ``shifted[i, j] = cost[i, j] - j * ins_cost``,
    so that "the cell to the left plus an insertion" becomes "the cell to the
    left" and a row is a plain running minimum. The utterance axis is the
    last one, so every operation runs along long contiguous vectors.
    """
    rows, b = ref.shape[0] - 1, ref.shape[1]
    cols = hyp.shape[0] - 1
    dtype = _cost_dtype(rows, cols, max(sub_cost, ins_cost, del_cost))
    # Diagonal step in shifted terms: the weight, less the insertion the
    # column shift adds.
    match_step, sub_step = dtype(-ins_cost), dtype(sub_cost - ins_cost)
    table = np.zeros((rows + 1, cols + 1, b), dtype=dtype)  # row 0: j * ins, shifted to 0
    cand = np.empty((cols + 1, b), dtype=dtype)
    same = np.empty((cols, b), dtype=bool)
    up = np.empty((cols, b), dtype=dtype)
    hyp_tokens = hyp[1:]
    # The running minimum: numpy's accumulate along the first axis is slow
    # for wide stacks, where one call per column over the utterances is fast;
    # for a few long utterances the per-call cost wins, and accumulate does.
    by_column = b >= 64
    for i in range(1, rows + 1):
        above = table[i - 1]
        diag = cand[1:]
        np.equal(ref[i], hyp_tokens, out=same)
        np.multiply(same, dtype(match_step - sub_step), out=diag, casting="unsafe")
        diag += above[:-1]
        diag += sub_step
        np.add(above[1:], dtype(del_cost), out=up)
        np.minimum(diag, up, out=diag)
        cand[0] = i * del_cost
        row = table[i]
        if by_column:
            row[0] = cand[0]
            for j in range(1, cols + 1):
                np.minimum(row[j - 1], cand[j], out=row[j])
        else:
            np.minimum.accumulate(cand, axis=0, out=row)

    if not by_column:
        # A few long utterances: numpy's per-call cost would dominate a
        # stepwise trace, plain Python indexing does not.
        ops = _trace_each(table, ref, hyp, n, m, int(match_step), int(sub_step))
    else:
        ops = _trace_stack(table, ref, hyp, n, m, match_step, sub_step)
    counts = np.stack([(ops == code).sum(axis=0) for code in (OP_C, OP_S, OP_D, OP_I)], axis=1)
    return ops.T, counts


def _trace_stack(
    table: np.ndarray,
    ref: np.ndarray,
    hyp: np.ndarray,
    n: np.ndarray,
    m: np.ndarray,
    match_step: np.signedinteger,
    sub_step: np.signedinteger,
) -> np.ndarray:
    """Back-trace of a wide stack: ``(rows + cols, utterances)`` operation codes.

    Every utterance one step per pass, from (n, m) to (0, 0), on flat
    indices: `cell` into the table, `ri` and `hj` into the codes. Each
    utterance's operations end up at the bottom of its column, front to back.
    """
    rows, cols, b = table.shape[0] - 1, table.shape[1] - 1, table.shape[2]
    width = rows + cols
    ops = np.zeros((width, b), dtype=np.uint8)
    flat = table.reshape(-1)
    ref_flat = ref.reshape(-1)
    hyp_flat = hyp.reshape(-1)
    row_stride = (cols + 1) * b
    utt = np.arange(b, dtype=np.int64)
    ri = n.astype(np.int64) * b + utt
    hj = m.astype(np.int64) * b + utt
    cell = n.astype(np.int64) * row_stride + m.astype(np.int64) * b + utt
    # Operation per (diagonal, same, insertion, deletion) outcome, see `kind`.
    op_of = np.array([0, OP_S, OP_C, OP_I, OP_D], dtype=np.uint8)
    step = width - 1
    while True:
        has_i = ri >= b
        has_j = hj >= b
        live = has_i | has_j
        if not live.any():
            break
        here = flat[cell]
        # Row 0 holds distinct sentinels: never the same at a margin. At a
        # margin a neighbour's index can fall outside the table; "clip" reads
        # some cell instead, and the masks below ignore what it read.
        equal = ref_flat[ri] == hyp_flat[hj]
        up_left = flat.take(cell - (row_stride + b), mode="clip")
        diag = has_i & has_j & (here == up_left + np.where(equal, match_step, sub_step))
        ins = ~diag & has_j & (here == flat.take(cell - b, mode="clip"))
        dele = live & ~diag & ~ins
        kind = diag * (1 + equal) + 3 * ins + 4 * dele
        ops[step] = op_of[kind]
        back_i = diag | dele
        back_j = diag | ins
        ri -= back_i * b
        hj -= back_j * b
        cell -= back_i * row_stride + back_j * b
        step -= 1
    return ops


def _trace_each(
    table: np.ndarray,
    ref: np.ndarray,
    hyp: np.ndarray,
    n: np.ndarray,
    m: np.ndarray,
    match_step: int,
    sub_step: int,
) -> np.ndarray:
    """`_trace_stack`'s result, tracing one utterance at a time with Python ints."""
    rows, cols, b = table.shape[0] - 1, table.shape[1] - 1, table.shape[2]
    ops = np.zeros((rows + cols, b), dtype=np.uint8)
    cells = table.reshape(-1).data  # a memoryview: reads Python ints, no numpy scalar per read
    row_stride = (cols + 1) * b
    for u in range(b):
        r = ref[:, u].tolist()
        h = hyp[:, u].tolist()
        i, j = int(n[u]), int(m[u])
        trace = bytearray()
        while i > 0 or j > 0:
            cell = i * row_stride + j * b + u
            here = cells[cell]
            if i > 0 and j > 0:
                same = r[i] == h[j]
                if here == cells[cell - row_stride - b] + (match_step if same else sub_step):
                    trace.append(OP_C if same else OP_S)
                    i -= 1
                    j -= 1
                    continue
            if j > 0 and here == cells[cell - b]:
                trace.append(OP_I)
                j -= 1
            else:
                trace.append(OP_D)
                i -= 1
        trace.reverse()
        ops[ops.shape[0] - len(trace) :, u] = np.frombuffer(bytes(trace), dtype=np.uint8)
    return ops
