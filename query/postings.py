"""Posting lists as stored: little-endian uint32 ``(entry position, tf)`` pairs.

Decoding goes through ``array('I')`` (one C-level copy, no per-pair objects until a caller
iterates); the only re-encoding the query side does is shifting a delta record's positions
behind its base, and building postings for a hydrated cold session.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Final

__all__ = ["build_postings", "decode_pairs", "encode_pairs", "shift_pairs"]

_BIG_ENDIAN: Final = sys.byteorder == "big"
assert array("I").itemsize == 4, "uint32 postings need a 4-byte array('I')"


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


def shift_pairs(data: bytes, offset: int) -> bytes:
    """The same postings with every position moved *offset* entries later."""
    pairs = decode_pairs(data)
    for i in range(0, len(pairs), 2):
        pairs[i] += offset
    return encode_pairs(pairs)


def build_postings(counts: Sequence[Counter[str]]) -> dict[str, bytes]:
    """Postings of entries whose term counts are *counts* (position = list position)."""
    lists: dict[str, array[int]] = {}
    for pos, c in enumerate(counts):
        for term, tf in c.items():
            arr = lists.get(term)
            if arr is None:
                lists[term] = arr = array("I")
            arr.append(pos)
            arr.append(tf)
    return {t: encode_pairs(a) for t, a in lists.items()}
