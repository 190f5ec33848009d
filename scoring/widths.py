"""Full-width to half-width conversion, as the CWMT guidelines and the command scorer need it."""

from __future__ import annotations

# Full-width ASCII variants U+FF01..U+FF5E map to ASCII; the ideographic space to a space.
# Deliberately not NFKC, which would also rewrite other compatibility characters (circled
# digits, CJK compatibility ideographs) and CJK punctuation with no ASCII counterpart.
_HALF = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def to_halfwidth(text: str) -> str:
    """Map full-width ASCII (U+FF01..U+FF5E) and U+3000 to their ASCII forms."""
    return text.translate(_HALF)
