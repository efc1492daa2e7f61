"""GitHub Copilot CLI (``@github/copilot``): one ``events.jsonl`` per session under
``~/.copilot/session-state/<uuid>/`` (the older flat layout: ``session-state/<uuid>.jsonl``);
folders are named by session id, not by cwd. Appends are re-derived in memory."""

from __future__ import annotations

from stages.adapter import Adapter
from stages.copilot.normalize import normalize_copilot
from stages.copilot.source import AGENT, read_copilot
from stages.copilot.tools import TOOLS
from store.sources import SessionFiles

__all__ = ["ADAPTER"]

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.copilot/session-state",
    read=read_copilot,
    normalize=normalize_copilot,
    tools=TOOLS,
    files=SessionFiles(("*.jsonl",)),
)
