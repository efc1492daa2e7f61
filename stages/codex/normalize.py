"""The Codex normalizer: the selected records of a rollout → ``NormalizedEntry``s.

Mirrors the Pi text rules (reference §1.10) over Codex's typed items (formats §3.6–§3.8):

* ``response_item`` **message** ``role: user`` → a ``user`` entry of the items a person wrote
  (``stages.codex.source.human_items``) joined by ``\\n``; injected context never is (§3.7): an
  era-D message whose ``content_item_kinds`` name no ``user.*`` kind is dropped whole, otherwise
  each ``input_text`` item that opens with one of the structural markers Codex writes injected
  context with (``INJECTED_OPENERS``: AGENTS.md, environment, user-instructions,
  subagent-notification, turn-aborted, IDE-context and image tags) is dropped, and a message left
  with no text or image gives no entry. ``role: assistant`` → an ``assistant`` entry of its
  ``output_text`` items. ``developer``/``system`` messages give nothing.
* **reasoning** → an ``assistant`` entry of type ``reasoning`` (summary and content texts) only
  under ``index_thinking``; encrypted content has no text (§3.10.6).
* **function_call**, **custom_tool_call**, **local_shell_call**, **web_search_call** → an
  ``assistant`` entry ``Tool: <name>(<args ≤400>)``. ``arguments``/``input`` arrive as JSON text
  (§3.10.2) and are parsed; text that is not a JSON object or array stays the raw string (shown
  unquoted). ``ref``/``provider``/``action`` are ``codex.<name>``/``codex``/``<name>``; an MCP
  call (0.171.0: ``namespace: "mcp__<server>"``, ``name: "<tool>"``) is named
  ``mcp__<server>__<tool>`` and has its server's identity, as on every agent
  (``stages.families``, which also gives ``family``); ``operation_address`` is
  ``<entry id>/call:<call_id>``; ``files_touched`` from typed path keys.
* **function_call_output** / **custom_tool_call_output** → a ``toolResult`` entry
  ``toolResult(<name>)[ [error]]: <body>`` in Pi's exact form, paired with its call by
  ``call_id`` (the name; the body only under ``index_tool_output``). Codex writes no error flag
  (§3.6), so the outcome comes from the exit code the output's machine-written envelope
  carries: the legacy shell JSON ``metadata.exit_code``, a first line ``Exit code: N``
  (freeform shell) or a header line ``Process exited with code N`` before ``Output:``
  (unified exec); an ``event_msg``
  ``exec_command_end.exit_code`` or ``patch_apply_end.success`` with the same ``call_id`` wins,
  and so does an ``item_completed`` item (0.171.0): ``CommandExecution.exit_code`` (or a failed
  ``status``), ``McpToolCall.status`` / ``result.isError`` / ``error`` (an MCP output states no
  failure at all). 0/success → ``succeeded``, anything else → ``failed`` (and ``is_error``);
  none → no outcome.
* **compacted** → ``compaction: <message>`` (role ``compactionSummary``) when the message is not
  blank; ``replacement_history`` repeats earlier items and is not indexed again.
* ``event_msg`` **user_message** / **agent_message** / **agent_reasoning**, and (0.171.0, which
  writes no user/agent_message events) **item_completed** ``UserMessage`` / ``AgentMessage``,
  are display copies of the items above (§3.7, §3.8): each is indexed only when no selected
  ``response_item`` carries the same text (a rollout trimmed to its events still yields its
  conversation). A ``user_message`` with a ``kind`` other than ``plain`` is injected context.
  ``world_state``, ``token_usage_record`` and the ``ordinal`` on every line add nothing.

Records of kind ``codex.forked_copy`` (a parent's history copied into a fork) give no entry.
``index`` is left 0 for the dispatcher; ``sidechain`` is the session's (subagent rollouts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from stages.codex.source import FORKED_COPY, INJECTED_OPENERS, human_items, payload_of
from stages.common import (
    ARGS_SUMMARY_SCALARS,
    clean_text,
    cut_text,
    files_touched,
    js_trim,
    parse_timestamp_ms,
    summarize_args,
)
from stages.families import mcp_tool_name, tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult, record_key
from stages.policy import Policy
from stages.shell_exit import exit_outcome
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = ["INJECTED_OPENERS", "normalize_codex"]

AGENT = "codex"
# The event kinds that copy a response item, and the echo set their text is looked up in.
_ECHO_OF = {"user_message": "user", "agent_message": "assistant", "agent_reasoning": "reasoning"}
# ``item_completed`` items that copy a prompt or an answer, and their text item kinds.
_COMPLETED_BUCKET = {"UserMessage": "user", "AgentMessage": "assistant"}
_COMPLETED_TEXT = ("text", "Text")

_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_NAMED_BY_TYPE = {"local_shell_call": "local_shell", "web_search_call": "web_search"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_TEXT_ITEMS = ("input_text", "output_text", "text")
_FAILED_STATUSES = ("failed", "declined", "error")


def normalize_codex(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Entries for the records ``lineage`` selects, in file order. Never raises on odd content.

    With *memo*, a line made before is not made again (``EntryMemo``): its entry depends only
    on the line (``record_key``), the policy, the session's sidechain flag and what
    ``_depends`` lists (an output's call name and outcome, an event's being an echo).
    """
    records = session.records
    selected = [
        records[p]
        for p in sorted(set(lineage.selected))
        if 0 <= p < len(records) and records[p].kind != FORKED_COPY
    ]
    calls = _call_names(r for r in records if r.kind != FORKED_COPY)
    commands = _call_commands(r for r in records if r.kind != FORKED_COPY)
    events = _event_outcomes(r for r in records if r.kind != FORKED_COPY)
    echoes = _echoed_texts(selected)
    sidechain = session.sidechain
    if memo is not None:
        memo.bind(policy)
    entries: list[NormalizedEntry] = []
    for record in selected:
        payload = payload_of(record.value)
        if memo is None:
            entry = _entry_of(record, payload, calls, commands, events, echoes, policy)
            if entry is not None:
                entries.append(_with_sidechain(entry, sidechain))
            continue
        depends = _depends(record, payload, calls, commands, events, echoes)
        key = (sidechain, record_key(record), *depends)
        found = memo.get(key, (record.value,))
        if found is None:
            entry = _entry_of(record, payload, calls, commands, events, echoes, policy)
            found = () if entry is None else (_with_sidechain(entry, sidechain),)
            memo.put(key, (record.value,), found)
        entries.extend(found)
    return NormalizeResult(entries=tuple(entries))


