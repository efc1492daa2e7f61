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

# Only the events files: a session folder also holds ``files/`` (artifacts the agent wrote,
# any name), ``checkpoints/`` and ``workspace.yaml``.
_FILES = SessionFiles(("events.jsonl", "????????-????-????-????-????????????.jsonl"))

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.copilot/session-state",
    read=read_copilot,
    normalize=normalize_copilot,
    tools=TOOLS,
    files=_FILES,
)
