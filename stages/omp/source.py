"""The Oh My Pi adapter: a parsed omp session file → an agent-neutral ``SourceSession``.

omp writes Pi's session format (v3: a ``session`` header, then entries with ``id`` and
``parentId``), so ``stages.pi.source.read_pi_format`` reads it; this module adds what omp
adds, as its writer has it (omp 18.2.3 / 18.3.4, ``src/session/session-entries.ts``,
``session-title-slot.ts``, ``session-manager.ts``, ``task/executor.ts``):

* **The title slot.** A file starts with a fixed-width line of exactly 256 bytes,
  ``{"type":"title","v":1,"title",…,"updatedAt","pad"}``, which omp rewrites in place when
  the session's title changes; the header is the line after it (files written before the
  slot have none). It is metadata, not a node: dropped here, its line number kept by every
  other record. Rewriting it changes the file's first bytes, so the pipeline re-reads the
  session whole (a rewrite, rare: once at the first title, again on a rename).
* **Entry types** Pi does not write (``KNOWN_TYPES``): ``model_usage``,
  ``service_tier_change``, ``reset_boundary`` (``/clear``: the raw history stays),
  ``title_change``, ``ttsr_injection``, ``credential_pin``, ``session_init`` (a subagent's
  system prompt and task) and ``mode_change``; none is conversation. **Roles** ``developer``,
  ``pythonExecution``, ``fileMention`` and **content blocks** ``redactedThinking``,
  ``fallback``, ``anthropicServerTool`` (``stages.omp.normalize``).
* **Subagents.** A session file is ``<timestamp>_<id>.jsonl`` and its artifacts folder is
  the same name without ``.jsonl``; omp writes the sessions a session spawns there: a
  ``task`` subagent's transcript ``<agentId>.jsonl`` (whose header's ``parentSession`` is the
  parent's file path) and an advisor's ``__advisor[.<slug>].jsonl``. A file whose folder is
  named like a session file (``SESSION_STEM``: omp's ``fileSafeTimestamp`` and ``_<id>``) is
  such a child: ``sidechain``, with ``extra["agent_id"]`` its own file stem and
  ``parent_session`` the id in the folder's name (as omp's ``getSessionIdFromFilename``
  reads a session file's name). Any other ``parentSession`` (a fork names its source) is
  kept as written, as Pi's is.

The header ``version`` (the format's) is the ``writer_version``: omp's files name no CLI
version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any, Final

from stages.pi.source import Known, read_pi_format
from stages.source import ParseResult, SourceSession
from stages.titles import Titles

__all__ = [
    "AGENT",
    "KNOWN_BLOCKS",
    "KNOWN_ROLES",
    "KNOWN_TYPES",
    "OMP_KNOWN",
    "SESSION_STEM",
    "read_omp",
]

AGENT: Final = "omp"
TITLE_SLOT: Final = "title"
_LINES: Final = ".jsonl"
# A session file's name without ``.jsonl``: ``Date.toISOString()`` with ":" and "." as "-",
# then "_" and the session id (session-manager.ts ``fileSafeTimestamp``; a file name, not prose).
SESSION_STEM: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_(?P<id>.+)")

KNOWN_TYPES: Final = frozenset(
    {
        "message",
        "model_usage",
        "thinking_level_change",
        "model_change",
        "service_tier_change",
        "compaction",
        "branch_summary",
        "reset_boundary",
        "custom",
        "label",
        "title_change",
        "ttsr_injection",
        "credential_pin",
        "session_init",
        "mode_change",
        "custom_message",
    }
)
KNOWN_ROLES: Final = frozenset(
    {
        "user",
        "developer",
        "assistant",
        "toolResult",
        "bashExecution",
        "pythonExecution",
        "custom",
        "hookMessage",
        "branchSummary",
        "compactionSummary",
        "fileMention",
    }
)
KNOWN_BLOCKS: Final = frozenset(
    {
        "text",
        "thinking",
        "redactedThinking",
        "fallback",
        "anthropicServerTool",
        "image",
        "toolCall",
    }
)
OMP_KNOWN: Final = Known(KNOWN_TYPES, KNOWN_ROLES, KNOWN_BLOCKS)


def read_omp(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a parsed omp session file. Never raises on odd content."""
    records = parsed.records
    slot: str | None = None
    if records and _is_title_slot(records[0].line, records[0].value):
        slot = Titles.text(records[0].value.get("title"))
        parsed = replace(parsed, records=records[1:])
    session = read_pi_format(parsed, path, agent=AGENT, known=OMP_KNOWN)
    session = replace(session, title=slot or _changed_title(session))
    parent = _subagent_parent(path)
    if parent is None:
        return session
    return replace(
        session,
        parent_session=parent,
        sidechain=True,
        extra={**session.extra, "agent_id": PurePosixPath(path).name[: -len(_LINES)]},
    )


def _changed_title(session: SourceSession) -> str | None:
    """The title ``title_change`` entries set, for a file without a slot (or an empty one):
    ``source: "auto"`` is one omp generated, any other a rename; the latest of a kind wins.
    The slot, rewritten in place at every change, is what omp itself shows, so it comes first."""
    titles = Titles()
    for record in session.records:
        if record.kind == "title_change":
            title = record.value.get("title")
            if record.value.get("source") == "auto":
                titles.generate(title)
            else:
                titles.name(title)
    return titles.title


def _is_title_slot(line: int, value: Mapping[str, Any]) -> bool:
    return line == 1 and value.get("type") == TITLE_SLOT and value.get("v") == 1


def _subagent_parent(path: str) -> str | None:
    """The parent session's id when *path* lies in a session's artifacts folder, else None."""
    found = SESSION_STEM.fullmatch(PurePosixPath(path).parent.name)
    return found["id"] if found is not None and path.endswith(_LINES) else None
