"""Normalize a Copilot CLI session: its typed events → ``NormalizedEntry``s.

* ``user.message`` → a ``user`` entry of ``data.content`` (what the user typed, not the
  ``transformedContent`` sent to the model); a message autopilot injected
  (``isAutopilotContinuation``) or one with a ``source`` (a skill's, say) gives none, except
  a sub-agent's prompt (``source`` its parent; ``stages.copilot.source``), a sidechain
  ``user`` entry.
* ``assistant.message`` → an ``assistant`` entry of ``content`` when not blank, then one
  ``Tool: <name>(<args ≤400>)`` entry per ``toolRequests`` item, addressed
  ``<event id>/call:<toolCallId>``; an item naming ``mcpServerName`` / ``mcpToolName`` is the
  MCP tool ``mcp__<server>__<tool>``. ``files_touched`` from the arguments' typed path keys.
* ``tool.execution_complete`` → a ``toolResult(<name>)[ [error]]: <body>`` entry, its name
  from the call with the same ``toolCallId`` (``toolRequests`` or ``tool.execution_start``).
  The outcome is typed: ``success: false`` is ``failed``; a shell's exit code other than 0
  is ``failed`` and 0 ``succeeded`` (a shell command that exits non-zero still has
  ``success: true``): ``shellExecution.exitCode`` (1.0.102), a ``terminal`` content block's
  ``exitCode`` in ``result.contents`` (the schema's), or the bash tool's
  ``toolTelemetry.metrics.exit_code`` (1.0.63 writes only that), read by the one shell rule
  (``stages.shell_exit``: ``grep`` exiting 1 matched nothing); otherwise ``success: true``
  is ``succeeded``.
  The body (``result.content``, else ``error.message``) only under ``index_tool_output``.
* ``assistant.reasoning`` → a ``reasoning`` entry under ``index_thinking``;
  ``session.compaction_complete`` → ``compaction: <summaryContent>``.
* Everything else (turn and usage bookkeeping, permissions, hooks, ``system.message`` — the
  system prompt) gives no entry. A sub-agent's records give sidechain entries with its
  ``agent_id`` and, as ``parent_call_id``, the ``task`` call that spawned it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from stages.common import clean_text, is_blank, parse_timestamp_ms, summarize_args
from stages.copilot.source import AGENT
from stages.families import as_call, mcp_parts, tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.shell_exit import exit_outcome
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["normalize_copilot", "tool_name"]

_TERMINAL: Final = "terminal"


def normalize_copilot(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order (*memo* unused: a session
    is small and re-derived whole). Never raises on odd content."""
    records = session.records
    names = _call_names(records)
    subagents = session.extra.get("subagents", {})
    entries: list[NormalizedEntry] = []
    for p in sorted(set(lineage.selected)):
        if 0 <= p < len(records):
            record = records[p]
            made = _entries(record, names, policy)
            if record.sidechain:
                agent_id, call = subagents.get(record.id, (None, None))
                made = [
                    replace(e, sidechain=True, agent_id=agent_id, parent_call_id=call) for e in made
                ]
            entries.extend(made)
    return NormalizeResult(entries=tuple(entries))


def tool_name(item: dict[str, Any], name_key: str) -> str:
    """A call's tool name: the MCP tool's one name when the call names its server."""
    server, action = item.get("mcpServerName"), item.get("mcpToolName")
    if isinstance(server, str) and server and isinstance(action, str) and action:
        joined = f"mcp__{clean_text(server)}__{clean_text(action)}"
        if mcp_parts(joined) is not None:
            return joined
    raw = item.get(name_key)
    return clean_text(raw) if isinstance(raw, str) else ""


def _call_names(records: tuple[SourceRecord, ...]) -> dict[str, tuple[str, object]]:
    """Each call's (tool name, shell command: its ``arguments.command``, else None)."""
    names: dict[str, tuple[str, object]] = {}
    for record in records:
        data = _data(record.value)
        if record.kind == "assistant.message":
            found = [(i, i.get("toolCallId"), tool_name(i, "name")) for i in _requests(data)]
        elif record.kind in ("tool.execution_start", "tool.user_requested"):
            found = [(data, data.get("toolCallId"), tool_name(data, "toolName"))]
        else:
            continue
        for item, call_id, name in found:
            if isinstance(call_id, str) and call_id not in names:
                names[call_id] = (name, _object(item.get("arguments")).get("command"))
    return names


