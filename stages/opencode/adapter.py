"""OpenCode (``opencode-ai``, 1.2+): every session a row of one SQLite file,
``~/.local/share/opencode/opencode.db`` (``opencode-<channel>.db`` beside it for other
release channels), read through ``store.dbsource``: one session, one member
``<db>#<session id>``, whose bytes are its ``session``, ``message`` and ``part`` rows
(``stages.opencode.source``). Appends are re-derived in memory.

OpenCode < 1.2 kept the same sessions as JSON files under ``storage/`` beside it
(``session/<project>/<id>.json``, ``message/<session>/<id>.json``, ``part/<message>/<id>.json``),
read through ``store.dbtree`` as rows of the same tables: one member ``storage#<session id>``
per session that no database beside it holds (1.2+ migrates the tree into the database on its
first start and leaves the files: those sessions are read from the database only)."""

from __future__ import annotations

from stages.adapter import Adapter
from stages.opencode.normalize import normalize_opencode
from stages.opencode.source import AGENT, read_opencode
from stages.opencode.tools import TOOLS, mcp_parts
from store.dblayout import DbLayout, DbTable, DbTree
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
    # OpenCode < 1.2 (packages/opencode/src/storage/storage.ts): one JSON file per row, which
    # 1.2+ migrates into opencode.db on its first start and leaves in place
    (
        DbTree(
            "storage", "session", "project_id", ("message", "part"), ("session_id", "message_id")
        ),
    ),
)

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.local/share/opencode",
    read=read_opencode,
    normalize=normalize_opencode,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles(DATABASE.members),
    database=DATABASE,
)
