"""Delta records: what an append adds to a session's index, and how records fold together.

The one fold of the index, used by both sides: the pipeline compacts deltas and the query
side reads a hot session (``ShardFold``) or its complete entries (``EntriesFold``) through it.

A delta is an ordinary ``HotShard`` plus ``SessionEntries`` holding only the appended entries:
``index`` values continue the base's, postings positions count from the delta's own first
entry, and view reasons and fingerprints describe the whole session as of that delta. A reader
takes base + deltas in order::

    base shard  [e0 … e999]   postings "foo" → (3, 1)
    delta 1     [e1000 e1001] postings "foo" → (1, 2)        ── fold ──►  "foo" → (3,1) (1001,2)

A delta that *replaces* the last entries read before it (a reply continued on a new line)
cuts them first, and the postings of every term it ``dropped`` at the first replaced position.

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

from store.postings import shift_pairs, trim_pairs
from store.records import EntriesView, HotShard, NormalizedEntry, SessionEntries, ShardView

__all__ = ["EntriesFold", "ShardFold", "concat_entries", "concat_shards"]


class _Fold:
    """Entries read part by part (a base, then its deltas in order; or deltas alone).
    ``reach`` is how many entries before its first part the fold replaces."""

    __slots__ = ("entries", "reach")

    def __init__(self) -> None:
        self.entries: list[NormalizedEntry] = []
        self.reach = 0

    def _take(self, entries: Sequence[NormalizedEntry], replaces: int) -> int:
        """Cut the *replaces* last entries read, append *entries*; where they begin."""
        cut = len(self.entries)
        if replaces:
            cut, self.reach = _cut(cut, replaces, self.reach)
            del self.entries[cut:]
        self.entries.extend(entries)
        return cut


class EntriesFold(_Fold):
    """The complete entries of one branch view, folded."""

    __slots__ = ()

    def add(self, part: EntriesView) -> None:
        self._take(part.entries, part.replaces)


class ShardFold(_Fold):
    """One branch view of a hot shard, folded: entries, token counts and postings. Posting
    bytes stay as stored; only a delta's own lists are decoded (to move them behind what
    came before) and the lists it cuts."""

    __slots__ = ("dropped", "postings", "token_counts")

    def __init__(self) -> None:
        super().__init__()
        self.token_counts: array[int] = array("I")
        self.postings: dict[str, bytes] = {}
        self.dropped: set[str] = set()

    def add(self, part: ShardView) -> None:
        cut = self._take(part.entries, part.replaces)
        postings = self.postings
        if part.replaces:
            del self.token_counts[cut:]
            for term in part.dropped:
                data = postings.get(term)
                if data is not None:
                    if kept := trim_pairs(data, cut):
                        postings[term] = kept
                    else:
                        del postings[term]
            self.dropped.update(part.dropped)
        self.token_counts.extend(part.token_counts)
        if not cut and not postings:  # the first part (a base): its lists as they are
            self.postings = dict(part.postings)
            return
        for term, data in part.postings.items():
            moved = shift_pairs(data, cut)
            found = postings.get(term)
            postings[term] = moved if found is None else found + moved


def concat_shards(shards: Sequence[HotShard]) -> HotShard:
    """One shard equal to *shards* read in order; identity and reasons from the last.

    When the fold starts at a base the result replaces nothing; a fold of deltas alone
    replaces what its parts reached back into before it, and drops every term its parts
    dropped (cutting a term that had no posting there changes nothing).
    """
    last = shards[-1]
    views = []
    for head in last.views:
        fold = ShardFold()
        for s in shards:
            fold.add(s.view(head.branches))
        views.append(
            ShardView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=tuple(fold.entries),
                token_counts=tuple(fold.token_counts),
                postings=dict(sorted(fold.postings.items())),
                reasons=head.reasons,
                replaces=fold.reach,
                dropped=tuple(sorted(fold.dropped)) if fold.reach else (),
            )
        )
    return replace(last, views=tuple(views))


def concat_entries(records: Sequence[SessionEntries]) -> SessionEntries:
    """One SessionEntries equal to *records* read in order (replacing as ``concat_shards``)."""
    last = records[-1]
    views = []
    for head in last.views:
        fold = EntriesFold()
        for r in records:
            fold.add(r.view(head.branches))
        views.append(
            EntriesView(
                branches=head.branches,
                lineage_fingerprint=head.lineage_fingerprint,
                entries=tuple(fold.entries),
                reasons=head.reasons,
                replaces=fold.reach,
            )
        )
    return replace(last, views=tuple(views))


def _cut(held: int, replaces: int, reach: int) -> tuple[int, int]:
    """Where a part replacing *replaces* entries cuts the *held* ones, and how far the fold
    now reaches back before its own start."""
    if replaces > held:
        return 0, reach + replaces - held
    return held - replaces, reach
