"""Aider's in-chat commands by family (``aider/commands.py``: ``cmd_<name>``, typed as
``/<name>`` with ``_`` as ``-``; ``!`` is ``/run``). Only a command is a tool in Aider's
history: the model's edits are its reply's edit blocks, not calls. A command not listed is
``other``."""

from __future__ import annotations

from typing import Final

__all__ = ["RUN", "TOOLS"]

RUN: Final = "run"

TOOLS: Final[dict[str, str]] = {
    RUN: "shell",
    "test": "shell",
    "lint": "shell",
    "git": "shell",
    "add": "read",
    "read-only": "read",
    "web": "web",
    "undo": "edit",
    "commit": "edit",
}
