"""Cursor's agent tools by family, as ``tool_use.name`` spells them in its agent transcripts.

Cursor is closed source and publishes no transcript schema; the names are those third-party
readers observed in real transcripts (Einsia/agent-git ``docs/mechanism-probing/
cursor-kiro-formats.md``, Cursor IDE 3.13.25: ``Read``, ``StrReplace``, ``Write``,
``ApplyPatch``, ``Delete``; agitHQ/agit ``fixtures/cursor/generate/transcript.py``: ``Shell``,
``Glob``, ``ReadFile``, ``TodoWrite``; microsoft/AI-Engineering-Coach#264: ``CallMcpTool``)
plus the snake_case names of Cursor's published agent tool schema (``run_terminal_cmd`` …),
which older builds' prompts name. Exact and case-sensitive; a name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SHELL", "TOOLS"]

SHELL: Final = "Shell"

TOOLS: Final[dict[str, str]] = {
    SHELL: "shell",
    "Read": "read",
    "ReadFile": "read",
    "Write": "write",
    "StrReplace": "edit",
    "Edit": "edit",
    "ApplyPatch": "edit",
    "Delete": "edit",
    "Grep": "search",
    "Glob": "search",
    "Task": "subagent",
    "WebSearch": "web",
    "WebFetch": "web",
    # an MCP call: its server and tool are in the arguments, whose shape no sample shows
    "CallMcpTool": "mcp",
    "run_terminal_cmd": "shell",
    "read_file": "read",
    "edit_file": "edit",
    "search_replace": "edit",
    "delete_file": "edit",
    "grep_search": "search",
    "file_search": "search",
    "codebase_search": "search",
    "list_dir": "search",
    "web_search": "web",
}