def _entry_of(
    record: SourceRecord,
    payload: dict[str, Any],
    calls: dict[str, str],
    commands: dict[str, object],
    events: dict[str, bool],
    echoes: dict[str, set[str]],
    policy: Policy,
) -> NormalizedEntry | None:
    item = payload.get("type")
    if record.kind == "response_item":
        if item == "message":
            return _message(record, payload)
        if item == "reasoning":
            if policy.index_thinking:
                return _text_entry(record, "reasoning", "assistant", _reasoning(payload))
            return None
        if item in _CALLS:
            return _call(record, payload)
        if item in _OUTPUTS:
            return _output(record, payload, calls, commands.get(_call_id(payload)), events, policy)
        return None
    if record.kind == "event_msg":
        return _event(record, payload, echoes, policy)
    if record.kind == "compacted":
        message = payload.get("message")
        if isinstance(message, str) and js_trim(message):
            return _text_entry(record, "compaction", "compactionSummary", f"compaction: {message}")
    return None


def _depends(
    record: SourceRecord,
    payload: dict[str, Any],
    calls: dict[str, str],
    commands: dict[str, object],
    events: dict[str, bool],
    echoes: dict[str, set[str]],
) -> tuple[object, ...]:
    """What a line's entry depends on besides the line itself (for ``EntryMemo`` keys): an
    output's call name and outcome (the call or its end event may come later), and whether
    an event's text is an echo of a selected response item."""
    item = payload.get("type")
    if record.kind == "response_item" and item in _OUTPUTS:
        call_id = payload.get("call_id")
        call_id = call_id if isinstance(call_id, str) else ""
        return (calls.get(call_id), events.get(call_id), repr(commands.get(call_id)))
    if record.kind == "event_msg":
        said = _event_text(payload)
        if said is not None:
            return (_echoed(said, echoes),)
    return ()


def _message(record: SourceRecord, payload: dict[str, Any]) -> NormalizedEntry | None:
    if payload.get("role") == "assistant":
        return _text_entry(record, "message", "assistant", _joined(_items(payload.get("content"))))
    kept = human_items(payload)
    return None if kept is None else _text_entry(record, "message", "user", _joined(kept))


