"""Codex CLI (``@openai/codex``): one JSONL rollout per session under
``~/.codex/sessions/YYYY/MM/DD/`` (dated folders, not named after the cwd), and the TypeScript
CLI's ``rollout-*.json`` (Apr-Aug 2025: one JSON object per session, saved whole each time)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stages.adapter import Adapter
from stages.codex.normalize import normalize_codex
from stages.codex.rollout_object import parse_object
from stages.codex.source import read_codex
from stages.codex.tools import TOOLS
from stages.source import ParseResult, SourceSession
from store.sources import SessionFiles

__all__ = ["ADAPTER"]


def _read(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    return read_codex(parsed, path)


ADAPTER = Adapter(
    name="codex",
    default_root="~/.codex/sessions",
    read=_read,
    normalize=normalize_codex,
    tools=TOOLS,
    files=SessionFiles(("*.jsonl", "rollout-*.json"), whole=("rollout-*.json",)),
    parse_whole=parse_object,
)
