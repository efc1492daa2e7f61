"""The one fold of base and delta records (store.deltas), which both sides read through."""

from __future__ import annotations

from array import array
from dataclasses import replace

from store.deltas import EntriesFold, ShardFold, concat_entries, concat_shards
from store.postings import decode_pairs, encode_pairs, index_entries
from store.records import EntriesView, HotShard, SessionEntries, ShardView
from tests.unit.store.factories import HASH, entry


def _view(entries: list[str], first: int, replaces: int = 0, dropped: tuple[str, ...] = ()):
    made = [entry(first + i, text) for i, text in enumerate(entries)]
    counts, postings = index_entries(made)
    return ShardView("active", HASH, tuple(made), tuple(counts), postings, (), replaces, dropped)


def _shard(view: ShardView) -> HotShard:
    return HotShard("/s/a.jsonl", "sid", "pi", "/repo", HASH, "pol", (view,))


def _positions(postings: dict[str, bytes], term: str) -> list[int]:
    return decode_pairs(postings[term]).tolist()[0::2]


def test_a_delta_continues_the_positions_of_what_came_before() -> None:
    fold = ShardFold()
    fold.add(_view(["alpha beta", "beta"], 0))
    fold.add(_view(["beta gamma"], 2))
    assert [e.text for e in fold.entries] == ["alpha beta", "beta", "beta gamma"]
    assert _positions(fold.postings, "beta") == [0, 1, 2]
    assert _positions(fold.postings, "gamma") == [2]
    assert len(fold.token_counts) == 3 and fold.reach == 0


def test_a_replacing_delta_cuts_the_entries_and_the_postings_it_dropped() -> None:
    # Given a base whose last entry a delta replaces (a reply continued on a new line)
    fold = ShardFold()
    fold.add(_view(["alpha", "draft reply"], 0))
    fold.add(_view(["final reply"], 1, replaces=1, dropped=("draft", "reply")))
    # Then the replaced entry and its postings are gone, the new one is at its place
    assert [e.text for e in fold.entries] == ["alpha", "final reply"]
    assert "draft" not in fold.postings
    assert _positions(fold.postings, "reply") == [1]
    assert _positions(fold.postings, "alpha") == [0]
    assert len(fold.token_counts) == 2 and fold.reach == 0 and fold.dropped == {"draft", "reply"}


def test_deltas_folded_alone_reach_back_and_fold_onto_the_base_the_same() -> None:
    base = _shard(_view(["alpha", "draft one"], 0))
    d1 = _shard(_view(["draft two"], 1, replaces=1, dropped=("draft", "one")))
    d2 = _shard(_view(["final"], 1, replaces=1, dropped=("draft", "two")))
    alone = concat_shards([d1, d2])
    assert alone.views[0].replaces == 1  # what the parts reached back into before them
    assert concat_shards([base, alone]) == concat_shards([base, d1, d2])
    whole = concat_shards([base, d1, d2]).views[0]
    counts, postings = index_entries([entry(0, "alpha"), entry(1, "final")])
    assert whole.postings == postings and whole.token_counts == tuple(counts)
    assert whole.replaces == 0 and whole.dropped == ()


def test_entries_fold_as_the_shards_do() -> None:
    def entries_of(view: ShardView) -> SessionEntries:
        ev = EntriesView("active", HASH, view.entries, (), view.replaces)
        return SessionEntries("/s/a.jsonl", "sid", "pi", HASH, "pol", (ev,))

    views = [_view(["a", "b", "c"], 0), _view(["c2", "d"], 2, replaces=1), _view(["e"], 4)]
    fold = EntriesFold()
    for v in views:
        fold.add(entries_of(v).views[0])
    shards = concat_shards([_shard(v) for v in views]).views[0]
    assert tuple(fold.entries) == shards.entries
    assert concat_entries([entries_of(v) for v in views]).views[0].entries == shards.entries


def test_a_fold_keeps_a_base_list_as_stored() -> None:
    base = _view(["alpha beta"], 0)
    odd = replace(base, postings={**base.postings, "zeta": encode_pairs(array("I", [0, 7]))})
    fold = ShardFold()
    fold.add(odd)
    assert fold.postings["zeta"] is odd.postings["zeta"]
