"""Gemini CLI (``@google/gemini-cli``): one JSONL file per session under
``~/.gemini/tmp/<project>/chats/`` (0.39+; subagents in ``chats/<parent session id>/``), and
the legacy one-object ``session-*.json`` of older releases (read whole).

The project folder is a short name the CLI keeps in ``~/.gemini/projects.json`` (older
releases: a SHA-256 of the project root), neither derivable from the cwd by a naming rule, so
no ``ProjectFolder`` is declared. Sessions are read only under ``chats/``: the CLI's devtools
activity log (``<project>/logs/session-*.jsonl``, written only when its devtools logging is on)
has a session's name but is no session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stages.adapter import Adapter
from stages.gemini.normalize import normalize_gemini
from stages.gemini.source import parse_legacy, read_gemini
from stages.gemini.tools import TOOLS, mcp_parts
from stages.source import ParseResult, SourceSession
from store.sources import SessionFiles

__all__ = ["ADAPTER"]

_CHATS = "chats"


def _read(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    return read_gemini(parsed, path)


ADAPTER = Adapter(
    name="gemini",
    default_root="~/.gemini/tmp",
    read=_read,
    normalize=normalize_gemini,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles(("*.jsonl", "session-*.json"), whole=("session-*.json",), folders=(_CHATS,)),
    parse_whole=parse_legacy,
)
