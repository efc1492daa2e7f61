"""The ranking statistics a record stores per entry and per cold session.

An entry's text has up to two fields, told apart by typed fields only:

* **prose**: what a person or the model wrote (user, assistant, compaction and custom text);
* **plumbing**: tool output (``toolResult``, ``fabricOperation`` entries) and tool calls. An
  assistant entry that carries a call (``tool`` set) holds its calls as the lines the
  normalizers render for each one, ``Tool: <name>(<args>)``; those lines are plumbing and the
  rest of the message stays prose. (This reads the normalizers' own rendering of typed
  ``toolCall``/``tool_use`` blocks, not prose.)

**Hot postings** keep ``(entry position, tf)`` pairs and ``token_counts`` the entry's two field
lengths, packed: prose in the low 16 bits, plumbing in the high 16 bits. ``tf`` is packed the
same way only when both fields hold tokens; otherwise it is the one field's count (``split``).
Long fields are counted by their best passage: the count of a term is its highest count in any
window of ``PASSAGE`` tokens (windows start every ``PASSAGE // 2`` tokens) and the length is
capped at ``PASSAGE``. So a 50,000-token tool output holding a rare term once scores like a
passage holding it once, not like a 50,000-token document.

**Cold digests** keep one byte per vocabulary term (``term_stats``, in vocabulary order):
``PROSE_BIT`` when some entry has the term in prose, and in the low bits how many of the
session's segments of ``SEGMENT`` consecutive entries hold it, as ``min(n, 255).bit_length()``
(a bounded tf bucket: 1, 2-3, 4-7, ... segments).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Final

from store.records import NormalizedEntry
from store.tokens import term_set, tokenize

__all__ = [
    "BUCKET_BITS",
    "FIELD_BITS",
    "PASSAGE",
    "PROSE_BIT",
    "SEGMENT",
    "entry_stats",
    "fields_of",
    "pack",
    "session_term_stats",
    "split",
    "term_stats_bytes",
    "unpack",
]

PASSAGE: Final = 128
SEGMENT: Final = 16
FIELD_BITS: Final = 16
_FIELD_MAX: Final = (1 << FIELD_BITS) - 1
PROSE_BIT: Final = 0x80
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
    if lengths[0] and lengths[1]:
        return unpack(tf), lengths
    return ((tf, 0) if lengths[0] else (0, tf)), lengths


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


def _best_passage(tokens: Sequence[str]) -> tuple[Counter[str], int]:
    """Each term's highest count in a window of PASSAGE tokens, and the capped length."""
    n = len(tokens)
    whole = Counter(tokens)
    if n <= PASSAGE:
        return whole, n
    # Only a term seen more than once can count more than 1 in its best window.
    repeated = {t for t, tf in whole.items() if tf > 1}
    if not repeated:
        return whole, PASSAGE
    best = dict.fromkeys(repeated, 1)
    step = PASSAGE // 2
    for start in range(0, n - step, step):
        window = Counter(tokens[start : start + PASSAGE])
        for term in repeated.intersection(window):
            tf = window[term]
            if tf > best[term]:
                best[term] = tf
    whole.update({t: tf - whole[t] for t, tf in best.items()})
    return whole, PASSAGE


def entry_stats(e: NormalizedEntry) -> tuple[dict[str, int], int]:
    """Per-term counts and packed field lengths of *e* (see the module docstring)."""
    prose, plumbing = fields_of(e)
    if not plumbing:
        return _best_passage(tokenize(prose))
    if not prose:
        # One field: its counts stay unpacked (the length says which field they belong to).
        counts, length = _best_passage(tokenize(plumbing))
        return counts, length << FIELD_BITS
    p_counts, p_len = _best_passage(tokenize(prose))
    c_counts, c_len = _best_passage(tokenize(plumbing))
    if not p_len or not c_len:  # one field holds no token after all: unpacked counts
        return (p_counts, p_len) if p_len else (c_counts, c_len << FIELD_BITS)
    out = dict(p_counts)
    for term, tf in c_counts.items():
        out[term] = out.get(term, 0) | tf << FIELD_BITS
    return out, p_len | c_len << FIELD_BITS


def session_term_stats(
    entries: Sequence[NormalizedEntry],
) -> tuple[Counter[bytes], set[bytes]]:
    """Every term of *entries* (UTF-8, as ``term_set`` gives them) with the number of the
    session's segments of ``SEGMENT`` consecutive entries holding it, and the terms any prose
    field holds. (A count of segments, not of entries: a few bulk ``term_set`` calls instead of
    one per entry, and the same bounded picture of how much of the session talks about it.)"""
    held: Counter[bytes] = Counter()
    in_prose: set[bytes] = set()
    for k in range(0, len(entries), SEGMENT):
        prose: list[str] = []
        plumbing: list[str] = []
        for e in entries[k : k + SEGMENT]:
            p, c = fields_of(e)
            if p:
                prose.append(p)
            if c:
                plumbing.append(c)
        said = term_set(prose)
        in_prose |= said
        held.update(said | term_set(plumbing) if plumbing else said)
    return held, in_prose


def term_stats_bytes(
    terms: Sequence[bytes], held: Mapping[bytes, int], in_prose: Collection[bytes]
) -> bytes:
    """The ``term_stats`` bytes of *terms* (each one of *held*), in their order.

    A session holds tens of thousands of terms, so this runs as C-level maps: each term's
    segment count, moved past every count for a prose term, indexes one table of bytes."""
    top = max(held.values(), default=0) + 1
    codes = dict(held)
    codes.update(zip(in_prose, map(top.__add__, map(held.__getitem__, in_prose)), strict=True))
    buckets = [min(n, 255).bit_length() for n in range(top)]
    table = bytes(buckets) + bytes(PROSE_BIT | b for b in buckets)
    return bytes(map(table.__getitem__, map(codes.__getitem__, terms)))