def _entries(
    record: SourceRecord, names: dict[str, tuple[str, object]], policy: Policy
) -> list[NormalizedEntry]:
    data = _data(record.value)
    kind = record.kind
    made: list[NormalizedEntry] = []
    if kind == "user.message":
        content = data.get("content")
        injected = data.get("isAutopilotContinuation") is True or (
            "source" in data and not record.sidechain
        )
        if isinstance(content, str) and not injected:
            made.append(_entry(record, "user", content))
    elif kind == "assistant.message":
        content = data.get("content")
        if isinstance(content, str) and not is_blank(content):
            made.append(_entry(record, "assistant", content))
        made.extend(_call(record, item) for item in _requests(data))
    elif kind == "tool.execution_complete":
        made.append(_result(record, data, names, policy))
    elif kind == "assistant.reasoning" and policy.index_thinking:
        content = data.get("content")
        if isinstance(content, str) and not is_blank(content):
            made.append(_entry(record, "assistant", content, entry_type="reasoning"))
    elif kind == "session.compaction_complete":
        summary = data.get("summaryContent")
        if isinstance(summary, str) and not is_blank(summary):
            made.append(_entry(record, "compactionSummary", f"compaction: {summary}"))
    return made


def _call(record: SourceRecord, item: dict[str, Any]) -> NormalizedEntry:
    name = tool_name(item, "name")
    args = item.get("arguments")
    summary = summarize_args(args) if "arguments" in item else ""
    entry = _entry(record, "assistant", f"Tool: {name}({summary})")
    return as_call(entry, AGENT, name, args, item.get("toolCallId"), record.id)


def _result(
    record: SourceRecord,
    data: dict[str, Any],
    names: dict[str, tuple[str, object]],
    policy: Policy,
) -> NormalizedEntry:
    call_id = data.get("toolCallId")
    name, command = names.get(call_id, ("", None)) if isinstance(call_id, str) else ("", None)
    result = _object(data.get("result"))
    error = _object(data.get("error"))
    outcome = _outcome(data, result, command)
    failed = outcome == "failed"
    body = result.get("content") if isinstance(result.get("content"), str) else None
    if body is None and isinstance(error.get("message"), str):
        body = error["message"]
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    text = f"{prefix}: {body}" if policy.index_tool_output and body else prefix
    ref, provider, action = tool_identity(AGENT, name) if name else (None, None, None)
    entry = _entry(record, "toolResult", text)
    return replace(
        entry,
        tool=name or None,
        is_error=failed,
        ref=ref,
        provider=provider,
        action=action,
        outcome=outcome,
        family=tool_family(AGENT, name),
    )


def _outcome(data: dict[str, Any], result: dict[str, Any], command: object) -> str | None:
    success = data.get("success")
    if success is False:
        return "failed"
    codes = [_object(data.get("shellExecution")).get("exitCode")]
    contents = result.get("contents")
    for block in contents if isinstance(contents, list) else ():
        if isinstance(block, dict) and block.get("type") == _TERMINAL:
            codes.append(block.get("exitCode"))
    codes.append(_object(_object(data.get("toolTelemetry")).get("metrics")).get("exit_code"))
    for code in codes:
        if isinstance(code, float) and code.is_integer():
            code = int(code)
        if isinstance(code, int) and not isinstance(code, bool):
            return exit_outcome(command, code)
    return "succeeded" if success is True else None


def _entry(
    record: SourceRecord, role: str, text: str, *, entry_type: str = "message"
) -> NormalizedEntry:
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type=entry_type,
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=parse_timestamp_ms(record.value.get("timestamp")),
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )


def _data(value: dict[str, Any]) -> dict[str, Any]:
    return _object(value.get("data"))


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _requests(data: dict[str, Any]) -> list[dict[str, Any]]:
    found = data.get("toolRequests")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []
