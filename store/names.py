"""Names every layer shares: the agents whose sessions are indexed (``store.agents``, the
registry), the branch modes, the tool families (``NormalizedEntry.family``, filled in by
``stages.families``) and the order of session paths.

Kept apart from ``store.records`` so that a caller needing only these (the ``query`` CLI
building its options) does not define every record type first.
"""

from __future__ import annotations

from typing import Final

from store.agents import agent_names

__all__ = ["AGENTS", "BRANCH_MODES", "SIDECHAIN", "TOOL_FAMILIES", "path_key"]

AGENTS: Final = agent_names()
# A cold address's sidechain field for a subagent's entry (``NormalizedEntry.sidechain``).
SIDECHAIN: Final = "sidechain"
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


def path_key(path: str) -> bytes:
    """The sort key of a session path: its UTF-16 code units, as the seed's ``compareLexical``
    (JavaScript's ``<``). Every tie between sessions of one mtime is broken by it: which of
    them is hot, and which comes first in a scope and in a ranking."""
    return path.encode("utf-16-be", "surrogatepass")
