"""Posting lists as stored: little-endian uint32 ``(entry position, tf)`` pairs, positions
ascending, one list per term.

The one place they are built (``index_entries``: the digest stage for a hot shard, the query
side for a hydrated cold session), encoded, cut (``trim_pairs``: a delta replaced the last
entries) and moved (``shift_pairs``: a delta's positions behind its base); ``store.deltas``
folds them with these. Decoding goes through ``array('I')``: one C-level copy, no per-pair
objects until a caller iterates.
"""

from __future__ import annotations

import sys
from array import array
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from itertools import repeat
from struct import Struct
from typing import Final

from store.rankstats import entry_stats
from store.records import NormalizedEntry

__all__ = [
    "EntryStats",
    "decode_pairs",
    "encode_pairs",
    "index_entries",
    "shared_stats",
    "shift_pairs",
    "trim_pairs",
]

_BIG_ENDIAN: Final = sys.byteorder == "big"
assert array("I").itemsize == 4, "uint32 postings need a 4-byte array('I')"
_PAIR: Final = 8
# one (position, tf) pair as stored, whatever this machine's byte order
_PACK: Final = Struct("<II").pack


def decode_pairs(data: bytes) -> array[int]:
    """The flat ``[pos, tf, pos, tf, …]`` array of one posting list."""
    out = array("I")
    out.frombytes(data)
    if _BIG_ENDIAN:  # pragma: no cover - the stored form is little-endian
        out.byteswap()
    return out


def encode_pairs(pairs: array[int]) -> bytes:
    if _BIG_ENDIAN:  # pragma: no cover
        pairs = array("I", pairs)
        pairs.byteswap()
    return pairs.tobytes()


def trim_pairs(data: bytes, cut: int) -> bytes:
    """The postings of *data* at positions below *cut* (a delta replaced the entries from
    *cut* on). Those are the last pairs, and usually few, so the scan starts at the end."""
    pairs = decode_pairs(data)
    n = len(pairs)
    while n and pairs[n - 2] >= cut:
        n -= 2
    return data[: n // 2 * _PAIR]


def shift_pairs(data: bytes, offset: int) -> bytes:
    """The same postings with every position moved *offset* entries later."""
    if not offset:
        return data
    pairs = decode_pairs(data)
    for i in range(0, len(pairs), 2):
        pairs[i] += offset
    return encode_pairs(pairs)


EntryStats = Callable[[NormalizedEntry], tuple[dict[str, int], int]]


def index_entries(
    entries: Iterable[NormalizedEntry], stats: EntryStats = entry_stats
) -> tuple[list[int], dict[str, bytes]]:
    """The packed token counts (``store.rankstats.entry_stats``) of *entries* and their
    postings over the *complete* texts, terms in sorted order (position = entry order).
    *stats* is ``entry_stats`` or a function giving what it gives (a cache of it shared by
    the views of one session, ``shared_stats``)."""
    lengths: list[int] = []
    # each term's stored bytes as they grow: an entry's pairs are packed and appended in C
    # (map), where a Python loop over every (entry, term) was a third of this function
    lists: defaultdict[str, bytearray] = defaultdict(bytearray)
    held = lists.__getitem__
    extend = bytearray.extend
    for pos, entry in enumerate(entries):
        counts, length = stats(entry)
        lengths.append(length)
        deque(map(extend, map(held, counts), map(_PACK, repeat(pos), counts.values())), 0)
    terms = sorted(lists)
    return lengths, dict(zip(terms, map(bytes, map(held, terms)), strict=True))


def shared_stats() -> EntryStats:
    """``entry_stats``, made once per distinct (text, role, has a tool): all it reads of an
    entry (``store.rankstats.fields_of``). A session's ``all`` view holds its ``active``
    view's entries again, as new objects where the normalizer makes each view's entries
    anew (Pi's), so indexing both views with one of these tokenizes their shared texts once
    (the stats are only read, never changed, so sharing them is safe)."""
    made: dict[tuple[str, str | None, bool], tuple[dict[str, int], int]] = {}

    def stats(e: NormalizedEntry) -> tuple[dict[str, int], int]:
        key = (e.text, e.role, e.tool is None)
        found = made.get(key)
        if found is None:
            found = made[key] = entry_stats(e)
        return found

    return stats
