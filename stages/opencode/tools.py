"""OpenCode's built-in tools by family, and how it names MCP tools (``packages/opencode/src/
tool/*.ts``, ``mcp/index.ts`` of ``sst/opencode``).

Names are exact and case-sensitive (the tool part's ``tool``); a name not listed is
``other``. An MCP tool is named ``<server>_<tool>``, both sanitized to ``[A-Za-z0-9_-]``
(``sanitizedClientName + "_" + sanitizedToolName``): the name alone cannot say where a server
name with ``_`` in it ends, so a name is an MCP tool only when it is not a built-in, and the
server is taken up to its first ``_``, as a server named without one is.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS", "mcp_parts"]

TOOLS: Final[dict[str, str]] = {
    "bash": "shell",
    "read": "read",
    "write": "write",
    "edit": "edit",
    "multiedit": "edit",
    "patch": "edit",
    "apply_patch": "edit",
    "glob": "search",
    "grep": "search",
    "list": "search",
    "codesearch": "search",
    "lsp": "search",
    "task": "subagent",
    "webfetch": "web",
    "websearch": "web",
}

# built-ins that are not in a family (their names hold ``_`` or must not be read as MCP)
_OTHER_BUILTINS: Final = frozenset(
    {"todowrite", "todoread", "skill", "batch", "question", "invalid", "plan_enter", "plan_exit"}
)


def mcp_parts(tool: str) -> tuple[str, str] | None:
    """(server, tool) of an OpenCode MCP tool name (module docstring), None for a built-in."""
    if tool in TOOLS or tool in _OTHER_BUILTINS:
        return None
    server, separator, action = tool.partition("_")
    if not (server and separator and action):
        return None
    return server, action
