"""Goose (``block/goose``): every session a row of one SQLite file,
``~/.local/share/goose/sessions/sessions.db`` (schema version 5), read through
``store.dbsource``: one session, one member ``sessions.db#<session id>``, whose bytes are its
``sessions`` row and ``messages`` rows (``stages.goose.source``). Built from Goose's public
source, not a running writer. The older one-file-per-session ``sessions/<id>.jsonl`` are read
too, each a member ``<id>.jsonl#<id>`` (``store.dbsingle``), unless ``sessions.db`` holds that
session: Goose imports them when it creates the database (``import_legacy``) and leaves the
files, so those are read from the database only."""

from __future__ import annotations

from stages.adapter import Adapter
from stages.goose.normalize import normalize_goose
from stages.goose.source import AGENT, read_goose
from stages.goose.tools import TOOLS, mcp_parts
from store.dblayout import DbLayout, DbTable
from store.sources import SessionFiles

__all__ = ["ADAPTER", "DATABASE"]

# messages.created_timestamp is epoch seconds; sessions.updated_at a TIMESTAMP text (it moves
# the signature, not the time)
DATABASE = DbLayout(
    "sessions.db",
    (
        DbTable("sessions", "id", updated="updated_at"),
        DbTable(
            "messages",
            "session_id",
            ("id",),
            ("content_json", "metadata_json"),
            updated="created_timestamp",
            scale=1_000_000_000,
        ),
    ),
    # before sessions.db: one session a file, imported into it when Goose creates it
    # (session_manager.rs ``import_legacy``); a session the database holds is read there only
    singles="*.jsonl",
)

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.local/share/goose/sessions",
    read=read_goose,
    normalize=normalize_goose,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles(DATABASE.members),
    database=DATABASE,
)
