"""Stored posting lists: built once, cut where a delta's replaced entries begin, moved behind
a base."""

from __future__ import annotations

from array import array

from store.postings import decode_pairs, encode_pairs, index_entries, shift_pairs, trim_pairs


def test_trimming_keeps_the_positions_below_the_cut() -> None:
    data = encode_pairs(array("I", [0, 2, 3, 1, 7, 4, 9, 1]))
    assert decode_pairs(trim_pairs(data, 7)).tolist() == [0, 2, 3, 1]
    assert trim_pairs(data, 10) == data
    assert trim_pairs(data, 0) == b""
    assert trim_pairs(b"", 3) == b""


def test_shifting_moves_positions_and_keeps_tfs() -> None:
    data = encode_pairs(array("I", [0, 2, 3, 1]))
    assert decode_pairs(shift_pairs(data, 5)).tolist() == [5, 2, 8, 1]
    assert shift_pairs(data, 0) is data


def test_indexing_entries_lists_each_term_by_entry_position_in_term_order() -> None:
    from tests.unit.store.factories import entry

    lengths, postings = index_entries(
        [entry(0, "beta alpha beta"), entry(1, "gamma"), entry(2, "beta")]
    )
    assert list(postings) == sorted(postings)
    assert decode_pairs(postings["beta"]).tolist()[0::2] == [0, 2]
    assert decode_pairs(postings["gamma"]).tolist()[0::2] == [1]
    assert len(lengths) == 3 and all(n > 0 for n in lengths)


def test_shared_stats_index_views_as_entry_stats_does() -> None:
    from dataclasses import replace

    from store.postings import shared_stats
    from store.rankstats import entry_stats
    from tests.unit.store.factories import entry

    active = [entry(0, "alpha beta " * 100), entry(1, "beta gamma"), entry(2, "alpha")]
    # the all view: the same texts as new objects, one under another role (other fields),
    # and one of its own
    every = [replace(e) for e in active]
    every[1] = replace(every[1], role="toolResult")
    every.append(entry(3, "delta " * 300))
    stats = shared_stats()
    for view in (active, every):
        assert index_entries(view, stats) == index_entries(view)
    # a tool call's entry reads its text otherwise than a plain one (fields_of)
    call = replace(entry(0, 'Tool: bash({"command":"ls"})'), role="assistant", tool="bash")
    plain = replace(call, tool=None)
    assert stats(call) == entry_stats(call) != entry_stats(plain) == stats(plain)
