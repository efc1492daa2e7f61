"""Reading back what a test built: a global recall, one session's state, the indexed paths,
and a multi-session source's OpenCode scenario written through any of its writers."""

from __future__ import annotations

from typing import Any, Protocol

from query.engine import Engine
from store.config import Config
from store.reader import open_snapshot
from store.records import SessionState
from tests.opencode_db import text, tool

PLANTED = "quixotrellis"


def global_recall(config: Config, **args: Any) -> dict[str, Any]:
    with Engine(config) as engine:
        return engine.recall({"scope": "global", **args}, cwd="/")


def session_state(config: Config, path: str) -> SessionState:
    found = open_snapshot(config.index_dir).session(path)
    assert found is not None
    return found


def indexed_paths(config: Config) -> list[str]:
    return sorted(s.path for s in open_snapshot(config.index_dir).manifest.sessions)


class OpenCodeWriter(Protocol):
    """``tests.opencode_db.OpenCodeDb`` (1.2+) or ``tests.opencode_storage.Storage`` (older)."""

    def session(self, sid: str, title: str, /) -> Any: ...
    def user(self, sid: str, said: str, /) -> Any: ...
    def assistant(self, sid: str, /, *parts: dict[str, Any]) -> Any: ...


def plant_opencode(writer: OpenCodeWriter) -> None:
    """Two sessions: one with the planted word, a failed ``pytest``, a ``rg`` that matched
    nothing and a read; one unrelated."""
    writer.session("ses_main", "Fix the flaky parser")
    writer.user("ses_main", f"why does the {PLANTED} parser fail?")
    writer.assistant(
        "ses_main",
        text("Running the tests."),
        tool("bash", {"command": "pytest -x"}, output="1 failed", exit=1, call="c1"),
        tool("bash", {"command": "rg nomatch src"}, output="", exit=1, call="c2"),
        tool("read", {"filePath": "/work/proj/parser.py"}, output="def parse(): ...", call="c3"),
    )
    writer.session("ses_other", "Unrelated chores")
    writer.user("ses_other", "tidy the changelog")
    writer.assistant("ses_other", text("Done."))
