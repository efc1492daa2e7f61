"""The Claude Code normalizer: the selected records of a transcript → ``NormalizedEntry``s.

Mirrors the Pi text rules (reference §1.10) over Claude Code's typed fields (formats §2):

* **user** (``type: user``) — human text only: string content, or its ``text`` blocks joined by
  ``\\n`` (images and documents count as content but add no text). Never user text:
  ``isMeta`` lines (§2.5), ``isCompactSummary`` lines (a ``compactionSummary`` entry instead,
  §2.7), lines carrying tool output (``tool_result`` blocks or ``toolUseResult``, §2.5: they give
  ``toolResult`` entries), and text that opens with one of the structural markup tags Claude
  Code wraps injected context in (§2.5; the seed adds ``task-notification``): a string content
  is dropped whole, a ``text`` block individually. Only exact known tag names at the start of
  the text are matched; no prose is inspected (the seed's "This session is being continued"
  prefix is deliberately not mirrored: ``isCompactSummary`` marks those lines).
* **assistant** — the lines of one API response share ``message.id`` (§2.6) and become one entry
  at the first selected line: ``text`` blocks, non-empty ``thinking`` only under ``index_thinking``
  (2.1.x writes signature-only thinking with empty text), and
  ``Tool: <name>(<args ≤400>)`` per ``tool_use``/``server_tool_use``, joined by ``\\n``. A line
  repeated under one uuid and a ``tool_use`` id seen twice count once. ``tool`` is the first call's
  name, ``ref``/``provider``/``action`` are ``claude.<tool>``/``claude``/``<tool>`` (an MCP tool
  ``mcp__<server>__<tool>`` has its server's: ``<server>.<tool>``/``<server>``/``<tool>``,
  ``stages.families``), ``family`` the tool's kind; ``ToolSearch`` is a tool call like any other,
  ``operation_address`` is ``<entry id>/call:<first tool_use id>``, ``files_touched`` collects the
  typed path keys of every call's ``input``. ``isApiErrorMessage`` sets ``is_error``.
* **toolResult** — one entry per ``tool_result`` block: ``toolResult(<name>)[ [error]]: <body>``
  exactly as Pi writes it (no ``: `` without a body, bare ``toolResult`` for an unpaired result),
  the name from the paired ``tool_use`` anywhere in the file, the body (text of the block) only
  under ``index_tool_output``; ``is_error``/``outcome`` from the block's ``is_error`` (a
  permission denial, ``toolDenialKind: "user-rejected"``, carries ``is_error`` and so fails).
  The first block of a line has the line's uuid as entry id, later ones
  ``<uuid>/result:<tool_use_id>``; no operation address (the call's assistant entry carries
  it, as in Pi).
* **compactionSummary** — ``isCompactSummary`` lines: ``compaction: <summary>``.

Everything else (``system``, ``progress``, ``attachment`` of every subtype, the request records
``api-request*``, ``tools-used``, queue, cost and other metadata lines, unknown types) gives no
entry and no searchable text (``stages.claude.known``). ``index`` is left 0: the dispatcher
assigns dense indices. ``sidechain`` is the record's flag or the session's (subagent files).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from stages.common import (
    clean_text,
    files_touched,
    parse_timestamp_ms,
    summarize_args,
)
from stages.families import tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult, record_key
from stages.policy import Policy
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["INJECTED_TAGS", "normalize_claude"]

AGENT = "claude"

# Markup Claude Code wraps around context it injects as user lines (formats §2.5) and the
# seed's task notifications. Matched only as the exact opening tag of the text.
INJECTED_TAGS = (
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "task-notification",
)
_OPENERS = tuple(f"<{tag}>" for tag in INJECTED_TAGS)
_TOOL_BLOCKS = ("tool_use", "server_tool_use")


def normalize_claude(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order. Never raises on odd content.

    With *memo*, a reply or user line made before is not made again (``EntryMemo``): its
    entries depend only on its records (``record_key``), the policy, the sidechain flag
    and, for tool results, the names the file gives their calls, all in the key.
    """
    records = session.records
    selected = [records[p] for p in sorted(set(lineage.selected)) if 0 <= p < len(records)]
    tool_names = _tool_names(records)
    replies = _replies(selected)
    if memo is not None:
        memo.bind(policy)
    entries: list[NormalizedEntry] = []
    for record in selected:
        value = record.value
        sidechain = record.sidechain or session.sidechain
        if record.kind == "assistant":
            group = replies.get(record.position)
            if group is None:
                continue
            if memo is None:
                entries.append(_assistant(group, policy, sidechain))
                continue
            pinned = tuple(r.value for r in group)
            key: Hashable = ("reply", sidechain, *map(record_key, group))
            found = memo.get(key, pinned)
            if found is None:
                found = (_assistant(group, policy, sidechain),)
                memo.put(key, pinned, found)
            entries.extend(found)
        elif record.kind == "user":
            if memo is None:
                entries.extend(_user(record, value, tool_names, policy, sidechain))
                continue
            key = ("user", sidechain, record_key(record), *_result_names(value, tool_names))
            found = memo.get(key, (value,))
            if found is None:
                found = tuple(_user(record, value, tool_names, policy, sidechain))
                memo.put(key, (value,), found)
            entries.extend(found)
    return NormalizeResult(entries=tuple(entries))


def _result_names(value: dict[str, Any], tool_names: dict[str, str]) -> list[str | None]:
    """The call name the file gives each ``tool_result`` block of a user line."""
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    out: list[str | None] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            out.append(tool_names.get(call_id if isinstance(call_id, str) else ""))  # as _result
    return out


def _replies(selected: list[SourceRecord]) -> dict[int, list[SourceRecord]]:
    """Each reply's selected lines, keyed by the position of its first line."""
    first: dict[tuple[bool, str], int] = {}
    groups: dict[int, list[SourceRecord]] = {}
    for record in selected:
        if record.kind != "assistant":
            continue
        message = record.value.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(message_id, str):
            groups[record.position] = [record]
            continue
        start = first.setdefault((record.sidechain, message_id), record.position)
        groups.setdefault(start, []).append(record)
    return groups


def _assistant(group: list[SourceRecord], policy: Policy, sidechain: bool) -> NormalizedEntry:
    head = group[0]
    parts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    seen_lines: set[str] = set()
    seen_calls: set[str] = set()
    is_error = False
    for record in group:
        if record.id is not None:
            if record.id in seen_lines:
                continue
            seen_lines.add(record.id)
        is_error = is_error or record.value.get("isApiErrorMessage") is True
        for block in _blocks(record.value):
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif kind == "thinking":
                thinking = block.get("thinking")
                if policy.index_thinking and isinstance(thinking, str) and thinking:
                    parts.append(thinking)
            elif kind in _TOOL_BLOCKS:
                call_id = block.get("id")
                if isinstance(call_id, str):
                    if call_id in seen_calls:
                        continue
                    seen_calls.add(call_id)
                name = block.get("name")
                name = clean_text(name) if isinstance(name, str) else ""
                args = block.get("input") if "input" in block else None
                summary = summarize_args(args) if "input" in block else ""
                parts.append(f"Tool: {name}({summary})")
                calls.append((name, clean_text(call_id) if isinstance(call_id, str) else "", args))
    tool = (calls[0][0] or None) if calls else None
    entry_id = _clean(head.id)
    address = f"{entry_id}/call:{calls[0][1]}" if tool and calls[0][1] and entry_id else None
    ref, provider, action = tool_identity(AGENT, tool) if tool else (None, None, None)
    return NormalizedEntry(
        index=0,
        entry_id=entry_id,
        parent_id=_clean(head.parent_id),
        type="message",
        role="assistant",
        tool=tool,
        text=clean_text("\n".join(parts)),
        timestamp=parse_timestamp_ms(head.value.get("timestamp")),
        is_error=is_error,
        truncated=False,
        line=head.line,
        offset=head.offset,
        agent=AGENT,
        operation_address=address,
        ref=ref,
        provider=provider,
        action=action,
        files_touched=files_touched(args for _, _, args in calls),
        sidechain=sidechain,
        family=tool_family(AGENT, tool),
    )


