"""The Qwen Code normalizer: the selected records of a session → ``NormalizedEntry``s.

What differs from Gemini CLI is the framing (``stages.qwen.source``); the content and the
entries are the Gemini family's (``stages.gemini.parts``, ``stages.gemini.entries``):

* **user** → a ``user`` entry of its text parts (``functionResponse`` parts are never user
  text).
* **assistant** → one ``assistant`` entry: text parts, thought parts only under
  ``index_thinking``, a ``Tool: <name>(<args>)`` line per ``functionCall`` part; address
  ``<uuid>/call:<first call id>``.
* **tool_result** → one ``toolResult`` entry per ``functionResponse`` part (the first has the
  record's uuid as entry id, later ones ``<uuid>/result:<call id>``), body ``response.output``
  or ``response.error``; outcome from ``toolCallResult.status`` and, for a shell call, the
  typed ``toolCallResult.resultDisplay.exitCode`` with the command of the paired call
  (``stages.gemini.entries.call_outcome``; Qwen Code itself already calls a search that found
  nothing a success).
* ``system`` records (telemetry, snapshots, titles, compression checkpoints, …) give no entry.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import replace
from typing import Any

from stages.common import clean_text, is_blank, parse_timestamp_ms
from stages.gemini.entries import call_outcome, result_entry, turn_entry
from stages.gemini.parts import (
    function_calls,
    function_responses,
    part_list,
    response_body,
    texts,
    thoughts,
)
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult, record_key
from stages.policy import Policy
from stages.qwen.source import AGENT
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["normalize_qwen"]

_SHELL_RESULT = "shell_result"


def normalize_qwen(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order. Never raises on odd content.
    With *memo* a record seen before is not normalized again (a result's entries depend on
    the commands of its calls too, which are in the key)."""
    records = session.records
    selected = [records[p] for p in sorted(set(lineage.selected)) if 0 <= p < len(records)]
    commands = _commands(records)
    if memo is not None:
        memo.bind(policy)
    entries: list[NormalizedEntry] = []
    for record in selected:
        if record.kind not in ("user", "assistant", "tool_result"):
            continue
        if memo is None:
            entries.extend(_record(record, policy, commands))
            continue
        key: Hashable = ("qwen", record_key(record), _command_key(record, commands))
        found = memo.get(key, (record.value,))
        if found is None:
            found = tuple(_record(record, policy, commands))
            memo.put(key, (record.value,), found)
        entries.extend(found)
    return NormalizeResult(entries=tuple(entries))


def _record(
    record: SourceRecord, policy: Policy, commands: dict[str, object]
) -> list[NormalizedEntry]:
    message = record.value.get("message")
    parts = part_list(message.get("parts")) if isinstance(message, dict) else []
    timestamp = parse_timestamp_ms(record.value.get("timestamp"))
    out: list[NormalizedEntry]
    if record.kind == "user":
        out = _user(record, parts, timestamp)
    elif record.kind == "assistant":
        out = _assistant(record, parts, policy, timestamp)
    else:
        out = _results(record, parts, policy, commands, timestamp)
    return [replace(e, sidechain=True) for e in out] if record.sidechain else out


def _user(
    record: SourceRecord, parts: list[dict[str, Any]], timestamp: int | None
) -> list[NormalizedEntry]:
    if function_responses(parts):
        return []
    text = "\n".join(texts(parts))
    if is_blank(text):
        return []
    return [
        NormalizedEntry(
            index=0,
            entry_id=record.id,
            parent_id=record.parent_id,
            type="message",
            role="user",
            tool=None,
            text=clean_text(text),
            timestamp=timestamp,
            is_error=False,
            truncated=False,
            line=record.line,
            offset=record.offset,
            agent=AGENT,
        )
    ]


def _assistant(
    record: SourceRecord, parts: list[dict[str, Any]], policy: Policy, timestamp: int | None
) -> list[NormalizedEntry]:
    pieces = [t for t in texts(parts) if not is_blank(t)]
    if policy.index_thinking:
        pieces = [*(t for t in thoughts(parts) if not is_blank(t)), *pieces]
    calls = [
        (
            _str(c.get("id")),
            _str(c.get("name")),
            c["args"] if isinstance(c.get("args"), dict) else None,
        )
        for c in function_calls(parts)
    ]
    if not pieces and not calls:
        return []
    return [
        turn_entry(
            AGENT,
            record.id,
            record.parent_id,
            pieces,
            calls,
            timestamp=timestamp,
            line=record.line,
            offset=record.offset,
        )
    ]


def _results(
    record: SourceRecord,
    parts: list[dict[str, Any]],
    policy: Policy,
    commands: dict[str, object],
    timestamp: int | None,
) -> list[NormalizedEntry]:
    result = record.value.get("toolCallResult")
    result = result if isinstance(result, dict) else {}
    display = result.get("resultDisplay")
    exit_code = None
    if isinstance(display, dict) and display.get("type") == _SHELL_RESULT:
        code = display.get("exitCode")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    out: list[NormalizedEntry] = []
    for k, response in enumerate(function_responses(parts)):
        call_id = _str(response.get("id"))
        name = _str(response.get("name")) or None
        body, stated_error = response_body(response.get("response"))
        own = result.get("callId") in (None, call_id)
        status = result.get("status") if own else None
        if status is None and stated_error:
            status = "error"
        outcome = call_outcome(
            AGENT, name or "", status, commands.get(call_id), exit_code if own else None
        )
        entry_id = record.id if k == 0 else (f"{record.id}/result:{call_id}" if record.id else None)
        out.append(
            result_entry(
                AGENT,
                entry_id,
                record.parent_id,
                name,
                body,
                outcome,
                policy.index_tool_output,
                timestamp=timestamp,
                line=record.line,
                offset=record.offset,
            )
        )
    return out


def _commands(records: Iterable[SourceRecord]) -> dict[str, object]:
    """``functionCall`` id → its ``args.command`` across the file (a result pairs with its
    call even off the selected path)."""
    found: dict[str, object] = {}
    for record in records:
        if record.kind != "assistant":
            continue
        message = record.value.get("message")
        if not isinstance(message, dict):
            continue
        for call in function_calls(part_list(message.get("parts"))):
            call_id, args = call.get("id"), call.get("args")
            if isinstance(call_id, str) and isinstance(args, dict) and "command" in args:
                found[call_id] = args["command"]
    return found


def _command_key(record: SourceRecord, commands: dict[str, object]) -> tuple[str, ...]:
    if record.kind != "tool_result":
        return ()
    message = record.value.get("message")
    parts = part_list(message.get("parts")) if isinstance(message, dict) else []
    return tuple(repr(commands.get(_str(r.get("id")))) for r in function_responses(parts))


def _str(value: object) -> str:
    return clean_text(value) if isinstance(value, str) else ""
