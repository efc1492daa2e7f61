"""Parse a session file's bytes and hand them to the adapter of the agent that wrote them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from stages.errors import BadInput
from stages.parse import parse
from stages.source import ParseResult, SourceSession
from store.sources import is_object_rollout

__all__ = ["AGENTS", "read_parsed", "read_session"]

Reader = Callable[[ParseResult, str], SourceSession]

# Each adapter is imported on first use, so reading one agent's files never loads the others'.
_ADAPTERS: dict[str, tuple[str, str]] = {
    "claude": ("stages.claude.source", "read_claude"),
    "codex": ("stages.codex.source", "read_codex"),
    "pi": ("stages.pi.source", "read_pi"),
}
AGENTS = tuple(sorted(_ADAPTERS))


def read_session(data: bytes, path: str, agent: str) -> SourceSession:
    """Read the complete lines of ``data`` as a session of ``agent``.

    Raises ``BadInput`` for an agent we have no adapter for; odd content never raises.
    """
    return read_parsed(data, path, agent)[0]


def read_parsed(
    data: bytes, path: str, agent: str, meta: dict[str, Any] | None = None
) -> tuple[SourceSession, ParseResult]:
    """``read_session`` and the parse it read (``consumed``: where the next append starts).
    *meta* is a Claude subagent transcript's sidecar (``stages.claude.source.read_claude``)."""
    try:
        module, name = _ADAPTERS[agent]
    except KeyError:
        raise BadInput(f"unknown agent {agent!r}; expected one of {AGENTS}") from None
    reader: Reader = getattr(importlib.import_module(module), name)
    if is_object_rollout(agent, path):
        from stages.codex.rollout_object import parse_object

        parsed = parse_object(data)  # era A: one JSON object, not lines
    else:
        parsed = parse(data)
    if meta is not None and agent == "claude":
        return getattr(importlib.import_module(module), name)(parsed, path, meta), parsed
    return reader(parsed, path), parsed
