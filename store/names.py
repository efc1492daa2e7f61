"""Names every layer shares: the agents whose sessions are indexed (``store.agents``, the
registry), the branch modes and the tool families (``NormalizedEntry.family``, filled in by
``stages.families``).

Kept apart from ``store.records`` so that a caller needing only these (the ``query`` CLI
building its options) does not define every record type first.
"""

from __future__ import annotations

from typing import Final

from store.agents import agent_names

__all__ = ["AGENTS", "BRANCH_MODES", "TOOL_FAMILIES"]

AGENTS: Final = agent_names()
BRANCH_MODES: Final = ("active", "all")
TOOL_FAMILIES: Final = (
    "shell",
    "read",
    "edit",
    "write",
    "search",
    "mcp",
    "subagent",
    "web",
    "other",
)
