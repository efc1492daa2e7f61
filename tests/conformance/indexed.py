"""What sessiondex made of one scenario's files: index them with the CLI, read them back.

``index(home, base)`` writes a config whose source root for the scenario's agent is the scratch
home's sessions folder (the other agents' roots do not exist), runs ``pipeline run --once
--config`` exactly as a user would, and returns an ``Indexed`` that answers through the query
backend (``recall``, ``expand``, ``sessions``, ``catalog``, in process) plus the published
manifest's session states (for the sidechain flag, which no query result carries).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from query.transport import Backend
from store.agents import agent_names
from store.config import Config, load_config
from store.reader import open_snapshot
from store.records import SessionState
from tests.conformance.agents import Home

__all__ = ["Indexed", "index"]

BIN = Path(sys.executable).parent
AGENTS = agent_names()


@dataclass
class Indexed:
    home: Home
    config_path: Path
    config: Config
    run_output: str
    # the index never changes after ``index``: what was read once is kept
    _entries: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    _sessions: list[dict[str, Any]] | None = None

    def backend(self) -> Backend:
        return Backend(self.config, server="off")

    def sessions(self) -> list[dict[str, Any]]:
        if self._sessions is None:
            with self.backend() as engine:
                self._sessions = engine.sessions({"scope": "global"}, cwd="/")["sessions"]
        return list(self._sessions)

    def states(self) -> list[SessionState]:
        return list(open_snapshot(self.config.index_dir).manifest.sessions)

    def entries(self, session: str, branches: str = "active") -> list[dict[str, Any]]:
        """Every entry of *session* in one branch mode, paged through ``memory.expand``."""
        if (session, branches) not in self._entries:
            self._entries[session, branches] = self._read_entries(session, branches)
        return list(self._entries[session, branches])

    def _read_entries(self, session: str, branches: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with self.backend() as engine:
            first = 0
            while True:
                page = engine.expand(
                    {"session": session, "branches": branches, "maxEntries": 20,
                     "maxChars": 20000, "entryRange": {"first": first, "last": first + 19}},
                    cwd="/",
                )  # fmt: skip
                error = page.get("error")
                if error and error.get("code") == "index_out_of_bounds":
                    count = int(error["entryCount"])
                    if count <= first:
                        return out
                    page = engine.expand(
                        {"session": session, "branches": branches, "maxEntries": 20,
                         "maxChars": 20000, "entryRange": {"first": first, "last": count - 1}},
                        cwd="/",
                    )  # fmt: skip
                    error = page.get("error")
                assert not error, f"expand {session} {first}: {error}"
                out.extend(page["entries"])
                if len(page["entries"]) < 20:
                    return out
                first += 20

    def all_entries(
        self, branches: str = "active"
    ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        for session in self.sessions():
            # by file: a Claude subagent's id (claude:<uuid>/agent-<id>) is taken for a path
            for entry in self.entries(session["file"], branches):
                yield session, entry

    def recall(self, **args: Any) -> list[dict[str, Any]]:
        """Every hit of a global recall (all pages), cold candidates followed to their entries."""
        hits: list[dict[str, Any]] = []
        with self.backend() as engine:
            page = engine.recall({"scope": "global", "pageSize": 50, **args}, cwd="/")
            assert "error" not in page, f"recall {args}: {page['error']}"
            while True:
                hits.extend(page["hits"])
                if not page.get("next"):
                    return hits
                page = engine.call(page["next"], cwd="/")

    def catalog(self) -> dict[str, Any]:
        with self.backend() as engine:
            result: dict[str, Any] = engine.catalog({"scope": "global"}, cwd="/")
        return result

    def status(self) -> dict[str, Any]:
        done = subprocess.run(
            [str(BIN / "pipeline"), "status", "--json", "--config", str(self.config_path)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, f"pipeline status failed: {done.stderr[-2000:]}"
        status: dict[str, Any] = json.loads(done.stdout)
        return status


def index(home: Home, base: Path, *, hot_sessions: int | None = None) -> Indexed:
    """Index *home*'s sessions into ``base/index``; ``hot_sessions=0`` makes every session cold."""
    base.mkdir(parents=True, exist_ok=True)
    lines = ["[sources]"]
    for agent in AGENTS:
        root = home.sessions if agent == home.agent else base / f"no-{agent}"
        lines.append(f'{agent} = "{root}"')
    lines += ["[memory]", f'indexDir = "{base / "index"}"']
    if hot_sessions is not None:
        lines.append(f"hotSessions = {hot_sessions}")
    config_path = base / "config.toml"
    config_path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [str(BIN / "pipeline"), "run", "--once", "--config", str(config_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        tail = done.stderr[-3000:]
        raise AssertionError(
            f"pipeline run --once exited {done.returncode} on {home.sessions}:\n{tail}"
        )
    return Indexed(home, config_path, load_config(config_path), done.stderr)
