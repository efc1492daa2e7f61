"""The Aider adapter: a parsed chat history (``stages.aider.history``) → a ``SourceSession``.

One ``.aider.chat.history.md`` holds every run aider made in its folder, appended one after
the other; sessiondex reads the file as one session whose records chain in file order (the
history has no ids and no branches), each run's ``# aider chat started at`` a record of its
own. Identity is the file's: ``session_id`` a UUID (v5) of its path, ``cwd`` its folder (aider
writes the file to the git root it works in, or where ``--chat-history-file`` says). A file
with no run line is ``missing_session_header``. Aider writes no version into the file.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from stages.aider.history import RUN
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from store.reasons import MISSING_SESSION_HEADER

__all__ = ["AGENT", "HISTORY_FILE", "read_aider", "session_id"]

AGENT: Final = "aider"
HISTORY_FILE: Final = ".aider.chat.history.md"


def session_id(path: str) -> str:
    """The stable id of the history file at *path*."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "file://" + path))


def read_aider(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a parsed chat history. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    header = next((r.value for r in parsed.records if r.value.get("type") == RUN), None)
    if header is None:
        reasons.add(MISSING_SESSION_HEADER)
    records: list[SourceRecord] = []
    for raw in parsed.records:
        kind = raw.value.get("type")
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=f"L{raw.line}",
                parent_id=records[-1].id if records else None,
                kind=kind if isinstance(kind, str) else "",
                value=raw.value,
            )
        )
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=session_id(path),
        cwd=str(PurePosixPath(path).parent),
        version=1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons)),
    )
