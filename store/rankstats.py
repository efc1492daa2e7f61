"""The ranking statistics a record stores per entry and per cold session.

An entry's text has up to two fields, told apart by typed fields only:

* **prose**: what a person or the model wrote (user, assistant, compaction and custom text);
* **plumbing**: tool output (``toolResult``, ``fabricOperation`` entries) and tool calls. An
  assistant entry that carries a call (``tool`` set) holds its calls as the lines the
  normalizers render for each one, ``Tool: <name>(<args>)``; those lines are plumbing and the
  rest of the message stays prose. (This reads the normalizers' own rendering of typed
  ``toolCall``/``tool_use`` blocks, not prose.)

**Hot postings** keep ``(entry position, value)`` pairs and ``token_counts`` the entry's two
field lengths, packed: prose in the low 16 bits, plumbing in the high 16 bits. A posting's
value holds the term's count in its low 16 bits (``TF_MASK``): prose and plumbing tf, 8 bits
each, when both fields hold tokens, otherwise the one field's count (``split``). Long fields
are counted by their best passage: the count of a term is its highest count in any window of
``PASSAGE`` tokens (windows start every ``PASSAGE // 2`` tokens) and the length is capped at
``PASSAGE``. So a 50,000-token tool output holding a rare term once scores like a passage
holding it once, not like a 50,000-token document (and a count never passes ``PASSAGE``).

Where the two do differ is in holding *several* query terms: a passage that holds them
together answers the query, a long output that holds one here and one 5,000 tokens later does
not. So an entry longer than one passage also keeps, per term, which of its ``SEGMENTS``
equal runs of tokens (prose, then plumbing; each at least half a passage) hold the term: the
value's high 16 bits (``segments``; 0 for an entry of one passage). ``query.search`` credits
a long entry with the query terms one passage of it holds (two neighbouring runs), not every
term it holds somewhere.

**Cold digests** keep one byte per vocabulary term (``term_stats``, in vocabulary order): how
many times the session's prose holds it, as ``min(tf, 255).bit_length()`` (a bounded tf bucket:
0 for a term only tool output holds, then 1, 2-3, 4-7, ...).
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import filterfalse, repeat
from operator import or_
from typing import Final

from store.records import NormalizedEntry
from store.tokens import term_set, tokenize

__all__ = [
    "BUCKET_BITS",
    "FIELD_BITS",
    "PASSAGE",
    "SEGMENTS",
    "TF_MASK",
    "entry_stats",
    "fields_of",
    "pack",
    "segments",
    "session_term_stats",
    "session_term_stats_over",
    "split",
    "term_stats_bytes",
    "unpack",
]

PASSAGE: Final = 128
SEGMENTS: Final = 16
FIELD_BITS: Final = 16
_FIELD_MAX: Final = (1 << FIELD_BITS) - 1
# A posting's value: the term's count (prose and plumbing tf, 8 bits each, when the entry has
# both fields; one tf when it has one), then its segment bits. A count is at most PASSAGE.
TF_BITS: Final = 8
_TF_MAX: Final = (1 << TF_BITS) - 1
TF_MASK: Final = 0xFFFF
SEGMENT_SHIFT: Final = 16
BUCKET_BITS: Final = 0x0F
_CALL_PREFIX: Final = "Tool: "
_PLUMBING_ROLES: Final = frozenset({"toolResult", "fabricOperation"})


def pack(prose: int, plumbing: int) -> int:
    return min(prose, _FIELD_MAX) | min(plumbing, _FIELD_MAX) << FIELD_BITS


def unpack(value: int) -> tuple[int, int]:
    return value & _FIELD_MAX, value >> FIELD_BITS


def split(tf: int, length: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """((prose tf, plumbing tf), (prose length, plumbing length)) of one posting."""
    lengths = unpack(length)
    tf &= TF_MASK
    if lengths[0] and lengths[1]:
        return (tf & _TF_MAX, tf >> TF_BITS), lengths
    return ((tf, 0) if lengths[0] else (0, tf)), lengths


def segments(tf: int) -> int:
    """The segment bits of one posting (0: the entry is one passage; see ``_segments``)."""
    return tf >> SEGMENT_SHIFT


def fields_of(e: NormalizedEntry) -> tuple[str, str]:
    """(prose, plumbing) text of *e*."""
    if e.role in _PLUMBING_ROLES:
        return "", e.text
    if e.tool is None:
        return e.text, ""
    if e.role != "assistant":
        return "", e.text
    if _CALL_PREFIX not in e.text:
        return "", e.text  # a call entry of its own (Codex), or a call the text does not show
    prose: list[str] = []
    calls: list[str] = []
    for line in e.text.split("\n"):
        (calls if line.startswith(_CALL_PREFIX) else prose).append(line)
    return "\n".join(prose), "\n".join(calls)


def _passages(tokens: Sequence[str]) -> tuple[Counter[str], int, dict[str, int]]:
    """Each term's highest count in a window of PASSAGE tokens, the capped length, and (for
    more than one passage's tokens) the segment bits of each term (``_segments``).

    Windows start every ``PASSAGE // 2`` tokens, so a window is two neighbouring blocks of
    that many tokens: each block is counted once, and a term's best window is its best sum
    of a block and the next (a window whose first block lacks the term counts no more than
    the next one, which starts with it)."""
    n = len(tokens)
    whole = Counter(tokens)
    if n <= PASSAGE:
        return whole, n, {}
    step = PASSAGE // 2
    blocks = [Counter(tokens[i : i + step]) for i in range(0, n, step)]
    # Only a term seen more than once can count more than 1 in its best window.
    repeated = {t for t, tf in whole.items() if tf > 1}
    if repeated:
        best = dict.fromkeys(repeated, 1)
        empty: Counter[str] = Counter()
        for block, following in zip(blocks, [*blocks[1:], empty], strict=True):
            for term in repeated.intersection(block):
                tf = block[term] + following[term]
                if tf > best[term]:
                    best[term] = tf
        whole.update({t: tf - whole[t] for t, tf in best.items()})
    return whole, PASSAGE, _segments(blocks)


def _segments(blocks: Sequence[Counter[str]]) -> dict[str, int]:
    """Which of an entry's SEGMENTS equal runs of blocks hold each term, as the bits of a
    posting's value from SEGMENT_SHIFT on (the first run the lowest). A run is at least one
    block, half a passage, so a long entry's terms in one run or two neighbouring runs share
    a passage."""
    per = -(-len(blocks) // SEGMENTS)
    out: dict[str, int] = {}
    seen = out.keys()
    for bit, start in enumerate(range(0, len(blocks), per), SEGMENT_SHIFT):
        flag = 1 << bit
        held = set().union(*blocks[start : start + per])
        again = held & seen
        out.update(dict.fromkeys(held - again, flag))  # first seen here: no Python loop
        for term in again:
            out[term] |= flag
    return out


def entry_stats(e: NormalizedEntry) -> tuple[dict[str, int], int]:
    """Per-term posting values and packed field lengths of *e* (see the module docstring)."""
    prose, plumbing = fields_of(e)
    p_tokens = tokenize(prose) if prose else []
    c_tokens = tokenize(plumbing) if plumbing else []
    counts: dict[str, int]
    if p_tokens and c_tokens:
        p_counts, p_len, _ = _passages(p_tokens)
        c_counts, c_len, _ = _passages(c_tokens)
        counts = dict(p_counts)
        for term, tf in c_counts.items():
            counts[term] = counts.get(term, 0) | tf << TF_BITS
        # the segments of the entry's text: prose, then plumbing
        tokens = p_tokens + c_tokens
        step = PASSAGE // 2
        blocks = [Counter(tokens[i : i + step]) for i in range(0, len(tokens), step)]
        bits = _segments(blocks) if len(tokens) > PASSAGE else {}
    else:  # one field: its counts stay unpacked (the length says which field they belong to)
        counts, n, bits = _passages(p_tokens or c_tokens)
        p_len, c_len = (n, 0) if p_tokens else (0, n)
    if bits:
        # C-level: each count OR its segment bits, in the counts' own key order
        values = map(or_, counts.values(), map(bits.__getitem__, counts))
        counts = dict(zip(counts, values, strict=True))
    return counts, pack(p_len, c_len)


# Word bytes of UTF-8 text as store.tokens reads them: ASCII letters lowercased, ASCII digits
# and "_" kept, every other ASCII byte a separator; bytes of other characters (>= 0x80) stay,
# for the chunks holding them to be tokenized whole (store.tokens.term_set does the same).
_SPLIT: Final = bytes(
    (c | 0x20 if 65 <= c <= 90 else c) if c >= 0x80 or chr(c).isalnum() or c == 95 else 32
    for c in range(256)
)
_ARROW: Final = "\u2192".encode()


def _counts(texts: Sequence[str]) -> Counter[bytes]:
    """How many times *texts* hold each term (UTF-8, the tokens ``term_set`` gives): one
    C-level count over their chunks, ``tokenize`` once per distinct chunk holding a character
    past ASCII."""
    parts = [t if t.isascii() else unicodedata.normalize("NFKC", t) for t in texts]
    data = "\n".join(parts).encode("utf-8", "surrogatepass")
    held: Counter[bytes] = Counter(data.replace(_ARROW, b" ").translate(_SPLIT).split())
    if not data.isascii():
        for chunk in list(filterfalse(bytes.isascii, held)):
            n = held.pop(chunk)
            for term in tokenize(chunk.decode("utf-8", "surrogatepass")):
                held[term.encode("utf-8", "surrogatepass")] += n
    return held


def session_term_stats(entries: Sequence[NormalizedEntry]) -> tuple[set[bytes], Counter[bytes]]:
    """Every term of *entries* (``term_set`` of their texts) and how many times their prose
    fields hold each term. (Counting prose only keeps this one extra pass over the smaller
    part of a session: tool output is most of its bytes.)

    An entry's text is its prose and plumbing lines, and a newline is a separator NFKC
    composes nothing across, so the term set is the prose's counted terms and the plumbing's
    ``term_set``: each text is tokenized once, not prose twice."""
    prose: list[str] = []
    plumbing: list[str] = []
    for e in entries:
        p, c = fields_of(e)
        if p:
            prose.append(p)
        if c:
            plumbing.append(c)
    counts = _counts(prose)
    terms = term_set(plumbing)
    terms.update(counts)
    return terms, counts


def session_term_stats_over(
    entries: Sequence[NormalizedEntry],
    base: Sequence[NormalizedEntry],
    stats: tuple[set[bytes], Counter[bytes]],
) -> tuple[set[bytes], Counter[bytes]]:
    """``session_term_stats(entries)`` given *stats*, those of *base*: where *entries* hold
    every text (and every prose field, as often) *base* does, only the rest is tokenized.
    (A session's ``all`` view holds its ``active`` view's entries plus its other branches';
    a term set is a union over texts and prose counts a sum, so the parts add up exactly.)"""
    texts = {e.text for e in entries}
    base_texts = {e.text for e in base}
    if base_texts <= texts:
        added = texts - base_texts
        terms = stats[0] | term_set(added) if added else stats[0]
    else:
        terms = term_set(e.text for e in entries)
    prose = Counter(p for p in (fields_of(e)[0] for e in entries) if p)
    # what *entries*' prose holds past *base*'s (one Python loop over base's prose, where
    # ``<=`` then ``-`` walked both twice); a count below 0: *base* holds a text more often
    extra = prose.copy()
    extra.subtract(p for p in (fields_of(e)[0] for e in base) if p)
    if min(extra.values(), default=0) >= 0:
        counts = stats[1].copy()
        counts.update(_counts(list(extra.elements())))
    else:
        counts = _counts(list(prose.elements()))
    return terms, counts


# Bucket of every count below 2**16: one lookup per term.
_WIDTH: Final = 1 << 16
# (built from its first 256 entries: every count from 255 on is in the top bucket; a
# generator over all 65,536 cost each process ~8 ms at import)
_TABLE: Final = bytes(n.bit_length() for n in range(255)) + bytes([(255).bit_length()]) * (
    _WIDTH - 255
)
_CAPPED: Final = (255).bit_length()


def term_stats_bytes(terms: Sequence[bytes], prose: Mapping[bytes, int]) -> bytes:
    """The ``term_stats`` bytes of *terms* (sorted, as a vocabulary is), in their order.

    Each prose term's bucket is taken once (C-level, by the counts' order), then every
    vocabulary term looks its bucket up in one C-level pass (a term prose lacks: 0); a
    bisection per prose term cost more (S corpus: 0.28 -> 0.25 s). A count past the table
    (never in practice) takes the bisection."""
    if not prose:
        return bytes(len(terms))
    if max(prose.values()) < _WIDTH:
        buckets = dict(zip(prose, map(_TABLE.__getitem__, prose.values()), strict=True))
        return bytes(map(buckets.get, terms, repeat(0)))
    out = bytearray(len(terms))
    n = len(terms)
    for term, count in prose.items():
        i = bisect_left(terms, term)
        if i < n and terms[i] == term:
            out[i] = _TABLE[count] if count < _WIDTH else _CAPPED
    return bytes(out)
