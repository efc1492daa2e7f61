"""Normalize a Cursor agent transcript: its ``{role, message}`` lines → ``NormalizedEntry``s.

* ``user`` → a ``user`` entry of its ``text`` blocks (or a string ``content``), joined by
  ``\\n``, as written: Cursor wraps what was typed in ``<timestamp>…</timestamp>`` and
  ``<user_query>…</user_query>`` and writes its own wake-up prompts (after a subagent or an
  interruption) in the same shape, so nothing tells them apart by type and none is dropped.
* ``assistant`` → one ``assistant`` entry of its ``text`` blocks, then a
  ``Tool: <name>(<args ≤400>)`` line per ``tool_use`` block, joined by ``\\n`` (Claude Code's
  rule for the same block shape). ``tool`` is the first call's, addressed
  ``<record id>/call:0`` (the blocks carry no id: the ordinal is the address);
  ``files_touched`` from every call's typed path keys (``path``; ``ApplyPatch``'s input is
  the patch text itself and names no typed path). Cursor mostly writes one block a line.
* **No outcome.** Cursor writes no tool result, exit code or error flag for a call (not one
  ``tool_result`` block in the observed transcripts), so every call's ``outcome`` is unknown,
  never guessed. A ``turn_ended`` line's ``status`` is the turn's, not a call's: it gives no
  entry.
* No timestamps: the ``<timestamp>`` inside a prompt is localized prose, not a typed field.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from stages.common import clean_text, files_touched, is_blank, summarize_args
from stages.cursor.source import AGENT
from stages.families import tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["normalize_cursor"]

_TEXT: Final = "text"
_TOOL_USE: Final = "tool_use"


def normalize_cursor(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order (*memo* unused: a
    transcript is small and re-derived whole). Never raises on odd content."""
    records = session.records
    entries: list[NormalizedEntry] = []
    for p in sorted(set(lineage.selected)):
        if 0 <= p < len(records):
            entries.extend(_entries(records[p]))
    if session.sidechain:
        entries = [replace(e, sidechain=True) for e in entries]
    return NormalizeResult(entries=tuple(entries))


def _entries(record: SourceRecord) -> list[NormalizedEntry]:
    if record.kind not in ("user", "assistant"):
        return []
    message = record.value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    texts = [b[_TEXT] for b in blocks if b.get("type") == _TEXT and isinstance(b.get(_TEXT), str)]
    if isinstance(content, str):
        texts = [content]
    calls = [b for b in blocks if b.get("type") == _TOOL_USE] if record.kind == "assistant" else []
    pieces = [t for t in texts if not is_blank(t)] + [_call_line(b) for b in calls]
    if not pieces:
        return []
    entry = _entry(record, record.kind, "\n".join(pieces))
    if not calls:
        return [entry]
    name = _name(calls[0])
    ref, provider, action = tool_identity(AGENT, name) if name else (None, None, None)
    return [
        replace(
            entry,
            tool=name or None,
            operation_address=f"{record.id}/call:0",
            ref=ref,
            provider=provider,
            action=action,
            files_touched=files_touched([b.get("input") for b in calls]),
            family=tool_family(AGENT, name),
        )
    ]


def _name(block: dict[str, Any]) -> str:
    raw = block.get("name")
    return clean_text(raw) if isinstance(raw, str) else ""


def _call_line(block: dict[str, Any]) -> str:
    summary = summarize_args(block.get("input")) if "input" in block else ""
    return f"Tool: {_name(block)}({summary})"


def _entry(record: SourceRecord, role: str, text: str) -> NormalizedEntry:
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type="message",
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=None,
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )
