"""Normalize a Pi session: selected records → ``NormalizedEntry`` values with complete text.

Only ``message``, ``compaction``, ``branch_summary`` and ``custom_message`` records become
entries (reference §1.10); the header, ``model_change``, ``thinking_level_change``, ``label``,
``custom``, ``session_info``, ``usage``, ``context_edit`` and unknown types do not, and neither
does a ``role: "system"`` message (Pi 1.6.0: the system prompt and tool loadout, never
conversation; a compaction's ``systemMessage`` is not read either). A ``context_edit`` marks its
target entry ``context_edited`` (``omitted`` when ``replacement`` is null, else ``replaced``;
the latest selected edit wins) and leaves its text the raw history it is. Text per record:

    user              string content, or its text parts joined by "\\n" (images add nothing)
    assistant         text parts, thinking (only with index_thinking; never signatures),
                      "Tool: <name>(<args JSON ≤400 scalars>)" per toolCall,
                      "Error: <errorMessage>", all joined by "\\n"
    toolResult        "toolResult(<tool>)[ [error]]: <body>" (body only with index_tool_output;
                      old files hold the body as ``output: string``)
    bashExecution     "bash$ <command>[ [exit N]]\\n<output>" (output only with index_tool_output)
    custom, hookMessage, custom_message   "[<customType>] <body>"
    compaction, compactionSummary         "compaction: <summary>"
    branch_summary, branchSummary         ""  (summary prose is never indexed)

An entry is dropped only when its text is blank *and* it has no role.

Structural identity (beyond the seed). Tool activity carries an exact capability identity and,
where the record itself proves it, an outcome:

    record                     ref/provider/action      outcome                operation_address
    assistant with toolCall    of its first toolCall    None                   <id>/call:<callId>
    toolResult                 of its toolName          isError → failed,      None
                                                        else succeeded
    bashExecution              pi.bash / pi / bash      cancelled → aborted,   <id>/bash
                                                        exit≠0 → failed (a
                                                        search's exit 1 is no
                                                        match: stages.shell_exit),
                                                        exit 0 → succeeded,
                                                        no exit → None

A Pi tool ``<name>`` is ``pi.<name>`` / ``pi`` / ``<name>``, matching how Fabric names Pi's tools
in traces (``pi.read``). ``fabric_exec`` is the exception: it is Fabric itself, and its ref is
``fabric_exec`` with no provider/action, the identity branch-summary ``fabricRun`` facts use
for the same call. A toolResult gets no operation address because the call that produced it
already carries that address on the assistant entry: one address, one carrier. Addresses
follow Fabric's conventions (``<assistantEntryId>/call:<toolCallId>``, ``<entryId>/bash``), so
a branch-summary fact about an abandoned call has the same address as the call itself.

Fabric child entries (execution-trace operations, branch-summary facts) and nested tool calls
(``codemode``'s ``nestedCalls`` / ``details.calls``) follow their carrier immediately; see
``stages.pi.fabric``, ``stages.pi.branch_details`` and ``stages.pi.nested``. Every tool entry
has a ``family`` (``stages.families``); an MCP tool ``mcp__<server>__<tool>`` has its server's
identity ``<server>.<tool>`` / ``<server>`` / ``<tool>`` (a result's ``details: {server,
tool}`` states it exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from stages.common import (
    clean_text,
    files_touched,
    first_timestamp_ms,
    is_blank,
    js_number_text,
    js_string,
    js_truthy,
    summarize_args,
)
from stages.families import tool_family
from stages.families import tool_identity as agent_tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.pi.branch_details import branch_children, read_branch_details
from stages.pi.fabric import read_trace, trace_children
from stages.pi.nested import nested_children
from stages.policy import Policy
from stages.shell_exit import exit_outcome
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

__all__ = [
    "KEPT_TYPES",
    "PI",
    "Dialect",
    "Fields",
    "appends_locally",
    "content_text",
    "normalize_pi",
    "normalize_pi_format",
    "tool_identity",
]

AGENT = "pi"
KEPT_TYPES = frozenset({"message", "compaction", "branch_summary", "custom_message"})
FABRIC_EXEC = "fabric_exec"
SYSTEM_ROLE = "system"
CONTEXT_EDIT = "context_edit"


@dataclass(slots=True)
class Fields:
    """What one record contributes beyond the fields every entry has."""

    role: str | None
    text: str
    tool: str | None = None
    is_error: bool = False
    ref: str | None = None
    provider: str | None = None
    action: str | None = None
    outcome: str | None = None
    operation_address: str | None = None
    files: tuple[str, ...] = ()
    family: str | None = None

    def identify(self, agent: str, tool: str | None) -> None:
        """Name *agent*'s tool *tool*: its identity and family (``stages.families``)."""
        self.tool = tool
        if tool:
            self.ref, self.provider, self.action = _identity(agent, tool)
            self.family = tool_family(agent, tool)


