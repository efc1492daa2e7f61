"""Typed views of the seed's result objects, for Python callers (``query.client``).

Every class is a frozen dataclass with snake_case fields and a ``from_dict`` constructor, and
keeps the object it was read from as ``raw`` (the exact JSON the CLI prints), so code can use
attributes where it wants types and the dict where it wants to pass a result on. A call token
is a ``Call``; ``Call.to_dict()`` is what ``follow`` / ``next`` hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Call",
    "Catalog",
    "CatalogAgent",
    "CatalogHead",
    "CatalogProvider",
    "Coverage",
    "Entry",
    "EntryHit",
    "ExpandPage",
    "Hit",
    "RecallPage",
    "ResultError",
    "SessionHit",
    "SessionCounts",
    "SessionList",
    "SessionRow",
    "TextRange",
    "WalkResult",
    "parse_result",
]


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A call token: pass it to ``Memory.call`` (or its ``args`` to the action it names)."""

    ref: str
    args: Mapping[str, Any]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Call:
        return cls(str(d["ref"]), dict(d.get("args", {})))

    @classmethod
    def maybe(cls, d: Mapping[str, Any] | None) -> Call | None:
        return None if d is None else cls.from_dict(d)

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "args": dict(self.args)}


@dataclass(frozen=True, slots=True)
class ResultError:
    """An answered failure (``stale_pointer``, ``ambiguous_session``, …) with its details."""

    code: str
    message: str
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResultError:
        return cls(str(d.get("code", "")), str(d.get("message", "")), d)

    @classmethod
    def maybe(cls, d: Mapping[str, Any] | None) -> ResultError | None:
        return None if d is None else cls.from_dict(d)


@dataclass(frozen=True, slots=True)
class Coverage:
    complete: bool
    indexed_sessions: int
    eligible_sessions: int
    stale_sessions: int
    incomplete_sessions: int
    reasons: tuple[str, ...]
    error: ResultError | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Coverage:
        return cls(
            complete=bool(d.get("complete")),
            indexed_sessions=int(d.get("indexedSessions", 0)),
            eligible_sessions=int(d.get("eligibleSessions", 0)),
            stale_sessions=int(d.get("staleSessions", 0)),
            incomplete_sessions=int(d.get("incompleteSessions", 0)),
            reasons=tuple(d.get("reasons", ())),
            error=ResultError.maybe(d.get("error")),
        )


# ------------------------------------------------------------------------------------ recall


@dataclass(frozen=True, slots=True)
class EntryHit:
    """One exact entry of a hot (or resolved) session; ``follow`` expands it."""

    session_id: str
    tier: str
    index: int
    entry_id: str | None
    parent_id: str | None
    operation_address: str | None
    type: str
    role: str | None
    tool: str | None
    ref: str | None
    provider: str | None
    action: str | None
    outcome: str | None
    timestamp: int | None
    is_error: bool
    score: float
    snippet: str
    truncated: bool
    follow: Call
    raw: Mapping[str, Any] = _raw()
    kind: str = "entry"
    sidechain: bool = False
    agent_id: str | None = None
    parent_tool_call_id: str | None = None
    family: str | None = None
    archived: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EntryHit:
        return cls(
            session_id=d["sessionId"],
            tier=d["tier"],
            index=d["index"],
            entry_id=d.get("entryId"),
            parent_id=d.get("parentId"),
            operation_address=d.get("operationAddress"),
            type=d.get("type", "entry"),
            role=d.get("role"),
            tool=d.get("tool"),
            ref=d.get("ref"),
            provider=d.get("provider"),
            action=d.get("action"),
            outcome=d.get("outcome"),
            timestamp=d.get("timestamp"),
            is_error=bool(d.get("isError")),
            score=d.get("score", 0),
            snippet=d.get("snippet", ""),
            truncated=bool(d.get("truncated")),
            follow=Call.from_dict(d["follow"]),
            family=d.get("family"),
            raw=d,
            sidechain=bool(d.get("sidechain")),
            agent_id=d.get("agentId"),
            parent_tool_call_id=d.get("parentToolCallId"),
            archived=bool(d.get("archived")),
        )


@dataclass(frozen=True, slots=True)
class SessionHit:
    """A cold session candidate; ``follow`` recalls inside that session for exact entries."""

    session_id: str
    tier: str
    cwd: str
    last_timestamp: int | None
    score: float
    matched_terms: int
    matched_structural_entries: int
    follow: Call
    raw: Mapping[str, Any] = _raw()
    kind: str = "session"
    archived: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SessionHit:
        return cls(
            session_id=d["sessionId"],
            tier=d.get("tier", "cold"),
            cwd=d.get("cwd", ""),
            last_timestamp=d.get("lastTimestamp"),
            score=d.get("score", 0),
            matched_terms=d.get("matchedTerms", 0),
            matched_structural_entries=d.get("matchedStructuralEntries", 0),
            follow=Call.from_dict(d["follow"]),
            raw=d,
            archived=bool(d.get("archived")),
        )


