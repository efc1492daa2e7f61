"""The Python API: ``recall``, ``expand``, ``sessions``, ``catalog``, ``call`` and ``walk``.

::

    from query.client import Memory

    with Memory() as memory:                      # config as every command finds it
        page = memory.recall(query="flaky test", scope="project")
        for hit in page.hits:                     # EntryHit | SessionHit (typed)
            detail = memory.call(hit.follow)      # expand an entry / resolve a cold session
        while page.next is not None:
            page = memory.call(page.next)

        failed: set[str] = set()
        def visit(entry):                         # a complete entry, text reassembled
            if entry.outcome == "failed":
                failed.update(entry.files_touched)
            return len(failed) < 20               # exactly False stops
        result = memory.walk({"session": path, "branches": "all"}, visit)
        result.visited, result.stopped, result.error

Results are typed (``query.results``) and keep the seed's object as ``.raw``. Calls go to a
running ``query serve`` and run in-process when none answers, with the same results.
Arguments are the seed's camelCase names, as a mapping and/or keywords. The module-level
functions use one shared ``Memory`` built from the default configuration.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from query.errors import InvalidArgument
from query.results import (
    Call,
    Catalog,
    ExpandPage,
    RecallPage,
    SessionList,
    WalkResult,
    parse_result,
)
from query.transport import Backend, ServerMode
from query.walk import Visitor, adrive, drive, steps
from store.config import Config, load_config

__all__ = [
    "Memory",
    "awalk",
    "call",
    "catalog",
    "expand",
    "recall",
    "sessions",
    "walk",
]


def _merge(args: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(args or {})
    merged.update(kwargs)
    return merged


def _token(token: Call | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(token, Call):
        return token.to_dict()
    if not isinstance(token, Mapping):
        raise InvalidArgument('a call token is {"ref": ..., "args": {...}} or a Call')
    return dict(token)


class Memory:
    """A client of one index (see the module docstring).

    ``config``: a ``Config``, a path to a TOML file, or None for the default lookup.
    ``cwd``: the directory ``session`` / ``project`` scopes resolve from (default: the
    process's current directory at each call). ``server``: ``"auto"``, ``"off"`` or
    ``"require"`` (see ``Backend``).
    """

    def __init__(
        self,
        config: Config | str | os.PathLike[str] | None = None,
        *,
        cwd: str | None = None,
        server: ServerMode = "auto",
    ) -> None:
        if not isinstance(config, Config):
            config = load_config(config)
        self.config = config
        self.cwd = os.path.abspath(cwd) if cwd else None
        self.backend = Backend(config, server=server)

    @property
    def served_by(self) -> str | None:
        """``"server"`` or ``"in-process"``: where the last call was answered."""
        return self.backend.served_by

    def _where(self) -> str:
        return self.cwd or os.getcwd()

    # -- actions: raw dicts -----------------------------------------------------------------

    def recall_raw(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> dict[str, Any]:
        return self.backend.recall(_merge(args, kw), cwd=self._where())

    def expand_raw(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> dict[str, Any]:
        return self.backend.expand(_merge(args, kw), cwd=self._where())

    def sessions_raw(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> dict[str, Any]:
        return self.backend.sessions(_merge(args, kw), cwd=self._where())

    def catalog_raw(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> dict[str, Any]:
        return self.backend.catalog(_merge(args, kw), cwd=self._where())

    def call_raw(self, token: Call | Mapping[str, Any]) -> dict[str, Any]:
        return self.backend.call(_token(token), cwd=self._where())

    # -- actions: typed ---------------------------------------------------------------------

    def recall(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> RecallPage:
        """``memory.recall``: ranked, bounded hits; ``hit.follow`` and ``page.next`` are calls."""
        return RecallPage.from_dict(self.recall_raw(args, **kw))

    def expand(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> ExpandPage:
        """``memory.expand``: exact entries in chunks (``textRange``), continued by ``next``."""
        return ExpandPage.from_dict(self.expand_raw(args, **kw))

    def sessions(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> SessionList:
        """``memory.sessions``: the sessions a scope selects, newest first."""
        return SessionList.from_dict(self.sessions_raw(args, **kw))

    def catalog(self, args: Mapping[str, Any] | None = None, /, **kw: Any) -> Catalog:
        """``memory.catalog``: capability heads seen in history (agent → provider → head)."""
        return Catalog.from_dict(self.catalog_raw(args, **kw))

    def call(self, token: Call | Mapping[str, Any]) -> RecallPage | ExpandPage | SessionList:
        """Execute a ``follow`` / ``next`` call token verbatim; typed by the ref it names."""
        raw_token = _token(token)
        return parse_result(str(raw_token.get("ref")), self.call_raw(raw_token))

    def pages(self, page: RecallPage) -> Iterator[RecallPage]:
        """*page* and every page after it (follows ``next`` until it is None)."""
        yield page
        while page.next is not None:
            following = self.call(page.next)
            assert isinstance(following, RecallPage)
            page = following
            yield page

    # -- walk -------------------------------------------------------------------------------

    def walk(self, selector: Any, visitor: Visitor) -> WalkResult:
        """Visit complete entries of a selection (or of a whole session); see ``query.walk``.

        *selector*: expand arguments (``{"session": …}`` alone means every entry), an expand
        call token (``hit.follow``), a session path or id, or None for the newest session of
        the cwd. The visitor gets each complete ``Entry``; returning exactly ``False`` stops.
        An async visitor is awaited (on a private loop; in async code use ``awalk``).
        """
        return drive(steps(selector), visitor, expand=self.expand_raw, sessions=self.sessions_raw)

    async def awalk(self, selector: Any, visitor: Visitor) -> WalkResult:
        """``walk`` for async code: provider calls run in a thread, async visitors awaited."""
        return await adrive(
            steps(selector), visitor, expand=self.expand_raw, sessions=self.sessions_raw
        )

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: Memory | None = None


def _memory() -> Memory:
    global _shared
    if _shared is None:
        _shared = Memory()
    return _shared


def recall(args: Mapping[str, Any] | None = None, /, **kw: Any) -> RecallPage:
    return _memory().recall(args, **kw)


def expand(args: Mapping[str, Any] | None = None, /, **kw: Any) -> ExpandPage:
    return _memory().expand(args, **kw)


def sessions(args: Mapping[str, Any] | None = None, /, **kw: Any) -> SessionList:
    return _memory().sessions(args, **kw)


def catalog(args: Mapping[str, Any] | None = None, /, **kw: Any) -> Catalog:
    return _memory().catalog(args, **kw)


def call(token: Call | Mapping[str, Any]) -> RecallPage | ExpandPage | SessionList:
    return _memory().call(token)


def walk(selector: Any, visitor: Visitor) -> WalkResult:
    return _memory().walk(selector, visitor)


async def awalk(selector: Any, visitor: Visitor) -> WalkResult:
    return await _memory().awalk(selector, visitor)
