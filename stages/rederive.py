"""The append path for sessions without a tail reader (Claude Code, Codex): stages in memory.

::

    Rederive: the session's raw records, parsed once, kept in the worker (a byte budget)
        + the new records parsed from the appended bytes only
        ─► adapter ─► lineage ×2 ─► normalize over the whole session, in memory
           (a line normalized before comes from the memo: only new lines cost work)
        ─► the stored entries came out unchanged, or only the last few changed?
              no ─► None (whole build)
        ─► yes: one delta shard + entries holding the new (and replacing) entries only

Their adapters thread replies and tool results across lines, so only a whole pass over the
session is exact; doing it in memory costs no disk read, tokenizes only the new entries and
writes only them. The adapter still reads every line at each append (~5 ms for a 12 MB
Claude session, ~10 ms for a 6 MB Codex rollout); normalizing does not
(``stages.normalized.EntryMemo``).

When the last few stored entries changed (a Claude reply continued on a new line, a tool
call whose result arrived) the delta replaces them (``replaces`` and ``dropped`` in its
views); a change further back than ``MAX_REPLACED`` entries is built whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from stages.agents import adapter
from stages.digest import SessionFold, ViewInput, build_entries, build_shard, summarize
from stages.drift import versioned
from stages.lineage import BRANCH_MODES, lineage
from stages.normalize import normalize
from stages.normalized import EntryMemo, NormalizeResult
from stages.parse import parse
from stages.policy import Policy
from stages.source import ParseResult, RawRecord
from store.reasons import MAX_ENTRY_CHARS
from store.records import HotShard, NormalizedEntry, SessionEntries, SessionState, ViewSummary
from store.tokens import tokenize

__all__ = ["MAX_REPLACED", "Rederive", "Rederived", "carry_cut", "parsed_state", "rederive"]

# A delta may take the place of this many of the last stored entries (a continued reply, the
# results of a few parallel tool calls); a change further back is built whole.
MAX_REPLACED = 32


@dataclass(slots=True)
class Rederive:
    """A session's parsed records and its entries per branch mode, as last indexed, and what
    the normalizer made of each record (so an append normalizes only what it changed)."""

    raws: list[RawRecord]
    malformed: list[int]
    repaired: list[int]
    entries: dict[str, tuple[NormalizedEntry, ...]]
    two_views: bool
    bytes: int
    memo: EntryMemo = field(default_factory=EntryMemo)
    meta: dict[str, Any] | None = None  # the session's sidecar (a Claude subagent's), if any
    oversized: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Rederived:
    shard: HotShard
    entries: SessionEntries
    views: tuple[ViewSummary, ...]
    rederive: Rederive
    unknown: tuple[tuple[str, str, int], ...] = ()  # SessionState.unknown_records
    title: str | None = None  # SessionState.title: the whole file is read again, so exact


def parsed_state(
    agent: str, data: bytes, views: Sequence[ViewInput], meta: dict[str, Any] | None = None
) -> Rederive | None:
    """What ``rederive`` needs of a session just built whole from *data*."""
    parsed = parse(data)
    by_branch = {v.branches: v for v in views}
    return Rederive(
        raws=list(parsed.records),
        malformed=list(parsed.malformed_lines),
        repaired=list(parsed.repaired_lines),
        oversized=list(parsed.oversized_lines),
        entries={b: v.normalized.entries for b, v in by_branch.items()},
        two_views=by_branch["all"].lineage.selected != by_branch["active"].lineage.selected,
        bytes=len(data),
        meta=meta,
    )


def rederive(
    rd: Rederive,
    parsed: ParseResult,
    state: SessionState,
    policy: Policy,
    *,
    new_bytes: int,
) -> Rederived | None:
    """Delta records for the records in *parsed*, appended to a session whose last indexed
    state is *state* (stamp and hash already moved); None when only a whole build is exact."""
    raws = rd.raws + list(parsed.records)
    malformed = rd.malformed + list(parsed.malformed_lines)
    repaired = rd.repaired + list(parsed.repaired_lines)
    whole = ParseResult(
        tuple(raws),
        parsed.consumed,
        parsed.next_line,
        tuple(malformed),
        tuple(repaired),
        withheld=parsed.withheld,
        oversized_lines=(*rd.oversized, *parsed.oversized_lines),
    )
    session = adapter(state.agent).read(whole, state.path, rd.meta)
    if (session.session_id, session.cwd, session.parent_session, session.sidechain) != (
        state.session_id,
        state.cwd,
        state.parent_session,
        state.sidechain,
    ):
        return None
    lineages = {b: lineage(session, b) for b in BRANCH_MODES}
    if (lineages["all"].selected != lineages["active"].selected) != rd.two_views:
        return None
    full: dict[str, NormalizeResult] = {}
    added: dict[str, tuple[NormalizedEntry, ...]] = {}
    replaced: dict[str, tuple[NormalizedEntry, ...]] = {}
    for b in BRANCH_MODES:
        if b != "active" and lineages[b].selected == lineages["active"].selected:
            # No branches (most sessions): "all" selects what "active" does, and normalizing
            # reads the lineage only through what it selects (as build_session does).
            result = full["active"]
        else:
            result = normalize(session, lineages[b], policy, memo=rd.memo)
        old = rd.entries[b]
        first = _first_change(old, result.entries)
        if first is None:
            return None  # an entry far back changed: only a whole build says so
        full[b] = result
        added[b] = result.entries[first:]
        replaced[b] = old[first:]
    fold = SessionFold.of(
        session,
        path=state.path,
        source_hash=state.source_hash,
        policy=policy,
        file_reasons=session.reasons,
    )
    summaries = {v.branches: v for v in state.views}
    delta_views = [
        ViewInput(lineages[b], NormalizeResult(added[b], full[b].reasons)) for b in BRANCH_MODES
    ]
    shard = _replacing(carry_cut(build_shard(fold, delta_views, policy), summaries), replaced)
    entries = build_entries(fold, delta_views)
    entries = replace(
        entries,
        views=tuple(replace(v, replaces=len(replaced[v.branches])) for v in entries.views),
    )
    whole_views = [ViewInput(lineages[b], full[b]) for b in BRANCH_MODES]
    return Rederived(
        shard=shard,
        entries=entries,
        views=summarize(fold, whole_views, shard),
        rederive=Rederive(
            raws=raws,
            malformed=malformed,
            repaired=repaired,
            entries={b: full[b].entries for b in BRANCH_MODES},
            two_views=rd.two_views,
            bytes=rd.bytes + new_bytes,
            memo=rd.memo,
            meta=rd.meta,
            oversized=[*rd.oversized, *parsed.oversized_lines],
        ),
        unknown=versioned(session.writer_version, session.unknown),
        title=session.title,
    )


def _first_change(old: tuple[NormalizedEntry, ...], new: tuple[NormalizedEntry, ...]) -> int | None:
    """The position of the first entry of *old* that *new* does not hold unchanged (len(old)
    when none); None when that lies more than ``MAX_REPLACED`` entries back."""
    floor = max(0, len(old) - MAX_REPLACED)
    if new[:floor] != old[:floor]:
        return None
    for i in range(floor, len(old)):
        if i >= len(new) or new[i] != old[i]:
            return i
    return len(old)


def _replacing(shard: HotShard, replaced: Mapping[str, Sequence[NormalizedEntry]]) -> HotShard:
    """*shard* saying, per view, which stored entries its own replace and their terms."""
    views = []
    for v in shard.views:
        gone = replaced[v.branches]
        if gone:
            terms = {t for e in gone for t in tokenize(e.text)}
            v = replace(v, replaces=len(gone), dropped=tuple(sorted(terms)))
        views.append(v)
    return replace(shard, views=tuple(views))


def carry_cut(shard: HotShard, summaries: Mapping[str, ViewSummary]) -> HotShard:
    """A view the base already cut keeps saying so in every delta (as a whole build would)."""
    views = []
    for v in shard.views:
        if MAX_ENTRY_CHARS in summaries[v.branches].reasons and MAX_ENTRY_CHARS not in v.reasons:
            v = replace(v, reasons=tuple(sorted({*v.reasons, MAX_ENTRY_CHARS})))
        views.append(v)
    return replace(shard, views=tuple(views))
