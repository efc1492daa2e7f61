"""One pinned index generation, loaded into structures built for answering queries.

::

    Snapshot(N) ──► Generation
                     ├── session table: by path, by id, by stem, by cwd; sort keys
                     ├── hot(branches)   HotIndex over every hot shard (base + deltas folded:
                     │                   store.deltas, as the pipeline folds them)
                     ├── cold(state, b)  ColdSession: vocabulary blob + compact address columns
                     ├── terms(b)        TermIndex over every cold vocabulary (built on demand)
                     └── entries(state)  complete normalized entries (expand, hydration), LRU

Everything is loaded lazily and kept for the life of the generation, so a long-running
process pays each cost once per generation; a one-shot CLI call pays only for what its
request touches. Records are immutable and named by content, so nothing here is ever
invalidated — a new generation simply gets a new ``Generation``.
"""

from __future__ import annotations

import bisect
import functools
import os
from array import array
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

from query.lexicon import ColdLexicon, ScopePlaces
from query.vocabulary import TermIndex, blob_index
from store.deltas import EntriesFold, ShardFold
from store.errors import CorruptRecord, SchemaVersionError
from store.lexicon import LexiconSegment
from store.names import path_key
from store.reader import Snapshot
from store.records import (
    Address,
    ColdDigest,
    HotShard,
    Manifest,
    NormalizedEntry,
    SessionEntries,
    SessionState,
    SkippedFile,
)
from store.sources import SessionFiles, SourceSpec, session_stem

__all__ = [
    "NO_TIMESTAMP",
    "ColdSession",
    "Generation",
    "HotIndex",
    "RecordUnavailable",
    "ShardData",
    "path_key",
]

NO_TIMESTAMP: Final = -(2**63)
_ENTRIES_CACHE: Final = 8
TERM_INDEX_AMORTIZE: Final = 64
# Address tuple positions of the exact filter fields, in column order.
# 11: family, 12: sidechain mark (absent in older digests, read as None)
FILTER_FIELDS: Final = (3, 4, 6, 7, 8, 9, 11, 12)
_ADDRESS_FIELDS: Final = FILTER_FIELDS[-1] + 1


_R = TypeVar("_R", HotShard, ColdDigest, SessionEntries)


class RecordUnavailable(Exception):
    """A record of this generation cannot be read (collected, or damaged)."""


def order_key(state: SessionState) -> tuple[int, bytes]:
    """Newest first, then path: the order sessions, shards and digests are visited in."""
    return (-state.mtime_ns, path_key(state.path))


# -------------------------------------------------------------------------------------- hot