def _event(
    record: SourceRecord, payload: dict[str, Any], echoes: dict[str, set[str]], policy: Policy
) -> NormalizedEntry | None:
    said = _event_text(payload)
    if said is None or _echoed(said, echoes):
        return None
    bucket, pieces = said
    text = "\n".join(pieces)
    if bucket == "user":
        if _injected(text) or payload.get("kind") not in (None, "plain"):
            return None
        return _text_entry(record, "message", "user", text)
    if bucket == "assistant":
        return _text_entry(record, "message", "assistant", text)
    if policy.index_thinking:
        return _text_entry(record, "reasoning", "assistant", text)
    return None


def _event_text(payload: dict[str, Any]) -> tuple[str, list[str]] | None:
    """(echo bucket, text pieces) of an event that copies a prompt, answer or reasoning:
    ``user_message`` / ``agent_message`` / ``agent_reasoning`` (their one string), or an
    ``item_completed`` ``UserMessage`` / ``AgentMessage`` (its content items' texts, 0.171.0)."""
    item = payload.get("type")
    if item == "item_completed":
        completed = payload.get("item")
        if not isinstance(completed, dict):
            return None
        bucket = _COMPLETED_BUCKET.get(str(completed.get("type")))
        if bucket is None:
            return None
        pieces = [
            i["text"]
            for i in _items(completed.get("content"))
            if i.get("type") in _COMPLETED_TEXT and isinstance(i.get("text"), str)
        ]
        return (bucket, pieces) if pieces else None
    bucket = _ECHO_OF.get(str(item))
    text = payload.get("text" if item == "agent_reasoning" else "message")
    if bucket is None or not isinstance(text, str):
        return None
    return bucket, [text]


def _echoed(said: tuple[str, list[str]], echoes: dict[str, set[str]]) -> bool:
    """Whether a selected response item already carries this event's text (whole, or each
    of its pieces)."""
    bucket, pieces = said
    seen = echoes[bucket]
    return js_trim("\n".join(pieces)) in seen or all(js_trim(p) in seen for p in pieces)


def _call(record: SourceRecord, payload: dict[str, Any]) -> NormalizedEntry:
    name, args, raw = _call_shape(payload)
    if raw is not None:
        shown, cut = cut_text(raw, ARGS_SUMMARY_SCALARS)
        summary = f"{shown}…" if cut else shown
    else:
        summary = summarize_args(args)
    call_id = payload.get("call_id")
    address = None
    if isinstance(call_id, str) and call_id:
        address = f"{record.id}/call:{clean_text(call_id)}"
    ref, provider, action = tool_identity(AGENT, name)
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type="message",
        role="assistant",
        tool=name,
        text=clean_text(f"Tool: {name}({summary})"),
        timestamp=_timestamp(record),
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
        operation_address=address,
        ref=ref,
        provider=provider,
        action=action,
        files_touched=files_touched([args]) if raw is None else (),
        family=tool_family(AGENT, name),
    )


def _call_shape(payload: dict[str, Any]) -> tuple[str, object, str | None]:
    """(tool name, parsed arguments, raw argument text when it is not a JSON container).

    Absent arguments summarize as ``""`` (the reference's ``JSON.stringify(undefined)``)."""
    item = payload.get("type")
    name = _call_name(payload)
    if item in _NAMED_BY_TYPE:
        key = "action"
    else:
        key = "arguments" if item == "function_call" else "input"
    if key not in payload:
        return name, None, ""
    value = payload[key]
    if key == "action" or not isinstance(value, str):
        return name, value, None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return name, None, value
    if isinstance(parsed, dict | list):
        return name, parsed, None
    return name, None, value


def _call_name(payload: dict[str, Any]) -> str:
    """A call item's tool name (without reading its arguments)."""
    item = payload.get("type")
    if item in _NAMED_BY_TYPE:
        return _NAMED_BY_TYPE[str(item)]
    raw_name = payload.get("name")
    name = clean_text(raw_name) if isinstance(raw_name, str) else ""
    namespace = payload.get("namespace")
    if isinstance(namespace, str):
        # Codex 0.171.0 names an MCP call by its server's namespace plus the tool.
        name = mcp_tool_name(clean_text(namespace), name) or name
    return name


