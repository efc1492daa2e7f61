"""The append path: extend a session's index by the lines appended to its file.

::

    HotSession (kept in memory by the worker that owns the session)
      hasher over [0, size)   consumed, next_line   Tail: node table, active path, seen ids
            │
    new bytes [consumed, end) ─► parse (base_offset=consumed, first_line=next_line)
            ─► tail reader: the agent adapter over the new records, positions continuing
            ─► lineage: every new node chains off the current leaf, in order (else: None)
            ─► normalize the new records only; indices continue the base's
            ─► digest: one delta HotShard + one delta SessionEntries (a ``Delta``)
            ─► SessionState: new stamp, source_hash, summaries; delta names appended

``extend`` returns None whenever the result would differ from indexing the whole file again
(a branch switch, a repeated id, a record whose entry depends on earlier ones); the caller then
reprocesses the session whole. Only formats whose adapter has a ``tail`` (Pi's, version 2 or
later) have a tail reader: their records carry their own ids and parents and their normalizer
is a function of each record alone, except for branch-summary facts (de-duplicated across
carriers), which are declined. Claude Code threads replies and tool results across lines and
Codex pairs calls with outputs: their appends go through ``stages.rederive`` (every stage
rerun in memory over the parsed session, only the new entries stored) while their parsed
records are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import blake3

from stages.agents import adapter
from stages.built import Built
from stages.digest import SessionFold, ViewInput, build_entries, build_shard
from stages.drift import versioned
from stages.lineage import Lineage, fingerprint
from stages.normalize import empty_reasons, normalize
from stages.normalized import NormalizeResult
from stages.parse import parse
from stages.policy import Policy
from stages.rederive import Rederive, carry_cut, parsed_state, rederive
from stages.source import ParseResult, RawRecord, SourceRecord, SourceSession
from stages.tier import HOT
from stages.titles import LATEST_NAMES, TITLE_KINDS
from store.reasons import (
    BRIDGED_PARENT,
    DANGLING_PARENT,
    DUPLICATE_ENTRY_ID,
    DUPLICATE_OPERATION_ADDRESS,
    MAX_ENTRY_CHARS,
    PARTIAL_LINE,
    RECORD_REASONS,
)
from store.records import HotShard, NormalizedEntry, SessionEntries, SessionState, ViewSummary

__all__ = [
    "Appended",
    "Delta",
    "HotSession",
    "Tail",
    "ViewTrack",
    "asks_sidecar",
    "commit",
    "extend",
    "hot_session",
    "waiting",
]

Stamp = tuple[int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Delta:
    """One stored delta pair (folded by ``store.deltas``) and how many appends it folds (its
    tier)."""

    shard: HotShard
    entries: SessionEntries
    shard_name: str
    entries_name: str
    bytes: int
    level: int = 0


@dataclass(slots=True)
class ViewTrack:
    """What the append path needs of one branch mode's entries so far."""

    branches: str
    selected: list[int]
    count: int
    entry_ids: set[str]
    addresses: set[str]


@dataclass(slots=True)
class Tail:
    """A tail-read session's shape (``Adapter.tail``), enough to extend it without reading
    it again."""

    header: RawRecord
    records: int
    nodes: dict[str, int]
    parents: dict[str, str | None]
    leaf_id: str | None
    path_ids: list[str]
    lineage_reasons: tuple[str, ...]
    active: ViewTrack
    all: ViewTrack

    @property
    def two_views(self) -> bool:
        return self.all is not self.active


@dataclass(slots=True)
class HotSession:
    """A session as the worker last indexed it. Appends extend it through ``tail`` (Pi's
    format) or
    ``rederive`` (the others, while kept in memory); with neither they rebuild it whole."""

    state: SessionState
    hasher: Any  # blake3.blake3: copy() it before extending, so a refusal leaves it intact
    consumed: int
    next_line: int
    tail: Tail | None
    deltas: list[Delta] = field(default_factory=list)
    rederive: Rederive | None = None
    # the whole build read a last line without its newline (settled): appends rebuild whole
    tail_taken: bool = False

    @property
    def delta_bytes(self) -> int:
        return sum(d.bytes for d in self.deltas)