Hit = EntryHit | SessionHit


@dataclass(frozen=True, slots=True)
class RecallPage:
    total: int
    hits: tuple[Hit, ...]
    next: Call | None
    coverage: Coverage
    error: ResultError | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RecallPage:
        hits: list[Hit] = [
            EntryHit.from_dict(h) if h.get("kind") == "entry" else SessionHit.from_dict(h)
            for h in d.get("hits", ())
        ]
        return cls(
            total=d.get("total", 0),
            hits=tuple(hits),
            next=Call.maybe(d.get("next")),
            coverage=Coverage.from_dict(d.get("coverage", {})),
            error=ResultError.maybe(d.get("error")),
            raw=d,
        )


# ------------------------------------------------------------------------------------ expand


@dataclass(frozen=True, slots=True)
class TextRange:
    """Where ``text`` sits in the entry's complete text, in UTF-16 code units."""

    start: int
    end: int
    total: int
    complete: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TextRange:
        return cls(d["start"], d["end"], d["total"], bool(d["complete"]))


@dataclass(frozen=True, slots=True)
class Entry:
    """One expanded entry (or, inside ``walk``, one complete reassembled entry)."""

    index: int
    entry_id: str | None
    parent_id: str | None
    type: str
    role: str | None
    timestamp: int | None
    is_error: bool
    text: str
    text_range: TextRange
    anchor: bool | None = None
    parent_entry_id: str | None = None
    operation_address: str | None = None
    tool: str | None = None
    ref: str | None = None
    provider: str | None = None
    action: str | None = None
    outcome: str | None = None
    files_touched: tuple[str, ...] = ()
    operation: Mapping[str, Any] | None = None
    branch_fact: Mapping[str, Any] | None = None
    structured_truncated: bool = False
    fact_address: str | None = None
    carrier_entry_id: str | None = None
    carrier_parent_id: str | None = None
    carrier_from_id: str | None = None
    raw: Mapping[str, Any] = _raw()
    sidechain: bool = False
    agent_id: str | None = None
    parent_tool_call_id: str | None = None
    family: str | None = None
    context_edited: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Entry:
        return cls(
            index=d["index"],
            entry_id=d.get("entryId"),
            parent_id=d.get("parentId"),
            type=d.get("type", ""),
            role=d.get("role"),
            timestamp=d.get("timestamp"),
            is_error=bool(d.get("isError")),
            text=d.get("text", ""),
            text_range=TextRange.from_dict(d["textRange"]),
            anchor=d.get("anchor"),
            parent_entry_id=d.get("parentEntryId"),
            operation_address=d.get("operationAddress"),
            tool=d.get("tool"),
            ref=d.get("ref"),
            provider=d.get("provider"),
            action=d.get("action"),
            outcome=d.get("outcome"),
            files_touched=tuple(d.get("filesTouched", ())),
            operation=d.get("operation"),
            branch_fact=d.get("branchFact"),
            structured_truncated=bool(d.get("structuredTruncated")),
            fact_address=d.get("factAddress"),
            carrier_entry_id=d.get("carrierEntryId"),
            carrier_parent_id=d.get("carrierParentId"),
            carrier_from_id=d.get("carrierFromId"),
            raw=d,
            sidechain=bool(d.get("sidechain")),
            agent_id=d.get("agentId"),
            parent_tool_call_id=d.get("parentToolCallId"),
            family=d.get("family"),
            context_edited=d.get("contextEdited"),
        )


@dataclass(frozen=True, slots=True)
class ExpandPage:
    session: str
    entries: tuple[Entry, ...]
    next: Call | None
    source_hash: str | None = None
    branches: str | None = None
    lineage_fingerprint: str | None = None
    entry_count: int | None = None
    error: ResultError | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExpandPage:
        return cls(
            session=d.get("session", ""),
            entries=tuple(Entry.from_dict(e) for e in d.get("entries", ())),
            next=Call.maybe(d.get("next")),
            source_hash=d.get("sourceHash"),
            branches=d.get("branches"),
            lineage_fingerprint=d.get("lineageFingerprint"),
            entry_count=d.get("entryCount"),
            error=ResultError.maybe(d.get("error")),
            raw=d,
        )


# ---------------------------------------------------------------------------------- sessions


