"""Delta records: what an append adds to a session's index, and how deltas fold together.

A delta is an ordinary ``HotShard`` plus ``SessionEntries`` holding only the appended entries:
``index`` values continue the base's, postings positions count from the delta's own first
entry, and view reasons and fingerprints describe the whole session as of that delta. A reader
(and ``concat_*`` here) takes base + deltas in order::

    base shard  [e0 … e999]   postings "foo" → (3, 1)
    delta 1     [e1000 e1001] postings "foo" → (1, 2)        ── concat ──►  "foo" → (3,1) (1001,2)

A record's ``source_hash`` is the file's hash as of the last line it holds; appended blank or
half-written lines move only the ``SessionState``'s, which is the one to compare with a file.

Deltas are compacted in tiers so their number stays small without rewriting the base: when
``fanout`` deltas of the same level end the list they fold into one delta of the next level, so
each appended byte is rewritten about log_fanout(appends) times until the base merge.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import replace

from store.postings import decode_pairs, encode_pairs
from store.records import EntriesView, HotShard, NormalizedEntry, SessionEntries, ShardView

__all__ = ["concat_entries", "concat_shards"]


def concat_shards(shards: Sequence[HotShard]) -> HotShard:
    """One shard equal to *shards* read in order; identity and reasons from the last.

    A part that replaces entries cuts what came before it first. When the fold starts at a
    base the result replaces nothing; a fold of deltas alone replaces what its parts reached
    back into before it, and drops every term its parts dropped (cutting a term that had no
    posting there changes nothing).
    """
    last = shards[-1]
    views = []
    for head in last.views:
        entries: list[NormalizedEntry] = []
        counts: list[int] = []
        merged: dict[str, array[int]] = {}
        dropped: set[str] = set()
        reach = 0
        for part in (s.view(head.branches) for s in shards):
            if part.replaces:
                cut, reach = _cut(len(entries), part.replaces, reach)
                del entries[cut:], counts[cut:]
                for term in part.dropped:
                    pairs = merged.get(term)
                    if pairs is not None and not _trim(pairs, cut):
                        del merged[term]
                dropped.update(part.dropped)
            offset = len(entries)
            for term, raw in part.postings.items():
                pairs = decode_pairs(raw)
                if offset:
                    for i in range(0, len(pairs), 2):
                        pairs[i] += offset
                found = merged.get(term)
                if found is None:
                    merged[term] = pairs
                else:
                    found.extend(pairs)
            entries.extend(part.entries)
            counts.extend(part.token_counts)
        views.append(
            ShardView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=tuple(entries),
                token_counts=tuple(counts),
                postings={term: encode_pairs(p) for term, p in sorted(merged.items())},
                reasons=head.reasons,
                replaces=reach,
                dropped=tuple(sorted(dropped)) if reach else (),
            )
        )
    return replace(last, views=tuple(views))


def concat_entries(records: Sequence[SessionEntries]) -> SessionEntries:
    """One SessionEntries equal to *records* read in order (replacing as ``concat_shards``)."""
    last = records[-1]
    views = []
    for head in last.views:
        entries: list[NormalizedEntry] = []
        reach = 0
        for part in (r.view(head.branches) for r in records):
            if part.replaces:
                cut, reach = _cut(len(entries), part.replaces, reach)
                del entries[cut:]
            entries.extend(part.entries)
        views.append(
            EntriesView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=tuple(entries),
                reasons=head.reasons,
                replaces=reach,
            )
        )
    return replace(last, views=tuple(views))


def _cut(held: int, replaces: int, reach: int) -> tuple[int, int]:
    """Where a part replacing *replaces* entries cuts the *held* ones, and how far the fold
    now reaches back before its own start."""
    if replaces > held:
        return 0, reach + replaces - held
    return held - replaces, reach


def _trim(pairs: array[int], cut: int) -> int:
    """Drop the pairs at positions from *cut* on (they end the list); the pairs left."""
    n = len(pairs)
    while n and pairs[n - 2] >= cut:
        n -= 2
    del pairs[n:]
    return n
