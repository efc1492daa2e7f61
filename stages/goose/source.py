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
* **Legacy files.** Before ``sessions.db`` Goose kept each session in ``sessions/<id>.jsonl``
  (first line the session's metadata, then one message a line). Such a file is a member
  ``<id>.jsonl#<id>`` (``store.dbsingle``) whose lines are read as the rows Goose's own import
  makes of them (``_legacy_row``), so everything below reads them alike.
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
LEGACY_SUFFIX: Final = ".jsonl"
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
    where = split_member(path)
    legacy = where is not None and where[0].endswith(LEGACY_SUFFIX)
    for k, raw in enumerate(parsed.records):
        value = _legacy_row(raw.value, k, where[1]) if legacy and where else raw.value
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


def _legacy_row(value: dict[str, Any], k: int, session_id: str) -> dict[str, Any]:
    """A line of a legacy ``<id>.jsonl`` as the row ``sessions.db`` would hold for it, mapped as
    Goose's own import (``session/legacy.rs`` ``load_session``) maps it: the first line is the
    session's metadata (``description`` the name, ``working_dir``; the id is the file's stem),
    every other line a message (``role``, ``created`` in epoch seconds, ``content``,
    ``metadata``, absent: visible to all). A first line that is a message is one."""
    if k == 0 and "role" not in value:
        return {
            **value,
            TABLE_KEY: "sessions",
            "id": session_id,
            "name": value.get("description"),
            "user_set_name": False,
        }
    metadata = value.get("metadata", {"userVisible": True, "agentVisible": True})
    return {
        TABLE_KEY: "messages",
        "id": k,
        "session_id": session_id,
        "role": value.get("role"),
        "content_json": value.get("content"),
        "created_timestamp": value.get("created"),
        "metadata_json": metadata,
    }


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
