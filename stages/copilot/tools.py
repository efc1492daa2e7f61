"""Copilot CLI's built-in tools by family (the names ``toolRequests[].name`` and
``tool.execution_start.toolName`` carry in @github/copilot 1.0.x).

Names are exact and case-sensitive; a name not listed is ``other``. MCP tools are the ones an
event names with ``mcpServerName`` / ``mcpToolName`` (``stages.copilot.normalize`` gives them
the one ``mcp__<server>__<tool>`` name).
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS"]

TOOLS: Final[dict[str, str]] = {
    "bash": "shell",
    "powershell": "shell",
    "write_bash": "shell",
    "read_bash": "shell",
    "stop_bash": "shell",
    "list_bash": "shell",
    "view": "read",
    "create": "write",
    "edit": "edit",
    "str_replace": "edit",
    "str_replace_editor": "edit",
    "insert": "edit",
    "apply_patch": "edit",
    "grep": "search",
    "rg": "search",
    "glob": "search",
    "task": "subagent",
    "read_agent": "subagent",
    "write_agent": "subagent",
    "list_agents": "subagent",
    "web_fetch": "web",
    "web_search": "web",
}
