"""The OpenCode adapter: one session of ``opencode.db`` (its rows serialized by
``store.dbsource``) → an agent-neutral ``SourceSession``.

OpenCode (``opencode-ai``, 1.2+) keeps every session in one SQLite file,
``~/.local/share/opencode/opencode.db`` (``opencode-<channel>.db`` for other channels), in the
tables of ``packages/opencode/src/session/session.sql.ts``::

    session  id, project_id, parent_id, slug, directory, title, version, time_created,
             time_updated, …                                 one row: the header
    message  id, session_id, time_created, time_updated, data  data: MessageV2.Info
             (role user|assistant, time.created, assistant: parentID, modelID, path.cwd,
             error)
    part     id, message_id, session_id, time_*, data           data: MessageV2.Part
             (type text|reasoning|tool|file|step-start|step-finish|patch|agent|subtask|…)

Each line of the serialized session is one row, ``"$table"`` naming its table. A session of
OpenCode < 1.2's ``storage/`` tree (``store.dbtree``) comes as the same rows, its session row
holding the session file's JSON (``Session.Info``: ``parentID``, ``directory``, ``title``,
``version``) under ``data``, mapped as OpenCode's ``json-migration.ts`` maps it.

* **Identity.** The ``session`` row: ``id``, ``directory`` (the cwd), ``version`` (the
  ``writer_version``), ``title`` (the session's title, ``stages.titles``). Without it the id is
  the one the member path names and the session is ``missing_session_header``.
* **Records.** One per message, in message order, carrying its parts (in part id order,
  OpenCode's ids grow with time): ``{"message": data, "parts": [data…]}``. Messages form one
  chain, each below the one before (an assistant's ``parentID`` names the user message it
  answers, which all the steps of one answer share: no branch). A part whose message the
  session does not hold is dropped and counted as drift (``part/orphan``).
* **Subagents.** A ``task`` call runs in a child session of its own whose ``parent_id`` names
  the calling session: that session is a sidechain of its parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from stages.drift import Drift
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.dblayout import TABLE_KEY, split_member
from store.reasons import MALFORMED_LINE, MISSING_SESSION_HEADER

__all__ = ["AGENT", "KNOWN_PARTS", "read_opencode"]

AGENT: Final = "opencode"

KNOWN_TABLES: Final = frozenset({"session", "message", "part"})
KNOWN_PARTS: Final = frozenset(
    {
        "text",
        "reasoning",
        "tool",
        "file",
        "step-start",
        "step-finish",
        "snapshot",
        "patch",
        "agent",
        "subtask",
        "retry",
        "compaction",
    }
)


def read_opencode(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a serialized OpenCode session. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    drift = Drift()
    header: dict[str, Any] | None = None
    messages: list[tuple[int, int, dict[str, Any]]] = []
    parts: dict[str, list[dict[str, Any]]] = {}
    for raw in parsed.records:
        value = raw.value
        table = value.get(TABLE_KEY)
        drift.check("table", table, KNOWN_TABLES, value)
        if (table in ("message", "part") or "data" in value) and not isinstance(
            value.get("data"), dict
        ):
            reasons.add(MALFORMED_LINE)  # its JSON column held no JSON object
        if table == "session" and header is None:
            header = value
        elif table == "message" and isinstance(value.get("id"), str):
            messages.append((raw.line, raw.offset, value))
        elif table == "part" and isinstance(value.get("message_id"), str):
            data = _object(value.get("data"))
            drift.check("part", data.get("type"), KNOWN_PARTS, data)
            parts.setdefault(value["message_id"], []).append({**data, "id": value.get("id")})
    if header is None:
        reasons.add(MISSING_SESSION_HEADER)
    records: list[SourceRecord] = []
    held: set[str] = set()
    for line, offset, row in messages:
        own = row["id"]
        held.add(own)
        records.append(
            SourceRecord(
                position=len(records),
                line=line,
                offset=offset,
                id=own,
                parent_id=records[-1].id if records else None,
                kind=str(_object(row.get("data")).get("role", "")),
                value={
                    "message": _object(row.get("data")),
                    "parts": parts.get(own, []),
                    "time_created": row.get("time_created"),
                },
            )
        )
    for orphan in set(parts) - held:
        drift.check("part", "orphan", frozenset(), parts[orphan][0])
    head = _header(header or {})
    parent = _str(head.get("parent_id"))
    titles = Titles()
    titles.generate(head.get("title"))
    where = split_member(path)
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=_str(head.get("id")) or (where[1] if where is not None else path),
        cwd=_str(head.get("directory")) or "",
        version=1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=parent,
        sidechain=parent is not None,
        extra={"project": head["project_id"]} if _str(head.get("project_id")) else {},
        writer_version=_str(head.get("version")) or "",
        unknown=drift.items(),
        title=titles.title,
    )


def _header(row: dict[str, Any]) -> dict[str, Any]:
    """The session row's columns; a row of the legacy ``storage/`` tree carries the session's
    JSON (``Session.Info``) under ``data``, mapped to the columns as OpenCode's own migration
    (``json-migration.ts``) maps it."""
    data = row.get("data")
    if not isinstance(data, dict):
        return row
    return {
        **row,
        "parent_id": data.get("parentID"),
        "directory": data.get("directory"),
        "title": data.get("title"),
        "version": data.get("version"),
    }


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