# A message of a role Pi itself does not write: (message, entry id, policy) → its fields, or
# None when it is no entry at all (like Pi's own ``system`` messages).
RoleReader = Callable[[dict[str, Any], str | None, Policy], Fields | None]


def _pi_result_identity(tool: str, details: object) -> tuple[str, str, str] | None:
    """An MCP result names its server and tool (Pi 1.6.0: ``details: {server, tool}``): exact
    even when the server's own name holds "__", which splitting the tool name could not tell."""
    if not isinstance(details, dict):
        return None
    server, action = details.get("server"), details.get("tool")
    if isinstance(server, str) and isinstance(action, str) and tool == f"mcp__{server}__{action}":
        return f"{server}.{action}", server, action
    return None


@dataclass(frozen=True, slots=True)
class Dialect:
    """What a writer of Pi's format does its own way (Oh My Pi: ``stages.omp``): the agent
    its entries belong to, the message roles Pi does not write (read by ``roles``; any other
    unknown role stays an entry without text), what a tool result's ``details`` state
    exactly about the tool's identity (``result_identity``: an MCP server and tool), and the
    exit code a shell tool's result types in its ``details`` (``result_exit``; Pi records
    none, so its results keep their ``isError``)."""

    agent: str
    roles: Mapping[str, RoleReader] = field(default_factory=dict)
    result_identity: Callable[[str, object], tuple[str, str, str] | None] = _pi_result_identity
    result_exit: Callable[[object], int | float | None] | None = None


PI = Dialect(AGENT)


def normalize_pi(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None = None
) -> NormalizeResult:
    """Normalize the records ``lineage.selected`` names, in file order. (*memo* goes unused:
    Pi appends are read by the tail reader, which normalizes only the new lines.)

    Entries are numbered densely in output order. ``reasons`` holds only what this stage finds
    (branch-fact address conflicts); the dispatcher adds entry-id and operation-address
    duplicates, and the session's and lineage's own reasons travel separately.
    """
    return normalize_pi_format(PI, session, lineage, policy)


def normalize_pi_format(
    dialect: Dialect, session: SourceSession, lineage: Lineage, policy: Policy
) -> NormalizeResult:
    """``normalize_pi`` for any writer of Pi's format, by its *dialect*. A subagent's own
    session (``session.sidechain``) gives sidechain entries."""
    selected = frozenset(lineage.selected)
    edits = _context_edits(r for r in session.records if r.position in selected)
    entries: list[NormalizedEntry] = []
    reasons: set[str] = set()
    seen_fact_addresses: set[str] = set()
    commands = (
        call_commands(r for r in session.records if r.position in selected)
        if dialect.result_exit is not None
        else {}
    )
    for record in session.records:
        if record.position not in selected:
            continue
        entry = _entry(
            dialect, record, policy, index=len(entries), sidechain=session.sidechain,
            commands=commands,
        )  # fmt: skip
        if entry is None:
            continue
        if entry.entry_id is not None and entry.entry_id in edits:
            entry = replace(entry, context_edited=edits[entry.entry_id])
        entries.append(entry)
        for child in _trace_children(record, entry, policy):
            entries.append(_at(child, len(entries)))
        for child in _nested_children(record, entry):
            entries.append(_at(child, len(entries)))
        children, fact_reasons = _branch_children(record, entry, policy, seen_fact_addresses)
        reasons |= fact_reasons
        for child in children:
            entries.append(_at(child, len(entries)))
    return NormalizeResult(entries=tuple(entries), reasons=tuple(sorted(reasons)))


