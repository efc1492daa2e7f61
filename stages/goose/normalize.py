"""Normalize a Goose session: its messages' typed contents → ``NormalizedEntry``s.

* A message whose ``metadata_json`` says ``userVisible: false`` (what Goose sent the model
  alone: a compaction's instructions, a continuation nudge) gives no entry.
* ``text`` contents → one ``user`` or ``assistant`` entry per message (joined);
  ``thinking`` → a ``reasoning`` entry under ``index_thinking``.
* ``toolRequest`` → a ``Tool: <name>(<arguments ≤400>)`` entry addressed
  ``<message>/call:<id>`` (``toolCall.value.name``/``arguments``; a request whose
  ``toolCall.status`` is ``error`` — the model's call could not be parsed — names no tool).
  ``files_touched`` from the arguments' typed path keys.
* ``toolResponse`` (in a ``user`` message) → a ``toolResult(<name>)[ [error]]: <text>`` entry,
  its name from the request with the same id. The outcome is typed: ``toolResult.status``
  ``error`` or ``value.isError`` is ``failed``, else ``succeeded``. Goose's shell records no
  exit code (``developer/shell.rs`` returns the output alone), so a command that exits
  non-zero is a failure only where the tool said so. The text (``value.content`` text items,
  else the error) only under ``index_tool_output``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stages.common import clean_text, is_blank, summarize_args
from stages.families import as_call, tool_family, tool_identity
from stages.goose.source import AGENT
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["normalize_goose"]


def normalize_goose(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects (*memo* unused). Never raises."""
    records = session.records
    names = _request_names(records)
    entries: list[NormalizedEntry] = []
    for p in sorted(set(lineage.selected)):
        if 0 <= p < len(records):
            made = _entries(records[p], names, policy)
            if session.sidechain:
                made = [replace(e, sidechain=True, agent_id=session.session_id) for e in made]
            entries.extend(made)
    return NormalizeResult(entries=tuple(entries))


def _contents(record: SourceRecord) -> list[dict[str, Any]]:
    found = record.value.get("content_json")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _call(content: dict[str, Any]) -> dict[str, Any]:
    call = _object(content.get("toolCall"))
    return _object(call.get("value")) if call.get("status") == "success" else {}


def _request_names(records: tuple[SourceRecord, ...]) -> dict[str, str]:
    names: dict[str, str] = {}
    for record in records:
        for c in _contents(record):
            if c.get("type") in ("toolRequest", "frontendToolRequest"):
                name = _call(c).get("name")
                if isinstance(c.get("id"), str) and isinstance(name, str):
                    names.setdefault(c["id"], clean_text(name))
    return names


def _entries(record: SourceRecord, names: dict[str, str], policy: Policy) -> list[NormalizedEntry]:
    meta = _object(record.value.get("metadata_json"))
    if meta.get("userVisible") is False:
        return []
    role = record.kind if record.kind in ("user", "assistant") else None
    contents = _contents(record)
    made: list[NormalizedEntry] = []
    texts = [
        c["text"] for c in contents if c.get("type") == "text" and isinstance(c.get("text"), str)
    ]
    text = "\n".join(texts)
    if role is not None and not is_blank(text):
        made.append(_entry(record, role, text, record.id))
    for k, c in enumerate(contents):
        kind = c.get("type")
        own = f"{record.id}/{k}"
        if kind == "thinking" and policy.index_thinking:
            thought = c.get("thinking")
            if isinstance(thought, str) and not is_blank(thought):
                made.append(_entry(record, "assistant", thought, own, entry_type="reasoning"))
        elif kind in ("toolRequest", "frontendToolRequest"):
            made.append(_request(record, c, own))
        elif kind == "toolResponse":
            made.append(_response(record, c, own, names, policy))
    return made


def _request(record: SourceRecord, content: dict[str, Any], own: str) -> NormalizedEntry:
    call = _call(content)
    raw = call.get("name")
    name = clean_text(raw) if isinstance(raw, str) else ""
    args = call.get("arguments")
    summary = summarize_args(args) if "arguments" in call else ""
    entry = _entry(record, "assistant", f"Tool: {name}({summary})", own)
    return as_call(entry, AGENT, name, args, content.get("id"), record.id)


def _response(
    record: SourceRecord,
    content: dict[str, Any],
    own: str,
    names: dict[str, str],
    policy: Policy,
) -> NormalizedEntry:
    call_id = content.get("id")
    name = names.get(call_id, "") if isinstance(call_id, str) else ""
    result = _object(content.get("toolResult"))
    value = _object(result.get("value"))
    failed = result.get("status") == "error" or value.get("isError") is True
    if result.get("status") == "error":
        body = result.get("error") if isinstance(result.get("error"), str) else ""
    else:
        items = value.get("content")
        body = "\n".join(
            i["text"]
            for i in (items if isinstance(items, list) else ())
            if isinstance(i, dict) and isinstance(i.get("text"), str)
        )
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    text = f"{prefix}: {body}" if policy.index_tool_output and body else prefix
    ref, provider, action = tool_identity(AGENT, name) if name else (None, None, None)
    return replace(
        _entry(record, "toolResult", text, own),
        tool=name or None,
        is_error=failed,
        ref=ref,
        provider=provider,
        action=action,
        outcome="failed" if failed else "succeeded",
        family=tool_family(AGENT, name),
    )


def _entry(
    record: SourceRecord, role: str, text: str, own: str | None, *, entry_type: str = "message"
) -> NormalizedEntry:
    created = record.value.get("created_timestamp")
    if not isinstance(created, int | float) or isinstance(created, bool):
        created = None
    return NormalizedEntry(
        index=0,
        entry_id=own,
        parent_id=record.parent_id,
        type=entry_type,
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=int(created * 1000) if created is not None else None,
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