@dataclass(frozen=True, slots=True)
class Appended:
    """What ``extend`` made: the new state, the delta records to store (None when the new
    bytes held no complete line) and the hot-session fields to commit once they are stored."""

    state: SessionState
    shard: HotShard | None
    entries: SessionEntries | None
    hasher: Any
    consumed: int
    next_line: int
    # what the tail path learnt (unused on the other paths)
    new_ids: dict[str, list[str]] = field(default_factory=dict)
    new_addresses: dict[str, list[str]] = field(default_factory=dict)
    new_selected: dict[str, list[int]] = field(default_factory=dict)
    new_records: int = 0
    new_nodes: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    leaf_id: str | None = None
    path_ids: list[str] = field(default_factory=list)
    # the parsed session after this append (the in-memory path)
    rederive: Rederive | None = None


def hot_session(built: Built, data: bytes, *, keep_parsed: bool = False) -> HotSession:
    """The hot state of a session just indexed whole from *data*; *keep_parsed* keeps its
    parsed records when it has no tail reader (memory for a cheaper append path)."""
    hasher = blake3.blake3()
    hasher.update(data)
    # A last line read without its newline is read again by the next whole build, which
    # neither incremental path could do without counting it twice.
    tail = None if built.tail_taken else _tail(built)
    parsed = None
    if tail is None and keep_parsed and built.state.tier == HOT and not built.tail_taken:
        parsed = parsed_state(built.session.agent, data, built.views, built.meta)
    # A pretty-printed object still open at the end is withheld like a partial line.
    return HotSession(
        state=built.state,
        hasher=hasher,
        consumed=min(data.rfind(b"\n") + 1, built.consumed),
        next_line=min(data.count(b"\n") + 1, built.next_line),
        tail=tail,
        rederive=parsed,
        tail_taken=built.tail_taken,
    )


def _tail(built: Built) -> Tail | None:
    session = built.session
    tail = adapter(session.agent).tail
    if built.state.tier != HOT or tail is None or session.header is None or not tail.ready(session):
        return None
    nodes: dict[str, int] = {}
    parents: dict[str, str | None] = {}
    for r in session.records:
        if r.id is not None and not r.sidechain:
            nodes[r.id] = r.position
            parents[r.id] = r.parent_id
    views = {v.branches: v for v in built.views}
    active_view, all_view = views["active"], views["all"]
    active = _track(active_view)
    two = all_view.lineage.selected != active_view.lineage.selected
    return Tail(
        header=RawRecord(1, 0, session.header),
        records=len(session.records),
        nodes=nodes,
        parents=parents,
        leaf_id=active_view.lineage.leaf_id,
        path_ids=list(active_view.lineage.path_ids),
        lineage_reasons=active_view.lineage.reasons,
        active=active,
        all=_track(all_view) if two else active,
    )


def _track(view: ViewInput) -> ViewTrack:
    entries = view.normalized.entries
    return ViewTrack(
        branches=view.branches,
        selected=list(view.lineage.selected),
        count=len(entries),
        entry_ids={e.entry_id for e in entries if e.entry_id is not None},
        addresses={e.operation_address for e in entries if e.operation_address is not None},
    )


def commit(hot: HotSession, appended: Appended, delta: Delta | None) -> None:
    """Fold a stored append into the hot state."""
    hot.state = appended.state
    hot.hasher = appended.hasher
    hot.consumed = appended.consumed
    hot.next_line = appended.next_line
    if delta is not None:
        hot.deltas.append(delta)
    if appended.rederive is not None:
        hot.rederive = appended.rederive
    tail = hot.tail
    if tail is None or appended.shard is None:
        return
    tracks = [tail.active, tail.all] if tail.two_views else [tail.active]
    for track in tracks:
        track.selected.extend(appended.new_selected[track.branches])
        track.entry_ids.update(appended.new_ids[track.branches])
        track.addresses.update(appended.new_addresses[track.branches])
        track.count += len(appended.shard.view(track.branches).entries)
    tail.records += appended.new_records
    for node_id, (position, parent_id) in appended.new_nodes.items():
        tail.nodes[node_id] = position
        tail.parents[node_id] = parent_id
    tail.leaf_id = appended.leaf_id
    tail.path_ids = appended.path_ids


def asks_sidecar(hot: HotSession) -> bool:
    """Whether ``extend`` must be told if a subagent sidecar exists now: a session appended
    in memory that was built without one (the caller looks; a stage reads no file)."""
    return hot.tail is None and hot.rederive is not None and hot.rederive.meta is None


def extend(
    hot: HotSession,
    data: bytes,
    stamp: Stamp,
    policy: Policy,
    *,
    expected_hash: str | None,
    sidecar: bool = False,
) -> Appended | None:
    """Extend *hot* by ``data``, the file's bytes from ``hot.consumed`` on (its tail already
    indexed, then the new ones), as described by *stamp*. *sidecar* says whether a subagent
    sidecar exists now (the caller looks only when ``asks_sidecar``).

    Returns None when the bytes do not hash to *expected_hash* (the file changed since the
    watcher looked) or when only a whole reprocess gives the exact result.
    """
    state = hot.state
    end = hot.consumed + len(data)
    if end <= state.size or hot.tail_taken:
        return None  # a last line read without its newline is read again by a whole build
    hasher = hot.hasher.copy()
    hasher.update(data[state.size - hot.consumed :])
    source_hash = hasher.hexdigest()
    if expected_hash is not None and source_hash != expected_hash:
        return None
    parsed = parse(data, base_offset=hot.consumed, first_line=hot.next_line)
    dev, ino, _, mtime_ns, ctime_ns = stamp
    moved = replace(
        state,
        dev=dev,
        inode=ino,
        size=end,
        mtime_ns=mtime_ns,
        ctime_ns=ctime_ns,
        source_hash=source_hash,
    )
    consumed = hot.consumed + parsed.consumed
    if not parsed.records and not parsed.malformed_lines:
        # Only blank lines or a half-written one: the state moves, the records do not.
        return Appended(waiting(moved, parsed.withheld), None, None, hasher, consumed,
                        parsed.next_line)  # fmt: skip
    if hot.tail is not None:
        found = _extend_tail(hot.tail, parsed, moved, policy, hasher, consumed)
        return (
            None if found is None else replace(found, state=waiting(found.state, parsed.withheld))
        )
    if hot.rederive is None:
        return None
    if hot.rederive.meta is None and sidecar:
        return None  # a subagent's sidecar appeared after the build: only a whole build reads it
    again = rederive(hot.rederive, parsed, moved, policy, new_bytes=end - state.size)
    if again is None:
        return None
    return Appended(
        waiting(
            replace(moved, views=again.views, unknown_records=again.unknown, title=again.title),
            parsed.withheld,
        ),
        again.shard,
        again.entries,
        hasher,
        consumed,
        parsed.next_line,
        rederive=again.rederive,
    )


def waiting(state: SessionState, withheld: bool) -> SessionState:
    """*state* whose summaries say ``partial_line`` exactly when its last line is *withheld*.

    Only the summaries (what an answer's coverage reads) carry it, never a record: whether a
    line waits moves with every append, also one that adds no record."""
    views = tuple(replace(v, reasons=_with(v.reasons, PARTIAL_LINE, withheld)) for v in state.views)
    return state if views == state.views else replace(state, views=views)


def _with(reasons: tuple[str, ...], reason: str, present: bool) -> tuple[str, ...]:
    rest = [r for r in reasons if r != reason]
    return tuple(sorted([*rest, reason])) if present else tuple(rest)


def _extend_tail(
    tail: Tail,
    parsed: ParseResult,
    state: SessionState,
    policy: Policy,
    hasher: Any,
    consumed: int,
) -> Appended | None:
    """The tail path: *state* is the session's state with its stamp and hash moved."""
    session = _read_tail(tail, parsed, state)
    if session is None:
        return None
    chain = _chain(tail, session.records)
    if chain is None:
        return None
    leaf_id, walked, positions = chain
    new_active = sorted(positions)
    new_all = [r.position for r in session.records]
    if not tail.two_views and new_active != new_all:
        return None  # the views would split: `all` would need every earlier entry too
    path_ids = tail.path_ids + walked if leaf_id != tail.leaf_id else tail.path_ids
    selected = {"active": new_active, "all": new_all}
    tracks = [tail.active, tail.all] if tail.two_views else [tail.active]
    results: dict[str, NormalizeResult] = {}
    for track in tracks:
        result = _normalize_tail(session, track, selected[track.branches], policy)
        if result is None:
            return None
        results[track.branches] = result
    if not tail.two_views:
        results["all"] = results["active"]
    summaries = {v.branches: v for v in state.views}
    extra_reasons = set(session.reasons)
    # Record reasons (the display cut) belong on shards and summaries, not on entries.
    new_reasons = {
        b: empty_reasons(
            # whether a last line waits is the new bytes' to say (``extra_reasons``)
            (set(summaries[b].reasons) - RECORD_REASONS - {PARTIAL_LINE})
            | extra_reasons
            | set(results[b].reasons),
            summaries[b].entry_count + len(results[b].entries),
        )
        for b in ("active", "all")
    }
    lineages = {
        "active": Lineage(
            "active",
            leaf_id,
            tuple(path_ids),
            tuple(tail.active.selected + new_active),
            fingerprint("active", leaf_id, path_ids),
            tail.lineage_reasons,
        ),
        "all": Lineage(
            "all",
            None,
            (),
            tuple(tail.all.selected + new_all),
            fingerprint("all", None, ()),
            (),
        ),
    }
    views = [
        ViewInput(
            lineages[b],
            NormalizeResult(results[b].entries, tuple(sorted(new_reasons[b]))),
        )
        for b in ("active", "all")
    ]
    fold = SessionFold.of(
        session, path=state.path, source_hash=state.source_hash, policy=policy, file_reasons=()
    )
    shard = carry_cut(build_shard(fold, views, policy), summaries)
    entries = build_entries(fold, views)
    new_views = tuple(
        _summary(summaries[v.branches], lineages[v.branches], results[v.branches].entries,
                 new_reasons[v.branches], shard)
        for v in state.views
    )  # fmt: skip
    unknown = versioned(session.writer_version, session.unknown, state.unknown_records)
    named = any(r.kind in LATEST_NAMES for r in session.records)
    title = session.title if named else state.title
    return Appended(
        state=replace(state, views=new_views, unknown_records=unknown, title=title),
        shard=shard,
        entries=entries,
        hasher=hasher,
        consumed=consumed,
        next_line=parsed.next_line,
        new_ids={b: _ids(results[b].entries) for b in ("active", "all")},
        new_addresses={b: _addresses(results[b].entries) for b in ("active", "all")},
        new_selected=selected,
        new_records=len(session.records),
        new_nodes={
            r.id: (r.position, r.parent_id)
            for r in session.records
            if r.id is not None and not r.sidechain
        },
        leaf_id=leaf_id,
        path_ids=path_ids,
    )


def _read_tail(tail: Tail, parsed: ParseResult, state: SessionState) -> SourceSession | None:
    """The new records as the agent's adapter reads them after the session's own header,
    or None when they are not for the tail path."""
    with_header = ParseResult(
        records=(tail.header, *parsed.records),
        consumed=parsed.consumed,
        next_line=parsed.next_line,
        malformed_lines=parsed.malformed_lines,
        repaired_lines=parsed.repaired_lines,
        withheld=parsed.withheld,
        oversized_lines=parsed.oversized_lines,
    )
    found = adapter(state.agent)
    session = found.read(with_header, state.path)
    if found.tail is None or not found.tail.ready(session) or not found.tail.local(session):
        return None
    if not session.records:
        return None
    if any(r.kind in TITLE_KINDS - LATEST_NAMES for r in session.records):
        return None  # the title weighs the whole file's: a whole build carries it
    records = tuple(replace(r, position=r.position + tail.records) for r in session.records)
    return replace(session, records=records)


