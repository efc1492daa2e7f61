"""``memory.sessions``: the sessions a scope selects, newest first (reference §1.5).

Each row names the session (``agent:id``), its file, cwd, mtime (epoch ms), entry count and
tier in the requested branch mode, plus its lineage fingerprint. ``limit`` bounds the list
only. ``coverage`` appears, as in the seed, only when the listing is not the whole truth:
sessions changed or gone since indexing, eligible files that are not indexed, index-wide
budget reasons, or when the scope is empty and a wider one is not (``hints``).

Each row carries the session's ``title`` when its agent recorded one in a typed field (a
name the person gave wins over a generated title: ``stages.titles``); it is on the session's
state, so every row has it, hot or cold. Each row also carries the session's first user
prompt (``firstPrompt``, bounded) and
``counts`` (prompts, tool results, failed ones), so a list of sessions reads as what they
were; a cold row has them only when it is among the first few and small (its entries are a
record read from disk).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from query.archived import note_archived
from query.args import SessionsRequest
from query.freshness import Freshness
from query.generation import Generation, RecordUnavailable
from query.scope import resolve_scope, widen_hints
from query.u16 import bounded
from store.reasons import MAX_ENTRY_CHARS, READ_NOTES, SOURCE_UNAVAILABLE, STALE_SESSION
from store.records import NormalizedEntry, SessionState

__all__ = ["glance", "sessions"]

PROMPT_CHARS: Final = 160
# A cold session's entries are a record read from disk: only the first few rows of a listing
# pay for one, and only when it is small; a row without ``firstPrompt`` simply did not look.
_COLD_PROMPT_READS: Final = 10
_COLD_PROMPT_BYTES: Final = 4 << 20


def glance(
    gen: Generation, state: SessionState, branches: str
) -> tuple[str | None, dict[str, int]] | None:
    """The first thing a person typed in the session, on one line, and what happened in it
    (prompts, tool results, failed ones), from typed fields only; None when unreadable."""
    try:
        if state.tier == "hot":
            entries: Sequence[NormalizedEntry] = gen.hot_shard(state, branches).entries
        else:
            entries = gen.entries(state, branches)
    except RecordUnavailable:
        return None
    prompt: str | None = None
    prompts = results = failed = 0
    for e in entries:
        if e.role == "user" and e.tool is None:
            prompts += 1
            if prompt is None and e.text.strip():
                prompt = bounded(" ".join(e.text.split()), PROMPT_CHARS)
        if e.outcome is not None:
            results += 1
            failed += e.outcome == "failed"
    return prompt, {"prompts": prompts, "toolResults": results, "failed": failed}


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
    cold_reads = 0
    for state in resolved.sessions[: req.limit]:
        view = state.view(req.branches)
        seen = None
        if state.tier == "hot" or (
            cold_reads < _COLD_PROMPT_READS and state.entries_bytes <= _COLD_PROMPT_BYTES
        ):
            cold_reads += state.tier != "hot"
            seen = glance(gen, state, req.branches)
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
        if state.title is not None:
            rows[-1]["title"] = state.title
        if state.sidechain:
            # a subagent's own file: it belongs under the session that spawned it
            rows[-1]["sidechain"] = True
            if state.parent_session:
                rows[-1]["parentSession"] = f"{state.agent}:{state.parent_session}"
        if state.archived:
            rows[-1]["archived"] = True
            if freshness.archive is not None:
                rows[-1]["archive"] = str(freshness.archive.head_path(state.path))
        if seen is not None:
            prompt, counts = seen
            if prompt is not None:
                rows[-1]["firstPrompt"] = prompt
            rows[-1]["counts"] = counts
    out["sessions"] = rows
    reasons = set(resolved.index_reasons)
    notes: set[str] = set()
    stale = 0
    incomplete = 0
    for state in resolved.sessions:
        observed = freshness.observe(state)
        if observed.status in ("missing", "unreadable"):
            stale += 1
            reasons.add(SOURCE_UNAVAILABLE)
        elif observed.status == "changed":
            stale += 1
            reasons.add(STALE_SESSION)
        own = set(state.view(req.branches).reasons) - {MAX_ENTRY_CHARS}
        notes |= own & READ_NOTES
        own -= READ_NOTES
        if own:
            incomplete += 1
            reasons |= own
    for u in resolved.unindexed:
        reasons.add(u.reason)
        stale += u.stale
    hints = widen_hints(
        gen, resolved, agent=req.agent, branches=req.branches, found=len(resolved.sessions)
    )
    archived = any(s.archived for s in resolved.sessions)
    if reasons or hints or archived:
        out["coverage"] = {
            "complete": not reasons,
            "indexedSessions": len(resolved.sessions),
            "eligibleSessions": len(resolved.sessions) + len(resolved.unindexed),
            "staleSessions": stale,
            "incompleteSessions": incomplete,
            "reasons": sorted(reasons),
        }
        if hints:
            out["coverage"]["hints"] = hints
        if notes:
            out["coverage"]["notes"] = sorted(notes)
        note_archived(out["coverage"], resolved.sessions, freshness.archive)
    return out
