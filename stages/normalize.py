"""Stage 3, normalize: a session's selected records → ``NormalizedEntry`` values.

    SourceSession + Lineage ──agent normalizer──► entries ──► dense index, duplicate checks

Each agent has its own normalizer (its adapter's ``normalize``: ``stages.pi.normalize``,
``stages.claude.normalize``, …); this module picks one by ``session.agent`` and then applies
what holds for every agent: ``index`` is dense 0..n-1 in output order, and two entries sharing a
non-null ``entry_id`` or ``operation_address`` mark coverage incomplete
(``duplicate_entry_id`` / ``duplicate_operation_address``).
A subagent's entries (``sidechain``) are given the subagent's ``agent_id`` and the parent's
spawning ``parent_call_id`` here, from typed fields, so every agent's subagents read alike.
(``duplicate_entry_id`` / ``duplicate_operation_address``), and a view with records but no
entry is ``no_entries``.

Entries carry their *complete* text with ``truncated=False``; the digest stage cuts display
text to ``maxEntryChars`` with ``cut_text``. The result's reasons are this stage's own: the
session's file reasons and the lineage's reasons are merged later, by digest.

The result depends on the lineage only through ``lineage.selected``: two lineages selecting the
same records normalize alike, which lets the session job normalize a session without branches
once for both branch modes. Agent normalizers must keep it that way.
"""

from __future__ import annotations

from dataclasses import replace

from stages.agents import adapter
from stages.common import cut_text, duplicate_reasons
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.redaction import redact_entries
from stages.source import SourceSession
from store.reasons import NO_ENTRIES
from store.records import NormalizedEntry

__all__ = ["cut_text", "empty_reasons", "normalize"]


def normalize(
    session: SourceSession,
    lineage: Lineage,
    policy: Policy,
    *,
    memo: EntryMemo | None = None,
    whole: bool = True,
) -> NormalizeResult:
    """Normalize the records ``lineage`` selects from ``session``.

    Raises ``BadInput`` only for an unregistered agent (a caller bug, not bad data):
    odd record content never raises, it becomes entries without text or a coverage reason.
    A view of a session that holds lines (a header or records) yet yields no entry is
    ``no_entries``; *whole*
    is False when *session* holds only records appended to an indexed one (the tail path).
    *memo* (same result, less work when the same records come again) is used by the Claude
    and Codex normalizers; Pi's ignores it, as Pi appends take a tail reader instead.
    """
    result = adapter(session.agent).normalize(session, lineage, policy, memo=memo)
    result = replace(result, entries=_subagent_marks(session, result.entries, memo))
    # The one place every agent's entries pass: credentials go here, before anything is stored.
    redacted = redact_entries(result.entries, policy, memo)
    if memo is not None:
        entries = tuple(memo.at(entry, index) for index, entry in enumerate(redacted))
    else:
        entries = tuple(
            entry if entry.index == index else replace(entry, index=index)
            for index, entry in enumerate(redacted)
        )
    reasons = set(result.reasons) | duplicate_reasons(entries)
    if whole and not entries and (session.records or session.header is not None):
        reasons.add(NO_ENTRIES)  # lines but nothing to search is never a clean empty session
    return NormalizeResult(entries=entries, reasons=tuple(sorted(reasons)))


def _subagent_marks(
    session: SourceSession, entries: tuple[NormalizedEntry, ...], memo: EntryMemo | None
) -> tuple[NormalizedEntry, ...]:
    """Sidechain entries with the subagent's id and the tool call that spawned it.

    From typed fields only: the line's ``agentId`` (Claude Code, Copilot CLI), else what the
    adapter's normalizer set (a subagent inline in its parent's file, as Copilot's, knows its
    spawning call), else the session's ``extra["agent_id"]`` / ``extra["parent_call_id"]`` (a
    subagent file's meta sidecar, a Codex subagent rollout's thread). Marked entries come
    from *memo* when the very same entry comes again, so an append re-marks only new
    entries.
    """
    if not any(e.sidechain for e in entries):
        return entries
    agent_id = session.extra.get("agent_id")
    call_id = session.extra.get("parent_call_id")
    lines: dict[int, dict[str, object]] | None = None
    out: list[NormalizedEntry] = []
    for e in entries:
        if not e.sidechain:
            out.append(e)
            continue
        key = ("subagent", id(e))
        found = memo.get(key, (e,)) if memo is not None else None
        if found is None:
            if lines is None:
                lines = {r.line: r.value for r in session.records}
            own = lines.get(e.line, {}).get("agentId")
            marked = replace(
                e,
                agent_id=own if isinstance(own, str) else (e.agent_id or agent_id),
                parent_call_id=e.parent_call_id or call_id,
            )
            found = (marked,)
            if memo is not None:
                memo.put(key, (e,), found)
        out.append(found[0])
    return tuple(out)


def empty_reasons(reasons: set[str], entries: int) -> set[str]:
    """*reasons* of a view of a session with a header, extended to *entries* entries: with
    ``no_entries`` exactly when it has none (as ``normalize`` says it)."""
    if entries == 0:
        return reasons | {NO_ENTRIES}
    return reasons - {NO_ENTRIES}
