"""What a tool *is*, from the writer's own tool name: its family and its capability identity.

One set of families for every agent, so ``--kind shell`` finds Pi ``bash``, Claude Code ``Bash``
and Codex ``exec_command`` alike: each adapter lists its writer's tools by family (its
``Adapter.tools``, e.g. ``stages/pi/tools.py``). The family comes from the exact tool name a
writer puts in a typed field (``toolCall.name``, ``tool_use.name``, ``function_call.name``),
never from arguments or prose; a name the agent's table does not list is ``other``.

MCP tools have one name on every agent: ``mcp__<server>__<tool>``, as Claude Code and Pi write it
(Codex writes ``namespace: "mcp__<server>"`` and ``name: "<tool>"``, joined by ``mcp_tool_name``).
Their identity is the server's, not the agent's: ref ``<server>.<tool>``, provider ``<server>``,
action ``<tool>`` (the ``<provider>.<action>`` form Fabric names every capability with), so one
``--tool``, ``--ref``, ``--provider`` or ``--action`` filter finds the call whichever agent made it.
A writer that mints MCP names its own way says how to split them (``Adapter.mcp``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from stages.agents import adapter
from stages.common import clean_text, files_touched
from store.records import TOOL_FAMILIES, NormalizedEntry

__all__ = [
    "MCP_PREFIX",
    "TOOL_FAMILIES",
    "agent_mcp_parts",
    "as_call",
    "fabric_family",
    "mcp_parts",
    "mcp_tool_name",
    "tool_family",
    "tool_identity",
]

MCP_PREFIX: Final = "mcp__"
_MCP_SEPARATOR: Final = "__"

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


def agent_mcp_parts(agent: str, tool: str) -> tuple[str, str] | None:
    """(server, tool) of *agent*'s MCP tool name *tool* (its adapter's rule, else the one
    ``mcp__<server>__<tool>`` form), or None for any other name."""
    split = adapter(agent).mcp
    return split(tool) if split is not None else mcp_parts(tool)


def tool_family(agent: str, tool: str | None) -> str | None:
    """The family of *agent*'s tool *tool* (``TOOL_FAMILIES``); None when there is no tool."""
    if not tool:
        return None
    if agent_mcp_parts(agent, tool) is not None:
        return "mcp"
    return adapter(agent).tools.get(tool, "other")


def tool_identity(agent: str, tool: str) -> tuple[str, str, str]:
    """(ref, provider, action) of *agent*'s tool *tool*: the server's for an MCP tool, else
    ``<agent>.<tool>`` / ``<agent>`` / ``<tool>``."""
    parts = agent_mcp_parts(agent, tool)
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


def as_call(
    entry: NormalizedEntry,
    agent: str,
    name: str,
    args: object,
    call_id: object,
    carrier: str | None,
) -> NormalizedEntry:
    """*entry* as the typed call of tool *name*: its identity and family, the files its typed
    arguments name, and the operation address ``<carrier>/call:<id>`` when the writer gave the
    call a string id (*carrier*: the id of the record that holds the call)."""
    address = f"{carrier}/call:{clean_text(call_id)}" if isinstance(call_id, str) else None
    ref, provider, action = tool_identity(agent, name) if name else (None, None, None)
    return replace(
        entry,
        tool=name or None,
        operation_address=address,
        ref=ref,
        provider=provider,
        action=action,
        files_touched=files_touched([args]),
        family=tool_family(agent, name),
    )
