"""Gemini CLI's built-in tools by family, and how it names MCP tools (0.61.0,
``packages/core/src/tools/definitions/base-declarations.ts`` and ``tools/mcp-tool.ts``).

Names are exact and case-sensitive: the family comes from the recorded ``toolCalls[].name``
(the name the model called, ``originalRequestName``); a name not listed is ``other``.
``search_file_content`` is the older name of ``grep_search``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS", "mcp_parts"]

TOOLS: Final[dict[str, str]] = {
    "run_shell_command": "shell",
    "read_file": "read",
    "read_many_files": "read",
    "replace": "edit",
    "write_file": "write",
    "grep_search": "search",
    "search_file_content": "search",
    "glob": "search",
    "list_directory": "search",
    "invoke_agent": "subagent",
    "google_web_search": "web",
    "web_fetch": "web",
}

_PREFIX: Final = "mcp_"


def mcp_parts(tool: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool name as Gemini CLI mints it: ``mcp_<server>_<tool>``, the
    server being everything up to the first ``_`` after the prefix (``parseMcpToolName``)."""
    if not tool.startswith(_PREFIX):
        return None
    server, separator, action = tool[len(_PREFIX) :].partition("_")
    if not (server and separator and action):
        return None
    return server, action
