"""The upgrade mark: ``run/upgrade.json`` says a pipeline is deriving the index again.

::

    run/upgrade.json    {"pid", "reason", "detail", "startedAt"}   (written atomically, 0600)

``pipeline.upgrade`` writes it before it derives an index another format or derivation wrote,
and removes it once the new generation is published. Readers never write: the query side and
`pipeline status` read it to tell a pipeline that is deriving the index (``index_upgrading``)
from an old index nobody is working on (``index_outdated``: run `pipeline run --once`). A
mark left by a process that died is told apart by its pid, so it never claims progress that
is not happening.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from store import jsonio, pids
from store.atomic import atomic_write, ensure_dir
from store.errors import IndexOutdated, SchemaVersionError
from store.layout import IndexLayout

__all__ = ["UpgradeMark", "clear_mark", "outdated", "read_mark", "write_mark"]

_NAME = "upgrade.json"


@dataclass(frozen=True, slots=True)
class UpgradeMark:
    """Who derives the index again, why (``format``, ``derivation`` or ``journal``), since."""

    pid: int
    reason: str
    detail: str
    started_ms: int

    @property
    def alive(self) -> bool:
        return pids.alive(self.pid)

    def as_dict(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "reason": self.reason,
            "detail": self.detail,
            "startedAt": self.started_ms,
            "running": self.alive,
        }


def _path(index_dir: Path) -> Path:
    return IndexLayout(Path(index_dir)).run / _NAME


def write_mark(index_dir: Path, reason: str, detail: str) -> UpgradeMark:
    mark = UpgradeMark(os.getpid(), reason, detail, time.time_ns() // 1_000_000)
    ensure_dir(IndexLayout(Path(index_dir)).run)
    atomic_write(
        _path(index_dir),
        jsonio.dumps(
            {"pid": mark.pid, "reason": reason, "detail": detail, "startedAt": mark.started_ms}
        ),
    )
    return mark


def clear_mark(index_dir: Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(_path(index_dir))


def read_mark(index_dir: Path) -> UpgradeMark | None:
    """The mark, or None when there is none (or it cannot be read: then nothing is claimed)."""
    try:
        d = jsonio.loads(_path(index_dir).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict):
        return None
    pid, reason, detail, started = (
        d.get("pid"),
        d.get("reason"),
        d.get("detail"),
        d.get("startedAt"),
    )
    if not (isinstance(pid, int) and isinstance(started, int)):
        return None
    return UpgradeMark(pid, str(reason), str(detail), started)


def outdated(index_dir: Path, exc: SchemaVersionError) -> IndexOutdated:
    """What a reader raises for CURRENT's generation of another format: named after whether a
    live pipeline is deriving it again."""
    mark = read_mark(index_dir)
    found, expected = exc.found, exc.expected
    detail = f"record schema {found!r}, this build reads {expected}"
    return IndexOutdated(index_dir, detail, upgrading=mark is not None and mark.alive)

    return True
