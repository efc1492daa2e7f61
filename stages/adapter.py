"""A source adapter: everything sessiondex knows about one agent's session files, in one value.

Each agent is one folder ``stages/<agent>/`` whose ``adapter.py`` holds ``ADAPTER``; the
registry (``store.agents``) names the agent, and ``stages.agents`` loads its ``adapter.py``.
The pipeline and the query side never name an agent: they ask its adapter.

::

    discovery   files, default_root          which names under which root are sessions
    read        parse (or parse_whole) + read  bytes → SourceSession: identity (session id, cwd,
                                             parent session, sidechain), nodes with id/parent
                                             (lineage), drift counts + writer_version
    normalize   normalize                    selected records → NormalizedEntry (role, tool,
                                             ref/provider/action, family, outcome, files)
    tools       tools, mcp                   tool name → family; how its MCP names split
    appends     tail                         read the appended lines alone (else: re-derived)
    query side  folders (+ files)            recorded in each manifest (``store.sources``)
    sidecar     sidecar (+ sidecar_value)    a file beside a session its reader also takes

    database    database                     sessions kept as rows of one SQLite file
                                             (``store.dbsource``): each is read as a file of
                                             its own, ``<db path>#<session id>``, whose bytes
                                             are its rows serialized one JSON object a line
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.parse import parse
from stages.policy import Policy
from stages.source import ParseResult, SourceSession
from store.dblayout import DbLayout
from store.sources import ProjectFolder, SessionFiles, SourceSpec

__all__ = ["Adapter", "Normalizer", "Reader", "Tail", "json_object"]


class Reader(Protocol):
    """Parsed lines of one file → the agent-neutral session. *sidecar* is the parsed content
    of the file ``Adapter.sidecar`` names, when there is one. Never raises on odd content."""

    def __call__(
        self, parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None, /
    ) -> SourceSession: ...


class Normalizer(Protocol):
    """The records *lineage* selects → entries. *memo* may be ignored: it only saves work."""

    def __call__(
        self, session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None
    ) -> NormalizeResult: ...


@dataclass(frozen=True, slots=True)
class Tail:
    """Appends indexed from the new lines alone (the format's records carry their own id and
    parent, and each normalizes by itself, as Pi's do). ``ready``: a session read whole whose
    appends may take this path; ``local``: the appended records (read with the session's
    header first) give entries that depend on them alone."""

    ready: Callable[[SourceSession], bool]
    local: Callable[[SourceSession], bool]


def _no_sidecar(path: str) -> str | None:
    return None


def json_object(data: bytes) -> dict[str, Any] | None:
    """A sidecar's bytes as the JSON object they hold, or None (not JSON, not an object)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Adapter:
    """One agent. ``name`` is its name everywhere (``[sources]`` key, ``--agent``, records);
    ``default_root`` where its writer keeps sessions (``~`` expanded), which ``[sources]``
    overrides; empty for a writer with no central folder (read only where configured).
    ``tools`` lists the writer's own tools by family (``stages.families``). Without ``tail``
    an append is re-derived in memory (``stages.rederive``)."""

    name: str
    default_root: str
    read: Reader
    normalize: Normalizer
    tools: Mapping[str, str] = field(default_factory=dict)
    # (server, tool) of an MCP tool name; None: the one ``mcp__<server>__<tool>`` form
    mcp: Callable[[str], tuple[str, str] | None] | None = None
    files: SessionFiles = field(default_factory=SessionFiles)
    folders: tuple[ProjectFolder, ...] = ()
    parse_whole: Callable[[bytes], ParseResult] | None = None
    tail: Tail | None = None
    sidecar: Callable[[str], str | None] = _no_sidecar
    # the sidecar's bytes as the mapping the reader takes (None: as if there were none)
    sidecar_value: Callable[[bytes], dict[str, Any] | None] = json_object
    # sessions as rows of SQLite files; ``files`` then names its members (``DbLayout.members``)
    database: DbLayout | None = None

    def __post_init__(self) -> None:
        if self.files.whole and self.parse_whole is None:
            raise ValueError(f"{self.name}: whole-object session files need parse_whole")
        if self.database is not None and self.files.patterns != self.database.members:
            raise ValueError(f"{self.name}: a database source's files are its members")

    def parse(self, data: bytes, path: str, *, settled: bool = False) -> ParseResult:
        """The records of a session file's bytes (lines, or the one object of a whole file);
        *settled*: no writer is mid-line (``stages.parse``)."""
        if self.parse_whole is not None and self.files.read_whole(path):
            return self.parse_whole(data)
        return parse(data, settled=settled)

    @property
    def spec(self) -> SourceSpec:
        """What the manifest records of this source for the query side."""
        databases = (self.database,) if self.database is not None else ()
        return SourceSpec(self.files, self.folders, databases)