def _output(
    record: SourceRecord,
    payload: dict[str, Any],
    calls: dict[str, str],
    command: object,
    events: dict[str, bool],
    policy: Policy,
) -> NormalizedEntry:
    call_id = payload.get("call_id")
    call_id = call_id if isinstance(call_id, str) else ""
    name = calls.get(call_id)
    body, exit_code = _output_body(payload.get("output"))
    succeeded = events.get(call_id) if call_id in events else None
    if succeeded is None and exit_code is not None:
        succeeded = exit_outcome(command, exit_code) == "succeeded"
    outcome = None if succeeded is None else ("succeeded" if succeeded else "failed")
    failed = outcome == "failed"
    prefix = (f"toolResult({name})" if name else "toolResult") + (" [error]" if failed else "")
    text = f"{prefix}: {body}" if policy.index_tool_output and body else prefix
    ref, provider, action = tool_identity(AGENT, name) if name else (None, None, None)
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type="message",
        role="toolResult",
        tool=name,
        text=clean_text(text),
        timestamp=_timestamp(record),
        is_error=failed,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
        ref=ref,
        provider=provider,
        action=action,
        outcome=outcome,
        family=tool_family(AGENT, name),
    )


def _output_body(output: object) -> tuple[str, int | None]:
    """The text a tool output holds and the exit code its envelope states (module docstring)."""
    if isinstance(output, list):
        return _joined(_items(output)), None
    if isinstance(output, dict):
        text = output.get("text")
        return (text if isinstance(text, str) else ""), None
    if not isinstance(output, str):
        return "", None
    if output.startswith("{"):
        try:
            shell = orjson.loads(output)
        except orjson.JSONDecodeError:
            shell = None
        if isinstance(shell, dict) and isinstance(shell.get("output"), str):
            metadata = shell.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return shell["output"], _int(code)
    return output, _header_exit_code(output)


def _header_exit_code(text: str) -> int | None:
    """``Exit code: N`` as the first line, or ``Process exited with code N`` in the header."""
    header = text.split("\n", 8)[:8]
    first = header[0].rstrip("\r")
    if first.startswith("Exit code: "):
        return _parse_int(first[len("Exit code: ") :])
    for raw in header:
        line = raw.rstrip("\r")
        if line == "Output:":
            break
        if line.startswith("Process exited with code "):
            return _parse_int(line[len("Process exited with code ") :])
    return None


def _event_outcomes(records: Iterable[SourceRecord]) -> dict[str, bool]:
    """``call_id`` → success from ``exec_command_end`` / ``patch_apply_end`` events (§3.6)
    and from ``item_completed`` ``CommandExecution`` / ``McpToolCall`` items (0.171.0).

    A completed item names its call by ``id`` (or ``call_id``); one whose id names no call
    takes the latest earlier call of its kind still without an outcome (an MCP call of the
    same ``mcp__<server>__<tool>``, or a shell-family call), as Codex completes items in order.
    """
    outcomes: dict[str, bool] = {}
    calls: dict[str, str] = {}  # call_id → tool name, file order
    for record in records:
        payload = payload_of(record.value)
        if record.kind == "response_item":
            call_id = payload.get("call_id")
            if payload.get("type") in _CALLS and isinstance(call_id, str):
                calls.setdefault(call_id, _call_name(payload))
            continue
        if record.kind != "event_msg":
            continue
        if payload.get("type") == "item_completed":
            _completed_outcome(payload.get("item"), calls, outcomes)
            continue
        call_id = payload.get("call_id")
        if not isinstance(call_id, str):
            continue
        if payload.get("type") == "exec_command_end":
            code = _int(payload.get("exit_code"))
            if code is not None:
                outcomes[call_id] = exit_outcome(payload.get("command"), code) == "succeeded"
        elif payload.get("type") == "patch_apply_end" and isinstance(payload.get("success"), bool):
            outcomes[call_id] = payload["success"]
    return outcomes


def _completed_outcome(item: object, calls: dict[str, str], outcomes: dict[str, bool]) -> None:
    """Record the outcome an ``item_completed`` item states, under its call's id."""
    if not isinstance(item, dict):
        return
    kind = item.get("type")
    if kind == "CommandExecution":
        code = _int(item.get("exit_code"))
        status = item.get("status")
        if code is not None:
            succeeded = exit_outcome(item.get("command"), code) == "succeeded"
        elif status in _FAILED_STATUSES:
            succeeded = False
        else:
            return
        wanted: str | None = None
    elif kind == "McpToolCall":
        result = item.get("result")
        status = item.get("status")
        failed = (
            status in _FAILED_STATUSES
            or (isinstance(result, dict) and result.get("isError") is True)
            or isinstance(item.get("error"), dict | str)
        )
        if not failed and status != "completed":
            return
        succeeded = not failed
        server, tool = item.get("server"), item.get("tool")
        wanted = (
            mcp_tool_name(f"mcp__{server}", tool)
            if isinstance(server, str) and isinstance(tool, str)
            else None
        )
    else:
        return
    for key in ("id", "call_id"):
        own = item.get(key)
        if isinstance(own, str) and own in calls:
            outcomes[own] = succeeded
            return
    for call_id in reversed(list(calls)):
        if call_id in outcomes:
            continue
        name = calls[call_id]
        if (wanted is not None and name == wanted) or (
            kind == "CommandExecution" and tool_family(AGENT, name) == "shell"
        ):
            outcomes[call_id] = succeeded
            return