def _chain(
    tail: Tail, records: Sequence[SourceRecord]
) -> tuple[str | None, list[str], list[int]] | None:
    """The new leaf, the new path ids (root side first) and their positions when the new
    nodes extend the active path from its leaf; None for anything a whole lineage pass must
    decide."""
    added: dict[str, SourceRecord] = {}
    leaf_id = tail.leaf_id
    for r in records:
        if r.id is None or r.sidechain:
            continue
        if r.id in tail.nodes or r.id in added:
            return None  # a repeated id re-points every link to it
        added[r.id] = r
        if r.leaf_candidate:
            leaf_id = r.id
    if _brings_missing_parent(tail, added):
        return None
    if leaf_id == tail.leaf_id:
        return leaf_id, [], []
    assert leaf_id is not None
    walked = [leaf_id]
    current = added[leaf_id]
    while True:
        parent = current.parent_id
        if parent is None or parent == walked[-1]:
            if tail.leaf_id is None:
                break  # the first node of a session that had none: a new root
            return None
        if parent == tail.leaf_id:
            break
        if parent not in added or parent in walked:
            return None  # a branch off an older node, a dangling parent or a cycle
        walked.append(parent)
        current = added[parent]
    walked.reverse()
    return leaf_id, walked, [added[i].position for i in walked]


def _brings_missing_parent(tail: Tail, added: Mapping[str, SourceRecord]) -> bool:
    """Whether a new node is the parent a node of the active path named but the file did not
    hold yet (a child written before its parent): the path was bridged or cut there, and a
    whole lineage pass now walks through the parent instead (issue 22, item 5)."""
    if BRIDGED_PARENT not in tail.lineage_reasons and DANGLING_PARENT not in tail.lineage_reasons:
        return False
    parents = tail.parents
    nodes = tail.nodes
    return any(
        (parent := parents.get(node)) is not None and parent not in nodes and parent in added
        for node in tail.path_ids
    )


def _normalize_tail(
    session: SourceSession, track: ViewTrack, selected: list[int], policy: Policy
) -> NormalizeResult | None:
    lineage = Lineage(track.branches, None, (), tuple(selected), "", ())
    result = normalize(session, lineage, policy, whole=False)
    reasons = set(result.reasons)
    entries: list[NormalizedEntry] = []
    ids: set[str] = set()
    addresses: set[str] = set()
    for e in result.entries:
        if e.fact_address is not None:
            return None  # facts are de-duplicated against every earlier carrier
        if e.entry_id is not None:
            if e.entry_id in track.entry_ids or e.entry_id in ids:
                reasons.add(DUPLICATE_ENTRY_ID)
            ids.add(e.entry_id)
        if e.operation_address is not None:
            if e.operation_address in track.addresses or e.operation_address in addresses:
                reasons.add(DUPLICATE_OPERATION_ADDRESS)
            addresses.add(e.operation_address)
        entries.append(replace(e, index=e.index + track.count))
    return NormalizeResult(tuple(entries), tuple(sorted(reasons)))


def _summary(
    old: ViewSummary,
    lineage: Lineage,
    added: Sequence[NormalizedEntry],
    reasons: set[str],
    shard: HotShard,
) -> ViewSummary:
    stamps = [e.timestamp for e in added if e.timestamp is not None]
    if old.first_ts is not None:
        stamps.append(old.first_ts)
    if old.last_ts is not None:
        stamps.append(old.last_ts)
    if MAX_ENTRY_CHARS in shard.view(old.branches).reasons:
        reasons = reasons | {MAX_ENTRY_CHARS}
    return ViewSummary(
        branches=old.branches,
        lineage_fingerprint=lineage.fingerprint,
        leaf_id=lineage.leaf_id,
        entry_count=old.entry_count + len(added),
        reasons=tuple(sorted(reasons)),
        first_ts=min(stamps) if stamps else None,
        last_ts=max(stamps) if stamps else None,
    )


def _ids(entries: Sequence[NormalizedEntry]) -> list[str]:
    return [e.entry_id for e in entries if e.entry_id is not None]


def _addresses(entries: Sequence[NormalizedEntry]) -> list[str]:
    return [e.operation_address for e in entries if e.operation_address is not None]
