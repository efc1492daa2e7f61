"""Gemini CLI (``@google/gemini-cli``): one JSONL file per session under
``~/.gemini/tmp/<project>/chats/`` (0.39+; subagents in ``chats/<parent session id>/``), and
the legacy one-object ``session-*.json`` of older releases (read whole).

The project folder is a short name the CLI keeps in ``~/.gemini/projects.json`` (older
releases: a SHA-256 of the project root), neither derivable from the cwd by a naming rule, so
no ``ProjectFolder`` is declared. The CLI's ``ProjectRegistry`` writes the project's root
into ``<project>/.project_root`` (plain text, one path): the sidecar every session there
reads for its cwd (``project_root``). Sessions are read only under ``chats/``: the CLI's devtools
activity log (``<project>/logs/session-*.jsonl``, written only when its devtools logging is on)
has a session's name but is no session."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from stages.adapter import Adapter
from stages.gemini.normalize import normalize_gemini
from stages.gemini.source import PROJECT_ROOT, parse_legacy, read_gemini
from stages.gemini.tools import TOOLS, mcp_parts
from stages.source import ParseResult, SourceSession
from store.sources import SessionFiles

__all__ = ["ADAPTER", "project_marker", "project_root"]

_CHATS = "chats"
_PROJECT_ROOT: Final = ".project_root"


def _read(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    root = sidecar.get(PROJECT_ROOT) if sidecar is not None else None
    return read_gemini(parsed, path, project_root=root if isinstance(root, str) else None)


def project_marker(path: str) -> str | None:
    """``<project>/.project_root`` for a session in ``<project>/chats/`` (or a subagent's in
    ``chats/<parent>/``), None for a file elsewhere."""
    p = PurePosixPath(path)
    for folder in (p.parent, p.parent.parent):
        if folder.name == _CHATS:
            return str(folder.parent / _PROJECT_ROOT)
    return None


def project_root(data: bytes) -> dict[str, Any] | None:
    """The marker's one path (``ProjectRegistry.ensureOwnershipMarkers`` writes the normalized
    project path and nothing else), or None when it holds no one line of text."""
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if not text or "\n" in text or "\r" in text:
        return None
    return {PROJECT_ROOT: text}


ADAPTER = Adapter(
    name="gemini",
    default_root="~/.gemini/tmp",
    read=_read,
    normalize=normalize_gemini,
    tools=TOOLS,
    mcp=mcp_parts,
    files=SessionFiles(("*.jsonl", "session-*.json"), whole=("session-*.json",), folders=(_CHATS,)),
    parse_whole=parse_legacy,
    sidecar=project_marker,
    sidecar_value=project_root,
)