def call_commands(records: Iterable[SourceRecord]) -> dict[str, object]:
    """The ``command`` argument of each tool call in *records*, by call id: what a result's
    typed exit code is read against (``stages.shell_exit``)."""
    out: dict[str, object] = {}
    for record in records:
        message = record.value.get("message")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            call_id, arguments = block.get("id"), block.get("arguments")
            if isinstance(call_id, str) and isinstance(arguments, dict):
                out[call_id] = arguments.get("command")
    return out


def appends_locally(appended: SourceSession) -> bool:
    """Whether the entries of records *appended* to an indexed session are a function of those
    records alone (the tail path's premise): not when one is a ``context_edit``, which marks
    an earlier entry."""
    return not any(r.kind == CONTEXT_EDIT for r in appended.records)


def tool_identity(tool: str) -> tuple[str, str | None, str | None]:
    """(ref, provider, action) of a Pi tool name: ``pi.<tool>``, an MCP tool's server identity
    (``stages.families``), or for Fabric's own entry tool ``fabric_exec`` no provider/action."""
    return _identity(AGENT, tool)


def _identity(agent: str, tool: str) -> tuple[str, str | None, str | None]:
    if tool == FABRIC_EXEC:
        return FABRIC_EXEC, None, None
    return agent_tool_identity(agent, tool)


def _entry(
    dialect: Dialect,
    record: SourceRecord,
    policy: Policy,
    index: int,
    *,
    sidechain: bool,
    commands: Mapping[str, object],
) -> NormalizedEntry | None:
    value = record.value
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in KEPT_TYPES:
        return None
    message = value.get("message")
    entry_id = clean_text(record.id) if record.id is not None else None
    if kind == "message":
        if not isinstance(message, dict):
            return None
        if message.get("role") == SYSTEM_ROLE:
            return None  # the system prompt and tool loadout: never conversation
        found = _message_fields(dialect, message, entry_id, policy, commands)
        if found is None:
            return None
        fields = found
    elif kind == "compaction":
        fields = Fields(role="compaction", text=f"compaction: {js_string(value.get('summary'))}")
    elif kind == "branch_summary":
        fields = Fields(role="branchSummary", text="")
    else:  # custom_message
        fields = Fields(role="custom", text=_custom_text(value))
    if is_blank(fields.text) and fields.role is None:
        return None
    message_ts = message.get("timestamp") if isinstance(message, dict) else None
    return NormalizedEntry(
        index=index,
        entry_id=entry_id,
        parent_id=clean_text(record.parent_id) if record.parent_id is not None else None,
        type=kind,
        role=fields.role,
        tool=fields.tool,
        text=clean_text(fields.text),
        timestamp=first_timestamp_ms(value.get("timestamp"), message_ts),
        is_error=fields.is_error,
        truncated=False,
        line=record.line,
        offset=record.offset,
        agent=dialect.agent,
        operation_address=fields.operation_address,
        ref=fields.ref,
        provider=fields.provider,
        action=fields.action,
        outcome=fields.outcome,
        files_touched=fields.files,
        sidechain=record.sidechain or sidechain,
        family=fields.family,
    )


