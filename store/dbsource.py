"""Sessions kept as rows of one SQLite file (OpenCode's ``opencode.db``, Goose's
``sessions.db``): each session is read as if it were a file of its own.

::

    <db path>#<session id>          a member: one session inside one database file
    list_members(db)                every member with its stamp (one query per table)
    member_stamp(db, id)            one member's stamp (the same queries, for one session)
    read_member(db, id)             the member's canonical bytes and the stamp they were read at

The same four calls serve the older stores a layout names beside its databases: a tree of
JSON files (``DbLayout.trees``, ``store.dbtree``: ``<folder>#<id>``) and files holding one
session each (``DbLayout.singles``, ``store.dbsingle``: ``<file>#<id>``). A session a database
beside them holds is *superseded* there: not listed, stamped or read (``superseded``).

**Canonical bytes.** A member is serialized to JSON lines, one object per row, tables in the
layout's order and rows in each table's ``order`` (the table's name under ``"$table"``, every
column by name, the ``json`` columns parsed, keys sorted). The same rows always give the same
bytes, so the stages read a member as they read any session file, its blake3 is the source hash
every binding checks, and the archive keeps those bytes: a deleted database still answers.

**Stamps.** ``(dev, inode, size, mtime_ns, signature)`` like a file's ``(dev, inode, size,
mtime_ns, ctime_ns)``: the database file's dev and inode, the newest update time of the
member's rows (in ns) and a signature of each table's row count, newest update time and the
length of its ``json`` columns, and the session's own row whole (one row per session: a
rename or new token counts move the stamp whatever its update time says; Goose's counts whole
seconds), all read from inside the database. A new message moves its own
session's stamp only. The size is the length of the bytes once read (``read_member``); a
listing does not serialize, so it says nothing of size: compare stamps with ``same_stamp``.

**Read-only, lock-free, no side files.** With a write-ahead log beside the file (a writer has
the database open in WAL mode) it is opened ``mode=ro``: WAL readers take no lock a writer
waits on, and the ``-shm`` the writer made is shared. With a rollback ``-journal`` beside it
(a writer mid-commit in rollback mode, or one that crashed) it is opened ``mode=ro`` too, so
SQLite sees the journal; that read holds a shared lock for its one transaction. Without
either nobody is writing, and it is opened ``immutable``: no lock and no ``-wal``/``-shm``
created (a ``mode=ro`` open of a WAL database would create both and leave them behind). A
writer that starts during an ``immutable`` read may leave it a half-made state; the stamp then
differs on the next look and the member is read again. Everything is read in one transaction
(one snapshot).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from fnmatch import fnmatchcase
from typing import Any, Final
from urllib.parse import quote

import blake3
import orjson

from store import dbsingle, dbtree
from store.dberrors import DbUnreadable, MemberTooLarge
from store.dblayout import TABLE_KEY, DbLayout, DbTable, DbTree, Stamp, member_path, split_member

__all__ = [
    "QUERY_BUSY_MS",
    "DbUnreadable",
    "MemberTooLarge",
    "is_superseded",
    "layouts_of",
    "list_members",
    "member_times",
    "member_stamp",
    "read_member",
    "superseded",
    "survey",
]

_BUSY_MS: Final = 2000
# A query waits no longer for a writer's lock: a commit holds it for milliseconds, and one
# held longer (a writer's long transaction) is not worth a person's wait; the database is
# then named unreadable for that answer.
QUERY_BUSY_MS: Final = 250
_SIGNATURE_BITS: Final = 62


def list_members(db: str, layout: DbLayout, *, busy_ms: int | None = None) -> dict[str, Stamp]:
    """Every session in *db* with its stamp (size -1: unknown before reading). Raises
    ``FileNotFoundError`` when *db* is gone, ``DbUnreadable`` when it cannot be read (also
    after *busy_ms* waiting for a writer's lock; default ``_BUSY_MS``)."""
    return survey(db, layout, busy_ms=busy_ms)[0]


def survey(
    db: str, layout: DbLayout, *, busy_ms: int | None = None
) -> tuple[dict[str, Stamp], int]:
    """``list_members`` and how many session rows it left out: an id that names no member
    (empty, not text, or holding ``/`` or a ``#`` that splits it elsewhere). Their rows are
    never read, so whoever lists the database must name it rather than call it complete.
    A tree of files or a single session file names its sessions by file name: none left out."""
    if (tree := _tree(db, layout)) is not None:
        return dbtree.list_tree(db, tree, superseded(db, layout, busy_ms=busy_ms)), 0
    if layout.single(os.path.basename(db)):
        return dbsingle.list_single(
            db, superseded(db, layout, dbsingle.single_id(db), busy_ms=busy_ms)
        ), 0
    unnamed = 0
    with _reading(db, busy_ms) as (conn, st):
        first = layout.tables[0]
        heads: dict[str, list[tuple[Any, ...]]] = {}
        for r in _rows(conn, _head_select(first)):
            if not (isinstance(r[0], str) and split_member(member_path(db, r[0])) == (db, r[0])):
                unnamed += 1
                continue
            heads.setdefault(r[0], []).append(r[1:])
        parts: dict[str, list[tuple[Any, ...]]] = {i: [] for i in heads}
        for table in layout.tables:
            found = {
                r[0]: r[1:] for r in _rows(conn, f"{_stamp_select(table)} GROUP BY {_q(table.key)}")
            }
            for i in heads:
                parts[i].append(found.get(i, (0, None, 0)))
    return {i: _stamp(st, layout, parts[i], -1, heads[i]) for i in sorted(heads)}, unnamed


def member_times(
    db: str, layout: DbLayout, *, busy_ms: int | None = None
) -> tuple[dict[str, int], int]:
    """Every session in *db* with the newest change known of it (ns), and how many sessions
    ``survey`` left out, for a caller that only asks which sessions exist: for a tree of
    files, without a ``stat`` of every file of every session (``store.dbtree.tree_sessions``);
    otherwise ``survey``'s stamps."""
    if (tree := _tree(db, layout)) is not None:
        return dbtree.tree_sessions(db, tree, superseded(db, layout, busy_ms=busy_ms)), 0
    stamps, unnamed = survey(db, layout, busy_ms=busy_ms)
    return {sid: stamp[3] for sid, stamp in stamps.items()}, unnamed


def member_stamp(
    db: str, session_id: str, layout: DbLayout, *, busy_ms: int | None = None
) -> Stamp | None:
    """The stamp *session_id* has now (size -1), None when *db* no longer holds it."""
    if (tree := _tree(db, layout)) is not None:
        if session_id in superseded(db, layout, session_id, busy_ms=busy_ms):
            return None
        return dbtree.tree_stamp(db, session_id, tree)
    if layout.single(os.path.basename(db)):
        if session_id in superseded(db, layout, session_id, busy_ms=busy_ms):
            return None
        return dbsingle.single_stamp(db, session_id)
    with _reading(db, busy_ms) as (conn, st):
        return _member_stamp(conn, st, session_id, layout, -1)


def read_member(
    db: str,
    session_id: str,
    layout: DbLayout,
    limit: int | None = None,
    *,
    busy_ms: int | None = None,
) -> tuple[bytes, Stamp]:
    """The member's canonical bytes and its stamp, read in one snapshot. Raises
    ``FileNotFoundError`` when *db* or the session is gone; ``MemberTooLarge`` when the bytes
    pass *limit* (no more is serialized)."""
    if (tree := _tree(db, layout)) is not None:
        if session_id in superseded(db, layout, session_id, busy_ms=busy_ms):
            raise FileNotFoundError(member_path(db, session_id))
        return dbtree.read_tree(db, session_id, tree, limit)
    if layout.single(os.path.basename(db)):
        if session_id in superseded(db, layout, session_id, busy_ms=busy_ms):
            raise FileNotFoundError(member_path(db, session_id))
        return dbsingle.read_single(db, session_id, limit)
    with _reading(db, busy_ms) as (conn, st):
        out = bytearray()
        for table in layout.tables:
            columns = ", ".join(_q(c) for c in table.order)
            order = f" ORDER BY {columns}" if columns else ""
            cursor = _execute(
                conn,
                f"SELECT * FROM {_q(table.name)} WHERE {_q(table.key)} = ?{order}",
                (session_id,),
            )
            names = [d[0] for d in cursor.description]
            for row in cursor:
                out += _line(table, names, row)
                if limit is not None and len(out) > limit:
                    raise MemberTooLarge(len(out))
        stamp = _member_stamp(conn, st, session_id, layout, len(out))
    if stamp is None:
        raise FileNotFoundError(member_path(db, session_id))
    return bytes(out), stamp


def superseded(
    folder: str, layout: DbLayout, session_id: str | None = None, *, busy_ms: int | None = None
) -> frozenset[str]:
    """The sessions of the tree (or single-session file) at *folder* a database beside it
    holds (all of them, or *session_id* if it is one): the writer migrated them, so they are
    read from the database only. A database that cannot be read (also after *busy_ms* waiting
    for a writer's lock) supersedes nothing (its sessions are unavailable: the older copy
    still answers)."""
    root = os.path.dirname(folder)
    first = layout.tables[0]
    sql = f"SELECT {_q(first.key)} FROM {_q(first.name)}"
    args: tuple[Any, ...] = ()
    if session_id is not None:
        sql, args = f"{sql} WHERE {_q(first.key)} = ?", (session_id,)
    held: set[str] = set()
    try:
        names = sorted(e.name for e in os.scandir(root) if fnmatchcase(e.name, layout.file))
    except OSError:
        return frozenset()
    for name in names:
        with suppress(OSError), _reading(os.path.join(root, name), busy_ms) as (conn, _):
            held.update(r[0] for r in _rows(conn, sql, args) if isinstance(r[0], str))
    return frozenset(held)


def is_superseded(path: str, layout: DbLayout) -> bool:
    """True when member *path* is a tree's session that a database beside it holds."""
    where = split_member(path)
    if where is None or not (
        _tree(where[0], layout) is not None or layout.single(os.path.basename(where[0]))
    ):
        return False
    return where[1] in superseded(where[0], layout, where[1])


def _tree(db: str, layout: DbLayout) -> DbTree | None:
    return layout.tree(os.path.basename(db)) if layout.trees else None


# -- reading ------------------------------------------------------------------------------


@contextmanager
def _reading(
    db: str, busy_ms: int | None = None
) -> Iterator[tuple[sqlite3.Connection, os.stat_result]]:
    """One read transaction on *db*, opened as the module docstring says."""
    st = os.lstat(db)  # FileNotFoundError: gone
    if not stat.S_ISREG(st.st_mode):
        # a directory, a fifo (opening it would wait for a writer for ever) or a link: links
        # are never followed out of a root, and all of an agent's sessions live in this file,
        # so it is named unreadable rather than skipped in silence
        raise DbUnreadable(f"{db}: not a regular file")
    # a log beside the file: a writer is (or was, and left work to recover) at it
    live = any(os.path.exists(f"{db}{suffix}") for suffix in ("-wal", "-journal"))
    uri = f"file:{quote(db)}?mode=ro" + ("" if live else "&immutable=1")
    try:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=(_BUSY_MS if busy_ms is None else busy_ms) / 1000,
            isolation_level=None,
        )
    except sqlite3.Error as exc:
        raise DbUnreadable(f"{db}: {exc}") from exc
    try:
        try:
            conn.execute("PRAGMA query_only = 1")
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise DbUnreadable(f"{db}: {exc}") from exc
        yield conn, st
    finally:
        conn.close()


