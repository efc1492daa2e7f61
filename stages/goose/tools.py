"""Goose's tools by family, and how it names them (``block/goose``: every tool belongs to an
extension, an MCP server, and is named ``<extension>__<tool>``; the built-in extensions are
``developer``, ``platform``, ``todo``, ``computercontroller``, ``memory``, …).

Names are exact and case-sensitive; a name not listed is ``other``. A tool of an extension
that is not built in is an MCP tool: ``<server>__<tool>``, split at the first ``__``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS", "mcp_parts"]

TOOLS: Final[dict[str, str]] = {
    "developer__shell": "shell",
    "developer__text_editor": "edit",
    "developer__analyze": "search",
    "developer__list_windows": "other",
    "developer__screen_capture": "other",
    "developer__image_processor": "read",
    "computercontroller__web_scrape": "web",
    "computercontroller__web_search": "web",
    "computercontroller__automation_script": "shell",
    "dynamic_task__create_task": "subagent",
    "subagent__execute_task": "subagent",
    "platform__read_resource": "read",
}

# extensions Goose ships (crates/goose-mcp, crates/goose/src/agents/*_extension.rs): their tools
# are the agent's own, not an MCP server the person added
_BUILT_IN: Final = frozenset(
    {
        "developer",
        "platform",
        "todo",
        "computercontroller",
        "memory",
        "dynamic_task",
        "subagent",
        "chatrecall",
        "extensionmanager",
        "autovisualiser",
        "tutorial",
        "skills",
    }
)


def mcp_parts(tool: str) -> tuple[str, str] | None:
    """(server, tool) of a tool of an extension the person added, None for a built-in one."""
    server, separator, action = tool.partition("__")
    if not (server and separator and action) or server in _BUILT_IN:
        return None
    return server, action
