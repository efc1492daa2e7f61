"""Aider (``aider-chat``): one ``.aider.chat.history.md`` per project folder, appended by
every run made there (``stages.aider.history``). Aider keeps no central folder, so its root
is not a default: ``[sources] aider`` names a folder whose projects (at any depth) hold
history files, e.g. ``aider = "~/src"``. The file is read whole at each change (it is
markdown: no line stands alone)."""

from __future__ import annotations

from stages.adapter import Adapter
from stages.aider.history import parse_history
from stages.aider.normalize import normalize_aider
from stages.aider.source import AGENT, HISTORY_FILE, read_aider
from stages.aider.tools import TOOLS
from store.sources import SessionFiles

__all__ = ["ADAPTER"]

ADAPTER = Adapter(
    name=AGENT,
    default_root="",
    read=read_aider,
    normalize=normalize_aider,
    tools=TOOLS,
    files=SessionFiles((HISTORY_FILE,), whole=(HISTORY_FILE,)),
    parse_whole=parse_history,
)
