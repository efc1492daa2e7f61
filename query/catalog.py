"""``memory.catalog``: the capability heads the index has seen, as a deterministic tree.

::

    agent ─► provider ─► head (action or tool, with its exact tool, ref and family)
              count · failures · outcomes · sessions · lastSeen · follow (a recall call)

It is history, not a registry: every head comes from typed fields of indexed entries (hot
shard entries and cold digest address tuples: tool, ref, provider, action, outcome, isError,
timestamp), never from descriptions or prose, so nothing here can become a lexical match. A
caller reads it to pick an exact ``ref`` / ``tool`` / ``provider`` / ``outcome`` filter, then
follows the head's ``memory.recall`` call. ``count`` is the number of entries carrying the
head (calls, results and operations alike); ``failures`` counts those with outcome
``failed`` or ``isError``.

Per-session folds are kept for the life of a generation, so a server answers repeated
catalogs from memory. The response is bounded like every other: past 30,000 characters the
least-used heads are left out and ``omittedHeads`` says how many.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from query.archived import note_archived
from query.args import RESPONSE_MAX_CHARS, Scope, parse_scope
from query.errors import InvalidArgument
from query.freshness import Freshness
from query.generation import Generation, RecordUnavailable
from query.scope import resolve_scope, widen_hints
from query.u16 import bounded, json_length
from store.errors import CorruptRecord, SchemaVersionError
from store.reasons import (
    MAX_COLD_VOCABULARY_BYTES,
    MAX_ENTRY_CHARS,
    READ_NOTES,
    SOURCE_UNAVAILABLE,
    STALE_SESSION,
)
from store.records import AGENTS, BRANCH_MODES, ColdDigest, SessionState

if TYPE_CHECKING:
    from query.engine import Engine

__all__ = ["CatalogRequest", "catalog", "catalog_for", "parse_catalog"]

_KEYS: Final = frozenset({"scope", "agent", "branches", "cwd"})
DEFAULT_SCOPE: Final = "project"
# Reasons that only limit text (display cut, vocabulary size): heads come from typed fields;
# and how a session was read (``READ_NOTES``), which hides no head either.
_TEXT_ONLY: Final = frozenset({MAX_ENTRY_CHARS, MAX_COLD_VOCABULARY_BYTES}) | READ_NOTES

# (provider, action, tool, ref, family): one head (the family follows from the tool).
HeadKey = tuple[str | None, str | None, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class CatalogRequest:
    scope: Scope
    branches: str
    agent: str | None
    cwd: str | None


def parse_catalog(args: Mapping[str, Any]) -> CatalogRequest:
    action = "memory.catalog"
    if not isinstance(args, Mapping):
        raise InvalidArgument(f"{action} arguments must be a JSON object")
    unknown = sorted(k for k in args if k not in _KEYS)
    if unknown:
        raise InvalidArgument(
            f"{action} does not accept {unknown[0]!r}; accepted arguments: "
            + ", ".join(sorted(_KEYS))
        )
    branches = args.get("branches", "active")
    if branches not in BRANCH_MODES:
        raise InvalidArgument(f"{action} branches must be one of active, all (got {branches!r})")
    agent = args.get("agent")
    if agent is not None and agent not in AGENTS:
        raise InvalidArgument(f"{action} agent must be one of {', '.join(AGENTS)} (got {agent!r})")
    cwd = args.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
        raise InvalidArgument(f"{action} cwd must be an absolute directory path")
    return CatalogRequest(
        scope=parse_scope(action, args.get("scope", DEFAULT_SCOPE)),
        branches=branches,
        agent=agent,
        cwd=cwd,
    )


# ------------------------------------------------------------------------------------ folds


@dataclass(slots=True)
class Tally:
    count: int = 0
    failures: int = 0
    last_seen: int | None = None
    sessions: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: str | None, is_error: bool, ts: int | None) -> None:
        self.count += 1
        if outcome == "failed" or is_error:
            self.failures += 1
        if outcome is not None:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if ts is not None and (self.last_seen is None or ts > self.last_seen):
            self.last_seen = ts

    def merge(self, other: Tally) -> None:
        self.count += other.count
        self.failures += other.failures
        self.sessions += other.sessions
        for k, n in other.outcomes.items():
            self.outcomes[k] = self.outcomes.get(k, 0) + n
        if other.last_seen is not None and (
            self.last_seen is None or other.last_seen > self.last_seen
        ):
            self.last_seen = other.last_seen


# Row: (tool, ref, provider, action, outcome, is_error, timestamp, family)
Row = tuple[
    str | None, str | None, str | None, str | None, str | None, bool, int | None, str | None
]
SessionHeads = dict[HeadKey, Tally]


def fold(rows: Iterable[Row]) -> SessionHeads:
    """The heads of one session: every row with a tool or a ref, grouped exactly."""
    heads: SessionHeads = {}
    for tool, ref, provider, action, outcome, is_error, ts, family in rows:
        if tool is None and ref is None:
            continue
        key = (provider, action, tool, ref, family)
        tally = heads.get(key)
        if tally is None:
            tally = heads[key] = Tally(sessions=1)
        tally.add(outcome, bool(is_error), ts)
    return heads


def _rows(gen: Generation, state: SessionState, branches: str) -> Iterator[Row]:
    if state.tier == "hot":
        for e in gen.shard(state, branches).entries:
            yield (
                e.tool,
                e.ref,
                e.provider,
                e.action,
                e.outcome,
                e.is_error,
                e.timestamp,
                e.family,
            )
        return
    try:
        digest: ColdDigest = gen.snapshot.load(state.index_record, ColdDigest)
    except (CorruptRecord, SchemaVersionError, OSError) as exc:
        raise RecordUnavailable(str(exc)) from exc
    for a in digest.view(branches).addresses:
        yield (a[4], a[6], a[7], a[8], a[9], a[10], a[5], a[11] if len(a) > 11 else None)


_FOLDS: weakref.WeakKeyDictionary[Generation, dict[tuple[str, str], SessionHeads]] = (
    weakref.WeakKeyDictionary()
)


def session_heads(gen: Generation, state: SessionState, branches: str) -> SessionHeads:
    """One session's heads, folded once per generation. Raises RecordUnavailable."""
    cache = _FOLDS.get(gen)
    if cache is None:
        cache = _FOLDS[gen] = {}
    key = (state.path, branches)
    found = cache.get(key)
    if found is None:
        found = cache[key] = fold(_rows(gen, state, branches))
    return found


