"""Pi (``@earendil-works/pi-coding-agent``): one JSONL file per session under
``~/.pi/agent/sessions/--<cwd with / as ->--/``; a header line, then entries that carry their
own ``id`` and ``parentId`` (v2+), so an append is read from its new lines alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stages.adapter import Adapter, Tail
from stages.pi.normalize import appends_locally, normalize_pi
from stages.pi.source import read_pi, tail_ready
from stages.pi.tools import TOOLS
from stages.source import ParseResult, SourceSession
from store.sources import ABSOLUTE, ProjectFolder, SessionFiles

__all__ = ["ADAPTER"]


def _read(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    return read_pi(parsed, path)


ADAPTER = Adapter(
    name="pi",
    default_root="~/.pi/agent/sessions",
    read=_read,
    normalize=normalize_pi,
    tools=TOOLS,
    files=SessionFiles(("*.jsonl",)),
    folders=(ProjectFolder(ABSOLUTE, prefix="--", suffix="--"),),
    tail=Tail(ready=tail_ready, local=appends_locally),
)
