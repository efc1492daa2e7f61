"""How sessions kept as rows of one SQLite file are named and read, as data both sides share
(``store.dbsource`` reads them; an adapter declares its ``DbLayout``; the manifest records it
for the query side in ``SourceSpec.databases``).

A session inside a database file is a *member*, named ``<db path>#<session id>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Final

from store.schema import TUPLE, VALUE, Wired, nested_tuple, wire, wired

__all__ = [
    "MEMBER",
    "TABLE_KEY",
    "DbLayout",
    "DbTable",
    "DbTree",
    "Stamp",
    "member_path",
    "same_stamp",
    "split_member",
]

MEMBER: Final = "#"
TABLE_KEY: Final = "$table"

Stamp = tuple[int, int, int, int, int]

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@wired
@dataclass(frozen=True)
class DbTable(Wired):
    """One table holding a session's rows: ``key`` names the column holding the session id
    (the session table's own ``id``), ``order`` the columns that order its rows, ``json`` the
    columns holding JSON text, ``updated`` the column of a row's last change (in units of
    ``scale`` ns; "" when the table has none)."""

    name: str = field(metadata=wire(VALUE))
    key: str = field(metadata=wire(VALUE))
    order: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    json: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    updated: str = field(default="", metadata=wire(VALUE))
    scale: int = field(default=1_000_000, metadata=wire(VALUE))

    def __post_init__(self) -> None:
        names = (
            self.name,
            self.key,
            *self.order,
            *self.json,
            *([self.updated] * bool(self.updated)),
        )
        bad = [n for n in names if not (isinstance(n, str) and _NAME.match(n))]
        if bad:
            raise ValueError(f"DbTable names must be SQL identifiers: {bad}")
        if not isinstance(self.scale, int) or self.scale < 1:
            raise ValueError(f"DbTable scale must be a positive int, got {self.scale!r}")


@wired
@dataclass(frozen=True)
class DbTree(Wired):
    """A folder beside the databases (``folder``) holding sessions as an older version of the
    writer kept them, one JSON file per row, every id a file or folder name (OpenCode < 1.2's
    ``storage/``, the tree its ``json-migration.ts`` reads)::

        <session>/<group>/<id>.json         a session; <group> goes into column ``group``
        <levels[0]>/<session id>/<id>.json  its rows of the first level (messages)
        <levels[1]>/<level-0 id>/<id>.json  rows of the next level, owned by a row above (parts)

    ``keys[i]`` names the column the owning folder's name goes into (``session_id``,
    ``message_id``)."""

    folder: str = field(metadata=wire(VALUE))
    session: str = field(metadata=wire(VALUE))
    group: str = field(metadata=wire(VALUE))
    levels: tuple[str, ...] = field(metadata=wire(TUPLE))
    keys: tuple[str, ...] = field(metadata=wire(TUPLE))

    def __post_init__(self) -> None:
        names = (self.session, self.group, *self.levels, *self.keys)
        bad = [n for n in names if not (isinstance(n, str) and _NAME.match(n))]
        if bad or len(self.levels) != len(self.keys):
            raise ValueError(f"DbTree needs identifiers, one key per level: {names}")
        if not (isinstance(self.folder, str) and self.folder and "/" not in self.folder):
            raise ValueError(f"DbTree folder must be a folder name, got {self.folder!r}")
        if MEMBER in self.folder:
            raise ValueError(f"DbTree folder must not contain {MEMBER!r}: {self.folder!r}")


@wired
@dataclass(frozen=True)
class DbLayout(Wired):
    """Which files under an agent's root are its session databases (``file``: an ``fnmatch``
    pattern over the name) and the tables a session's rows are in, the session table first
    (its ``key`` column lists the sessions); ``trees``: the folders an older version of the
    writer kept the same sessions in (``DbTree``, read by ``store.dbtree``). A session a
    database holds is read from the database only: its copy in a tree is *superseded*."""

    file: str = field(metadata=wire(VALUE))
    tables: tuple[DbTable, ...] = field(metadata=wire(nested_tuple(DbTable)))
    trees: tuple[DbTree, ...] = field(
        default=(), metadata=wire(nested_tuple(DbTree), since=2, omit=True)
    )
    # files in the root an older version kept one session in each, its id the file's stem,
    # read as they are (Goose's ``*.jsonl``: ``store.dbsource``); "" when none
    singles: str = field(default="", metadata=wire(VALUE, since=2, omit=True))

    def __post_init__(self) -> None:
        if not (isinstance(self.file, str) and self.file and "/" not in self.file):
            raise ValueError(f"DbLayout file must be a file name pattern, got {self.file!r}")
        if MEMBER in self.file:
            raise ValueError(f"DbLayout file must not contain {MEMBER!r}: {self.file!r}")
        if not self.tables:
            raise ValueError("DbLayout needs at least its session table")
        if not isinstance(self.singles, str) or "/" in self.singles or MEMBER in self.singles:
            raise ValueError(f"DbLayout singles must be a file name pattern: {self.singles!r}")

    def holds(self, name: str) -> bool:
        """True when an entry of the root called *name* is one of these databases or trees."""
        return fnmatchcase(name, self.file) or self.tree(name) is not None or self.single(name)

    def single(self, name: str) -> bool:
        """True when a file of the root called *name* holds one session of an older version
        (``singles``), its id the name's stem."""
        return bool(self.singles) and fnmatchcase(name, self.singles)

    def legacy(self, root: str, session_id: str) -> tuple[str, ...]:
        """The member paths session *session_id* of a database in *root* may also have in the
        older stores beside it (``trees``, ``singles``): superseded by the database's."""
        out = [member_path(f"{root}/{t.folder}", session_id) for t in self.trees]
        if self.singles:
            suffix = self.singles.removeprefix("*")
            if "*" not in suffix and "?" not in suffix and "[" not in suffix:
                out.append(member_path(f"{root}/{session_id}{suffix}", session_id))
        return tuple(out)

    def tree(self, name: str) -> DbTree | None:
        """The tree kept in the root's folder called *name*, None when it is none."""
        return next((t for t in self.trees if t.folder == name), None)

    @property
    def members(self) -> tuple[str, ...]:
        """The ``SessionFiles`` patterns of its members' names."""
        singles = (f"{self.singles}{MEMBER}*",) if self.singles else ()
        return (f"{self.file}{MEMBER}*", *(f"{t.folder}{MEMBER}*" for t in self.trees), *singles)


def member_path(db: str, session_id: str) -> str:
    return f"{db}{MEMBER}{session_id}"


def split_member(path: str) -> tuple[str, str] | None:
    """(database path, session id) of a member path, or None when *path* names none."""
    db, sep, session_id = path.rpartition(MEMBER)
    if not (sep and db and session_id) or "/" in session_id:
        return None
    return db, session_id


def same_stamp(a: Stamp, b: Stamp) -> bool:
    """Stamps of the same member state: all but the size (a listing does not know it)."""
    return (a[0], a[1], a[3], a[4]) == (b[0], b[1], b[3], b[4])