def _execute(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
    try:
        return conn.execute(sql, args)
    except sqlite3.Error as exc:
        raise DbUnreadable(str(exc)) from exc


def _rows(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise DbUnreadable(str(exc)) from exc


def _q(name: str) -> str:
    return f'"{name}"'  # names are checked identifiers (DbTable)


def _stamp_select(table: DbTable) -> str:
    updated = f"max({_q(table.updated)})" if table.updated else "NULL"
    lengths = " + ".join(f"total(length({_q(c)}))" for c in table.json) or "0"
    return f"SELECT {_q(table.key)}, count(*), {updated}, {lengths} FROM {_q(table.name)}"


def _head_select(first: DbTable) -> str:
    """The session table's rows whole, after their key: one row per session, so hashing it
    costs nothing per message, and a change to any of its columns moves the stamp."""
    return f"SELECT {_q(first.key)}, * FROM {_q(first.name)}"


def _member_stamp(
    conn: sqlite3.Connection, st: os.stat_result, session_id: str, layout: DbLayout, size: int
) -> Stamp | None:
    parts: list[tuple[Any, ...]] = []
    for table in layout.tables:
        found = _rows(conn, f"{_stamp_select(table)} WHERE {_q(table.key)} = ?", (session_id,))
        parts.append(tuple(found[0][1:]) if found and found[0][1] else (0, None, 0))
    if not parts[0][0]:
        return None
    first = layout.tables[0]
    head = _rows(conn, f"{_head_select(first)} WHERE {_q(first.key)} = ?", (session_id,))
    return _stamp(st, layout, parts, size, [r[1:] for r in head])


def _stamp(
    st: os.stat_result,
    layout: DbLayout,
    parts: list[tuple[Any, ...]],
    size: int,
    head: list[tuple[Any, ...]],
) -> Stamp:
    newest = 0
    for table, (_, updated, _) in zip(layout.tables, parts, strict=True):
        if isinstance(updated, int | float) and not isinstance(updated, bool):
            newest = max(newest, int(updated * table.scale))
    # the session row itself is in the signature: a title or token count rewritten within
    # the same update time (Goose's ``updated_at`` counts whole seconds; a writer may not
    # move it at all) must still move the stamp, or the change is never read
    signed = [[list(p) for p in parts], sorted((list(r) for r in head), key=repr)]
    digest = blake3.blake3(orjson.dumps(signed, default=_plain_or_str)).digest(8)
    signature = int.from_bytes(digest, "big") >> (64 - _SIGNATURE_BITS)
    return (st.st_dev, st.st_ino, size, newest, signature)


def _line(table: DbTable, names: list[str], row: tuple[Any, ...]) -> bytes:
    value: dict[str, Any] = {TABLE_KEY: table.name}
    for name, cell in zip(names, row, strict=True):
        if name in table.json and isinstance(cell, str):
            # text that is no JSON is kept as it is: the adapter names it malformed
            with suppress(orjson.JSONDecodeError):
                cell = orjson.loads(cell)
        value[name] = cell
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=_plain) + b"\n"


def _plain(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()  # a BLOB column: its bytes, as text
    raise TypeError(type(value).__name__)


def _plain_or_str(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else str(value)


def layouts_of(specs: Mapping[str, Any]) -> dict[str, DbLayout]:
    """agent → its database layout, from a manifest's ``sources`` (``SourceSpec``s)."""
    return {a: s.databases[0] for a, s in specs.items() if getattr(s, "databases", ())}