def _user(
    record: SourceRecord,
    value: dict[str, Any],
    tool_names: dict[str, str],
    policy: Policy,
    sidechain: bool,
) -> Iterable[NormalizedEntry]:
    if value.get("isMeta") is True:
        return []
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if value.get("isCompactSummary") is True:
        summary = _joined_text(content)
        return [
            _entry(record, "compaction", "compactionSummary", f"compaction: {summary}", sidechain)
        ]
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        return [_result(record, k, b, tool_names, policy, sidechain) for k, b in enumerate(results)]
    if "toolUseResult" in value:
        return []
    if isinstance(content, str):
        if _injected(content):
            return []
        return [_entry(record, "message", "user", content, sidechain)]
    kept = [b for b in blocks if not (b.get("type") == "text" and _injected(b.get("text")))]
    if not any(b.get("type") in ("text", "image", "document") for b in kept):
        return []
    return [_entry(record, "message", "user", _joined_text(kept), sidechain)]


def _result(
    record: SourceRecord,
    k: int,
    block: dict[str, Any],
    tool_names: dict[str, str],
    policy: Policy,
    sidechain: bool,
) -> NormalizedEntry:
    call_id = block.get("tool_use_id")
    call_id = call_id if isinstance(call_id, str) else ""
    name = tool_names.get(call_id)
    failed = block.get("is_error") is True
    body = _joined_text(block.get("content")) if policy.index_tool_output else ""
    text = _result_text(name, failed, body)
    own = _clean(record.id)
    entry_id = own if k == 0 or own is None else f"{own}/result:{clean_text(call_id)}"
    ref, provider, action = tool_identity(AGENT, name) if name else (None, None, None)
    return NormalizedEntry(
        index=0,
        entry_id=entry_id,
        parent_id=_clean(record.parent_id),
        type="message",
        role="toolResult",
        tool=name,
        text=clean_text(text),
        timestamp=parse_timestamp_ms(record.value.get("timestamp")),
        is_error=failed,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
        ref=ref,
        provider=provider,
        action=action,
        outcome="failed" if failed else "succeeded",
        sidechain=sidechain,
        family=tool_family(AGENT, name),
    )


def _result_text(name: str | None, failed: bool, body: str) -> str:
    """Pi's form: ``toolResult(<tool>)[ [error]]: <body>``; no ``: `` without a body."""
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    return f"{prefix}: {body}" if body else prefix


def _entry(
    record: SourceRecord, kind: str, role: str, text: str, sidechain: bool
) -> NormalizedEntry:
    return NormalizedEntry(
        index=0,
        entry_id=_clean(record.id),
        parent_id=_clean(record.parent_id),
        type=kind,
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=parse_timestamp_ms(record.value.get("timestamp")),
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
        sidechain=sidechain,
    )


def _tool_names(records: Iterable[SourceRecord]) -> dict[str, str]:
    """``tool_use`` id → tool name over the whole file (a result pairs even off the path)."""
    names: dict[str, str] = {}
    for record in records:
        if record.kind != "assistant":
            continue
        for block in _blocks(record.value):
            call_id, name = block.get("id"), block.get("name")
            if block.get("type") not in _TOOL_BLOCKS:
                continue
            if isinstance(call_id, str) and isinstance(name, str) and name:
                names.setdefault(call_id, clean_text(name))
    return names


def _clean(value: str | None) -> str | None:
    return clean_text(value) if value is not None else None


def _blocks(value: dict[str, Any]) -> list[dict[str, Any]]:
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _joined_text(content: object) -> str:
    """A string content as it is, or the ``text`` of its blocks joined by ``\\n``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _injected(text: object) -> bool:
    """Does ``text`` open with one of the markup tags of injected context (formats §2.5)?"""
    return isinstance(text, str) and text.lstrip().startswith(_OPENERS)
