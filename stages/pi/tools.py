"""Pi's built-in tools by family (Pi 1.6.0 and the names older releases used).

Names are exact and case-sensitive: the family comes from ``toolCall.name`` /
``toolResult.toolName`` only (``stages.families``); a name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS"]

TOOLS: Final[dict[str, str]] = {
    "bash": "shell",
    "powershell": "shell",
    "read": "read",
    "edit": "edit",
    "write": "write",
    "grep": "search",
    "find": "search",
    "ls": "search",
    "subagent": "subagent",
    "subagents": "subagent",
    "task": "subagent",
    "web_search": "web",
    "web_fetch": "web",
    "fetch": "web",
}
