"""Tokenisation for MT scoring: NIST mteval-v13a rules, CJK at character level.

``tokenize_v13a`` reproduces the default (non ``--international-tokenization``)
``tokenization`` routine of NIST ``mteval-v13a.pl`` (the same rules as v11b)
in case-sensitive mode (``-c``):

1. language-independent part: drop ``<skipped>``, join end-of-line hyphenation
   (``-\\n``), turn the remaining newlines into spaces, decode the four SGML
   entities ``&quot; &amp; &lt; &gt;``;
2. pad with one space, then split off every ASCII punctuation character in
   ``{|}~ [\\]^_` space..& (..+ :..@ /`` (so not ``' - . ,``);
3. split off ``.`` and ``,`` unless they sit between digits (``3.14``,
   ``1,000`` stay whole), and split off ``-`` after a digit;
4. collapse whitespace (Perl's ``\\s`` set, see ``_PERL_SPACE``).

``tokenize_cjk`` is the CWMT rule for Chinese and Japanese output: full-width
forms of non-Chinese characters become half-width first, then every
CJK/kana character (and CJK punctuation) is its own token, while runs of
other characters (ASCII words, numbers) are tokenised by the v13a rules above.
"""

from __future__ import annotations

import re

from .widths import to_halfwidth

__all__ = [
    "CJK_LANGS",
    "is_cjk_split_char",
    "normalize_v13a",
    "to_halfwidth",
    "tokenize",
    "tokenize_cjk",
    "tokenize_v13a",
]

# Languages scored at character level (CWMT guidelines, HTRDP survey).
CJK_LANGS = frozenset({"zh", "ja", "cn", "jp", "chs", "cht"})

# Perl's \s on a character (UTF-8) string, the set mteval's s/\s+/ /g and
# split /\s+/ use. Python's \s also matches \x1c-\x1f, which Perl does not.
_PERL_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACE_RUN = re.compile(f"[{_PERL_SPACE}]+")

_PUNCT = re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])")
_PERIOD_COMMA_AFTER = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE = re.compile(r"([\.,])([^0-9])")
_DIGIT_DASH = re.compile(r"([0-9])(-)")


def normalize_v13a(text: str, case_sensitive: bool = True) -> str:
    """Return ``text`` normalised by mteval-v13a's rules, tokens joined by one space."""
    text = text.replace("<skipped>", "")
    text = text.replace("-\n", "")
    text = text.replace("\n", " ")
    text = text.replace("&quot;", '"')
    text = text.replace("&amp;", "&")
    text = text.replace("&lt;", "<")
    text = text.replace("&gt;", ">")
    text = f" {text} "
    if not case_sensitive:
        # mteval lowercases with tr/[A-Z]/[a-z]/: ASCII letters only.
        text = text.translate(_ASCII_LOWER)
    text = _PUNCT.sub(r" \1 ", text)
    text = _PERIOD_COMMA_AFTER.sub(r"\1 \2 ", text)
    text = _PERIOD_COMMA_BEFORE.sub(r" \1 \2", text)
    text = _DIGIT_DASH.sub(r"\1 \2 ", text)
    return _SPACE_RUN.sub(" ", text).strip(_PERL_SPACE_CHARS)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_PERL_SPACE_CHARS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def tokenize_v13a(text: str, case_sensitive: bool = True) -> list[str]:
    """Split ``text`` into tokens exactly as mteval-v13a does (``-c`` by default)."""
    norm = normalize_v13a(text, case_sensitive)
    return norm.split(" ") if norm else []


# Ranges whose characters each make one token at character level. Ideographs
# and kana are the letters of zh/ja text; CJK and general punctuation are
# included so a "，" or "“" glued to an ideograph does not merge with it.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x2010, 0x2027),  # general punctuation (dashes, curly quotes, ellipsis)
    (0x2030, 0x205E),
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3001, 0x303F),  # CJK symbols and punctuation (not U+3000, a space)
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3100, 0x312F),  # bopomofo
    (0x31C0, 0x31FF),  # CJK strokes, katakana phonetic extensions
    (0x3200, 0x33FF),  # enclosed CJK, CJK compatibility
    (0x3400, 0x4DBF),  # extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF5F, 0xFF9F),  # half-width CJK punctuation and katakana
    (0xFFE0, 0xFFEE),  # full-width signs left after half-width conversion
    (0x20000, 0x3134F),  # extensions B..G
)


def is_cjk_split_char(ch: str) -> bool:
    """True for characters that form a token of their own at character level."""
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def tokenize_cjk(text: str) -> list[str]:
    """Character-level tokens for Chinese/Japanese (CWMT): CJK split, ASCII words whole."""
    text = to_halfwidth(text)
    spaced = "".join(f" {ch} " if is_cjk_split_char(ch) else ch for ch in text)
    return tokenize_v13a(spaced, case_sensitive=True)


def tokenize(text: str, lang: str = "en") -> list[str]:
    """Tokens for scoring text in target language ``lang`` (case-sensitive)."""
    if lang.lower() in CJK_LANGS:
        return tokenize_cjk(text)
    return tokenize_v13a(text, case_sensitive=True)
