"""OpenCode databases for tests: the tables of ``packages/opencode/src/session/session.sql.ts``
and ``project/project.sql.ts`` (sst/opencode 1.2+, as drizzle creates them), filled with rows
shaped like ``MessageV2.Info`` and ``MessageV2.Part``, in WAL mode as OpenCode opens it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SCHEMA", "OpenCodeDb"]

SCHEMA = """
CREATE TABLE project (
  id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text,
  icon_color text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_initialized integer, sandboxes text NOT NULL
);
CREATE TABLE session (
  id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE cascade,
  workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
  title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text, revert text,
  permission text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer
);
CREATE INDEX session_project_idx ON session (project_id);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (
  id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE cascade,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL
);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (
  id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE cascade,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
  data text NOT NULL
);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""

T0 = 1_767_000_000_000  # epoch ms


class OpenCodeDb:
    """One ``opencode.db``; every write is its own transaction, as OpenCode's are."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = T0
        self._seq = 0
        with self.connect() as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(SCHEMA)
            db.execute(
                "INSERT INTO project VALUES ('prj_1', '/work/proj', 'git', NULL, NULL, NULL, ?, ?,"
                " NULL, '[]')",
                (T0, T0),
            )

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path)
        try:
            with db:
                yield db
        finally:
            db.close()

    def tick(self) -> int:
        self.clock += 1000
        return self.clock

    def next_id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}_{self._seq:012d}"

    def session(
        self, sid: str, title: str, *, directory: str = "/work/proj", parent: str | None = None
    ) -> str:
        now = self.tick()
        with self.connect() as db:
            db.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES (?, 'prj_1', ?, ?, ?, ?, '1.2.27', ?, ?)",
                (sid, parent, sid.lower(), directory, title, now, now),
            )
        return sid

    def message(self, sid: str, info: dict[str, Any], parts: list[dict[str, Any]]) -> str:
        mid = self.next_id("msg")
        now = self.tick()
        data = {"time": {"created": now}, **info}
        with self.connect() as db:
            db.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (mid, sid, now, now, orjson.dumps(data).decode()),
            )
            for part in parts:
                db.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (self.next_id("prt"), mid, sid, now, now, orjson.dumps(part).decode()),
                )
            db.execute("UPDATE session SET time_updated = ? WHERE id = ?", (now, sid))
        return mid

    def user(self, sid: str, text: str) -> str:
        info = {"role": "user", "agent": "build", "model": {"providerID": "p", "modelID": "m"}}
        return self.message(sid, info, [{"type": "text", "text": text}])

    def assistant(self, sid: str, *parts: dict[str, Any]) -> str:
        info = {
            "role": "assistant",
            "parentID": "msg_user",
            "modelID": "m",
            "providerID": "p",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/work/proj", "root": "/work/proj"},
            "cost": 0,
            "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        }
        return self.message(sid, info, [{"type": "step-start"}, *parts])


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value, "time": {"start": T0, "end": T0}}


def tool(
    name: str,
    args: dict[str, Any],
    *,
    output: str = "",
    exit: int | None = None,
    error: str | None = None,
    call: str = "call_1",
) -> dict[str, Any]:
    """A tool part, ended: ``error`` makes it ``status: error``; ``exit`` a bash exit code."""
    time = {"start": T0, "end": T0}
    if error is not None:
        state: dict[str, Any] = {"status": "error", "input": args, "error": error, "time": time}
    else:
        metadata: dict[str, Any] = {"output": output, "description": ""}
        if exit is not None:
            metadata["exit"] = exit
        state = {
            "status": "completed", "input": args, "output": output, "title": name,
            "metadata": metadata, "time": time,
        }  # fmt: skip
    return {"type": "tool", "callID": call, "tool": name, "state": state}
