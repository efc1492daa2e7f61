"""``Built``: a session indexed whole (``pipeline.session_job``), and what the stages made of it
on the way; the append path (``stages.appender``) starts from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.digest import ViewInput
from stages.source import SourceSession
from store.records import ColdDigest, HotShard, SessionState

__all__ = ["Built"]


@dataclass(frozen=True, slots=True)
class Built:
    """A session indexed whole, plus what the stages made on the way: the always-on
    pipeline keeps these to extend the session when its file grows."""

    state: SessionState
    session: SourceSession
    views: tuple[ViewInput, ...]
    record: HotShard | ColdDigest
    # where the parse stopped (stages.parse: a partial line or an unfinished object waits)
    consumed: int = 1 << 62
    next_line: int = 1 << 62
    meta: dict[str, Any] | None = None  # a Claude subagent transcript's sidecar
    # old versions of this session the archive keeps on their own, indexed (cold) meanwhile,
    # and the paths of those the file holds again (no longer kept: their sessions go)
    retired: tuple[SessionState, ...] = ()
    dropped: tuple[str, ...] = ()
    # the last line had no newline and was read as settled: an append re-reads it (whole)
    tail_taken: bool = False
