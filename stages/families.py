"""What a tool *is*, from the writer's own tool name: its family and its capability identity.

One table for every agent, so ``--kind shell`` finds Pi ``bash``, Claude Code ``Bash`` and Codex
``exec_command`` alike. The family comes from the exact tool name a writer puts in a typed field
(``toolCall.name``, ``tool_use.name``, ``function_call.name``), never from arguments or prose; a
name the table does not list is ``other``.

MCP tools have one name on every agent: ``mcp__<server>__<tool>``, as Claude Code and Pi write it
(Codex writes ``namespace: "mcp__<server>"`` and ``name: "<tool>"``, joined by ``mcp_tool_name``).
Their identity is the server's, not the agent's: ref ``<server>.<tool>``, provider ``<server>``,
action ``<tool>`` (the ``<provider>.<action>`` form Fabric names every capability with), so one
``--tool``, ``--ref``, ``--provider`` or ``--action`` filter finds the call whichever agent made it.
"""

from __future__ import annotations

from typing import Final

from store.records import TOOL_FAMILIES

__all__ = [
    "MCP_PREFIX",
    "TOOL_FAMILIES",
    "fabric_family",
    "mcp_parts",
    "mcp_tool_name",
    "tool_family",
    "tool_identity",
]

MCP_PREFIX: Final = "mcp__"
_MCP_SEPARATOR: Final = "__"

# The built-in tools of each writer (Pi 1.6.0, Claude Code 2.1.332, Codex 0.171.0 and the
# names older releases used), by family. Names are exact and case-sensitive: each agent spells
# its own tools one way.
_TABLE: Final[dict[str, dict[str, str]]] = {
    "pi": {
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
    },
    "claude": {
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
    },
    "codex": {
        "exec_command": "shell",
        "write_stdin": "shell",
        "shell": "shell",
        "shell_command": "shell",
        "local_shell": "shell",
        "container.exec": "shell",
        "unified_exec": "shell",
        "read_file": "read",
        "view_image": "read",
        "apply_patch": "edit",
        "grep_files": "search",
        "list_dir": "search",
        "spawn_agent": "subagent",
        "send_input": "subagent",
        "wait_agent": "subagent",
        "wait": "subagent",
        "close_agent": "subagent",
        "resume_agent": "subagent",
        "web_search": "web",
        "web_search_preview": "web",
    },
}
# Fabric's capability refs (trace operations name Pi's tools ``pi.<tool>``).
_FABRIC_PROVIDER: Final = "pi"


def mcp_parts(tool: str) -> tuple[str, str] | None:
    """(server, tool) of an ``mcp__<server>__<tool>`` name, or None for any other name.

    The server is what lies between the prefix and the first ``__`` after it; both parts must
    be non-empty (``mcp__x`` or ``mcp____t`` are ordinary names)."""
    if not tool.startswith(MCP_PREFIX):
        return None
    rest = tool[len(MCP_PREFIX) :]
    server, separator, action = rest.partition(_MCP_SEPARATOR)
    if not server or not separator or not action:
        return None
    return server, action


def mcp_tool_name(namespace: str, name: str) -> str | None:
    """The one MCP tool name of a Codex call written as ``namespace: "mcp__<server>"`` plus
    ``name: "<tool>"``; None when the namespace is not an MCP server's."""
    if not namespace.startswith(MCP_PREFIX) or not name:
        return None
    joined = f"{namespace}{_MCP_SEPARATOR}{name}"
    return joined if mcp_parts(joined) is not None else None


def tool_family(agent: str, tool: str | None) -> str | None:
    """The family of *agent*'s tool *tool* (``TOOL_FAMILIES``); None when there is no tool."""
    if not tool:
        return None
    if mcp_parts(tool) is not None:
        return "mcp"
    return _TABLE.get(agent, {}).get(tool, "other")


def tool_identity(agent: str, tool: str) -> tuple[str, str, str]:
    """(ref, provider, action) of *agent*'s tool *tool*: the server's for an MCP tool, else
    ``<agent>.<tool>`` / ``<agent>`` / ``<tool>``."""
    parts = mcp_parts(tool)
    if parts is not None:
        server, action = parts
        return f"{server}.{action}", server, action
    return f"{agent}.{tool}", agent, tool


def fabric_family(provider: str | None, action: str | None, tool: str) -> str | None:
    """The family of a Fabric trace operation: Pi's table for ``pi.<tool>`` refs, MCP for an
    MCP-named tool, ``other`` for any other capability."""
    if provider == _FABRIC_PROVIDER and action:
        return tool_family("pi", action)
    return tool_family("pi", tool) if mcp_parts(tool) is not None else "other"
