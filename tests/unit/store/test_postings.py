"""Stored posting lists: cutting a list where a delta's replaced entries begin."""

from __future__ import annotations

from array import array

from store.postings import decode_pairs, encode_pairs, trim_pairs


def test_trimming_keeps_the_positions_below_the_cut() -> None:
    data = encode_pairs(array("I", [0, 2, 3, 1, 7, 4, 9, 1]))
    assert decode_pairs(trim_pairs(data, 7)).tolist() == [0, 2, 3, 1]
    assert trim_pairs(data, 10) == data
    assert trim_pairs(data, 0) == b""
    assert trim_pairs(b"", 3) == b""
