"""Codex's built-in tools by family (0.171.0 and the names older releases used).

Names are exact and case-sensitive: the family comes from ``function_call.name`` (and its
kin) only (``stages.families``); a name not listed is ``other``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TOOLS"]

TOOLS: Final[dict[str, str]] = {
    "exec_command": "shell",
    "write_stdin": "shell",
    "shell": "shell",
    "shell_command": "shell",
    "local_shell": "shell",
    "container.exec": "shell",
    "unified_exec": "shell",
    "read_file": "read",
    "view_image": "read",
    "apply_patch": "edit",
    "grep_files": "search",
    "list_dir": "search",
    "spawn_agent": "subagent",
    "send_input": "subagent",
    "wait_agent": "subagent",
    "wait": "subagent",
    "close_agent": "subagent",
    "resume_agent": "subagent",
    "web_search": "web",
    "web_search_preview": "web",
}
