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

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace

from store.records import EntriesView, HotShard, SessionEntries, ShardView

__all__ = ["Delta", "concat_entries", "concat_shards"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One stored delta pair and how many appends it folds (its tier)."""

    shard: HotShard
    entries: SessionEntries
    shard_name: str
    entries_name: str
    bytes: int
    level: int = 0


def concat_shards(shards: Sequence[HotShard]) -> HotShard:
    """One shard equal to *shards* read in order; identity and reasons from the last."""
    last = shards[-1]
    views = []
    for head in last.views:
        parts = [s.view(head.branches) for s in shards]
        entries = tuple(e for p in parts for e in p.entries)
        token_counts = tuple(n for p in parts for n in p.token_counts)
        views.append(
            ShardView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=entries,
                token_counts=token_counts,
                postings=_concat_postings(parts),
                reasons=head.reasons,
            )
        )
    return replace(last, views=tuple(views))


def concat_entries(records: Sequence[SessionEntries]) -> SessionEntries:
    """One SessionEntries equal to *records* read in order."""
    last = records[-1]
    views = []
    for head in last.views:
        entries = tuple(e for r in records for e in r.view(head.branches).entries)
        views.append(
            EntriesView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=entries,
                reasons=head.reasons,
            )
        )
    return replace(last, views=tuple(views))


def _concat_postings(parts: Sequence[ShardView]) -> dict[str, bytes]:
    merged: dict[str, array[int]] = {}
    offset = 0
    for part in parts:
        for term, raw in part.postings.items():
            pairs = _pairs(raw)
            if offset:
                for i in range(0, len(pairs), 2):
                    pairs[i] += offset
            found = merged.get(term)
            if found is None:
                merged[term] = pairs
            else:
                found.extend(pairs)
        offset += len(part.entries)
    return {term: _le(pairs) for term, pairs in sorted(merged.items())}


def _pairs(raw: bytes) -> array[int]:
    pairs = array("I")
    pairs.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover - postings are little-endian on disk
        pairs.byteswap()
    return pairs


def _le(pairs: array[int]) -> bytes:
    if sys.byteorder == "big":  # pragma: no cover
        pairs = array("I", pairs)
        pairs.byteswap()
    return pairs.tobytes()
