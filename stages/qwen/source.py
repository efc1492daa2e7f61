"""The Qwen Code adapter: a parsed session file → an agent-neutral ``SourceSession``.

Qwen Code (read here against 0.24.4) forked Gemini CLI and keeps its content shapes (a record's
``message`` is a Gemini ``Content``: ``role`` plus ``parts``, ``stages.gemini.parts``) but
frames them its own way, which is all this module holds: one JSONL file per session,
``~/.qwen/projects/<cwd with every non-alphanumeric as ->/chats/<sessionId>.jsonl``, each line a
``ChatRecord``::

    {uuid, parentUuid, sessionId, timestamp, type, subtype?, cwd, version, gitBranch?,
     message?: {role, parts}, toolCallResult?: {callId, status, resultDisplay, error, errorType},
     usageMetadata?, model?, systemPayload?, isSidechain?, agentId?}

``type`` is ``user`` / ``assistant`` / ``tool_result`` / ``system`` (``subtype`` names the
system event: telemetry, snapshots, compression, rewind, titles, …). Unlike Gemini CLI, records
are never rewritten: they form a tree by ``uuid`` / ``parentUuid`` (system records are on the
chain too), so the generic lineage applies as it is: the active path runs from the last record
up its parents, and a rewind's new branch leaves the old turns off it.

Identity from the first record: ``sessionId``, ``cwd``, ``version`` (the writer's). A record
with ``isSidechain: true`` is a subagent's (``agentId`` on the line). A ``system`` record of
subtype ``parent_session`` names the session that spawned this one
(``systemPayload.parentSessionId``). A ``system`` record of subtype ``custom_title`` is the
session's title (``ChatRecordingService.recordCustomTitle``): ``systemPayload.customTitle``,
a title Qwen's fast model generated when ``titleSource`` is ``auto``, else (``manual``, or no
``titleSource``: writers before it, where only ``/rename`` wrote one) a name the person gave.

Drift: record types, system subtypes and content part kinds outside ``KNOWN_*`` are counted
(an unknown type or part could hold text: ``unknown_record_type``; an unknown system subtype
could not).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Final

from stages.drift import Drift, holds_text
from stages.gemini.parts import part_list, unknown_parts
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles

__all__ = ["AGENT", "KNOWN_SUBTYPES", "KNOWN_TYPES", "read_qwen"]

AGENT = "qwen"
_CUSTOM_TITLE: Final = "custom_title"
_AUTO: Final = "auto"
KNOWN_TYPES: Final = frozenset({"user", "assistant", "tool_result", "system"})
KNOWN_SUBTYPES: Final = frozenset(
    {
        "session_notes",
        "chat_compression",
        "slash_command",
        "ui_telemetry",
        "at_command",
        "attribution_snapshot",
        "notification",
        "background_task_completed",
        "cron",
        "mid_turn_user_message",
        "custom_title",
        "parent_session",
        "session_source",
        "session_execution_engine",
        "omni_recall",
        "session_model",
        "session_approval_mode",
        "rewind",
        "agent_bootstrap",
        "agent_launch_prompt",
        "agent_retry",
        "agent_session_ready",
        "file_history_snapshot",
        "user_text_elements",
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "branch_checkpoint",
        "goal_state",
        "goal_runtime",
        "goal_turn_end",
        "realtime_message",
        "turn_result",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)


def read_qwen(parsed: ParseResult, path: str) -> SourceSession:
    """Read a parsed Qwen Code session. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    drift = Drift()
    records: list[SourceRecord] = []
    first: dict[str, Any] | None = None
    parent_session: str | None = None
    titles = Titles()
    for raw in parsed.records:
        value = raw.value
        kind = value.get("type")
        if drift.check("type", kind, KNOWN_TYPES, value):
            _check(drift, value)
        if first is None and isinstance(value.get("sessionId"), str):
            first = value
        if kind == "system" and value.get("subtype") == "parent_session":
            payload = value.get("systemPayload")
            named = payload.get("parentSessionId") if isinstance(payload, dict) else None
            parent_session = named if isinstance(named, str) and named else parent_session
        if kind == "system" and value.get("subtype") == _CUSTOM_TITLE:
            _title(titles, value.get("systemPayload"))
        uuid = value.get("uuid")
        parent = value.get("parentUuid")
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=uuid if isinstance(uuid, str) else None,
                parent_id=parent if isinstance(parent, str) else None,
                kind=kind if isinstance(kind, str) else "unknown",
                value=value,
                sidechain=value.get("isSidechain") is True,
            )
        )
    own = first or {}
    session_id = _str(own.get("sessionId")) or PurePath(path).stem
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=session_id,
        cwd=_str(own.get("cwd")) or "",
        version=1,
        header=None,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=parent_session,
        writer_version=_str(own.get("version")) or "",
        unknown=drift.items(),
        title=titles.title,
    )


def _title(titles: Titles, payload: object) -> None:
    if not isinstance(payload, dict):
        return
    if payload.get("titleSource") == _AUTO:
        titles.generate(payload.get("customTitle"))
    else:
        titles.name(payload.get("customTitle"))


def _check(drift: Drift, value: dict[str, Any]) -> None:
    if value.get("type") == "system":
        subtype = value.get("subtype")
        if subtype is not None and not (isinstance(subtype, str) and subtype in KNOWN_SUBTYPES):
            drift.note("subtype", subtype, text=False)
        return
    message = value.get("message")
    if isinstance(message, dict):
        for name in unknown_parts(part_list(message.get("parts"))):
            drift.note("part", name, text=True)
    elif message is not None:
        drift.note("message", type(message).__name__, text=holds_text(value))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
