"""``memory.sessions``: the sessions a scope selects, newest first (reference §1.5).

Each row names the session (``agent:id``), its file, cwd, mtime (epoch ms), entry count and
tier in the requested branch mode, plus its lineage fingerprint. ``limit`` bounds the list
only. ``coverage`` appears, as in the seed, only when the listing is not the whole truth:
sessions changed or gone since indexing, eligible files that are not indexed, index-wide
budget reasons.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from query.args import SessionsRequest
from query.freshness import Freshness
from query.generation import Generation
from query.recall import STALE_REASON
from query.scope import resolve_scope

__all__ = ["sessions"]


def sessions(
    gen: Generation,
    req: SessionsRequest,
    *,
    cwd: str,
    roots: Iterable[Path],
    freshness: Freshness,
) -> dict[str, Any]:
    resolved = resolve_scope(gen, req.scope, cwd=req.cwd or cwd, agent=req.agent, roots=roots)
    out: dict[str, Any] = {"scope": req.scope.to_arg(), "branches": req.branches}
    if resolved.error is not None:
        out["sessions"] = []
        out["error"] = resolved.error
        return out
    rows: list[dict[str, Any]] = []
    for state in resolved.sessions[: req.limit]:
        view = state.view(req.branches)
        rows.append(
            {
                "id": f"{state.agent}:{state.session_id}",
                "agent": state.agent,
                "file": state.path,
                "cwd": state.cwd,
                "mtime": state.mtime_ns // 1_000_000,
                "entryCount": view.entry_count,
                "tier": state.tier,
                "branches": req.branches,
                "lineageFingerprint": view.lineage_fingerprint,
            }
        )
    out["sessions"] = rows
    reasons = set(resolved.index_reasons)
    stale = 0
    incomplete = 0
    for state in resolved.sessions:
        observed = freshness.observe(state)
        if observed.status in ("missing", "unreadable"):
            stale += 1
            reasons.add("source_unavailable")
        elif observed.status == "changed":
            stale += 1
            reasons.add(STALE_REASON)
        own = set(state.view(req.branches).reasons) - {"max_entry_chars"}
        if own:
            incomplete += 1
            reasons |= own
    for u in resolved.unindexed:
        reasons.add(u.reason)
        stale += u.stale
    if reasons:
        out["coverage"] = {
            "complete": False,
            "indexedSessions": len(resolved.sessions),
            "eligibleSessions": len(resolved.sessions) + len(resolved.unindexed),
            "staleSessions": stale,
            "incompleteSessions": incomplete,
            "reasons": sorted(reasons),
        }
    return out
