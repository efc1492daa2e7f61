"""A tmp Pi root, indexed by the real pipeline, queried by a real Engine.

Tests write hand-made Pi JSONL (tests.helpers builders), call ``build()`` to run the catch-up
indexer, and query through ``recall`` / ``expand`` / ``sessions`` / ``call``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline.catchup import catch_up
from query.engine import Engine
from query.search import Budgets
from tests.helpers import PiRoot, jsonl

T0 = 1_700_000_000_000
CWD = "/work/proj"


class Kit:
    def __init__(self, base: Path, **memory: Any) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.pi = PiRoot(base)
        self.memory = memory
        self.config = self.pi.write_config(**memory)
        self._engine: Engine | None = None
        self.budgets: Budgets | None = None
        self.term_index = "auto"

    def configure(self, **memory: Any) -> None:
        self.memory = {**self.memory, **memory}
        self.config = self.pi.write_config(**self.memory)
        self.close()

    def session(
        self,
        name: str,
        records: Iterable[Mapping[str, Any]],
        *,
        cwd: str = CWD,
        mtime_s: float | None = None,
    ) -> Path:
        return self.pi.session(name, list(records), cwd=cwd, mtime_s=mtime_s)

    def append(self, path: Path, records: Iterable[Mapping[str, Any]]) -> None:
        st = path.stat()
        with path.open("ab") as f:
            f.write(jsonl(records))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    def build(self) -> Engine:
        catch_up(self.config, processes=1)
        return self.engine

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(self.config, budgets=self.budgets, term_index=self.term_index)
        return self._engine

    def recall(self, cwd: str = CWD, **args: Any) -> dict[str, Any]:
        return self.engine.recall(args, cwd=cwd)

    def expand(self, **args: Any) -> dict[str, Any]:
        return self.engine.expand(args, cwd=CWD)

    def sessions(self, cwd: str = CWD, **args: Any) -> dict[str, Any]:
        return self.engine.sessions(args, cwd=cwd)

    def call(self, token: Mapping[str, Any], cwd: str = CWD) -> dict[str, Any]:
        return self.engine.call(token, cwd=cwd)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


def follow_all(kit: Kit, page: dict[str, Any], cwd: str = CWD) -> list[dict[str, Any]]:
    """Every page from *page* on, following ``next`` until it is null."""
    pages = [page]
    while page["next"] is not None:
        page = kit.call(page["next"], cwd=cwd)
        pages.append(page)
    return pages


def has_inotify() -> bool:
    """Whether this machine gives the query side an inotify change feed (tests skip if not)."""
    from query.changes import Changes

    feed = Changes.open()
    if feed is None:
        return False
    feed.close()
    return True
