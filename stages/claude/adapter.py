"""Claude Code (``@anthropic-ai/claude-code``): one JSONL transcript per session under
``~/.claude/projects/<cwd with every non-alphanumeric as ->/``, subagents in
``<session>/subagents/agent-<id>.jsonl`` beside an ``agent-<id>.meta.json`` sidecar."""

from __future__ import annotations

from typing import Final

from stages.adapter import Adapter
from stages.claude.normalize import normalize_claude
from stages.claude.source import read_claude
from stages.claude.tools import TOOLS
from store.sources import WHOLE_PATH, ProjectFolder, SessionFiles

__all__ = ["ADAPTER", "subagent_sidecar"]

_LINES: Final = ".jsonl"
_META: Final = ".meta.json"


def subagent_sidecar(path: str) -> str | None:
    """Where a subagent transcript's sidecar would be (``agent-<id>.meta.json`` beside
    ``agent-<id>.jsonl``, real-writers: 2.1.x), or None for any other file."""
    name = path.rsplit("/", 1)[-1]
    if not name.startswith("agent-") or not name.endswith(_LINES):
        return None
    return path[: -len(_LINES)] + _META


ADAPTER = Adapter(
    name="claude",
    default_root="~/.claude/projects",
    read=read_claude,
    normalize=normalize_claude,
    tools=TOOLS,
    files=SessionFiles(("*.jsonl",)),
    folders=(ProjectFolder(WHOLE_PATH, unsafe="[^A-Za-z0-9]"),),
    sidecar=subagent_sidecar,
)
