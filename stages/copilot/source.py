"""The Copilot CLI adapter: a parsed ``events.jsonl`` → an agent-neutral ``SourceSession``.

Copilot CLI (``@github/copilot``) keeps each session in ``~/.copilot/session-state/<uuid>/
events.jsonl`` (1.0.x; the older flat layout wrote the same events to ``<uuid>.jsonl``
directly under ``session-state/``). Every line is one event of the union the package's JSON
Schema declares (``schemas/session-events.schema.json``, shipped up to 1.0.63; the later
native builds write the same events)::

    {"id", "timestamp", "parentId", "type", "data", ["ephemeral"]}

* **Identity.** The ``session.start`` event is the header: ``data.sessionId``,
  ``data.context.cwd``, ``data.copilotVersion`` (the ``writer_version``), ``data.version``
  (the event format's). Without one the id is the folder's (or the flat file's) name and the
  session is ``missing_session_header``. A later ``session.context_changed`` with a ``cwd``
  supplies the cwd when the start had none.
* **Lineage.** Events form a chain by ``parentId`` ("the chronologically preceding event").
  Events the schema marks ``ephemeral`` (deltas, progress, ``session.snapshot_rewind``) are
  not persisted: a ``parentId`` naming an event the file does not hold is linked to the event
  before it (``KNOWN_EVENTS`` names every type; any other is counted as drift). A rewind
  removes the rewound events from the log (the schema: "this event and all after it were
  removed"), so a file rewritten shorter is read again whole, never as a branch.
* **Sub-agents.** A ``task`` call's sub-agent writes into the parent's own file. Each of its
  events has the top-level ``agentId`` the schema declares ("sub-agent instance identifier";
  1.0.102 writes it), and its ``subagent.started`` names the spawning call
  (``data.toolCallId``); its turns, messages and tool events also carry
  ``data.parentToolCallId``. Either makes a sidechain record;
  ``extra["subagents"]`` maps each one's id to (agent id, spawning call).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from stages.drift import Drift
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.reasons import MISSING_SESSION_HEADER

__all__ = ["AGENT", "EVENTS_FILE", "KNOWN_EVENTS", "START", "read_copilot"]

AGENT: Final = "copilot"
START: Final = "session.start"
EVENTS_FILE: Final = "events.jsonl"
_LINES: Final = ".jsonl"
_STARTED: Final = "subagent.started"

# The ``type`` of every event in session-events.schema.json (@github/copilot 1.0.63), and
# those later writers add (1.0.102: ``session.usage_record``, token accounting, and
# ``subagent.configured``, a sub-agent's model).
KNOWN_EVENTS: Final = frozenset(
    {
        "session.usage_record",
        "subagent.configured",
        "session.start",
        "session.resume",
        "session.remote_steerable_changed",
        "session.error",
        "session.idle",
        "session.title_changed",
        "session.schedule_created",
        "session.schedule_cancelled",
        "session.autopilot_objective_changed",
        "session.info",
        "session.warning",
        "session.model_change",
        "session.mode_changed",
        "session.permissions_changed",
        "session.plan_changed",
        "session.todos_changed",
        "session.workspace_file_changed",
        "session.handoff",
        "session.truncation",
        "session.snapshot_rewind",
        "session.shutdown",
        "session.context_changed",
        "session.usage_info",
        "session.compaction_start",
        "session.compaction_complete",
        "session.task_complete",
        "user.message",
        "pending_messages.modified",
        "assistant.turn_start",
        "assistant.intent",
        "assistant.reasoning",
        "assistant.reasoning_delta",
        "assistant.streaming_delta",
        "assistant.message",
        "assistant.message_start",
        "assistant.message_delta",
        "assistant.turn_end",
        "assistant.usage",
        "model.call_failure",
        "abort",
        "tool.user_requested",
        "tool.execution_start",
        "tool.execution_partial_result",
        "tool.execution_progress",
        "tool.execution_complete",
        "skill.invoked",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "subagent.selected",
        "subagent.deselected",
        "hook.start",
        "hook.end",
        "hook.progress",
        "system.message",
        "system.notification",
        "permission.requested",
        "permission.completed",
        "user_input.requested",
        "user_input.completed",
        "elicitation.requested",
        "elicitation.completed",
        "sampling.requested",
        "sampling.completed",
        "mcp.oauth_required",
        "mcp.oauth_completed",
        "session.custom_notification",
        "external_tool.requested",
        "external_tool.completed",
        "command.queued",
        "command.execute",
        "command.completed",
        "auto_mode_switch.requested",
        "auto_mode_switch.completed",
        "commands.changed",
        "capabilities.changed",
        "exit_plan_mode.requested",
        "exit_plan_mode.completed",
        "session.tools_updated",
        "session.background_tasks_changed",
        "session.skills_loaded",
        "session.custom_agents_updated",
        "session.mcp_servers_loaded",
        "session.mcp_server_status_changed",
        "session.extensions_loaded",
        "session.canvas.opened",
        "session.canvas.registry_changed",
        "session.canvas.closed",
        "session.extensions.attachments_pushed",
        "mcp_app.tool_call_complete",
    }
)


def read_copilot(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a parsed Copilot CLI events file. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    raws = parsed.records
    header_at = next((i for i, r in enumerate(raws) if r.value.get("type") == START), None)
    header = raws[header_at].value if header_at is not None else None
    start = _data(header) if header is not None else {}
    if header is None:
        reasons.add(MISSING_SESSION_HEADER)
    header_id = _str(header.get("id")) if header is not None else None

    drift = Drift()
    records: list[SourceRecord] = []
    # each record's nearest main-path record (itself when on the main path): a main event
    # that follows a sub-agent's events hangs below the main event before them
    main_of: dict[str, str | None] = {}
    spawned: dict[str, str] = {}  # a sub-agent's id → the task call that spawned it
    subagents: dict[str, tuple[str | None, str | None]] = {}
    cwd = _cwd(start)
    titles = Titles()
    for i, raw in enumerate(raws):
        if i == header_at:
            continue
        value = raw.value
        kind = value.get("type")
        drift.check("event", kind, KNOWN_EVENTS, _data(value))
        data = _data(value)
        if cwd is None and kind == "session.context_changed":
            cwd = _str(data.get("cwd"))
        if kind == "session.title_changed":
            # one kind only (the event does not say who set it): the latest wins
            titles.generate(data.get("title"))
        own = _str(value.get("id")) or f"L{raw.line}.{len(records)}"
        parent = _str(value.get("parentId"))
        agent_id = _str(value.get("agentId"))
        call = _str(data.get("parentToolCallId"))
        if kind == _STARTED and agent_id is not None and (spawn := _str(data.get("toolCallId"))):
            spawned[agent_id] = spawn
        if call is None and agent_id is not None:
            call = spawned.get(agent_id)
        side = call is not None or agent_id is not None
        if parent == header_id or (parent is None and not records):
            parent = None
        elif parent is None or parent not in main_of:
            # an ephemeral event's child, or a first event with no parent: the event before
            parent = records[-1].id if records else None
        if not side and parent is not None:
            parent = main_of.get(parent, parent)
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=own,
                parent_id=parent,
                kind=kind if isinstance(kind, str) else "",
                value=value,
                sidechain=side,
            )
        )
        main_of[own] = (main_of.get(parent) if parent is not None else None) if side else own
        if side:
            subagents[own] = (agent_id, call)

    version = start.get("version")
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=_str(start.get("sessionId")) or _path_id(path),
        cwd=cwd or "",
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        extra=_extra(start, subagents),
        writer_version=_str(start.get("copilotVersion")) or "",
        unknown=drift.items(),
        title=titles.title,
    )


def _extra(
    start: Mapping[str, Any], subagents: dict[str, tuple[str | None, str | None]]
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if producer := _str(start.get("producer")):
        extra["producer"] = producer
    if subagents:
        extra["subagents"] = subagents
    return extra


def _data(value: Mapping[str, Any]) -> dict[str, Any]:
    data = value.get("data")
    return data if isinstance(data, dict) else {}


def _cwd(start: Mapping[str, Any]) -> str | None:
    context = start.get("context")
    return _str(context.get("cwd")) if isinstance(context, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _path_id(path: str) -> str:
    """The session id a path names: ``<uuid>/events.jsonl`` or the flat ``<uuid>.jsonl``."""
    p = PurePosixPath(path)
    if p.name == EVENTS_FILE and p.parent.name:
        return p.parent.name
    return p.name[: -len(_LINES)] if p.name.endswith(_LINES) else p.name
