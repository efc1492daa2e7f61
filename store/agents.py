"""The one registry of source adapters: the names of the agents whose sessions are indexed.

Adding an agent is its folder ``stages/<name>/`` (whose ``adapter.py`` holds ``ADAPTER``, the
``stages.adapter.Adapter`` that says everything about the agent's files) plus its name here.

The names live in ``store`` because every layer needs them and ``query`` may import nothing but
``store``: the config's ``[sources]`` keys, ``--agent`` on every command, the MCP schema and
``pipeline status`` all read them from here. Store names no stages module (it imports nothing
above it): ``stages.agents`` loads ``stages.<name>.adapter`` for a name. What the query side
needs beyond the names (which files are sessions, how a writer names a project's folder)
travels as data in each manifest (``store.sources``), written by the pipeline from the adapters.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REGISTERED", "agent_names"]

# One line per agent; the order is the order agents are listed in. ("exclude" is taken: it is
# the [sources] key of the globs no agent's sessions are read from.)
REGISTERED: Final[tuple[str, ...]] = (
    "pi",
    "claude",
    "codex",
    "omp",
    "gemini",
    "qwen",
    "copilot",
    "aider",
    "cursor",
    "opencode",
    "goose",
)


def agent_names() -> tuple[str, ...]:
    """Every registered agent, in registry order."""
    return REGISTERED
