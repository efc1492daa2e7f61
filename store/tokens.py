"""The one canonical tokenizer.

It defines the byte format of every term the index stores (hot postings, cold vocabulary), so
it lives with the other on-disk formats: the write side builds postings with it and the read
side plans queries with it, and the two can never disagree.

NFKC, then maximal runs of Unicode letters, numbers and ``_``, then lowercase. Python's ``\\w``
for ``str`` patterns is exactly ``str.isalnum() or "_"``, i.e. categories L* and N* plus ``_``,
which is the seed's ``[\\p{L}\\p{N}_]+``; combining marks (M*) split tokens in both.

Two deliberate extensions (the README says so), both decided by the Unicode script of each
character, never by a judgement about the text:

* Chinese and Japanese are written without spaces, so a run of Han, Hiragana and Katakana
  characters inside a token becomes its overlapping character bigrams (``技術スタック`` →
  ``技術 術ス スタ タッ ック``), or itself when it is one character long; the rest of the token
  stays one token (``优化readme`` → ``优化 readme``). Which characters count: ``_CJK_RANGES``.
* Korean is written with spaces, but a particle follows the word it marks without one, also
  after a word in another script: ``README를``, ``GitHub에서``. So a token is cut where Hangul
  meets a letter or digit of another script (``readme 를``, ``github 에서``); a Hangul word
  and its particle (``서브에이전트로``) stay one token, as every word does (no stemming).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from itertools import filterfalse

__all__ = [
    "TOKENIZER_VERSION",
    "normalize_text",
    "term_counts",
    "term_set",
    "tokenize",
    "unique_terms",
]

# Part of the indexing policy's fingerprint: records tokenized by another version re-derive.
# 2: CJK runs become bigrams. 3: a token is cut where Hangul meets another script.
TOKENIZER_VERSION = 3

_WORD = re.compile(r"\w+")
# Scripts.txt's Han, Hiragana and Katakana (whole blocks where a block is one script: the
# unassigned and non-word code points in them never reach the split), plus the two Common
# marks only Japanese words use: the kana repeat marks and the prolonged sound mark U+30FC.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals (NFKC maps the latter to ideographs)
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303B),  # Hangzhou numerals, vertical ideographic iteration mark
    (0x3041, 0x309F),  # Hiragana
    (0x30A1, 0x30FF),  # Katakana, with the prolonged sound mark
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x16FE3, 0x16FE3),  # old Chinese iteration mark
    (0x1AFF0, 0x1B16F),  # kana extended, supplement, small kana
    (0x20000, 0x323AF),  # CJK unified ideographs extensions B-H, compatibility supplement
)
_CJK_CLASS = "".join(f"{chr(a)}-{chr(b)}" for a, b in _CJK_RANGES)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_MAYBE_CJK = re.compile(f"[{chr(_CJK_RANGES[0][0])}-{chr(_CJK_RANGES[-1][1])}]")
# A token's pieces: runs of CJK characters, and runs of the rest (which may hold a mark that
# lowercasing added, as "İ" does: it stays part of its token, as everywhere else).
_PIECE = re.compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")
# Hangul: syllables, jamo (NFKC maps the compatibility jamo to these) and their extensions.
_HANGUL_CLASS = "\u1100-\u11ff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\u3130-\u318f"
_HANGUL = re.compile(f"[{_HANGUL_CLASS}]")
_HANGUL_RUN = re.compile(f"[{_HANGUL_CLASS}]+")
_MAYBE_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff]")
_HANGUL_PIECE = re.compile(f"[{_HANGUL_CLASS}]+|[^{_HANGUL_CLASS}]+")
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
        # ``_WORD.findall(text.lower())``, three times faster: the byte table lowercases the
        # letters and turns every ASCII non-word character into a space, so a C-level split
        # gives the very same tokens (``term_set`` reads ASCII chunks the same way).
        return text.encode("ascii").translate(_SPLIT_TABLE).decode("ascii").split()
    text = unicodedata.normalize("NFKC", text)
    if "\u0130" in text or "\u03a3" in text:
        tokens = [t.lower() for t in _WORD.findall(text)]
    else:
        # Lowercasing the whole text first gives the same tokens: every other character keeps
        # its \w-ness and length when lowercased (checked over all of Unicode), and only
        # capital sigma lowercases by context (final sigma), which the check above sends the
        # slow way.
        tokens = _WORD.findall(text.lower())
    if _MAYBE_HANGUL.search(text) is not None:
        tokens = _split_hangul(tokens)
    return _split_cjk(tokens) if _has_cjk(text) else tokens


def _split_hangul(tokens: list[str]) -> list[str]:
    """*tokens* cut where Hangul meets another script (see above)."""
    out: list[str] = []
    for token in tokens:
        if _HANGUL.search(token) is None or _HANGUL_RUN.fullmatch(token):
            out.append(token)
        else:
            out.extend(_HANGUL_PIECE.findall(token))
    return out


def _has_cjk(text: str) -> bool:
    # One range test per character is several times cheaper than the exact class, and most
    # non-ASCII text (accents, arrows, box drawing) holds nothing at or above U+2E80.
    return _MAYBE_CJK.search(text) is not None and _CJK.search(text) is not None


def _split_cjk(tokens: list[str]) -> list[str]:
    """*tokens* with every CJK run inside one cut into overlapping bigrams (see above)."""
    out: list[str] = []
    for token in tokens:
        if _CJK.search(token) is None:
            out.append(token)
            continue
        for piece in _PIECE.findall(token):
            if len(piece) > 1 and _CJK.match(piece):
                out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            else:
                out.append(piece)
    return out


def unique_terms(text: str) -> list[str]:
    """The unique tokens of *text* in first-occurrence order (how a query is planned)."""
    return list(dict.fromkeys(tokenize(text)))


def term_counts(text: str) -> tuple[Counter[str], int]:
    """Term frequencies and the token count (BM25's ``tf`` and ``dl``) of *text*."""
    tokens = tokenize(text)
    return Counter(tokens), len(tokens)


# Every byte past ASCII as 0x80, the others as they are (``_wide_chunks``).
_MARK_WIDE = bytes(range(128)) + b"\x80" * 128


def _wide_chunks(data: bytes, chunks: set[bytes]) -> set[bytes]:
    """The *chunks* (``data.split()``; *data* has been through ``_SPLIT_TABLE``, so a space is
    its only separator) that hold a byte past ASCII. Where such bytes are few, each is found
    in C (``find`` on a copy that marks them all alike) and its chunk cut out between the
    spaces around it: a test of every distinct chunk touched millions of objects for a few
    thousand (S corpus: 0.155 -> 0.072 s). Where they are many, the test per chunk costs less
    than a walk per occurrence, and is what runs."""
    marked = data.translate(_MARK_WIDE)
    if marked.count(0x80) * 4 > len(chunks):
        return set(filterfalse(bytes.isascii, chunks))
    wide: set[bytes] = set()
    find, rfind, size = marked.find, marked.rfind, len(marked)
    at = find(b"\x80")
    while at >= 0:
        end = find(b" ", at)
        if end < 0:
            end = size
        wide.add(data[rfind(b" ", 0, at) + 1 : end])
        at = find(b"\x80", end)
    return wide


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
    wide = _wide_chunks(data, chunks)
    chunks.difference_update(wide)
    for chunk in wide:
        text = chunk.decode("utf-8", "surrogatepass")
        tokens = [t.lower() for t in _WORD.findall(text)]
        if _MAYBE_HANGUL.search(text) is not None:
            tokens = _split_hangul(tokens)
        if _has_cjk(text):
            tokens = _split_cjk(tokens)
        chunks.update(t.encode("utf-8") for t in tokens)
    return chunks