def _message_fields(
    dialect: Dialect,
    message: dict[str, Any],
    entry_id: str | None,
    policy: Policy,
    commands: Mapping[str, object],
) -> Fields | None:
    raw_role = message.get("role")
    role = clean_text(raw_role) if isinstance(raw_role, str) and raw_role else None
    if role == "user":
        text = content_text(message.get("content"))
        return Fields(role=role, text=text, is_error=is_error(message))
    if role == "assistant":
        return _assistant(dialect, message, entry_id, policy)
    if role == "toolResult":
        return _tool_result(dialect, message, policy, commands)
    if role == "bashExecution":
        return _bash(dialect, message, entry_id, policy)
    if role in ("custom", "hookMessage"):
        # v2 wrote extension messages as role "hookMessage"; v3 renamed it "custom".
        return Fields(role="custom", text=_custom_text(message), is_error=is_error(message))
    if role == "compactionSummary":
        text = f"compaction: {js_string(message.get('summary'))}"
        return Fields(role=role, text=text, is_error=is_error(message))
    own = dialect.roles.get(role) if role is not None else None
    if own is not None:
        return own(message, entry_id, policy)
    # branchSummary (prose never indexed) and roles we do not know: kept, without text.
    return Fields(role=role, text="", is_error=is_error(message))


def is_error(message: dict[str, Any]) -> bool:
    """A message's own ``isError`` flag, read as JavaScript reads it."""
    return js_truthy(message.get("isError"))


def _assistant(
    dialect: Dialect, message: dict[str, Any], entry_id: str | None, policy: Policy
) -> Fields:
    parts: list[str] = []
    calls: list[dict[str, Any]] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif (
            kind == "thinking" and policy.index_thinking and isinstance(block.get("thinking"), str)
        ):
            parts.append(block["thinking"])
        elif kind == "toolCall":
            calls.append(block)
            summary = summarize_args(block["arguments"]) if "arguments" in block else ""
            parts.append(f"Tool: {js_string(block.get('name'))}({summary})")
    error_message = js_string(message.get("errorMessage"))
    if error_message:
        parts.append(f"Error: {error_message}")
    fields = Fields(role="assistant", text="\n".join(parts), is_error=is_error(message))
    first = next((c for c in calls if isinstance(c.get("name"), str)), None)
    if first is not None:
        fields.identify(dialect.agent, clean_text(first["name"]) or None)
        call_id = first.get("id")
        if fields.tool and entry_id is not None and isinstance(call_id, str) and call_id:
            fields.operation_address = f"{entry_id}/call:{clean_text(call_id)}"
    fields.files = files_touched(c["arguments"] for c in calls if "arguments" in c)
    return fields


def _tool_result(
    dialect: Dialect, message: dict[str, Any], policy: Policy, commands: Mapping[str, object]
) -> Fields:
    raw_tool = message.get("toolName")
    tool = clean_text(raw_tool) if isinstance(raw_tool, str) and raw_tool else None
    content = message.get("content")
    if isinstance(content, list):
        body = _text_parts(content)
    elif isinstance(content, str):
        body = content
    elif isinstance(message.get("output"), str):  # before 2025-11-12: ``output: string``
        body = message["output"]
    else:
        body = ""
    marked = message.get("isError") is True
    failed = is_error(message)
    fields = Fields(role="toolResult", text="", is_error=failed)
    fields.identify(dialect.agent, tool)
    stated = dialect.result_identity(tool, message.get("details")) if tool is not None else None
    if stated is not None:
        fields.ref, fields.provider, fields.action = stated
    fields.outcome = "failed" if failed else "succeeded"
    exit_code = dialect.result_exit(message.get("details")) if dialect.result_exit else None
    if exit_code is not None and fields.family == "shell":
        call_id = message.get("toolCallId")
        command = commands.get(call_id) if isinstance(call_id, str) else None
        fields.outcome = exit_outcome(command, exit_code)
        fields.is_error = fields.outcome == "failed"
        # the mark says what the typed exit code does: a search that matched nothing (omp
        # writes ``isError`` for it) is no error, a non-zero exit without the flag is one
        marked = fields.is_error
    suffix = " [error]" if marked else ""
    prefix = f"toolResult({tool}){suffix}" if tool else f"toolResult{suffix}"
    fields.text = f"{prefix}: {body}" if policy.index_tool_output and body else prefix
    return fields


