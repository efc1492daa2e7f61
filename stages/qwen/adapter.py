"""Qwen Code (``@qwen-code/qwen-code``): one JSONL file per session under
``~/.qwen/projects/<cwd with every non-alphanumeric character as ->/chats/``, Gemini's content
shapes in uuid-threaded records (``stages.qwen.source``); a subagent's records are in its
parent's file (``isSidechain``). Only ``chats/`` holds sessions: other files the CLI keeps
under the project folder are none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stages.adapter import Adapter
from stages.qwen.normalize import normalize_qwen
from stages.qwen.source import read_qwen
from stages.qwen.tools import TOOLS
from stages.source import ParseResult, SourceSession
from store.sources import WHOLE_PATH, ProjectFolder, SessionFiles

__all__ = ["ADAPTER"]


def _read(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    return read_qwen(parsed, path)


ADAPTER = Adapter(
    name="qwen",
    default_root="~/.qwen/projects",
    read=_read,
    normalize=normalize_qwen,
    tools=TOOLS,
    files=SessionFiles(("*.jsonl",), folders=("chats",)),
    folders=(ProjectFolder(WHOLE_PATH, unsafe="[^A-Za-z0-9]"),),
)
