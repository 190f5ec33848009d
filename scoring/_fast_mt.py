"""Compiled kernels for the MT metrics that need a table per segment: mWER and GTM.

Both run over integer-coded tokens of many segments per call, as
`scoring._fast_align` (in numpy) does for the sclite alignment, and compute exactly what
`scoring.mt.edit_distance` and `scoring.mt.gtm_match_size` compute in Python
(the tests compare them on random token sequences). Texts are laid out as in
`scoring.mt_batch`: hypotheses 0..n-1, then reference set k's text for
segment s at ``(k + 1) * n + s``. ``cache=True`` keeps the compiled code next
to this file, so only the first run on a machine pays the compile.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["edit_distances", "gtm_weights"]


@njit(cache=True, nogil=True)
def _longest(off: np.ndarray) -> int:
    """The most tokens of any one text: the length of the kernels' work rows."""
    longest = 0
    for t in range(off.shape[0] - 1):
        longest = max(longest, off[t + 1] - off[t])
    return longest


@njit(cache=True, nogil=True)
def _texts(off: np.ndarray, n_seg: int, k: int, s: int) -> tuple[int, int, int, int]:
    """Where hypothesis s and reference k of segment s start and end in the codes."""
    return off[s], off[s + 1], off[(k + 1) * n_seg + s], off[(k + 1) * n_seg + s + 1]


@njit(cache=True, nogil=True)
def _edit_kernel(codes: np.ndarray, off: np.ndarray, n_seg: int, out: np.ndarray) -> None:
    """out[k, s]: Levenshtein distance (unit costs) of hypothesis s to reference k of s."""
    longest = _longest(off)
    prev = np.empty(longest + 1, dtype=np.int64)
    cur = np.empty(longest + 1, dtype=np.int64)
    for k in range(out.shape[0]):
        for s in range(n_seg):
            h0, h1, r0, r1 = _texts(off, n_seg, k, s)
            m = r1 - r0
            for j in range(m + 1):
                prev[j] = j
            for i in range(1, h1 - h0 + 1):
                h = codes[h0 + i - 1]
                cur[0] = i
                for j in range(1, m + 1):
                    best = prev[j - 1] + (0 if h == codes[r0 + j - 1] else 1)
                    best = min(best, prev[j] + 1)
                    best = min(best, cur[j - 1] + 1)
                    cur[j] = best
                for j in range(m + 1):
                    prev[j] = cur[j]
            out[k, s] = prev[m]


def edit_distances(codes: np.ndarray, off: np.ndarray, n_seg: int, n_refs: int) -> np.ndarray:
    """Token edit distance of every hypothesis to each of its references, shape (n_refs, n_seg)."""
    out = np.zeros((n_refs, n_seg), dtype=np.int64)
    _edit_kernel(codes, off, n_seg, out)
    return out


@njit(cache=True, nogil=True)
def _gtm_kernel(
    codes: np.ndarray, off: np.ndarray, n_seg: int, exponent: float, out: np.ndarray
) -> None:
    """out[k, s]: GTM's greedy sum of run length ** exponent, hypothesis s against reference k.

    Repeatedly the longest run of hits on free rows and columns (first in
    hypothesis order, then reference order) is taken, as `_longest_run` does.
    """
    longest = _longest(off)
    prev = np.empty(longest + 1, dtype=np.int64)
    cur = np.empty(longest + 1, dtype=np.int64)
    used_h = np.empty(longest, dtype=np.bool_)
    used_r = np.empty(longest, dtype=np.bool_)
    for k in range(out.shape[0]):
        for s in range(n_seg):
            h0, h1, r0, r1 = _texts(off, n_seg, k, s)
            n = h1 - h0
            m = r1 - r0
            used_h[:n] = False
            used_r[:m] = False
            total = 0.0
            while True:
                best_len = 0
                best_i = 0
                best_j = 0
                prev[: m + 1] = 0
                for i in range(n):
                    cur[: m + 1] = 0
                    if not used_h[i]:
                        h = codes[h0 + i]
                        for j in range(m):
                            if not used_r[j] and h == codes[r0 + j]:
                                cur[j + 1] = prev[j] + 1
                                if cur[j + 1] > best_len:
                                    best_len = cur[j + 1]
                                    best_i = i - best_len + 1
                                    best_j = j - best_len + 1
                    prev[: m + 1] = cur[: m + 1]
                if best_len == 0:
                    break
                total += float(best_len) ** exponent
                for t in range(best_len):
                    used_h[best_i + t] = True
                    used_r[best_j + t] = True
            out[k, s] = total


def gtm_weights(
    codes: np.ndarray, off: np.ndarray, n_seg: int, n_refs: int, exponent: float
) -> np.ndarray:
    """GTM match weight of every hypothesis against each of its references, (n_refs, n_seg)."""
    out = np.zeros((n_refs, n_seg), dtype=np.float64)
    _gtm_kernel(codes, off, n_seg, float(exponent), out)
    return out
