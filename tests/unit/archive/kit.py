"""A Claude Code root with a planted term, an index and an archive, for the archive's tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from query.engine import Engine
from store.config import Config, load_config
from tests.helpers import claude_line, jsonl

T0 = 1_760_000_000_000
SESSION = "5e55107a-0000-4000-8000-00000000beef"


def claude_session(term: str, *, session: str = SESSION, turns: int = 2) -> list[dict[str, Any]]:
    """A Claude Code transcript: a prompt naming *term*, a Bash call that fails, replies."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for n in range(turns):
        u = f"u{n}-{session[:8]}"
        a = f"a{n}-{session[:8]}"
        r = f"r{n}-{session[:8]}"
        w = f"w{n}-{session[:8]}"
        lines.append(
            claude_line("user", u, parent, T0 + 10 * n, f"turn {n}: why does {term} fail?",
                        session=session)
        )  # fmt: skip
        lines.append(
            claude_line(
                "assistant", a, u, T0 + 10 * n + 1,
                [{"type": "tool_use", "id": f"toolu_{n}{session[:6]}", "name": "Bash",
                  "input": {"command": f"pytest -k {term}"}}],
                message_id=f"msg_{n}{session[:6]}", session=session,
            )
        )  # fmt: skip
        lines.append(
            claude_line(
                "user", r, a, T0 + 10 * n + 2,
                [{"type": "tool_result", "tool_use_id": f"toolu_{n}{session[:6]}",
                  "content": f"FAILED test_{term} - AssertionError", "is_error": True}],
                session=session,
            )
        )  # fmt: skip
        lines.append(
            claude_line("assistant", w, r, T0 + 10 * n + 3,
                        [{"type": "text", "text": f"The {term} check fails on turn {n}."}],
                        message_id=f"msgw_{n}{session[:6]}", session=session)
        )  # fmt: skip
        parent = w
    return lines


@dataclass
class ClaudeRoot:
    base: Path

    @property
    def root(self) -> Path:
        return self.base / "claude"

    @property
    def index(self) -> Path:
        return self.base / "index"

    @property
    def config_path(self) -> Path:
        return self.base / "config.toml"

    def write_config(self, extra: str = "", **memory: Any) -> Config:
        lines = [
            "[sources]",
            f'pi = "{self.base / "pi"}"',
            f'claude = "{self.root}"',
            f'codex = "{self.base / "codex"}"',
            "[memory]",
            f'indexDir = "{self.index}"',
        ]
        for key, value in memory.items():
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
        self.config_path.write_text("\n".join(lines) + "\n" + extra)
        return load_config(self.config_path)

    def session(
        self, name: str, lines: list[dict[str, Any]], *, project: str = "-work-proj",
        mtime_s: float | None = None,
    ) -> Path:  # fmt: skip
        folder = self.root / project
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.jsonl"
        path.write_bytes(jsonl(lines))
        if mtime_s is not None:
            os.utime(path, (mtime_s, mtime_s))
        return path


def recall(config: Config, text: str, **args: Any) -> dict[str, Any]:
    with Engine(config) as engine:
        return engine.recall({"query": text, "scope": "global", **args}, cwd="/")


def call(config: Config, token: dict[str, Any]) -> dict[str, Any]:
    with Engine(config) as engine:
        return engine.call(token, cwd="/")


def entry_hits(config: Config, text: str) -> list[dict[str, Any]]:
    """Entry hits for *text*, following a cold session candidate into its session."""
    page = recall(config, text)
    hits = page["hits"]
    out = [h for h in hits if h["kind"] == "entry"]
    for h in hits:
        if h["kind"] == "session":
            out += [x for x in call(config, h["follow"])["hits"] if x["kind"] == "entry"]
    return out