def _bash(
    dialect: Dialect, message: dict[str, Any], entry_id: str | None, policy: Policy
) -> Fields:
    command = js_string(message.get("command"))
    output = js_string(message.get("output"))
    exit_code = message.get("exitCode")
    if isinstance(exit_code, bool) or not isinstance(exit_code, int | float):
        exit_code = None
    exit_text = f" [exit {js_number_text(exit_code)}]" if exit_code is not None else ""
    head = f"bash$ {command}{exit_text}"
    text = f"{head}\n{output}" if policy.index_tool_output and output else head
    if message.get("cancelled") is True:
        outcome: str | None = "aborted"
    elif exit_code is not None:
        outcome = exit_outcome(command, exit_code)
    else:
        outcome = None
    fields = Fields(role="bashExecution", text=text, is_error=outcome == "failed")
    fields.identify(dialect.agent, "bash")
    fields.outcome = outcome
    if entry_id is not None:
        fields.operation_address = f"{entry_id}/bash"
    return fields


def _custom_text(holder: dict[str, Any]) -> str:
    """``[<customType>] <body>`` of a custom_message record or a custom/hookMessage message."""
    body = content_text(holder.get("content"))
    custom_type = js_string(holder.get("customType"))
    return f"[{custom_type}] {body}" if custom_type else body


def content_text(content: object) -> str:
    """A message's ``content``: the string, or its text blocks joined by "\\n"."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _text_parts(content)
    return ""


def _text_parts(parts: list[Any]) -> str:
    """Text blocks joined by "\\n"; images and every other block type contribute nothing."""
    return "\n".join(
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    )


def _trace_children(
    record: SourceRecord, entry: NormalizedEntry, policy: Policy
) -> list[NormalizedEntry]:
    if entry.role != "toolResult" or entry.tool != FABRIC_EXEC or entry.entry_id is None:
        return []
    message = record.value.get("message")
    trace = read_trace(message.get("details")) if isinstance(message, dict) else None
    if trace is None:
        return []
    return trace_children(entry, trace, policy.index_tool_output)


def _nested_children(record: SourceRecord, entry: NormalizedEntry) -> list[NormalizedEntry]:
    if entry.role != "toolResult" or entry.type != "message" or entry.entry_id is None:
        return []
    message = record.value.get("message")
    return nested_children(entry, message) if isinstance(message, dict) else []


def _context_edits(records: Iterable[SourceRecord]) -> dict[str, str]:
    """Target entry id → ``omitted`` (``replacement: null``) or ``replaced``, from the
    selected ``context_edit`` records; the latest in file order wins (on the active path
    that is the latest edit on the branch, as Pi's projection applies them)."""
    edits: dict[str, str] = {}
    for record in records:
        value = record.value
        target = value.get("targetId")
        if value.get("type") != CONTEXT_EDIT or not isinstance(target, str) or not target:
            continue
        edits[clean_text(target)] = "omitted" if value.get("replacement") is None else "replaced"
    return edits


def _branch_children(
    record: SourceRecord, entry: NormalizedEntry, policy: Policy, seen: set[str]
) -> tuple[list[NormalizedEntry], set[str]]:
    value = record.value
    message = value.get("message")
    message = message if isinstance(message, dict) else {}
    is_carrier = value.get("type") == "branch_summary" or (
        value.get("type") == "message" and message.get("role") == "branchSummary"
    )
    if not is_carrier or entry.entry_id is None:
        return [], set()
    details = read_branch_details(value.get("details")) or read_branch_details(
        message.get("details")
    )
    if details is None:
        return [], set()
    from_id = value.get("fromId")
    if not isinstance(from_id, str):
        from_id = message.get("fromId") if isinstance(message.get("fromId"), str) else None
    return branch_children(entry, details, from_id, policy.index_tool_output, seen)


def _at(entry: NormalizedEntry, index: int) -> NormalizedEntry:
    return replace(entry, index=index)
