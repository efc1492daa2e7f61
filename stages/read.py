"""Parse a session file's bytes and hand them to the adapter of the agent that wrote them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stages.agents import adapter
from stages.source import ParseResult, SourceSession

__all__ = ["read_parsed", "read_session"]


def read_session(data: bytes, path: str, agent: str) -> SourceSession:
    """Read the complete lines of ``data`` as a session of ``agent``.

    Raises ``BadInput`` for an agent we have no adapter for; odd content never raises.
    """
    return read_parsed(data, path, agent)[0]


def read_parsed(
    data: bytes,
    path: str,
    agent: str,
    sidecar: Mapping[str, Any] | None = None,
    *,
    settled: bool = False,
) -> tuple[SourceSession, ParseResult]:
    """``read_session`` and the parse it read (``consumed``: where the next append starts).
    *sidecar* is the content of the file the adapter's ``sidecar`` names, when it exists;
    *settled* says the file was untouched for a while (its last line is read even without
    its newline)."""
    found = adapter(agent)
    parsed = found.parse(data, path, settled=settled)
    return found.read(parsed, path, sidecar), parsed