def _call_id(payload: dict[str, Any]) -> str:
    call_id = payload.get("call_id")
    return call_id if isinstance(call_id, str) else ""


def _call_commands(records: Iterable[SourceRecord]) -> dict[str, object]:
    """``call_id`` → the command a shell call ran (``exec_command {cmd}``, ``shell {command}``,
    ``local_shell_call`` ``action.command``), for the exit-code rule (``stages.shell_exit``)."""
    commands: dict[str, object] = {}
    for record in records:
        payload = payload_of(record.value)
        call_id = payload.get("call_id")
        if record.kind != "response_item" or payload.get("type") not in _CALLS:
            continue
        if not isinstance(call_id, str) or call_id in commands:
            continue
        _, args, _ = _call_shape(payload)
        if isinstance(args, dict):
            for key in ("cmd", "command"):
                if key in args:
                    commands[call_id] = args[key]
                    break
    return commands


def _call_names(records: Iterable[SourceRecord]) -> dict[str, str]:
    """``call_id`` → tool name of every call in the rollout (an output pairs even off the path)."""
    names: dict[str, str] = {}
    for record in records:
        payload = payload_of(record.value)
        call_id = payload.get("call_id")
        if record.kind != "response_item" or payload.get("type") not in _CALLS:
            continue
        if isinstance(call_id, str):
            names.setdefault(call_id, _call_name(payload))
    return names


def _echoed_texts(selected: Sequence[SourceRecord]) -> dict[str, set[str]]:
    """Texts the selected response items carry, to recognise their ``event_msg`` copies."""
    echoes: dict[str, set[str]] = {"user": set(), "assistant": set(), "reasoning": set()}
    for record in selected:
        if record.kind != "response_item":
            continue
        payload = payload_of(record.value)
        item = payload.get("type")
        if item == "message" and payload.get("role") in ("user", "assistant"):
            items = _items(payload.get("content"))
            bucket = echoes[str(payload["role"])]
            bucket.add(js_trim(_joined(items)))
            bucket.update(js_trim(i["text"]) for i in items if isinstance(i.get("text"), str))
        elif item == "reasoning":
            echoes["reasoning"].add(js_trim(_reasoning(payload)))
            for part in (*_items(payload.get("summary")), *_items(payload.get("content"))):
                if isinstance(part.get("text"), str):
                    echoes["reasoning"].add(js_trim(part["text"]))
    return echoes


def _reasoning(payload: dict[str, Any]) -> str:
    parts = [*_items(payload.get("summary")), *_items(payload.get("content"))]
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))


def _injected(text: object) -> bool:
    return isinstance(text, str) and text.lstrip().startswith(INJECTED_OPENERS)


def _items(content: object) -> list[dict[str, Any]]:
    return [i for i in content if isinstance(i, dict)] if isinstance(content, list) else []


def _joined(items: Sequence[dict[str, Any]]) -> str:
    return "\n".join(
        i["text"] for i in items if i.get("type") in _TEXT_ITEMS and isinstance(i.get("text"), str)
    )


def _text_entry(record: SourceRecord, kind: str, role: str, text: str) -> NormalizedEntry:
    return NormalizedEntry(
        index=0,
        entry_id=record.id,
        parent_id=record.parent_id,
        type=kind,
        role=role,
        tool=None,
        text=clean_text(text),
        timestamp=_timestamp(record),
        is_error=False,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=AGENT,
    )


def _with_sidechain(entry: NormalizedEntry, sidechain: bool) -> NormalizedEntry:
    return replace(entry, sidechain=True) if sidechain else entry


def _timestamp(record: SourceRecord) -> int | None:
    return parse_timestamp_ms(record.value.get("timestamp")) if "payload" in record.value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parse_int(text: str) -> int | None:
    text = text.strip()
    digits = text[1:] if text[:1] == "-" else text
    return int(text) if digits.isascii() and digits.isdigit() else None
