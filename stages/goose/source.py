"""The Goose adapter: one session of Goose's ``sessions.db`` (its rows serialized by
``store.dbsource``) → an agent-neutral ``SourceSession``.

Built from Goose's public source (``block/goose``, ``crates/goose/src/session/
session_manager.rs``, schema version 5; ``conversation/message.rs``), not from a running
writer. ``~/.local/share/goose/sessions/sessions.db`` holds::

    sessions  id (``YYYYMMDD_N``), name, description, user_set_name, session_type
              (user|scheduled|sub_agent|hidden), working_dir, created_at, updated_at, …
    messages  id, session_id, role (user|assistant), content_json (MessageContent[]),
              created_timestamp (epoch seconds), metadata_json ({userVisible, agentVisible})

* **Identity.** The ``sessions`` row: ``id``, ``working_dir`` (the cwd), ``name`` (the title:
  a name the person gave when ``user_set_name``, else the one Goose generated; ``description``
  before schema 4). Without it the id is the one the member path names and the session is
  ``missing_session_header``.
* **Records.** One per message, in ``id`` order, each below the one before (Goose keeps one
  linear conversation; a ``replace_conversation`` rewrites the rows, which reads as a rewrite).
* **Subagents.** A ``sub_agent`` session is a sidechain (the table names no parent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from stages.drift import Drift
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.dblayout import TABLE_KEY, split_member
from store.reasons import MALFORMED_LINE, MISSING_SESSION_HEADER

__all__ = ["AGENT", "KNOWN_CONTENT", "read_goose"]

AGENT: Final = "goose"
SUB_AGENT: Final = "sub_agent"
KNOWN_TABLES: Final = frozenset({"sessions", "messages"})
KNOWN_CONTENT: Final = frozenset(
    {
        "text",
        "image",
        "toolRequest",
        "toolResponse",
        "toolConfirmationRequest",
        "actionRequired",
        "frontendToolRequest",
        "thinking",
        "redactedThinking",
        "systemNotification",
        "conversationCompacted",
    }
)


def read_goose(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a serialized Goose session. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    drift = Drift()
    header: dict[str, Any] | None = None
    records: list[SourceRecord] = []
    for raw in parsed.records:
        value = raw.value
        table = value.get(TABLE_KEY)
        drift.check("table", table, KNOWN_TABLES, value)
        if table == "sessions" and header is None:
            header = value
        elif table == "messages":
            content = value.get("content_json")
            if not isinstance(content, list):
                reasons.add(MALFORMED_LINE)  # its JSON column held no list of contents
            drift.blocks(content, KNOWN_CONTENT)
            own = f"m{value.get('id')}"
            records.append(
                SourceRecord(
                    position=len(records),
                    line=raw.line,
                    offset=raw.offset,
                    id=own,
                    parent_id=records[-1].id if records else None,
                    kind=str(value.get("role", "")),
                    value=value,
                )
            )
    if header is None:
        reasons.add(MISSING_SESSION_HEADER)
    head = header or {}
    titles = Titles()
    name = head.get("name") or head.get("description")
    if head.get("user_set_name") in (1, True):
        titles.name(name)
    else:
        titles.generate(name)
    where = split_member(path)
    side = head.get("session_type") == SUB_AGENT
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=_str(head.get("id")) or (where[1] if where is not None else path),
        cwd=_str(head.get("working_dir")) or "",
        version=1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        sidechain=side,
        unknown=drift.items(),
        title=titles.title,
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
