"""The Gemini CLI normalizer: the selected records of a session → ``NormalizedEntry``s.

* **user** message → a ``user`` entry of what the person typed: ``displayContent`` when the
  writer kept it (``content`` then holds the expanded ``@file`` text), else ``content``; its
  text parts joined by ``\\n``. Never user text: a message whose parts are
  ``functionResponse``s (the tool results the CLI sends back, which the model turn's
  ``toolCalls`` already record with their status), and text that opens with the markup the CLI
  wraps injected context in (``<session_context>``, ``<hook_context>``: the writer's own
  ``isIgnoredUserContent``).
* **gemini** message → one ``assistant`` entry: its text parts, its ``thoughts``
  (``subject: description``) and thought parts only under ``index_thinking``, and a
  ``Tool: <name>(<args>)`` line per ``toolCalls`` item (``stages.gemini.entries``); address
  ``<id>/call:<first call id>``. Then one ``toolResult`` entry per call that has a ``result``
  or a final ``status``, id ``<message id>/result:<call id>``, body from the result's
  ``functionResponse.response`` (``output``, or ``error``), outcome from ``status`` and, for
  the shell tool, the exit code its envelope states (``stages.gemini.parts``).
* ``info`` / ``warning`` / ``error`` messages (the CLI's own notices) and every other record
  (metadata, rewinds, superseded versions) give no entry.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any, Final

from stages.common import clean_text, is_blank, js_trim, parse_timestamp_ms
from stages.gemini.entries import call_outcome, result_entry, turn_entry
from stages.gemini.parts import (
    envelope_exit_code,
    function_responses,
    part_list,
    response_body,
    texts,
    thoughts,
)
from stages.gemini.source import AGENT, MESSAGE
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult, record_key
from stages.policy import Policy
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["INJECTED_OPENERS", "normalize_gemini"]

INJECTED_OPENERS: Final = ("<session_context>", "<hook_context>")
_SHELL_COMMAND: Final = "command"


def normalize_gemini(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order. Never raises on odd content.
    With *memo* a record seen before is not normalized again (its entries depend on it, the
    policy and the session's sidechain flag alone)."""
    records = session.records
    selected = [records[p] for p in sorted(set(lineage.selected)) if 0 <= p < len(records)]
    if memo is not None:
        memo.bind(policy)
    entries: list[NormalizedEntry] = []
    for record in selected:
        if record.kind != MESSAGE:
            continue
        if memo is None:
            entries.extend(_message(record, policy, session.sidechain))
            continue
        key: Hashable = ("gemini", session.sidechain, record_key(record))
        found = memo.get(key, (record.value,))
        if found is None:
            found = tuple(_message(record, policy, session.sidechain))
            memo.put(key, (record.value,), found)
        entries.extend(found)
    return NormalizeResult(entries=tuple(entries))


def _message(record: SourceRecord, policy: Policy, sidechain: bool) -> list[NormalizedEntry]:
    value = record.value
    kind = value.get("type")
    if kind == "user":
        made = _user(record, value)
        out = [] if made is None else [made]
    elif kind == "gemini":
        out = _turn(record, value, policy)
    else:
        return []
    if sidechain:
        out = [replace(e, sidechain=True) for e in out]
    return out


def _user(record: SourceRecord, value: dict[str, Any]) -> NormalizedEntry | None:
    parts = part_list(value.get("content"))
    if function_responses(parts):
        return None
    shown = value.get("displayContent")
    if shown is not None and part_list(shown):
        parts = part_list(shown)
    pieces = [t for t in texts(parts) if not js_trim(t).startswith(INJECTED_OPENERS)]
    text = "\n".join(pieces)
    if is_blank(text):
        return None
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type="message",
        role="user",
        tool=None,
        text=clean_text(text),
        timestamp=parse_timestamp_ms(value.get("timestamp")),
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )


def _turn(record: SourceRecord, value: dict[str, Any], policy: Policy) -> list[NormalizedEntry]:
    parts = part_list(value.get("content"))
    pieces = [t for t in texts(parts) if not is_blank(t)]
    if policy.index_thinking:
        pieces = [*_thought_texts(value.get("thoughts")), *thoughts(parts), *pieces]
    calls = [c for c in value.get("toolCalls") or [] if isinstance(c, dict)]
    named = [(_str(c.get("id")), _str(c.get("name")), c) for c in calls]
    timestamp = parse_timestamp_ms(value.get("timestamp"))
    out: list[NormalizedEntry] = []
    if pieces or named:
        out.append(
            turn_entry(
                AGENT,
                record.id,
                record.parent_id,
                pieces,
                [(i, n, _args(c)) for i, n, c in named],
                timestamp=timestamp,
                line=record.line,
                offset=record.offset,
            )
        )
    for call_id, name, call in named:
        status = call.get("status")
        result = call.get("result")
        if result is None and status not in ("success", "error", "cancelled"):
            continue  # not finished when this version of the turn was written
        body, stated_error = _result_body(result, call_id)
        args = _args(call)
        exit_code = envelope_exit_code(body) if body else None
        outcome = call_outcome(
            AGENT,
            name,
            "error" if stated_error and status is None else status,
            args.get(_SHELL_COMMAND) if isinstance(args, dict) else None,
            exit_code,
        )
        entry_id = f"{record.id}/result:{clean_text(call_id)}" if record.id else None
        out.append(
            result_entry(
                AGENT,
                entry_id,
                record.id,
                name or None,
                body,
                outcome,
                policy.index_tool_output,
                timestamp=parse_timestamp_ms(call.get("timestamp")) or timestamp,
                line=record.line,
                offset=record.offset,
            )
        )
    return out


def _result_body(result: object, call_id: str) -> tuple[str, bool]:
    """The text of a call's recorded result parts (its own ``functionResponse`` first)."""
    parts = part_list(result) if result is not None else []
    responses = function_responses(parts)
    own = [r for r in responses if r.get("id") == call_id] or responses
    if own:
        return response_body(own[0].get("response"))
    return "\n".join(texts(parts)), False


def _thought_texts(value: object) -> list[str]:
    out: list[str] = []
    for thought in value if isinstance(value, list) else []:
        if not isinstance(thought, dict):
            continue
        subject, description = thought.get("subject"), thought.get("description")
        pieces = [p for p in (subject, description) if isinstance(p, str) and not is_blank(p)]
        if pieces:
            out.append(": ".join(pieces))
    return out


def _args(call: dict[str, Any]) -> dict[str, Any] | None:
    args = call.get("args")
    return args if isinstance(args, dict) else None


def _str(value: object) -> str:
    return clean_text(value) if isinstance(value, str) else ""