# ------------------------------------------------------------------------------------- tree


def _label(key: HeadKey) -> str:
    provider, action, tool, ref, _ = key
    return action or tool or ref or ""


def _order(key: HeadKey) -> tuple[str, str, str, str, str]:
    provider, action, tool, ref, family = key
    return (_label(key), tool or "", ref or "", action or "", family or "")


def _counts(t: Tally) -> dict[str, Any]:
    return {"count": t.count, "failures": t.failures, "lastSeen": t.last_seen}


def _follow(req: CatalogRequest, agent: str, **filters: str) -> dict[str, Any]:
    args: dict[str, Any] = {"scope": req.scope.to_arg(), "branches": req.branches}
    if req.cwd is not None and req.scope.kind in ("session", "project"):
        args["cwd"] = req.cwd
    args["agent"] = agent
    args.update(filters)
    return {"ref": "memory.recall", "args": args}


def _head(req: CatalogRequest, agent: str, key: HeadKey, t: Tally) -> dict[str, Any]:
    provider, action, tool, ref, family = key
    out: dict[str, Any] = {
        "action": bounded(action),
        "tool": bounded(tool),
        "ref": bounded(ref),
        "family": family,
        **_counts(t),
        "outcomes": dict(sorted(t.outcomes.items())),
        "sessions": t.sessions,
    }
    # The follow filters on the most exact typed field the head has; a value too long to be
    # returned whole would not match, so such a head gets no follow.
    exact: dict[str, str] = {}
    if ref is not None:
        exact["ref"] = ref
    elif tool is not None:
        exact["tool"] = tool
    if exact and all(bounded(v) == v for v in exact.values()):
        out["follow"] = _follow(req, agent, **exact)
    return out


