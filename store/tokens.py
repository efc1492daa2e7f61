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
from collections.abc import Iterable
from itertools import filterfalse

__all__ = ["normalize_text", "term_counts", "term_set", "tokenize", "unique_terms"]

_WORD = re.compile(r"\w+")
# Byte table for UTF-8 text: ASCII letters lowercase, other ASCII word bytes stay, every other
# ASCII byte becomes a space; bytes of multi-byte characters (>= 0x80) stay for a closer look.
_SPLIT_TABLE = bytes(
    (c | 0x20 if 65 <= c <= 90 else c) if c >= 0x80 or chr(c).isalnum() or c == 95 else 32
    for c in range(256)
)
_ARROW = "\u2192".encode()


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


def term_set(texts: Iterable[str]) -> set[bytes]:
    """The UTF-8 bytes of every distinct token of *texts*: ``{t.encode() for t in tokenize(x)}``
    over them all, without making a token object per occurrence (how a vocabulary is taken).

    After NFKC (over each whole text: an ASCII character can compose with a following mark,
    ``"<"`` + U+0338 is ``"≮"``), tokens never span an ASCII character that is not a word
    character, so a byte table turns those into spaces and one C-level ``split`` yields chunks.
    A chunk of ASCII bytes is a whole token (already lowercased by the table). A chunk holding
    other characters is decoded and tokenized as ``tokenize`` does, once per distinct chunk;
    lowercasing its ASCII letters first changes nothing, as they stay cased letters for final
    sigma's context.
    """
    parts = [t if t.isascii() else unicodedata.normalize("NFKC", t) for t in texts]
    # surrogatepass: a lone surrogate is no word character, but must not stop the encode.
    data = "\n".join(parts).encode("utf-8", "surrogatepass")
    # Claude Code prints file lines as "  12→text": without this one non-word character split
    # off first, every such line would be a chunk that needs the slow look.
    data = data.replace(_ARROW, b" ").translate(_SPLIT_TABLE)
    chunks = set(data.split())
    if data.isascii():
        return chunks
    wide = list(filterfalse(bytes.isascii, chunks))
    chunks.difference_update(wide)
    for chunk in wide:
        text = chunk.decode("utf-8", "surrogatepass")
        chunks.update(t.lower().encode("utf-8") for t in _WORD.findall(text))
    return chunks
