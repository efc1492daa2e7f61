"""The Claude Code line and content-block types this adapter knows (formats §2.3–§2.7 and
what Claude Code 2.1.332 writes); every other one is drift (``stages.drift``).

Only ``user`` and ``assistant`` lines are turns. The other known lines — metadata, request
records (``api-request-shape``, ``api-request-blob``, ``api-request``), ``tools-used``,
``attachment`` of every subtype (``prompt_snapshot`` holds the whole system prompt,
``skill_listing`` the skills), queue operations and cost records — never become entries or
searchable text, and so are listed here to be known, not to be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from stages.drift import Drift
from stages.source import RawRecord

__all__ = ["KNOWN_BLOCKS", "KNOWN_LINES", "claude_drift"]

KNOWN_LINES: Final = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "attachment",
        "file-history-snapshot",
        "queue-operation",
        "pr-link",
        "agent-name",
        "custom-title",
        "last-prompt",
        "ai-title",
        "agent-setting",
        "permission-mode",
        "mode",
        "worktree-state",
        "bridge-session",
        "atis-latch",
        "cost-state",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "tools-used",
    }
)
KNOWN_BLOCKS: Final = frozenset(
    {
        "text",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "server_tool_use",
        "tool_result",
        "tool_reference",
        "advisor_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
_TURNS: Final = frozenset({"user", "assistant"})


def claude_drift(raws: Sequence[RawRecord]) -> Drift:
    """The unknown line types of a transcript, and the unknown content blocks of its turns
    (a block is where text lives; so is an unknown line with a ``message``)."""
    drift = Drift()
    for raw in raws:
        value = raw.value
        kind = value.get("type")
        if not drift.check("line", kind, KNOWN_LINES, value) or kind not in _TURNS:
            continue
        message = value.get("message")
        if isinstance(message, dict):
            drift.blocks(message.get("content"), KNOWN_BLOCKS)
    return drift
