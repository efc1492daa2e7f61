"""Normalize an OpenCode session: its messages and their typed parts → ``NormalizedEntry``s.

* A ``user`` message → one ``user`` entry of its ``text`` parts joined (a part OpenCode
  marks ``synthetic`` — a file it read in for the prompt — or ``ignored`` is not what the
  person typed: left out).
* An ``assistant`` message → per part, in order: ``text`` → an ``assistant`` entry;
  ``reasoning`` → a ``reasoning`` entry under ``index_thinking``; ``tool`` → a
  ``Tool: <name>(<input ≤400>)`` entry addressed ``<message id>/call:<callID>`` and, once the
  call ended (``state.status`` ``completed`` or ``error``), a ``toolResult(<name>)[ [error]]:
  <output>`` entry. The outcome is typed: ``error`` is ``failed``; a completed ``bash`` call's
  exit code (``state.metadata.exit``) goes through the one shell rule
  (``stages.shell_exit``: ``grep``/``rg`` exiting 1 matched nothing), since OpenCode completes
  a command that exits non-zero; any other completed call ``succeeded``. The output
  (``state.output``, else ``state.error``) only under ``index_tool_output``.
  ``files_touched`` from the input's typed path keys (``filePath``, ``path``).
* An assistant message's ``error`` (an aborted or failed model call) gives no entry; step,
  snapshot, patch, file and agent parts give none (bookkeeping). A ``compaction`` summary is
  an assistant message with ``summary: true``: a ``compactionSummary`` entry.
* A child session (``stages.opencode.source``) gives sidechain entries whose ``agent_id`` is
  its own session id.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from stages.common import clean_text, is_blank, summarize_args
from stages.families import as_call
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.opencode.source import AGENT
from stages.policy import Policy
from stages.shell_exit import exit_outcome
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["normalize_opencode"]

_SHELL: Final = "bash"
_ENDED: Final = frozenset({"completed", "error"})


def normalize_opencode(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in order (*memo* unused: a session is
    re-derived whole). Never raises on odd content."""
    records = session.records
    entries: list[NormalizedEntry] = []
    for p in sorted(set(lineage.selected)):
        if 0 <= p < len(records):
            made = _entries(records[p], policy)
            if session.sidechain:
                made = [replace(e, sidechain=True, agent_id=session.session_id) for e in made]
            entries.extend(made)
    return NormalizeResult(entries=tuple(entries))


def _entries(record: SourceRecord, policy: Policy) -> list[NormalizedEntry]:
    message = _object(record.value.get("message"))
    parts = [p for p in record.value.get("parts", ()) if isinstance(p, dict)]
    role = message.get("role")
    made: list[NormalizedEntry] = []
    if role == "user":
        texts = [
            p["text"]
            for p in parts
            if p.get("type") == "text"
            and isinstance(p.get("text"), str)
            and p.get("synthetic") is not True
            and p.get("ignored") is not True
        ]
        typed = "\n".join(texts)
        if not is_blank(typed):
            made.append(_entry(record, "user", typed))
    elif role == "assistant":
        summary = message.get("summary") is True
        for k, part in enumerate(parts):
            own = _part_id(record, part, k)
            kind = part.get("type")
            text = part.get("text")
            if kind == "text" and isinstance(text, str) and not is_blank(text):
                if summary:
                    made.append(_entry(record, "compactionSummary", f"compaction: {text}", own))
                elif part.get("synthetic") is not True:
                    made.append(_entry(record, "assistant", text, own))
            elif kind == "reasoning" and policy.index_thinking:
                if isinstance(text, str) and not is_blank(text):
                    made.append(_entry(record, "assistant", text, own, entry_type="reasoning"))
            elif kind == "tool":
                made.extend(_tool(record, part, own, policy))
    return made


def _part_id(record: SourceRecord, part: dict[str, Any], k: int) -> str:
    """A part's entry id: its own id (OpenCode's ``prt_…``), else its place in the message."""
    own = part.get("id")
    return clean_text(own) if isinstance(own, str) and own else f"{record.id}/part:{k}"


def _tool(
    record: SourceRecord, part: dict[str, Any], own: str, policy: Policy
) -> list[NormalizedEntry]:
    raw = part.get("tool")
    name = clean_text(raw) if isinstance(raw, str) else ""
    state = _object(part.get("state"))
    args = state.get("input")
    summary = summarize_args(args) if "input" in state else ""
    entry = _entry(record, "assistant", f"Tool: {name}({summary})", own)
    call = as_call(entry, AGENT, name, args, part.get("callID"), record.id)
    status = state.get("status")
    if status not in _ENDED:
        return [call]  # still pending or running: no result yet
    outcome = _outcome(name, status, state)
    failed = outcome == "failed"
    body = state.get("output") if status == "completed" else state.get("error")
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    text = (
        f"{prefix}: {body}"
        if policy.index_tool_output and isinstance(body, str) and body
        else prefix
    )
    result = replace(
        _entry(record, "toolResult", text, f"{own}/result"),
        tool=name or None,
        is_error=failed,
        ref=call.ref,
        provider=call.provider,
        action=call.action,
        outcome=outcome,
        family=call.family,
    )
    return [call, result]


def _outcome(name: str, status: object, state: dict[str, Any]) -> str:
    if status == "error":
        return "failed"
    if name == _SHELL:
        code = _object(state.get("metadata")).get("exit")
        if isinstance(code, float) and code.is_integer():
            code = int(code)
        if isinstance(code, int) and not isinstance(code, bool):
            return exit_outcome(_object(state.get("input")).get("command"), code)
    return "succeeded"


def _entry(
    record: SourceRecord,
    role: str,
    text: str,
    own: str | None = None,
    *,
    entry_type: str = "message",
) -> NormalizedEntry:
    """An entry of *record*: the message's own id, or *own* (a part's) for one of several."""
    created = _object(_object(record.value.get("message")).get("time")).get("created")
    return NormalizedEntry(
        index=0,
        entry_id=own or record.id,
        parent_id=record.parent_id,
        type=entry_type,
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=int(created)
        if isinstance(created, int | float) and not isinstance(created, bool)
        else None,
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
