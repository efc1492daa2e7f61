"""Oh My Pi's built-in tools by family, and how it names MCP tools (omp 18.2.3,
``src/tools/builtin-names.ts`` and ``src/mcp/tool-bridge.ts``).

Names are exact and case-sensitive (omp writes its built-ins in lower case, and ``search`` /
``find`` are the older names of ``grep`` / ``glob``); a name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS", "mcp_parts"]

TOOLS: Final[dict[str, str]] = {
    "bash": "shell",
    "read": "read",
    "edit": "edit",
    "ast_edit": "edit",
    "write": "write",
    "grep": "search",
    "glob": "search",
    "ast_grep": "search",
    "search": "search",
    "find": "search",
    "task": "subagent",
    "web_search": "web",
}

_PREFIX: Final = "mcp__"


def mcp_parts(tool: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool name as omp writes it.

    omp mints ``mcp__<server>_<tool>`` (one ``_`` after a sanitized server name, which has
    none; ``createMCPToolName``) and splits at that first ``_`` (``parseMCPToolName``). A model
    primed on Claude Code's convention calls ``mcp__<server>__<tool>``, which omp resolves to
    the same tool: a ``__`` after the prefix is taken as that separator.
    """
    if not tool.startswith(_PREFIX):
        return None
    rest = tool[len(_PREFIX) :]
    server, separator, action = rest.partition("__")
    if not (server and separator and action):
        server, separator, action = rest.partition("_")
    if not (server and separator and action):
        return None
    return server, action
