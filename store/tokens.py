"""The one canonical tokenizer.

It defines the byte format of every term the index stores (hot postings, cold vocabulary), so
it lives with the other on-disk formats: the write side builds postings with it and the read
side plans queries with it, and the two can never disagree.

NFKC, then maximal runs of Unicode letters, numbers and ``_``, then lowercase. Python's ``\\w``
for ``str`` patterns is exactly ``str.isalnum() or "_"``, i.e. categories L* and N* plus ``_``,
which is the seed's ``[\\p{L}\\p{N}_]+``; combining marks (M*) split tokens in both.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

__all__ = ["normalize_text", "term_counts", "tokenize", "unique_terms"]

_WORD = re.compile(r"\w+")


def normalize_text(text: str) -> str:
    """NFKC then lowercase: the text form phrase matching compares against."""
    return unicodedata.normalize("NFKC", text).lower()


def tokenize(text: str) -> list[str]:
    """Every canonical token of *text*, in order, repeats included."""
    if not text:
        return []
    if text.isascii():
        # NFKC is the identity on ASCII and ASCII lowercasing never changes what \w matches,
        # so lowercase once up front. (Not for other text: "İ".lower() adds a combining mark
        # that would split the token, where the seed lowercases each token after matching.)
        return _WORD.findall(text.lower())
    text = unicodedata.normalize("NFKC", text)
    if "\u0130" in text or "\u03a3" in text:
        return [t.lower() for t in _WORD.findall(text)]
    # Lowercasing the whole text first gives the same tokens: every other character keeps
    # its \w-ness and length when lowercased (checked over all of Unicode), and only capital
    # sigma lowercases by context (final sigma), which the check above sends the slow way.
    return _WORD.findall(text.lower())


def unique_terms(text: str) -> list[str]:
    """The unique tokens of *text* in first-occurrence order (how a query is planned)."""
    return list(dict.fromkeys(tokenize(text)))


def term_counts(text: str) -> tuple[Counter[str], int]:
    """Term frequencies and the token count (BM25's ``tf`` and ``dl``) of *text*."""
    tokens = tokenize(text)
    return Counter(tokens), len(tokens)
