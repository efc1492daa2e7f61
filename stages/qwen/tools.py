"""Qwen Code's built-in tools by family (0.24.4, ``packages/core/src/tools/tool-names.ts``,
with the older names its migration table lists). MCP tools keep the one
``mcp__<server>__<tool>`` form. A name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS"]

TOOLS: Final[dict[str, str]] = {
    "run_shell_command": "shell",
    "read_file": "read",
    "read_many_files": "read",
    "edit": "edit",
    "replace": "edit",
    "write_file": "write",
    "grep_search": "search",
    "search_file_content": "search",
    "glob": "search",
    "list_directory": "search",
    "agent": "subagent",
    "task": "subagent",
    "web_fetch": "web",
    "web_search": "web",
}
