"""Cursor's agent (``cursor-agent`` and the IDE's agent): one JSONL transcript per session
under ``~/.cursor/projects/<slug>/agent-transcripts/`` (``stages.cursor.source``), built from
third-party evidence, not a running writer (docs/writers.md). Appends are re-derived in
memory. The ``.txt`` transcripts older builds wrote there (``user:``/``assistant:`` prose
with ``[Tool call]`` markers) are not read: nothing in them is typed."""

from __future__ import annotations

from typing import Final

from stages.adapter import Adapter
from stages.cursor.normalize import normalize_cursor
from stages.cursor.source import AGENT, read_cursor
from stages.cursor.tools import TOOLS
from store.sources import ABSOLUTE, ProjectFolder, SessionFiles

__all__ = ["ADAPTER", "FOLDERS"]

# Only transcripts: ``~/.cursor/projects/<slug>/`` also holds other files (terminals,
# mcp state), so a ``.jsonl`` counts only inside ``agent-transcripts/`` (directly, or in a
# session's folder) or a session's ``subagents/``.
_FILES = SessionFiles(("*.jsonl",), folders=("agent-transcripts", "subagents"))
# The slug: the cwd without its leading ``/``, every character but ``[A-Za-z0-9]`` as ``-``
# (``/Users/alex/Projects/demo`` → ``Users-alex-Projects-demo``; Claude Code's rule without
# its leading ``-``), observed by Einsia/agent-git over 10+ samples.
FOLDERS: Final = (ProjectFolder(ABSOLUTE, unsafe="[^A-Za-z0-9]"),)

ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.cursor/projects",
    read=read_cursor,
    normalize=normalize_cursor,
    tools=TOOLS,
    files=_FILES,
    folders=FOLDERS,
)