def _tree(req: CatalogRequest, heads: Mapping[tuple[str, HeadKey], Tally]) -> list[dict[str, Any]]:
    by_agent: dict[str, dict[str | None, list[tuple[HeadKey, Tally]]]] = {}
    for (agent, key), tally in heads.items():
        by_agent.setdefault(agent, {}).setdefault(key[0], []).append((key, tally))
    agents: list[dict[str, Any]] = []
    for agent in sorted(by_agent):
        agent_total = Tally()
        providers: list[dict[str, Any]] = []
        for provider in sorted(by_agent[agent], key=lambda p: (p is None, p or "")):
            leaves = sorted(by_agent[agent][provider], key=lambda kt: _order(kt[0]))
            total = Tally()
            for _, t in leaves:
                total.merge(t)
            node: dict[str, Any] = {"provider": bounded(provider), **_counts(total)}
            if provider is not None and bounded(provider) == provider:
                node["follow"] = _follow(req, agent, provider=provider)
            node["heads"] = [_head(req, agent, k, t) for k, t in leaves]
            providers.append(node)
            agent_total.merge(total)
        agents.append({"agent": agent, **_counts(agent_total), "providers": providers})
    return agents


# --------------------------------------------------------------------------------- catalog


def catalog(
    gen: Generation,
    req: CatalogRequest,
    *,
    cwd: str,
    roots: Iterable[Path],
    freshness: Freshness,
) -> dict[str, Any]:
    """Answer one catalog request (see the module docstring)."""
    resolved = resolve_scope(gen, req.scope, cwd=req.cwd or cwd, agent=req.agent, roots=roots)
    out: dict[str, Any] = {"scope": req.scope.to_arg(), "branches": req.branches}
    if resolved.error is not None:
        return {**out, "total": 0, "agents": [], "error": resolved.error}
    reasons: set[str] = set(resolved.index_reasons)
    stale = incomplete = 0
    heads: dict[tuple[str, HeadKey], Tally] = {}
    for state in resolved.sessions:
        observed = freshness.observe(state)
        if observed.status in ("missing", "unreadable"):
            stale += 1
            reasons.add(SOURCE_UNAVAILABLE)
        elif observed.status == "changed":
            stale += 1
            reasons.add(STALE_SESSION)
        own = set(state.view(req.branches).reasons) - _TEXT_ONLY
        try:
            folded = session_heads(gen, state, req.branches)
        except RecordUnavailable:
            own.add(SOURCE_UNAVAILABLE)
            folded = {}
        if own:
            incomplete += 1
            reasons |= own
        for key, tally in folded.items():
            slot = heads.get((state.agent, key))
            if slot is None:
                slot = heads[(state.agent, key)] = Tally()
            slot.merge(tally)
    for u in resolved.unindexed:
        reasons.add(u.reason)
        stale += u.stale
    coverage = {
        "complete": not reasons,
        "indexedSessions": len(resolved.sessions),
        "eligibleSessions": len(resolved.sessions) + len(resolved.unindexed),
        "staleSessions": stale,
        "incompleteSessions": incomplete,
        "reasons": sorted(reasons),
    }
    hints = widen_hints(gen, resolved, agent=req.agent, branches=req.branches, found=len(heads))
    if hints:
        coverage["hints"] = hints
    note_archived(coverage, resolved.sessions, freshness.archive)
    return _bounded(req, out, heads, coverage)


