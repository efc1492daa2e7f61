"""The Cursor adapter: a parsed agent transcript → an agent-neutral ``SourceSession``.

Cursor's agent (the ``cursor-agent`` CLI and the IDE's agent alike) writes one JSONL transcript
per session under ``~/.cursor/projects/<slug>/agent-transcripts/``: ``<id>/<id>.jsonl``, a
subagent's in ``<id>/subagents/<sub>.jsonl``, and (older builds) a flat ``<id>.jsonl``.
Cursor is closed source and publishes no schema: what follows is what third-party readers
observed in real transcripts (docs/writers.md names them), not a running writer here. Lines::

    {"role": "user" | "assistant", "message": {"content": [block, …] | "text"}}
    {"type": "turn_ended", "status": "success" | "error" | "aborted", ["error": "…"]}

Blocks are Anthropic's shape: ``{"type": "text", "text"}`` for either role and
``{"type": "tool_use", "name", "input"}`` (no id) for the assistant. No line carries an id, a
timestamp, a session id, a cwd, a model or a title, and no tool result or thinking is written.

* **Identity.** The session id is the file's name (a subagent's own id for a subagent file,
  whose ``parent_session`` is the folder it lies in, two levels up). The cwd is never
  recovered: the slug replaces every character but ``[A-Za-z0-9]`` with ``-`` (``/``, ``-``,
  ``.``, ``_`` alike) and names non-folders too (``empty-window``, a bare workspace number), so
  no cwd reads back from it unambiguously; it is left empty. The query side finds a cwd's
  folder in the forward direction (``adapter.FOLDERS``).
* **Lineage.** No ids: records chain in file order (``L<line>``, its parent the record
  before); the transcript is only appended to.
* **Drift.** A line of another shape, a role other than ``user``/``assistant`` or a block
  other than ``text``/``tool_use`` (a ``tool_result`` or ``thinking``, were a build to write
  them) is counted (``stages.drift``), never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from stages.drift import Drift
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons

__all__ = ["AGENT", "KNOWN_BLOCKS", "ROLES", "TURN_ENDED", "read_cursor"]

AGENT: Final = "cursor"
TURN_ENDED: Final = "turn_ended"
ROLES: Final = frozenset({"user", "assistant"})
KNOWN_BLOCKS: Final = frozenset({"text", "tool_use"})
_KNOWN_LINES: Final = frozenset({TURN_ENDED})
_LINES: Final = ".jsonl"
_SUBAGENTS: Final = "subagents"


def read_cursor(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a parsed Cursor agent transcript. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    drift = Drift()
    records: list[SourceRecord] = []
    for raw in parsed.records:
        value = raw.value
        role = value.get("role")
        if "role" in value:
            kind = role if isinstance(role, str) else ""
            if drift.check("role", role, ROLES, value):
                message = value.get("message")
                drift.blocks(message.get("content") if isinstance(message, dict) else None,
                             KNOWN_BLOCKS)  # fmt: skip
        else:
            line_type = value.get("type")
            kind = line_type if isinstance(line_type, str) else ""
            drift.check("line", line_type, _KNOWN_LINES, value)
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=f"L{raw.line}.{len(records)}",
                parent_id=records[-1].id if records else None,
                kind=kind,
                value=value,
            )
        )
    own, parent = _identity(path)
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=own,
        cwd="",
        version=1,
        header=None,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=parent,
        sidechain=parent is not None,
        unknown=drift.items(),
    )


def _identity(path: str) -> tuple[str, str | None]:
    """(session id, parent session id) a transcript's path names: a subagent's file lies in
    ``<parent>/subagents/``."""
    p = PurePosixPath(path)
    own = p.name[: -len(_LINES)] if p.name.endswith(_LINES) else p.name
    if p.parent.name == _SUBAGENTS and p.parent.parent.name:
        return own, p.parent.parent.name
    return own, None
