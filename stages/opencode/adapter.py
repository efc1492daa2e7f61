"""OpenCode (``opencode-ai``, 1.2+): every session a row of one SQLite file,
``~/.local/share/opencode/opencode.db`` (``opencode-<channel>.db`` beside it for other
release channels), read through ``store.dbsource``: one session, one member
``<db>#<session id>``, whose bytes are its ``session``, ``message`` and ``part`` rows
(``stages.opencode.source``). Appends are re-derived in memory."""

from __future__ import annotations

from stages.adapter import Adapter
from stages.opencode.normalize import normalize_opencode
from stages.opencode.source import AGENT, read_opencode
from stages.opencode.tools import TOOLS, mcp_parts
from store.dblayout import DbLayout, DbTable
from store.sources import SessionFiles

__all__ = ["ADAPTER", "DATABASE"]

# packages/opencode/src/session/session.sql.ts: times are epoch milliseconds (Timestamps)
DATABASE = DbLayout(
    "opencode*.db",
    (
        DbTable("session", "id", updated="time_updated"),
        DbTable("message", "session_id", ("time_created", "id"), ("data",), updated="time_updated"),
        DbTable("part", "session_id", ("message_id", "id"), ("data",), updated="time_updated"),
    ),
)

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.local/share/opencode",
    read=read_opencode,
    normalize=normalize_opencode,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles((DATABASE.members,)),
    database=DATABASE,
)
