"""Posting lists as stored: little-endian uint32 ``(entry position, tf)`` pairs, positions
ascending. Shared by the pipeline (which folds delta records) and the query side (which
reads them), so both cut a list the same way."""

from __future__ import annotations

import sys
from array import array
from typing import Final

__all__ = ["decode_pairs", "encode_pairs", "trim_pairs"]

_BIG_ENDIAN: Final = sys.byteorder == "big"
assert array("I").itemsize == 4, "uint32 postings need a 4-byte array('I')"
_PAIR: Final = 8


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