@dataclass(slots=True)
class ShardData:
    """One session's entries ready for search: display (hot) or complete (hydrated) text."""

    state: SessionState
    entries: tuple[NormalizedEntry, ...]
    token_counts: Sequence[int]
    postings: Mapping[str, bytes]
    complete_text: bool
    dl_sum: int = 0
    # (-mtime_ns, path_key): this session's part of every item's rank key, computed once
    order: tuple[int, bytes] = (0, b"")
    _normalized: list[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.dl_sum = sum(c if c > 0 else 1 for c in self.token_counts)
        self.order = order_key(self.state)

    def dl(self, pos: int) -> int:
        c = self.token_counts[pos]
        return c if c > 0 else 1

    def normalized(self, pos: int) -> str:
        """NFKC-lowercased text of entry *pos*, computed once (phrase matching)."""
        return self.normalized_texts()[pos]

    def normalized_texts(self) -> list[str]:
        """Every entry's NFKC-lowercased text, computed once per shard (phrase matching)."""
        if self._normalized is None:
            from store.tokens import normalize_text

            self._normalized = [normalize_text(e.text) for e in self.entries]
        return self._normalized


class HotIndex:
    """Every shard of one branch mode, and the global term map over their postings.

    ``postings(t)`` lists ``(shard number, posting bytes)`` for every shard whose entries
    contain *t*; the bytes are decoded only by the query that asks. The merged map costs one
    dict operation per (shard, term), which a one-shot call would pay for a handful of terms,
    so until the lookups made through this index add up to that cost, a lookup asks each
    shard's own postings (one dict probe per shard) and the merged map is built after.
    """

    __slots__ = ("_cost", "_merged", "_work", "number", "shards")

    def __init__(self, shards: Sequence[ShardData]) -> None:
        self.shards = list(shards)
        self.number = {s.state.path: i for i, s in enumerate(self.shards)}
        self._merged: dict[str, list[tuple[int, bytes]]] | None = None
        self._cost = sum(len(s.postings) for s in self.shards)
        self._work = 0

    def merge(self) -> None:
        """Build the global term map now (a long-lived engine may warm it up front)."""
        if self._merged is not None:
            return
        merged: dict[str, list[tuple[int, bytes]]] = {}
        for i, shard in enumerate(self.shards):
            for term, data in shard.postings.items():
                chunks = merged.get(term)
                if chunks is None:
                    merged[term] = [(i, data)]
                else:
                    chunks.append((i, data))
        self._merged = merged

    def postings(self, term: str) -> list[tuple[int, bytes]]:
        if self._merged is None:
            self._work += len(self.shards)
            if self._work <= self._cost:
                return [
                    (i, data)
                    for i, shard in enumerate(self.shards)
                    if (data := shard.postings.get(term)) is not None
                ]
            self.merge()
        assert self._merged is not None
        return self._merged.get(term, [])


# ------------------------------------------------------------------------------------- cold


class Interner:
    """Small ints for the strings of address fields (0 is None), shared by a generation."""

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id(self, value: str | None) -> int:
        if value is None:
            return 0
        found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = len(self.ids) + 1
        return found

    def lookup(self, value: str) -> int:
        """The id of *value*, or -1 when no address ever had it."""
        return self.ids.get(value, -1)


_STATS_KEPT: Final = 16


class ColdSession:
    """What recall needs of one cold digest view, read from its record only when asked.

    Rank and presentation need only the session state (the manifest's view summary carries
    the last timestamp). The record is read the first time a structural filter, a
    vocabulary fallback or a regex asks: its addresses become compact columns (interned ids,
    one ``array`` per filter field) and its vocabulary is kept only when no lexicon segment
    covers it — with a lexicon, nothing per term of a digest stays in memory.
    """

    __slots__ = (
        "_branches",
        "_columns",
        "_combined",
        "_count",
        "_counts",
        "_ids",
        "_keep_vocabulary",
        "_load",
        "_stamps",
        "_stats",
        "_vocabulary",
        "entry_count",
        "last_ts",
        "name",
        "order",
        "state",
    )

    def __init__(
        self,
        state: SessionState,
        branches: str,
        ids: Interner,
        load: Callable[[], ColdDigest],
        *,
        keep_vocabulary: bool = True,
    ) -> None:
        self.state = state
        self.name = state.index_record  # the digest record (what a lexicon names)
        view = state.view(branches)
        self.last_ts = view.last_ts
        self.entry_count = view.entry_count
        self.order = order_key(state)
        self._branches = branches
        self._ids = ids
        self._load = load
        self._keep_vocabulary = keep_vocabulary
        self._vocabulary: bytes | None = None
        self._count = -1
        self._columns: tuple[array[int], ...] = ()
        self._stamps = array("q")
        self._counts: dict[tuple[int, int], int] = {}
        # fields filtered together -> count per tuple of their value ids (asked-for only)
        self._combined: dict[tuple[int, ...], Counter[tuple[int, ...]]] | None = None
        # ranking bytes of the terms asked so far (a few per query), so a repeated query
        # reads no record; cleared past _STATS_KEPT terms
        self._stats: dict[bytes, int] = {}

    @property
    def vocabulary(self) -> bytes:
        """The digest's sorted ``\n``-joined terms (raises RecordUnavailable)."""
        if self._vocabulary is not None:
            return self._vocabulary
        view = self._load().view(self._branches)
        if self._count < 0:
            self._columnize(view.addresses)
        if self._keep_vocabulary:
            self._vocabulary = view.vocabulary
        return view.vocabulary

    def term_stats(self, terms: Sequence[bytes]) -> list[int]:
        """The digest's ranking byte of each of *terms* (``store.rankstats``; 0 for a term it
        does not hold or a record without them). Reads the record (raises RecordUnavailable);
        the bytes of the terms asked stay (at most ``_STATS_KEPT``)."""
        known = self._stats
        if all(t in known for t in terms):
            return [known[t] for t in terms]
        view = self._load().view(self._branches)
        if self._count < 0:
            self._columnize(view.addresses)
        blob, stats = view.vocabulary, view.term_stats
        if len(known) + len(terms) > _STATS_KEPT:
            known.clear()
        for term in terms:
            at = blob_index(blob, term)
            known[term] = stats[at] if 0 <= at < len(stats) else 0
        return [known[t] for t in terms]

    @property
    def keeps_vocabulary(self) -> bool:
        return self._keep_vocabulary

    @property
    def address_count(self) -> int:
        self._ensure_columns()
        return self._count

    def _ensure_columns(self) -> None:
        if self._count >= 0:
            return
        view = self._load().view(self._branches)
        if self._keep_vocabulary and self._vocabulary is None:
            self._vocabulary = view.vocabulary
        self._columnize(view.addresses)

    def _columnize(self, addresses: Sequence[Address]) -> None:
        ids = self._ids
        columns = tuple(array("I") for _ in FILTER_FIELDS)
        counts: dict[tuple[int, int], int] = {}
        stamps = array("q")
        for address in addresses:
            if len(address) < _ADDRESS_FIELDS:  # before the family or the sidechain mark
                address = (*address, *[None] * (_ADDRESS_FIELDS - len(address)))  # type: ignore[assignment]
            for col, pos in zip(columns, FILTER_FIELDS, strict=True):
                value = ids.id(address[pos])  # type: ignore[arg-type]
                col.append(value)
                if value:
                    key = (pos, value)
                    counts[key] = counts.get(key, 0) + 1
            ts = address[5]
            stamps.append(NO_TIMESTAMP if ts is None else ts)
        self._columns, self._counts, self._stamps = columns, counts, stamps
        self._count = len(addresses)

    def structural_matches(
        self, exact: Sequence[tuple[int, str | None]], since: int | None, until: int | None
    ) -> int:
        """How many addresses satisfy every exact (field, value) pair and the time bounds (a
        None value: the field is unset)."""
        self._ensure_columns()
        wanted: list[tuple[int, int]] = []
        for pos, value in exact:
            key = (pos, 0 if value is None else self._ids.lookup(value))
            if key[1] and key not in self._counts:
                return 0
            wanted.append(key)
        if since is None and until is None:
            if len(wanted) == 1 and wanted[0][1]:
                return self._counts[wanted[0]]
            if not wanted:
                return self._count
            return self._combination(tuple(pos for pos, _ in wanted))[
                tuple(vid for _, vid in wanted)
            ]
        cols = [(self._columns[FILTER_FIELDS.index(pos)], vid) for pos, vid in wanted]
        low = NO_TIMESTAMP if since is None else since
        high = 2**63 - 1 if until is None else until
        n = 0
        stamps = self._stamps
        for i in range(self._count):
            ts = stamps[i]
            if ts != NO_TIMESTAMP and (ts < low or ts > high):
                continue
            for col, vid in cols:
                if col[i] != vid:
                    break
            else:
                n += 1
        return n

    def covers_every_entry(self, matches: int) -> bool:
        """Are *matches* addresses (a ``structural_matches`` count) every entry of the view?
        Then the filters hold for every entry, and a term the vocabulary holds is held by an
        entry that satisfies them: a lexical and structural claim needs no hydration."""
        self._ensure_columns()
        return matches == self._count == self.state.view(self._branches).entry_count

    def _combination(self, fields: tuple[int, ...]) -> Counter[tuple[int, ...]]:
        """Counts per value tuple of *fields*, counted once (at C speed) the first time
        those fields are filtered together: any values of them are then one lookup."""
        if self._combined is None:
            self._combined = {}
        found = self._combined.get(fields)
        if found is None:
            cols = [self._columns[FILTER_FIELDS.index(pos)] for pos in fields]
            found = self._combined[fields] = Counter(zip(*cols, strict=True))
        return found


# ------------------------------------------------------------------------------- generation


# Moved sessions past which re-sorting everything is cheaper than patching the order.
_PATCH_LIMIT: Final = 256


def _patched_order(
    previous: tuple[list[tuple[int, bytes]], list[SessionState]] | None,
    moved: Sequence[SessionState],
    old: Mapping[str, SessionState],
) -> tuple[list[tuple[int, bytes]], list[SessionState]] | None:
    """The previous newest-first order with each moved session taken out at its old place
    and put in at its new one (an append moves a session to the front), or None."""
    if previous is None or len(moved) > _PATCH_LIMIT:
        return None
    keys, states = list(previous[0]), list(previous[1])
    for s in moved:
        i = bisect.bisect_left(keys, order_key(old[s.path]))
        del keys[i], states[i]
        key = order_key(s)
        j = bisect.bisect_left(keys, key)
        keys.insert(j, key)
        states.insert(j, s)
    return keys, states


_NO_SPEC = SourceSpec()


def _union(specs: Iterable[SourceSpec]) -> SessionFiles:
    patterns = tuple(sorted({p for spec in specs for p in spec.files.patterns}))
    return _files(patterns) if patterns else _NO_SPEC.files


@functools.lru_cache(maxsize=16)
def _files(patterns: tuple[str, ...]) -> SessionFiles:
    # one object per pattern set: its compiled matcher outlives the generations that share it
    return SessionFiles(patterns)


_Table = dict[str, list[SessionState]]
Lookups = tuple[_Table, _Table, _Table]  # by session id, by file stem, by working folder


def _lookup_keys(state: SessionState) -> tuple[str, str, str]:
    """Where *state* is filed in the lookups: its id, its file stem, its working folder."""
    stem = session_stem(os.path.basename(state.path))
    return state.session_id, stem, os.path.normpath(state.cwd) if state.cwd else ""


def _built_lookups(newest_first: Sequence[SessionState]) -> Lookups:
    by_id: _Table = {}
    by_stem: _Table = {}
    by_cwd: _Table = {}
    for s in newest_first:
        session_id, stem, cwd = _lookup_keys(s)
        by_id.setdefault(session_id, []).append(s)
        by_stem.setdefault(stem, []).append(s)
        by_cwd.setdefault(cwd, []).append(s)
    return by_id, by_stem, by_cwd


def _patched_lookups(
    previous: Lookups | None, moved: Sequence[SessionState], old: Mapping[str, SessionState]
) -> Lookups | None:
    """The previous lookups with each moved session taken out of its old lists and put in
    its new ones at its newest-first place (lists of other sessions are shared), or None."""
    if previous is None or len(moved) > _PATCH_LIMIT:
        return None
    tables = tuple(dict(table) for table in previous)
    for s in moved:
        before = old[s.path]
        for table, was, now in zip(tables, _lookup_keys(before), _lookup_keys(s), strict=True):
            # Lists are in order_key order and keys are unique (they hold the path): both
            # places are found by bisection, so a long list costs a copy, not a key each.
            rest = list(table[was])
            i = bisect.bisect_left(rest, order_key(before), key=order_key)
            if i == len(rest) or rest[i] is not before:
                return None  # not where the previous generation put it: rebuild instead
            del rest[i]
            if rest:
                table[was] = rest
            else:
                del table[was]
            into = list(table.get(now, ()))
            bisect.insort(into, s, key=order_key)
            table[now] = into
    by_id, by_stem, by_cwd = tables
    return by_id, by_stem, by_cwd


class Generation:
    """The query side's view of one published generation (see the module docstring)."""

    def __init__(self, snapshot: Snapshot, previous: Generation | None = None) -> None:
        self.snapshot = snapshot
        self.manifest: Manifest = snapshot.manifest
        self.generation = snapshot.generation
        self.sessions: tuple[SessionState, ...] = self.manifest.sessions
        self.by_path: dict[str, SessionState] = {s.path: s for s in self.sessions}
        self.skipped: dict[str, SkippedFile] = {s.path: s for s in self.manifest.skipped}
        # A file name any agent's source counts as a session (folder listings keep these).
        self.session_files = _union(self.manifest.sources.values())
        # Shared by generations with the same indexed and skipped paths (appends only), so
        # what depends on the paths alone (unindexed files in a scope) carries over.
        self.paths_token = object()
        # every session newest first, with its order key: built once, patched when carried
        self._order: tuple[list[tuple[int, bytes]], list[SessionState]] | None = None
        self._lookup: Lookups | None = None
        self._real: dict[str, SessionState] | None = None
        self._ordered: dict[str | None, tuple[SessionState, ...]] = {}
        self._hot: dict[str, HotIndex] = {}
        # Keyed by (path, branches); a hit counts only while the value's state is this
        # generation's state of that path (identity first: unchanged chunks decode once).
        self._shards: dict[tuple[str, str], ShardData] = {}
        # decoded base shards by record name: an append adds a delta, the base stays the same
        self._bases: dict[str, HotShard] = {}
        self._cold: dict[tuple[str, str], ColdSession] = {}
        self._terms: dict[str, tuple[TermIndex, dict[str, int]]] = {}
        self._segments: dict[str, LexiconSegment] = {}
        # the last scope's cold views per branch mode, by the identity of its state list
        self._views: dict[str, tuple[Sequence[SessionState], tuple[ColdSession, ...]]] = {}
        self._places: tuple[tuple[ColdSession, ...], ScopePlaces] | None = None
        self._lexicon: ColdLexicon | None = None
        self._lexicon_read = False
        self._lookups: dict[str, int] = {}
        self._entries: OrderedDict[
            tuple[str, str], tuple[SessionState, tuple[NormalizedEntry, ...]]
        ] = OrderedDict()
        self.ids = Interner()
        if previous is not None:
            self._carry(previous)

    def _carry(self, previous: Generation) -> None:
        """Keep what the previous generation built for sessions that did not change.

        A live pipeline publishes a generation per batch of appends, usually touching one or
        two hot sessions; rebuilding every shard, cold column and the merged cold term index
        for each would put seconds between an append and the next answer. Only what was
        built from the very same SessionState (stamp, hashes, record names) is kept, so a
        changed session is never served from the old one's structures.
        """
        self.ids = previous.ids  # cold columns hold ids of this interner
        by_path = self.by_path
        moved: list[SessionState] | None = None
        if by_path.keys() == previous.by_path.keys() and self.skipped == previous.skipped:
            self.paths_token = previous.paths_token
            old = previous.by_path
            moved = [s for s in self.sessions if old[s.path] is not s]
            self._order = _patched_order(previous._order, moved, old)
            # rebuilt, the lookups cost ~30 ms at 8,000 sessions on the first request
            self._lookup = _patched_lookups(previous._lookup, moved, old)

        def same(path: str, state: SessionState) -> bool:
            now = by_path.get(path)
            return now is state or now == state

        self._shards = {k: v for k, v in previous._shards.items() if same(k[0], v.state)}
        bases = {s.index_record for s in self.sessions if s.tier == "hot"}
        self._bases = {k: v for k, v in previous._bases.items() if k in bases}
        self._cold = {k: v for k, v in previous._cold.items() if same(k[0], v.state)}
        wanted = set(self.manifest.lexicon)
        self._segments = {k: v for k, v in previous._segments.items() if k in wanted}
        if previous.manifest.lexicon != self.manifest.lexicon:
            # a digest's coverage decides whether its ColdSession keeps a vocabulary
            lexicon = self.lexicon()
            covered = lexicon.covered if lexicon is not None else set()
            self._cold = {
                k: v
                for k, v in self._cold.items()
                if v.keeps_vocabulary is (v.state.index_record not in covered)
            }
        for key, value in previous._entries.items():
            if same(key[0], value[0]):
                self._entries[key] = value
        if moved is not None:
            old = previous.by_path
            unchanged_cold = all(s.tier == "hot" and old[s.path].tier == "hot" for s in moved)
        else:
            unchanged_cold = self._cold_key() == previous._cold_key()
        if unchanged_cold and previous.manifest.lexicon == self.manifest.lexicon:
            # same cold views and coverage: the lexicon and the last scope's views hold
            self._lexicon, self._lexicon_read = previous._lexicon, previous._lexicon_read
            self._views, self._places = dict(previous._views), previous._places
        for branches, (index, numbers) in previous._terms.items():
            if unchanged_cold:
                self._terms[branches] = (index, numbers)
            else:
                # the merged index pays for itself again only after as many lookups
                self._lookups[branches] = previous._lookups.get(branches, 0)

    def _cold_key(self) -> tuple[SessionState, ...]:
        return tuple(s for s in self.sessions if s.tier == "cold")

    # -- lookups ----------------------------------------------------------------------------

    def by_realpath(self, real: str) -> SessionState | None:
        """The session whose file resolves to *real* (paths are stored resolved already)."""
        found = self.by_path.get(real)
        if found is not None:
            return found
        if self._real is None:
            self._real = {}
            for s in self.sessions:
                try:
                    self._real[os.path.realpath(s.path)] = s
                except OSError:
                    continue
        return self._real.get(real)

    def roots(self) -> list[Path]:
        return [Path(r) for r in self.manifest.roots.values()]

    def source(self, agent: str) -> SourceSpec:
        """What the manifest records of *agent*'s files (``store.sources``); a manifest
        written before it recorded them gets the default (``*.jsonl``, no project folders)."""
        return self.manifest.sources.get(agent) or _NO_SPEC

    def _newest_first(self) -> list[SessionState]:
        if self._order is None:
            states = sorted(self.sessions, key=order_key)
            self._order = ([order_key(s) for s in states], states)
        return self._order[1]

    def ordered(self, agent: str | None = None) -> tuple[SessionState, ...]:
        """Every session of *agent* (or all), newest first then by path; sorted once."""
        found = self._ordered.get(agent)
        if found is None:
            every = self._newest_first()
            found = self._ordered[agent] = tuple(
                every if agent is None else (s for s in every if s.agent == agent)
            )
        return found

    def _lookups_by(self) -> Lookups:
        """Sessions by id, by file stem and by working folder, each list newest first."""
        if self._lookup is None:
            self._lookup = _built_lookups(self._newest_first())
        return self._lookup

    @property
    def by_id(self) -> dict[str, list[SessionState]]:
        return self._lookups_by()[0]

    @property
    def by_stem(self) -> dict[str, list[SessionState]]:
        return self._lookups_by()[1]

    @property
    def by_cwd(self) -> dict[str, list[SessionState]]:
        return self._lookups_by()[2]

    # -- record loading ---------------------------------------------------------------------

    def _load(self, name: str, kind: type[_R]) -> _R:
        try:
            return self.snapshot.load(name, kind)
        except (CorruptRecord, SchemaVersionError, OSError) as exc:
            raise RecordUnavailable(str(exc)) from exc

    def shard(self, state: SessionState, branches: str) -> ShardData:
        """A hot session's display entries and postings, its delta records appended."""
        key = (state.path, branches)
        found = self._shards.get(key)
        if found is None or (found.state is not state and found.state != state):
            found = self._shards[key] = self._build_shard(state, branches)
        return found

    def _build_shard(self, state: SessionState, branches: str) -> ShardData:
        base = self._bases.get(state.index_record)
        if base is None:
            base = self._bases[state.index_record] = self._load(state.index_record, HotShard)
        fold = ShardFold()
        fold.add(base.view(branches))
        for name in state.index_deltas:
            fold.add(self._load(name, HotShard).view(branches))
        return ShardData(
            state=state,
            entries=tuple(fold.entries),
            token_counts=fold.token_counts,
            postings=fold.postings,
            complete_text=False,
        )

    def hot_shard(self, state: SessionState, branches: str) -> ShardData:
        """One hot session's shard, from the global hot index when that is built already."""
        index = self._hot.get(branches)
        if index is not None:
            number = index.number.get(state.path)
            if number is not None:
                return index.shards[number]
        return self.shard(state, branches)

    def hot(self, branches: str) -> HotIndex:
        """The global hot index of *branches*; a shard that cannot be read is left out."""
        found = self._hot.get(branches)
        if found is None:
            shards: list[ShardData] = []
            for state in self.sessions:
                if state.tier != "hot":
                    continue
                try:
                    shards.append(self.shard(state, branches))
                except RecordUnavailable:
                    continue
            found = self._hot[branches] = HotIndex(shards)
        return found

    def cold(self, state: SessionState, branches: str) -> ColdSession:
        """A cold session's view; its digest record is read only when something needs it."""
        key = (state.path, branches)
        found = self._cold.get(key)
        if found is None or (found.state is not state and found.state != state):
            lexicon = self.lexicon()
            name = state.index_record
            found = self._cold[key] = ColdSession(
                state,
                branches,
                self.ids,
                lambda: self._load(name, ColdDigest),
                keep_vocabulary=lexicon is None or name not in lexicon.covered,
            )
        return found

    def cold_views(self, states: Sequence[SessionState], branches: str) -> tuple[ColdSession, ...]:
        """The cold views of *states*; a long-lived engine asked for the very same (memoized)
        scope again gets the same tuple without visiting every session."""
        hit = self._views.get(branches)
        # a carried memo holds the previous generation's list: equal element by element
        # (identity first) when the scope's cold sessions did not move
        if hit is not None and (hit[0] is states or hit[0] == states):
            return hit[1]
        out = tuple(self.cold(s, branches) for s in states)
        self._views[branches] = (states, out)
        return out

    def cold_places(self, views: tuple[ColdSession, ...]) -> ScopePlaces | None:
        """Where each of *views* sits for this generation's lexicon (None without one); kept
        for the last scope asked (by identity)."""
        lexicon = self.lexicon()
        if lexicon is None:
            return None
        if self._places is not None and self._places[0] is views:
            return self._places[1]
        places = ScopePlaces(views, lexicon)
        self._places = (views, places)
        return places

    def lexicon(self) -> ColdLexicon | None:
        """The generation's cold lexicon, or None (none written, or a segment unreadable:
        then every digest answers from its own vocabulary, as before lexicons existed)."""
        if self._lexicon_read:
            return self._lexicon
        self._lexicon_read = True
        names = self.manifest.lexicon
        if not names:
            return None
        segments: list[LexiconSegment] = []
        for name in names:
            found = self._segments.get(name)
            if found is None:
                try:
                    path = self.snapshot.layout.record_path(name)
                    found = self._segments[name] = LexiconSegment(path)
                except (CorruptRecord, SchemaVersionError, OSError, ValueError):
                    return None
            segments.append(found)
        live = {s.index_record for s in self.sessions if s.tier != "hot"}
        self._lexicon = ColdLexicon(segments, live)
        return self._lexicon

    def terms(self, branches: str) -> tuple[TermIndex, dict[str, int]]:
        """The merged cold term index of *branches* and the digest number of each path."""
        found = self._terms.get(branches)
        if found is None:
            numbers: dict[str, int] = {}
            blobs: list[bytes] = []
            for state in self.sessions:
                if state.tier != "cold":
                    continue
                try:
                    vocabulary = self.cold(state, branches).vocabulary
                except RecordUnavailable:
                    continue
                numbers[state.path] = len(blobs)
                blobs.append(vocabulary)
            found = self._terms[branches] = (TermIndex(blobs), numbers)
        return found

    def want_terms(self, branches: str, lookups: int) -> bool:
        """Whether to answer *lookups* (digest × term) vocabulary checks from the merged index.

        Building it costs about as much as some fifty binary searches per cold digest, so it
        is built once the searches done in this generation would have paid for it: a one-shot
        CLI call never builds it, a long-lived engine does after a few broad queries.
        """
        if branches in self._terms:
            return True
        done = self._lookups.get(branches, 0) + lookups
        self._lookups[branches] = done
        cold = sum(1 for s in self.sessions if s.tier != "hot")
        return done > TERM_INDEX_AMORTIZE * max(cold, 1)

    def warm(self, branches: str = "active") -> None:
        """Build every shared structure now (a long-lived process, between requests)."""
        self.hot(branches).merge()
        if self.lexicon() is None:
            self.terms(branches)

    def entries(self, state: SessionState, branches: str) -> tuple[NormalizedEntry, ...]:
        """The complete normalized entries of one view (SessionEntries + its deltas)."""
        key = (state.path, branches)
        cached = self._entries.get(key)
        if cached is not None and (cached[0] is state or cached[0] == state):
            self._entries.move_to_end(key)
            return cached[1]
        fold = EntriesFold()
        fold.add(self._load(state.entries_record, SessionEntries).view(branches))
        for name in state.entries_deltas:
            fold.add(self._load(name, SessionEntries).view(branches))
        found = tuple(fold.entries)
        self._entries[key] = (state, found)
        while len(self._entries) > _ENTRIES_CACHE:
            self._entries.popitem(last=False)
        return found
