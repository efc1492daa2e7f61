"""OpenCode < 1.2 ``storage/`` trees for tests, laid out as ``packages/opencode/src/storage/
storage.ts`` wrote them (one JSON file per row, every id a file name) with the shapes of
``Session.Info``, ``MessageV2.Info`` and ``MessageV2.Part`` of that time: the message and part
files carry their own ``id``, ``sessionID`` (and ``messageID``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from tests.opencode_db import T0

__all__ = ["Storage"]


class Storage:
    """One ``storage/`` folder; every file written whole, as ``Bun.write`` does."""

    def __init__(self, root: Path, project: str = "prj_1") -> None:
        self.root = root
        self.project = project
        self.clock = T0
        self._seq = 0
        self._write(root / "project" / f"{project}.json", {
            "id": project, "worktree": "/work/proj", "vcs": "git",
            "time": {"created": T0, "initialized": T0},
        })  # fmt: skip

    def _write(self, path: Path, value: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
        self._seq += 1
        # a distinct mtime per write, as files written seconds apart have
        os.utime(path, ns=(self.clock * 1_000_000 + self._seq, self.clock * 1_000_000 + self._seq))
        return path

    def tick(self) -> int:
        self.clock += 1000
        return self.clock

    def next_id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}_{self._seq:012d}"

    def session(self, sid: str, title: str, *, parent: str | None = None) -> str:
        now = self.tick()
        info: dict[str, Any] = {
            "id": sid, "version": "1.1.40", "projectID": self.project,
            "directory": "/work/proj", "title": title, "time": {"created": now, "updated": now},
        }  # fmt: skip
        if parent is not None:
            info["parentID"] = parent
        self._write(self.root / "session" / self.project / f"{sid}.json", info)
        return sid

    def message(self, sid: str, info: dict[str, Any], parts: list[dict[str, Any]]) -> str:
        mid = self.next_id("msg")
        now = self.tick()
        data = {"id": mid, "sessionID": sid, "time": {"created": now}, **info}
        self._write(self.root / "message" / sid / f"{mid}.json", data)
        for part in parts:
            self.part(sid, mid, part)
        return mid

    def part(self, sid: str, mid: str, part: dict[str, Any]) -> Path:
        pid = self.next_id("prt")
        value = {"id": pid, "sessionID": sid, "messageID": mid, **part}
        return self._write(self.root / "part" / mid / f"{pid}.json", value)

    def user(self, sid: str, text: str) -> str:
        info = {"role": "user", "agent": "build", "model": {"providerID": "p", "modelID": "m"}}
        return self.message(sid, info, [{"type": "text", "text": text}])

    def assistant(self, sid: str, *parts: dict[str, Any]) -> str:
        info = {
            "role": "assistant", "parentID": "msg_user", "modelID": "m", "providerID": "p",
            "mode": "build", "path": {"cwd": "/work/proj", "root": "/work/proj"}, "cost": 0,
            "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        }  # fmt: skip
        return self.message(sid, info, [{"type": "step-start"}, *parts])