@dataclass(frozen=True, slots=True)
class SessionCounts:
    """What happened in a session, from typed fields: prompts a person (or a parent agent)
    typed, tool results, and the failed ones among them."""

    prompts: int
    tool_results: int
    failed: int

    @classmethod
    def maybe(cls, d: Mapping[str, Any] | None) -> SessionCounts | None:
        if d is None:
            return None
        return cls(int(d["prompts"]), int(d["toolResults"]), int(d["failed"]))


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    agent: str
    file: str
    cwd: str
    mtime: int
    entry_count: int
    tier: str
    branches: str
    lineage_fingerprint: str | None
    # a subagent's own file, and the id of the session that spawned it when known
    sidechain: bool = False
    parent_session: str | None = None
    raw: Mapping[str, Any] = _raw()
    archived: bool = False  # the file is gone: the session is read from the archive
    # what the session was about and what happened in it; None where the listing did not
    # read the session's entries (a cold row past the first few, or a large one)
    first_prompt: str | None = None
    counts: SessionCounts | None = None
    # the title the agent recorded (a name given over a generated one); None when none
    title: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SessionRow:
        return cls(
            id=d["id"],
            agent=d.get("agent", ""),
            file=d["file"],
            cwd=d.get("cwd", ""),
            mtime=d.get("mtime", 0),
            entry_count=d.get("entryCount", 0),
            tier=d.get("tier", ""),
            branches=d.get("branches", "active"),
            lineage_fingerprint=d.get("lineageFingerprint"),
            sidechain=bool(d.get("sidechain", False)),
            parent_session=d.get("parentSession"),
            raw=d,
            archived=bool(d.get("archived")),
            first_prompt=d.get("firstPrompt"),
            counts=SessionCounts.maybe(d.get("counts")),
            title=d.get("title"),
        )


@dataclass(frozen=True, slots=True)
class SessionList:
    scope: str
    branches: str
    sessions: tuple[SessionRow, ...]
    coverage: Coverage | None = None
    error: ResultError | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SessionList:
        coverage = d.get("coverage")
        return cls(
            scope=d.get("scope", ""),
            branches=d.get("branches", "active"),
            sessions=tuple(SessionRow.from_dict(s) for s in d.get("sessions", ())),
            coverage=None if coverage is None else Coverage.from_dict(coverage),
            error=ResultError.maybe(d.get("error")),
            raw=d,
        )


# ----------------------------------------------------------------------------------- catalog


@dataclass(frozen=True, slots=True)
class CatalogHead:
    action: str | None
    tool: str | None
    ref: str | None
    count: int
    failures: int
    last_seen: int | None
    outcomes: Mapping[str, int]
    sessions: int
    follow: Call | None
    raw: Mapping[str, Any] = _raw()
    family: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CatalogHead:
        return cls(
            action=d.get("action"),
            tool=d.get("tool"),
            ref=d.get("ref"),
            count=d["count"],
            failures=d["failures"],
            last_seen=d.get("lastSeen"),
            outcomes=dict(d.get("outcomes", {})),
            sessions=d.get("sessions", 0),
            follow=Call.maybe(d.get("follow")),
            raw=d,
            family=d.get("family"),
        )


@dataclass(frozen=True, slots=True)
class CatalogProvider:
    provider: str | None
    count: int
    failures: int
    last_seen: int | None
    heads: tuple[CatalogHead, ...]
    follow: Call | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CatalogProvider:
        return cls(
            provider=d.get("provider"),
            count=d["count"],
            failures=d["failures"],
            last_seen=d.get("lastSeen"),
            heads=tuple(CatalogHead.from_dict(h) for h in d.get("heads", ())),
            follow=Call.maybe(d.get("follow")),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class CatalogAgent:
    agent: str
    count: int
    failures: int
    last_seen: int | None
    providers: tuple[CatalogProvider, ...]
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CatalogAgent:
        return cls(
            agent=d["agent"],
            count=d["count"],
            failures=d["failures"],
            last_seen=d.get("lastSeen"),
            providers=tuple(CatalogProvider.from_dict(p) for p in d.get("providers", ())),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class Catalog:
    scope: str
    branches: str
    total: int
    agents: tuple[CatalogAgent, ...]
    coverage: Coverage | None
    omitted_heads: int = 0
    error: ResultError | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Catalog:
        coverage = d.get("coverage")
        return cls(
            scope=d.get("scope", ""),
            branches=d.get("branches", "active"),
            total=d.get("total", 0),
            agents=tuple(CatalogAgent.from_dict(a) for a in d.get("agents", ())),
            coverage=None if coverage is None else Coverage.from_dict(coverage),
            omitted_heads=d.get("omittedHeads", 0),
            error=ResultError.maybe(d.get("error")),
            raw=d,
        )

    def heads(self) -> list[tuple[str, CatalogHead]]:
        """Every head with its agent, in tree order."""
        return [(a.agent, h) for a in self.agents for p in a.providers for h in p.heads]


# -------------------------------------------------------------------------------------- walk


@dataclass(frozen=True, slots=True)
class WalkResult:
    """``visited`` complete entries; ``stopped`` when the visitor returned ``False``; a
    provider failure (``stale_pointer``, …) as ``error``."""

    visited: int
    stopped: bool
    error: ResultError | None = None


def parse_result(ref: str, raw: Mapping[str, Any]) -> RecallPage | ExpandPage | SessionList:
    """The typed view of the result of the action *ref* names."""
    if ref == "memory.recall":
        return RecallPage.from_dict(raw)
    if ref == "memory.expand":
        return ExpandPage.from_dict(raw)
    return SessionList.from_dict(raw)
