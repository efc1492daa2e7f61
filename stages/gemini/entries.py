"""Entries both Gemini-family normalizers make the same way (Gemini CLI, Qwen Code): a model
turn's text and tool calls, a tool result with its outcome.

Texts follow the Pi rules every agent shares: ``Tool: <name>(<args ≤400>)`` per call, a result
``toolResult(<name>)[ [error]]: <body>`` (the body only under ``index_tool_output``).

Outcome of a call, from typed fields only (``call_outcome``): the writers' tool status
(``CoreToolCallStatus``: ``success`` / ``error`` / ``cancelled``; the others mean the call had
not finished when the line was written, so no outcome); for a shell-family call whose exit code
is known the code decides (``stages.shell_exit``: a search that matched nothing is not a
failure), unless the call was cancelled.
"""

from __future__ import annotations

from typing import Any, Final

from stages.common import clean_text, files_touched, summarize_args
from stages.families import tool_family, tool_identity
from stages.shell_exit import exit_outcome
from store.records import NormalizedEntry

__all__ = ["call_outcome", "call_text", "result_entry", "turn_entry"]

_FAILED: Final = "error"
_CANCELLED: Final = "cancelled"
_SUCCEEDED: Final = "success"


def call_text(name: str, args: object, present: bool) -> str:
    """``Tool: <name>(<args>)``; absent arguments summarize as "" (``JSON.stringify``)."""
    return f"Tool: {name}({summarize_args(args) if present else ''})"


def call_outcome(
    agent: str, name: str, status: object, command: object, exit_code: int | None
) -> str | None:
    """The outcome of one recorded call (module docstring)."""
    if status == _CANCELLED:
        return "aborted"
    if exit_code is not None and tool_family(agent, name) == "shell":
        return exit_outcome(command, exit_code)
    if status == _FAILED:
        return "failed"
    if status == _SUCCEEDED:
        return "succeeded"
    return None


def turn_entry(
    agent: str,
    entry_id: str | None,
    parent_id: str | None,
    pieces: list[str],
    calls: list[tuple[str, str, dict[str, Any] | None]],
    *,
    timestamp: int | None,
    line: int,
    offset: int,
) -> NormalizedEntry:
    """A model turn: its *pieces* of text, then one ``Tool:`` line per call in *calls*
    ((call id, name, arguments or None when absent)). The first call names the entry's tool
    and its operation address."""
    texts = [*pieces, *(call_text(name, args, args is not None) for _, name, args in calls)]
    tool = calls[0][1] if calls else None
    ref = provider = action = None
    address = None
    if tool:
        ref, provider, action = tool_identity(agent, tool)
        if calls[0][0] and entry_id is not None:
            address = f"{entry_id}/call:{clean_text(calls[0][0])}"
    return NormalizedEntry(
        index=0,
        entry_id=entry_id,
        parent_id=parent_id,
        type="message",
        role="assistant",
        tool=tool,
        text=clean_text("\n".join(texts)),
        timestamp=timestamp,
        is_error=False,
        truncated=False,
        line=line,
        offset=offset,
        agent=agent,
        operation_address=address,
        ref=ref,
        provider=provider,
        action=action,
        files_touched=files_touched([args for _, _, args in calls if args is not None]),
        family=tool_family(agent, tool),
    )


def result_entry(
    agent: str,
    entry_id: str | None,
    parent_id: str | None,
    name: str | None,
    body: str,
    outcome: str | None,
    show_body: bool,
    *,
    timestamp: int | None,
    line: int,
    offset: int,
) -> NormalizedEntry:
    """One tool result in Pi's exact text form (module docstring)."""
    failed = outcome == "failed"
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    text = f"{prefix}: {body}" if show_body and body else prefix
    ref, provider, action = tool_identity(agent, name) if name else (None, None, None)
    return NormalizedEntry(
        index=0,
        entry_id=entry_id,
        parent_id=parent_id,
        type="message",
        role="toolResult",
        tool=name,
        text=clean_text(text),
        timestamp=timestamp,
        is_error=failed,
        truncated=False,
        line=line,
        offset=offset,
        agent=agent,
        ref=ref,
        provider=provider,
        action=action,
        outcome=outcome,
        family=tool_family(agent, name),
    )
