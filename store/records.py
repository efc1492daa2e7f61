"""Typed records: everything the index keeps on disk, and its wire form.

Every record is a frozen dataclass whose fields declare their wire form (``store.schema``):
``to_wire()`` gives a msgpack-ready list in field order and ``from_wire()`` reads one back.
Field order is the on-disk contract: append new fields at the end with a new ``since`` and
bump ``SCHEMA_VERSION`` when the meaning of an existing one changes.

Record kinds and who writes them::

    SourceEvent      journal        watcher     a file appended / rewritten / deleted
    SessionEntries   records/       digest      complete normalized entries of one session
    HotShard         records/       digest      display entries + BM25 postings (hot tier)
    ColdDigest       records/       digest      vocabulary + structural addresses (cold tier)
    SessionState     manifest row   pipeline    stamp, hashes, tier, record names, coverage
    SessionChunk     records/       writer      a slice of one generation's SessionStates
    (lexicon)        records/       pipeline    term -> cold digests, many at once (store.lexicon)
    Manifest         manifests/     pipeline    one generation: every SessionState

Names follow Python style here; the seed's camelCase names appear only in query results.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from store.names import AGENTS, BRANCH_MODES, SIDECHAIN, TOOL_FAMILIES
from store.schema import (
    ROWS,
    SCHEMA_VERSION,
    SORTED,
    SORTED_MAP,
    TUPLE,
    Wired,
    nested_map,
    nested_tuple,
    wire,
    wired,
)
from store.sources import SourceSpec

__all__ = [
    "AGENTS",
    "BRANCH_MODES",
    "SCHEMA_VERSION",
    "SIDECHAIN",
    "Address",
    "ColdDigest",
    "ColdView",
    "EntriesView",
    "HotShard",
    "Manifest",
    "NormalizedEntry",
    "SessionChunk",
    "SessionEntries",
    "SessionState",
    "ShardView",
    "SkippedFile",
    "TOOL_FAMILIES",
    "SourceEvent",
    "ViewSummary",
    "session_records",
]


@wired
@dataclass(frozen=True, slots=True)
class NormalizedEntry(Wired):
    """One searchable record of a session, as the seed's ``NormalizedEntry``.

    ``index`` is dense within one branch mode's view. ``text`` is complete in
    ``SessionEntries`` and cut to ``maxEntryChars`` Unicode scalars in ``HotShard``
    (``truncated`` says so). ``line``/``offset`` locate the carrier record in the source
    (1-based line, byte offset of the line start); child records share their carrier's.
    ``family`` is the kind of tool (``TOOL_FAMILIES``) of an entry with a tool;
    ``context_edited`` is ``omitted`` or ``replaced`` when a later Pi ``context_edit`` took the
    entry out of the model's context (the entry keeps its raw text).
    """

    index: int
    entry_id: str | None
    parent_id: str | None
    type: str
    role: str | None
    tool: str | None
    text: str
    timestamp: int | None
    is_error: bool
    truncated: bool
    line: int
    offset: int
    agent: str = "pi"
    parent_entry_id: str | None = None
    operation_address: str | None = None
    ref: str | None = None
    provider: str | None = None
    action: str | None = None
    outcome: str | None = None
    files_touched: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    operation: dict[str, Any] | None = None
    branch_fact: dict[str, Any] | None = None
    fact_address: str | None = None
    carrier_entry_id: str | None = None
    carrier_parent_id: str | None = None
    carrier_from_id: str | None = None
    sidechain: bool = False
    # Written only when set (any of them), so an entry without them keeps its 27 fields, its
    # bytes and its record's name. A subagent's entries: its id and the parent's tool call
    # that spawned it, when known.
    agent_id: str | None = field(default=None, metadata=wire(since=2, omit=True))
    parent_call_id: str | None = field(default=None, metadata=wire(since=2, omit=True))
    family: str | None = field(default=None, metadata=wire(since=2, omit=True))
    context_edited: str | None = field(default=None, metadata=wire(since=2, omit=True))
    # Credentials redacted from this entry (store.redact), in text order: (kind, fingerprint),
    # never the value. Written only when set, so other entries keep their bytes.
    redactions: tuple[tuple[str, str], ...] = field(
        default=(), metadata=wire(ROWS, since=3, omit=True)
    )


# (index, entry_id, operation_address, role, tool, timestamp, ref, provider, action, outcome,
#  is_error, family, sidechain) -- the seed's structural address tuple plus is_error, the tool
# family and SIDECHAIN for a subagent's entry (None for the session's own). Digests written
# before the family have 11 fields, before the sidechain mark 12.
Address = tuple[
    int,
    str | None,
    str | None,
    str | None,
    str | None,
    int | None,
    str | None,
    str | None,
    str | None,
    str | None,
    bool,
    str | None,
    str | None,
]


@wired
@dataclass(frozen=True, slots=True)
class ViewSummary(Wired):
    """What the manifest knows of one branch mode of a session without opening a record."""

    branches: str
    lineage_fingerprint: str
    leaf_id: str | None
    entry_count: int
    reasons: tuple[str, ...] = field(metadata=wire(TUPLE))
    first_ts: int | None
    last_ts: int | None


@wired
@dataclass(frozen=True, slots=True)
class EntriesView(Wired):
    """One branch mode's complete normalized entries (read by expand and hydration).

    In a delta record, ``replaces`` is how many of the entries read before it (base and
    earlier deltas, in order) its own entries take the place of: a reply continued on a new
    line, or a tool call whose result arrived, changes entries already stored.
    """

    branches: str
    lineage_fingerprint: str
    entries: tuple[NormalizedEntry, ...] = field(metadata=wire(nested_tuple(NormalizedEntry)))
    reasons: tuple[str, ...] = field(metadata=wire(TUPLE))
    # Only when set: every other record keeps the bytes (and the name) it always had.
    replaces: int = field(default=0, metadata=wire(since=2, omit=True))


@wired
@dataclass(frozen=True, slots=True)
class SessionEntries(Wired):
    """Complete normalized entries of one session, one view per distinct branch mode.

    ``views`` holds ``active`` first; an ``all`` view is present only when it differs from
    ``active`` (most sessions never branch, and then ``all`` reads the ``active`` view).
    """

    path: str
    session_id: str
    agent: str
    source_hash: str
    policy: str
    views: tuple[EntriesView, ...] = field(metadata=wire(nested_tuple(EntriesView)))

    def view(self, branches: str) -> EntriesView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]


@wired
@dataclass(frozen=True, slots=True)
class ShardView(Wired):
    """One branch mode of a hot session, ready for BM25 without re-tokenizing.

    ``entries`` carry display text (cut to ``maxEntryChars``); ``token_counts[i]`` is the
    length of entry i's *complete* text; ``postings`` maps each term of the complete
    texts to a little-endian uint32 array of ``(entry position, tf)`` pairs in entry order.
    Both lengths and tfs pack a prose and a plumbing field, by best passage (store.rankstats).

    In a delta record, ``replaces`` is how many entries read before it this delta's entries
    take the place of (as in ``EntriesView``), and ``dropped`` holds every term of those
    replaced entries: a reader cuts their postings at the first replaced position.
    """

    branches: str
    lineage_fingerprint: str
    entries: tuple[NormalizedEntry, ...] = field(metadata=wire(nested_tuple(NormalizedEntry)))
    token_counts: tuple[int, ...] = field(metadata=wire(TUPLE))
    postings: dict[str, bytes] = field(metadata=wire(SORTED_MAP))
    reasons: tuple[str, ...] = field(metadata=wire(TUPLE))
    # as in EntriesView: other records keep their bytes
    replaces: int = field(default=0, metadata=wire(since=2, omit=True))
    dropped: tuple[str, ...] = field(default=(), metadata=wire(SORTED, since=2, omit=True))


@wired
@dataclass(frozen=True, slots=True)
class HotShard(Wired):
    path: str
    session_id: str
    agent: str
    cwd: str
    source_hash: str
    policy: str
    views: tuple[ShardView, ...] = field(metadata=wire(nested_tuple(ShardView)))

    def view(self, branches: str) -> ShardView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]


@wired
@dataclass(frozen=True, slots=True)
class ColdView(Wired):
    """One branch mode of a cold session: the seed's digest fields.

    ``vocabulary`` is the sorted (by UTF-8 bytes) unique canonical terms joined by ``\\n``
    (a token never contains ``\\n``), kept as one bytes blob so a reader can search it without
    materializing a Python string per term.
    """

    branches: str
    lineage_fingerprint: str
    entry_count: int
    first_ts: int | None
    last_ts: int | None
    files_touched: tuple[str, ...] = field(metadata=wire(TUPLE))
    tool_histogram: tuple[tuple[str, int], ...] = field(metadata=wire(ROWS))
    error_count: int
    vocabulary: bytes
    vocabulary_bytes: int
    # Digests written before the family have 11 fields per address, before the sidechain 12.
    addresses: tuple[Address, ...] = field(metadata=wire(ROWS))
    reasons: tuple[str, ...] = field(metadata=wire(TUPLE))
    # one byte per vocabulary term, in vocabulary order (store.rankstats: prose bit, entry
    # count bucket); shorter than the vocabulary only in records written before it existed
    term_stats: bytes = field(default=b"", metadata=wire(since=2))


@wired
@dataclass(frozen=True, slots=True)
class ColdDigest(Wired):
    path: str
    session_id: str
    agent: str
    cwd: str
    source_hash: str
    policy: str
    views: tuple[ColdView, ...] = field(metadata=wire(nested_tuple(ColdView)))

    def view(self, branches: str) -> ColdView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]


@wired
@dataclass(frozen=True, slots=True)
class SessionState(Wired):
    """One session as of one generation: what it was, where its records are, how complete.

    The stamp (dev, inode, size, mtime_ns, ctime_ns) is how a reader notices a stale
    session without hashing it; ``source_hash`` is blake3 of the first ``size`` bytes.

    Appends that extend the active leaf do not rewrite the base records: each adds one delta
    record to ``index_deltas`` (a HotShard holding only the appended entries, indices
    continuing the base's) and one to ``entries_deltas`` (a SessionEntries likewise). A delta
    whose line changed the last few stored entries (a reply continued, a call's result) says
    how many it replaces (``ShardView.replaces``). A reader takes base + deltas in order,
    cutting before each replacing one; ``views`` and ``source_hash`` here describe the whole.
    A background merge folds the deltas back into new base records.
    """

    path: str
    agent: str
    session_id: str
    cwd: str
    parent_session: str | None
    dev: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    source_hash: str
    tier: str
    index_record: str
    index_bytes: int
    entries_record: str
    entries_bytes: int
    views: tuple[ViewSummary, ...] = field(metadata=wire(nested_tuple(ViewSummary)))
    sidechain: bool = False
    index_deltas: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    entries_deltas: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    # Only when set: older rows keep their bytes (and chunk names).
    # (writer version, record type, count) of every line, item or content-block type the
    # adapter does not know (``stages.drift``); the version is "" when the file names none.
    unknown_records: tuple[tuple[str, str, int], ...] = field(
        default=(), metadata=wire(ROWS, since=2, omit=True)
    )
    # What the archive holds of these bytes (store.archive): "" nothing (keep is off), "kept"
    # exactly them, "archived" the source is gone and the session is read from the archive,
    # "archive_full" not (all) of them: the cap was reached.
    archive: str = field(default="", metadata=wire(since=3, omit=True))
    # The session's title as its agent recorded it in a typed field (a user-set name wins
    # over one the agent generated; the latest of a kind wins): ``stages.titles``. None when
    # the agent recorded none, and in every record written before the field existed.
    title: str | None = field(default=None, metadata=wire(since=4, omit=True))

    @property
    def archived(self) -> bool:
        """True when the source is gone and the session lives on from the archive."""
        return self.archive == "archived"

    @property
    def stamp(self) -> tuple[int, int, int, int, int]:
        """(dev, inode, size, mtime_ns, ctime_ns): equal to a live stat's means unchanged."""
        return (self.dev, self.inode, self.size, self.mtime_ns, self.ctime_ns)

    def view(self, branches: str) -> ViewSummary:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]


@wired
@dataclass(frozen=True, slots=True)
class SessionChunk(Wired):
    """A slice of a generation's sessions, stored as a content-addressed record.

    The writer spreads a manifest's sessions over a fixed number of chunks by a hash of the
    path, so an append that changes one session rewrites one small chunk and a manifest of
    chunk names instead of every session's row.
    """

    sessions: tuple[SessionState, ...] = field(metadata=wire(nested_tuple(SessionState)))


@wired
@dataclass(frozen=True, slots=True)
class SkippedFile(Wired):
    """An eligible-looking file that is not indexed, with the reason (e.g. unreadable)."""

    path: str
    agent: str
    reason: str


@wired
@dataclass(frozen=True, slots=True)
class Manifest(Wired):
    """One generation of the index: every session and the records that make it up.

    ``sessions`` is sorted by path. ``roots`` maps agent to the resolved root directory the
    generation was built from; ``policy`` is the config fingerprint the records honour.
    ``reasons`` are index-wide coverage reasons (e.g. a work budget reached). On disk the
    sessions live in ``SessionChunk`` records named by ``chunks`` (and ``sessions`` is empty);
    a reader puts them back, so in memory ``sessions`` is always the whole list. ``lexicon``
    names the cold lexicon segments (``store.lexicon``) that cover its cold digests.
    ``sources`` holds, per agent, the facts of its adapter the query side reads folders by
    (``store.sources``); a manifest written before it existed has none, and then the query
    side lists no unindexed files.
    """

    generation: int
    created_ns: int
    policy: str
    roots: dict[str, str] = field(metadata=wire(SORTED_MAP))
    hot_sessions: int
    sessions: tuple[SessionState, ...] = field(metadata=wire(nested_tuple(SessionState)))
    skipped: tuple[SkippedFile, ...] = field(default=(), metadata=wire(nested_tuple(SkippedFile)))
    reasons: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    chunks: tuple[str, ...] = field(default=(), metadata=wire(TUPLE, since=2))
    lexicon: tuple[str, ...] = field(default=(), metadata=wire(TUPLE, since=2))
    # Only when set: a manifest without source facts keeps the bytes it always had.
    sources: dict[str, SourceSpec] = field(
        default_factory=dict, metadata=wire(nested_map(SourceSpec), since=3, omit=True)
    )

    def records(self) -> set[str]:
        """Every record file name this generation references (its chunks included)."""
        return set(self.chunks) | set(self.lexicon) | session_records(self.sessions)


def session_records(sessions: Iterable[SessionState]) -> set[str]:
    """The record file names *sessions* reference (base records and deltas)."""
    names: set[str] = set()
    for s in sessions:
        names.add(s.index_record)
        names.add(s.entries_record)
        names.update(s.index_deltas)
        names.update(s.entries_deltas)
    return names


@wired
@dataclass(frozen=True, slots=True)
class SourceEvent(Wired):
    """A change the watcher saw: ``kind`` is ``append``, ``rewrite`` or ``delete``.

    ``start``/``end`` are the byte range to parse for an append (``start`` = previously
    indexed size); for a rewrite ``start`` is 0. ``position`` is assigned by the journal.
    """

    kind: str
    path: str
    agent: str
    dev: int
    inode: int
    size: int
    mtime_ns: int
    start: int
    end: int
    observed_ns: int
    position: int = -1
    extra: dict[str, Any] = field(default_factory=dict)
