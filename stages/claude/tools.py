"""Claude Code's built-in tools by family (2.1.332 and the names older releases used).

Names are exact and case-sensitive: the family comes from ``tool_use.name`` only
(``stages.families``); a name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS"]

TOOLS: Final[dict[str, str]] = {
    "Bash": "shell",
    "BashOutput": "shell",
    "KillShell": "shell",
    "KillBash": "shell",
    "PowerShell": "shell",
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Write": "write",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "Agent": "subagent",
    "Task": "subagent",
    "WebFetch": "web",
    "WebSearch": "web",
}