def _bounded(
    req: CatalogRequest,
    out: dict[str, Any],
    heads: dict[tuple[str, HeadKey], Tally],
    coverage: dict[str, Any],
) -> dict[str, Any]:
    total = len(heads)
    kept = dict(heads)

    def build() -> dict[str, Any]:
        response = {**out, "total": total, "agents": _tree(req, kept), "coverage": coverage}
        if len(kept) < total:
            response["omittedHeads"] = total - len(kept)
        return response

    response = build()
    excess = json_length(response) - RESPONSE_MAX_CHARS
    if excess <= 0:
        return response
    # Least-used heads go first; the order is total so the cut is deterministic.
    victims = sorted(
        kept, key=lambda ak: (kept[ak].count, kept[ak].last_seen or 0, ak[0], _order(ak[1]))
    )
    per_head = max(1, json_length(response["agents"]) // max(1, total))
    while kept and excess > 0:
        n = max(1, min(len(kept), excess // per_head))
        for victim in victims[:n]:
            del kept[victim]
        victims = victims[n:]
        response = build()
        excess = json_length(response) - RESPONSE_MAX_CHARS
    return response


def catalog_for(
    engine: Engine, args: Mapping[str, Any], *, cwd: str | None = None
) -> dict[str, Any]:
    """Run ``memory.catalog`` on an engine's current generation."""
    req = parse_catalog(args)
    gen = engine.refresh()
    return catalog(gen, req, cwd=cwd or os.getcwd(), roots=engine.roots, freshness=engine.freshness)


# ------------------------------------------------------------------------------------ text


def _when(ms: int | None) -> str:
    from datetime import datetime

    return "-" if ms is None else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def _stats(node: Mapping[str, Any]) -> str:
    failed = f", {node['failures']} failed" if node.get("failures") else ""
    return f"{node['count']} entries{failed}, last {_when(node.get('lastSeen'))}"


def render_catalog(result: Mapping[str, Any]) -> str:
    """The catalog as an indented tree for people (``--json`` prints the object)."""
    if "error" in result:
        error = result["error"]
        failed = [f"error {error.get('code')}: {error.get('message')}"]
        failed += [f"  candidate: {c}" for c in error.get("candidates", [])]
        return "\n".join(failed)
    lines: list[str] = []
    for agent in result["agents"]:
        lines.append(f"{agent['agent']}  ({_stats(agent)})")
        for provider in agent["providers"]:
            if provider["provider"] != agent["agent"]:
                # the agent's own tools (provider == agent) sit under the agent's line, which
                # already says the same counts when it is the only provider
                lines.append(f"  {provider['provider'] or '(no provider)'}  ({_stats(provider)})")
            elif len(agent["providers"]) > 1:
                lines.append(f"  its own tools  ({_stats(provider)})")
            for head in provider["heads"]:
                name = head["action"] or head["tool"] or head["ref"]
                exact = f"--ref {head['ref']}" if head["ref"] else f"--tool {head['tool']}"
                outcomes = " ".join(f"{k}:{n}" for k, n in head["outcomes"].items())
                lines.append(
                    f"    {name:<20} {exact:<28} {head.get('family') or '-':<8} "
                    f"{head['count']:>6} entries "
                    f"{head['failures']:>4} failed  {head['sessions']:>4} sessions  "
                    f"last {_when(head['lastSeen'])}" + (f"  [{outcomes}]" if outcomes else "")
                )
    if not lines:
        lines.append("no capability heads in scope")
    coverage = result["coverage"]
    summary = f"{result['total']} heads · {coverage['indexedSessions']} sessions"
    if result.get("omittedHeads"):
        summary += f" · {result['omittedHeads']} least-used heads omitted (use --json or --agent)"
    if coverage["complete"]:
        summary += " · coverage complete"
    else:
        summary += " · coverage INCOMPLETE: " + ", ".join(coverage["reasons"])
    lines.append(summary)
    lines += [f"  try: {hint['message']}" for hint in coverage.get("hints", [])]
    lines.append("recall one: query recall --scope <scope> --ref <ref>  (or --tool / --outcome)")
    return "\n".join(lines)
