"""Goose ``sessions.db`` files for tests: the tables of ``crates/goose/src/session/
session_manager.rs`` (schema version 5, as ``SessionStorage::create`` and its migrations make
them), filled with ``MessageContent`` rows as ``conversation/message.rs`` serializes them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SCHEMA", "GooseDb", "request", "response"]

SCHEMA = """
CREATE TABLE schema_version (
    version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO schema_version (version) VALUES (5);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT,
    user_recipe_values_json TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_timestamp ON messages(timestamp);
CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC);
CREATE INDEX idx_sessions_type ON sessions(session_type);
"""

VISIBLE = {"userVisible": True, "agentVisible": True}


class GooseDb:
    """One ``sessions.db`` in WAL mode (sqlx's default for SQLite)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = 1_767_000_000
        db = sqlite3.connect(path)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(SCHEMA)
            db.commit()
        finally:
            db.close()

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        db = sqlite3.connect(self.path)
        try:
            with db:
                db.execute(sql, args)
        finally:
            db.close()

    def session(
        self, sid: str, name: str, *, working_dir: str = "/work/proj", kind: str = "user"
    ) -> str:
        self._write(
            "INSERT INTO sessions (id, name, user_set_name, session_type, working_dir,"
            " extension_data) VALUES (?, ?, FALSE, ?, ?, '{}')",
            (sid, name, kind, working_dir),
        )
        return sid

    def message(
        self, sid: str, role: str, *content: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> None:
        self.clock += 1
        self._write(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp,"
            " metadata_json) VALUES (?, ?, ?, ?, ?)",
            (sid, role, orjson.dumps(list(content)).decode(), self.clock,
             orjson.dumps(meta or VISIBLE).decode()),
        )  # fmt: skip
        self._write("UPDATE sessions SET updated_at = datetime('now') WHERE id = ?", (sid,))


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def request(call: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "toolRequest",
        "id": call,
        "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}},
    }


def response(
    call: str, output: str = "", *, error: str | None = None, is_error: bool = False
) -> dict[str, Any]:
    if error is not None:
        result: dict[str, Any] = {"status": "error", "error": error}
    else:
        value: dict[str, Any] = {"content": [{"type": "text", "text": output}]}
        if is_error:
            value["isError"] = True
        result = {"status": "success", "value": value}
    return {"type": "toolResponse", "id": call, "toolResult": result}
