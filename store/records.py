"""Typed records: everything the index keeps on disk, and its wire form.

Every record is a frozen dataclass with ``to_wire()`` (a msgpack-ready list in a fixed field
order) and a named constructor ``from_wire()``. Field order is the on-disk contract: append new
fields at the end and bump ``SCHEMA_VERSION`` when the meaning of an existing one changes.

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

SCHEMA_VERSION = 1

Wire = list[Any]


@dataclass(frozen=True, slots=True)
class NormalizedEntry:
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
    files_touched: tuple[str, ...] = ()
    operation: dict[str, Any] | None = None
    branch_fact: dict[str, Any] | None = None
    fact_address: str | None = None
    carrier_entry_id: str | None = None
    carrier_parent_id: str | None = None
    carrier_from_id: str | None = None
    sidechain: bool = False
    # a subagent's entries: its id and the parent's tool call that spawned it, when known
    agent_id: str | None = None
    parent_call_id: str | None = None
    family: str | None = None
    context_edited: str | None = None
    # Credentials redacted from this entry (store.redact), in text order: (kind, fingerprint),
    # never the value. Written only when set, so other entries keep their bytes.
    redactions: tuple[tuple[str, str], ...] = ()

    def to_wire(self) -> Wire:
        wire: list[Any] = [
            self.index,
            self.entry_id,
            self.parent_id,
            self.type,
            self.role,
            self.tool,
            self.text,
            self.timestamp,
            self.is_error,
            self.truncated,
            self.line,
            self.offset,
            self.agent,
            self.parent_entry_id,
            self.operation_address,
            self.ref,
            self.provider,
            self.action,
            self.outcome,
            list(self.files_touched),
            self.operation,
            self.branch_fact,
            self.fact_address,
            self.carrier_entry_id,
            self.carrier_parent_id,
            self.carrier_from_id,
            self.sidechain,
        ]
        # Only when set: an entry without them keeps the 27 fields, bytes and record names it
        # had. Fields 27-30 are the subagent marks, family and context edit; 31 the redactions.
        marks = (self.agent_id, self.parent_call_id, self.family, self.context_edited)
        if self.redactions or any(marks):
            wire.extend(marks)
        if self.redactions:
            wire.append([list(r) for r in self.redactions])
        return wire

    @classmethod
    def from_wire(cls, w: Wire) -> NormalizedEntry:
        marks = w[27:31] if len(w) > 27 else [None] * 4
        redactions = tuple((r[0], r[1]) for r in w[31]) if len(w) > 31 else ()
        return cls(
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12],
            w[13], w[14], w[15], w[16], w[17], w[18], tuple(w[19]), w[20], w[21], w[22], w[23],
            w[24], w[25], w[26], marks[0], marks[1], marks[2], marks[3], redactions,
        )  # fmt: skip


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


@dataclass(frozen=True, slots=True)
class ViewSummary:
    """What the manifest knows of one branch mode of a session without opening a record."""

    branches: str
    lineage_fingerprint: str
    leaf_id: str | None
    entry_count: int
    reasons: tuple[str, ...]
    first_ts: int | None
    last_ts: int | None

    def to_wire(self) -> Wire:
        return [
            self.branches,
            self.lineage_fingerprint,
            self.leaf_id,
            self.entry_count,
            list(self.reasons),
            self.first_ts,
            self.last_ts,
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> ViewSummary:
        return cls(w[0], w[1], w[2], w[3], tuple(w[4]), w[5], w[6])


@dataclass(frozen=True, slots=True)
class EntriesView:
    """One branch mode's complete normalized entries (read by expand and hydration).

    In a delta record, ``replaces`` is how many of the entries read before it (base and
    earlier deltas, in order) its own entries take the place of: a reply continued on a new
    line, or a tool call whose result arrived, changes entries already stored.
    """

    branches: str
    lineage_fingerprint: str
    entries: tuple[NormalizedEntry, ...]
    reasons: tuple[str, ...]
    replaces: int = 0

    def to_wire(self) -> Wire:
        wire: list[Any] = [
            self.branches,
            self.lineage_fingerprint,
            [e.to_wire() for e in self.entries],
            list(self.reasons),
        ]
        # Only when set: every other record keeps the bytes (and the name) it always had.
        return [*wire, self.replaces] if self.replaces else wire

    @classmethod
    def from_wire(cls, w: Wire) -> EntriesView:
        return cls(
            w[0],
            w[1],
            tuple(NormalizedEntry.from_wire(e) for e in w[2]),
            tuple(w[3]),
            w[4] if len(w) > 4 else 0,
        )


@dataclass(frozen=True, slots=True)
class SessionEntries:
    """Complete normalized entries of one session, one view per distinct branch mode.

    ``views`` holds ``active`` first; an ``all`` view is present only when it differs from
    ``active`` (most sessions never branch, and then ``all`` reads the ``active`` view).
    """

    path: str
    session_id: str
    agent: str
    source_hash: str
    policy: str
    views: tuple[EntriesView, ...]

    def view(self, branches: str) -> EntriesView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]

    def to_wire(self) -> Wire:
        return [
            self.path,
            self.session_id,
            self.agent,
            self.source_hash,
            self.policy,
            [v.to_wire() for v in self.views],
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> SessionEntries:
        return cls(w[0], w[1], w[2], w[3], w[4], tuple(EntriesView.from_wire(v) for v in w[5]))


@dataclass(frozen=True, slots=True)
class ShardView:
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
    entries: tuple[NormalizedEntry, ...]
    token_counts: tuple[int, ...]
    postings: dict[str, bytes]
    reasons: tuple[str, ...]
    replaces: int = 0
    dropped: tuple[str, ...] = ()

    def to_wire(self) -> Wire:
        wire: list[Any] = [
            self.branches,
            self.lineage_fingerprint,
            [e.to_wire() for e in self.entries],
            list(self.token_counts),
            dict(sorted(self.postings.items())),
            list(self.reasons),
        ]
        if self.replaces:  # as in EntriesView: other records keep their bytes
            wire += [self.replaces, sorted(self.dropped)]
        return wire

    @classmethod
    def from_wire(cls, w: Wire) -> ShardView:
        return cls(
            w[0],
            w[1],
            tuple(NormalizedEntry.from_wire(e) for e in w[2]),
            tuple(w[3]),
            w[4],
            tuple(w[5]),
            w[6] if len(w) > 6 else 0,
            tuple(w[7]) if len(w) > 7 else (),
        )


@dataclass(frozen=True, slots=True)
class HotShard:
    path: str
    session_id: str
    agent: str
    cwd: str
    source_hash: str
    policy: str
    views: tuple[ShardView, ...]

    def view(self, branches: str) -> ShardView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]

    def to_wire(self) -> Wire:
        return [
            self.path,
            self.session_id,
            self.agent,
            self.cwd,
            self.source_hash,
            self.policy,
            [v.to_wire() for v in self.views],
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> HotShard:
        return cls(w[0], w[1], w[2], w[3], w[4], w[5], tuple(ShardView.from_wire(v) for v in w[6]))


@dataclass(frozen=True, slots=True)
class ColdView:
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
    files_touched: tuple[str, ...]
    tool_histogram: tuple[tuple[str, int], ...]
    error_count: int
    vocabulary: bytes
    vocabulary_bytes: int
    addresses: tuple[Address, ...]
    reasons: tuple[str, ...]
    # one byte per vocabulary term, in vocabulary order (store.rankstats: prose bit, entry
    # count bucket); shorter than the vocabulary only in records written before it existed
    term_stats: bytes = b""

    def to_wire(self) -> Wire:
        return [
            self.branches,
            self.lineage_fingerprint,
            self.entry_count,
            self.first_ts,
            self.last_ts,
            list(self.files_touched),
            [list(p) for p in self.tool_histogram],
            self.error_count,
            self.vocabulary,
            self.vocabulary_bytes,
            [list(a) for a in self.addresses],
            list(self.reasons),
            self.term_stats,
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> ColdView:
        return cls(
            w[0],
            w[1],
            w[2],
            w[3],
            w[4],
            tuple(w[5]),
            tuple((k, n) for k, n in w[6]),
            w[7],
            w[8],
            w[9],
            tuple(tuple(a) for a in w[10]),
            tuple(w[11]),
            w[12] if len(w) > 12 else b"",
        )


@dataclass(frozen=True, slots=True)
class ColdDigest:
    path: str
    session_id: str
    agent: str
    cwd: str
    source_hash: str
    policy: str
    views: tuple[ColdView, ...]

    def view(self, branches: str) -> ColdView:
        for v in self.views:
            if v.branches == branches:
                return v
        return self.views[0]

    def to_wire(self) -> Wire:
        return [
            self.path,
            self.session_id,
            self.agent,
            self.cwd,
            self.source_hash,
            self.policy,
            [v.to_wire() for v in self.views],
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> ColdDigest:
        return cls(w[0], w[1], w[2], w[3], w[4], w[5], tuple(ColdView.from_wire(v) for v in w[6]))


@dataclass(frozen=True, slots=True)
class SessionState:
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
    views: tuple[ViewSummary, ...]
    sidechain: bool = False
    index_deltas: tuple[str, ...] = ()
    entries_deltas: tuple[str, ...] = ()
    # (writer version, record type, count) of every line, item or content-block type the
    # adapter does not know (``stages.drift``); the version is "" when the file names none.
    unknown_records: tuple[tuple[str, str, int], ...] = ()
    # What the archive holds of these bytes (store.archive): "" nothing (keep is off), "kept"
    # exactly them, "archived" the source is gone and the session is read from the archive,
    # "archive_full" not (all) of them: the cap was reached.
    archive: str = ""

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

    def to_wire(self) -> Wire:
        return [
            self.path,
            self.agent,
            self.session_id,
            self.cwd,
            self.parent_session,
            self.dev,
            self.inode,
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.source_hash,
            self.tier,
            self.index_record,
            self.index_bytes,
            self.entries_record,
            self.entries_bytes,
            [v.to_wire() for v in self.views],
            self.sidechain,
            list(self.index_deltas),
            list(self.entries_deltas),
            # Only when set: older rows keep their bytes (and chunk names).
            *(
                [[list(u) for u in self.unknown_records]]
                if self.unknown_records or self.archive
                else []
            ),
            *([self.archive] if self.archive else []),
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> SessionState:
        return cls(
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12],
            w[13], w[14], w[15], tuple(ViewSummary.from_wire(v) for v in w[16]), w[17],
            tuple(w[18]), tuple(w[19]),
            tuple((v, t, n) for v, t, n in w[20]) if len(w) > 20 else (),
            w[21] if len(w) > 21 else "",
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class SessionChunk:
    """A slice of a generation's sessions, stored as a content-addressed record.

    The writer spreads a manifest's sessions over a fixed number of chunks by a hash of the
    path, so an append that changes one session rewrites one small chunk and a manifest of
    chunk names instead of every session's row.
    """

    sessions: tuple[SessionState, ...]

    def to_wire(self) -> Wire:
        return [[s.to_wire() for s in self.sessions]]

    @classmethod
    def from_wire(cls, w: Wire) -> SessionChunk:
        return cls(tuple(SessionState.from_wire(s) for s in w[0]))


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """An eligible-looking file that is not indexed, with the reason (e.g. unreadable)."""

    path: str
    agent: str
    reason: str

    def to_wire(self) -> Wire:
        return [self.path, self.agent, self.reason]

    @classmethod
    def from_wire(cls, w: Wire) -> SkippedFile:
        return cls(w[0], w[1], w[2])


@dataclass(frozen=True, slots=True)
class Manifest:
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
    roots: dict[str, str]
    hot_sessions: int
    sessions: tuple[SessionState, ...]
    skipped: tuple[SkippedFile, ...] = ()
    reasons: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()
    lexicon: tuple[str, ...] = ()
    sources: dict[str, SourceSpec] = field(default_factory=dict)

    def to_wire(self) -> Wire:
        return [
            self.generation,
            self.created_ns,
            self.policy,
            dict(sorted(self.roots.items())),
            self.hot_sessions,
            [s.to_wire() for s in self.sessions],
            [s.to_wire() for s in self.skipped],
            list(self.reasons),
            list(self.chunks),
            list(self.lexicon),
            # Only when set: a manifest without source facts keeps the bytes it always had.
            *([{a: spec.to_wire() for a, spec in sorted(self.sources.items())}]
              if self.sources else []),
        ]  # fmt: skip

    @classmethod
    def from_wire(cls, w: Wire) -> Manifest:
        return cls(
            w[0],
            w[1],
            w[2],
            dict(w[3]),
            w[4],
            tuple(SessionState.from_wire(s) for s in w[5]),
            tuple(SkippedFile.from_wire(s) for s in w[6]),
            tuple(w[7]),
            tuple(w[8]) if len(w) > 8 else (),
            tuple(w[9]) if len(w) > 9 else (),
            {a: SourceSpec.from_wire(spec) for a, spec in dict(w[10]).items()}
            if len(w) > 10
            else {},
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


@dataclass(frozen=True, slots=True)
class SourceEvent:
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

    def to_wire(self) -> Wire:
        return [
            self.kind,
            self.path,
            self.agent,
            self.dev,
            self.inode,
            self.size,
            self.mtime_ns,
            self.start,
            self.end,
            self.observed_ns,
            self.position,
            self.extra,
        ]

    @classmethod
    def from_wire(cls, w: Wire) -> SourceEvent:
        return cls(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11])
