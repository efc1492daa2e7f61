"""Posting lists as stored: little-endian uint32 ``(entry position, tf)`` pairs.

Decoding goes through ``array('I')`` (one C-level copy, no per-pair objects until a caller
iterates); the only re-encoding the query side does is shifting a delta record's positions
behind its base, and building postings for a hydrated cold session.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence

from store.postings import decode_pairs, encode_pairs

__all__ = ["build_postings", "decode_pairs", "encode_pairs", "shift_pairs"]


def shift_pairs(data: bytes, offset: int) -> bytes:
    """The same postings with every position moved *offset* entries later."""
    pairs = decode_pairs(data)
    for i in range(0, len(pairs), 2):
        pairs[i] += offset
    return encode_pairs(pairs)


def build_postings(counts: Sequence[Mapping[str, int]]) -> dict[str, bytes]:
    """Postings of entries whose (packed, ``store.rankstats``) term counts are *counts*
    (position = list position)."""
    lists: dict[str, array[int]] = {}
    for pos, c in enumerate(counts):
        for term, tf in c.items():
            arr = lists.get(term)
            if arr is None:
                lists[term] = arr = array("I")
            arr.append(pos)
            arr.append(tf)
    return {t: encode_pairs(a) for t, a in lists.items()}
