"""The one registry of source adapters: each agent's name and the module that reads its files.

Adding an agent is its folder ``stages/<name>/`` (whose ``adapter.py`` holds ``ADAPTER``, the
``stages.adapter.Adapter`` that says everything about the agent's files) plus one line here.

It lives in ``store`` because every layer needs the *names* and ``query`` may import nothing
but ``store``: the config's ``[sources]`` keys, ``--agent`` on every command, the MCP schema and
``pipeline status`` all read them from here. Nothing here imports an adapter (``store`` imports
nothing above it): ``stages.agents`` loads the module a name points at. What the query side
needs beyond the names (which files are sessions, how a writer names a project's folder)
travels as data in each manifest (``store.sources``), written by the pipeline from the adapters.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ADAPTERS", "agent_names"]

# name → the module holding its ``ADAPTER``. The order is the order agents are listed in.
ADAPTERS: Final[dict[str, str]] = {
    "pi": "stages.pi.adapter",
    "claude": "stages.claude.adapter",
    "codex": "stages.codex.adapter",
    "omp": "stages.omp.adapter",
}


def agent_names() -> tuple[str, ...]:
    """Every registered agent, in registry order."""
    return tuple(ADAPTERS)
