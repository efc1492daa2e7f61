"""Sessions kept as a tree of JSON files (``DbTree``: OpenCode < 1.2's ``storage/``), read as
``store.dbsource`` reads a database: a member ``<tree folder>#<session id>`` whose bytes are
its files serialized as rows.

::

    session/<group>/<sid>.json      {"$table": "session", "id": sid, <group>: group, "data": …}
    message/<sid>/<mid>.json        {"$table": "message", "id": mid, "session_id": sid, "data": …}
    part/<mid>/<pid>.json           {"$table": "part", "id": pid, "message_id": mid, "data": …}

Every id is the file's or folder's name, as the writer's own migration takes them (its
``json-migration.ts``: "derive all IDs from file paths, not JSON content"); ``data`` is the
file's JSON (its text when it is no JSON: the adapter names it malformed). Rows come session
first, then each level's rows in name order (ids grow with time), a level's rows grouped by
their owner in the order of the level above: the same files always give the same bytes.

**Stamps.** ``(dev, inode, size, mtime_ns, signature)`` like a database member's: the tree
folder's dev and inode, the newest mtime of the session's files, and a signature of each
level's file count, total size and newest mtime (one ``stat`` per file of the session, no
read). A new part moves its own session's stamp only; finding it costs that session's files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from typing import Any, Final

import blake3
import orjson

from store.dberrors import MemberTooLarge
from store.dblayout import TABLE_KEY, DbTree, Stamp

__all__ = ["OWNERS_MAX", "list_tree", "read_tree", "session_of", "tree_sessions", "tree_stamp"]

_JSON: Final = ".json"
_SIGNATURE_BITS: Final = 62
OWNERS_MAX: Final = 65_536

# (name, path, stat) of one file of a session
_File = tuple[str, str, os.stat_result]


def list_tree(folder: str, tree: DbTree, skip: frozenset[str] = frozenset()) -> dict[str, Stamp]:
    """Every session of the tree at *folder* but those in *skip*, with its stamp (size -1).
    Raises ``FileNotFoundError`` when *folder* is gone."""
    st = os.stat(folder)
    out: dict[str, Stamp] = {}
    for sid, (_, head) in sorted(_sessions(folder, tree).items()):
        if sid not in skip:
            out[sid] = _stamp(st, head, _levels(folder, tree, sid), -1)
    return out


def tree_sessions(folder: str, tree: DbTree, skip: frozenset[str] = frozenset()) -> dict[str, int]:
    """Every session of the tree but those in *skip*, with its session file's mtime: what
    says a session exists, one ``stat`` per session (``list_tree`` stats all its files)."""
    return {
        sid: head[2].st_mtime_ns
        for sid, (_, head) in sorted(_sessions(folder, tree).items())
        if sid not in skip
    }


def tree_stamp(folder: str, sid: str, tree: DbTree) -> Stamp | None:
    """The stamp session *sid* has now (size -1), None when the tree no longer holds it."""
    st = os.stat(folder)
    found = _session(folder, tree, sid)
    if found is None:
        return None
    return _stamp(st, found[1], _levels(folder, tree, sid), -1)


def read_tree(folder: str, sid: str, tree: DbTree, limit: int | None = None) -> tuple[bytes, Stamp]:
    """The session's canonical bytes (module docstring) and its stamp. Raises
    ``FileNotFoundError`` when the tree or the session is gone; ``MemberTooLarge`` past
    *limit*."""
    st = os.stat(folder)
    found = _session(folder, tree, sid)
    if found is None:
        raise FileNotFoundError(f"{folder}#{sid}")
    group, head = found
    levels = _levels(folder, tree, sid)
    out = bytearray()

    def add(row: dict[str, Any], path: str) -> None:
        row["data"] = _json(path)
        out.extend(orjson.dumps(row, option=orjson.OPT_SORT_KEYS) + b"\n")
        if limit is not None and len(out) > limit:
            raise MemberTooLarge(len(out))

    add({TABLE_KEY: tree.session, "id": sid, tree.group: group}, head[1])
    for name, key, files in zip(tree.levels, tree.keys, levels, strict=True):
        for owner, stem, path, _ in files:
            add({TABLE_KEY: name, "id": stem, key: owner}, path)
    return bytes(out), _stamp(st, head, levels, len(out))


def session_of(
    folder: str, tree: DbTree, path: str, owners: MutableMapping[tuple[int, str], str]
) -> str | None:
    """The session a file *path* inside the tree at *folder* belongs to, None when it is no
    row file of the tree. A row of a deeper level names its owner's id in its folder; which
    session that owner is in comes from *owners* ((level, id) → owner id, filled here, the
    caller keeps it bounded by ``OWNERS_MAX``) or, the first time, from one ``stat`` per
    session folder of the level above."""
    rel = os.path.relpath(path, folder).split(os.sep)
    if len(rel) != 3 or not rel[2].endswith(_JSON) or rel[0] == os.pardir:
        return None
    top, owner, name = rel[0], rel[1], rel[2].removesuffix(_JSON)
    if top == tree.session:
        return name
    if top not in tree.levels:
        return None
    level = tree.levels.index(top)
    if level + 1 < len(tree.levels):
        _remember(owners, (level, name), owner)
    while level > 0:
        above = tree.levels[level - 1]
        found = owners.get((level - 1, owner))
        if found is None:
            found = _find_owner(os.path.join(folder, above), owner)
            if found is None:
                return None
            _remember(owners, (level - 1, owner), found)
        owner, level = found, level - 1
    return owner


# -- listing ------------------------------------------------------------------------------


def _remember(owners: MutableMapping[tuple[int, str], str], key: tuple[int, str], v: str) -> None:
    if len(owners) >= OWNERS_MAX and key not in owners:
        owners.clear()  # a bound, not a cache policy: the next lookups refill it
    owners[key] = v


def _find_owner(level_folder: str, name: str) -> str | None:
    for owner in _names(level_folder, folders=True):
        if os.path.isfile(os.path.join(level_folder, owner, name + _JSON)):
            return owner
    return None


def _names(folder: str, *, folders: bool) -> Iterator[str]:
    """Entries of *folder* (sub-folders, or ``*.json`` files), never following a link."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for e in sorted(entries, key=lambda e: e.name):
        if e.is_symlink():
            continue
        wanted = (
            e.is_dir(follow_symlinks=False)
            if folders
            else e.name.endswith(_JSON) and e.is_file(follow_symlinks=False)
        )
        if wanted:
            yield e.name


def _files(folder: str) -> list[tuple[str, str, os.stat_result]]:
    out = []
    for name in _names(folder, folders=False):
        path = os.path.join(folder, name)
        try:
            out.append((name.removesuffix(_JSON), path, os.lstat(path)))
        except FileNotFoundError:
            continue
    return out


def _sessions(folder: str, tree: DbTree) -> dict[str, tuple[str, _File]]:
    """session id → (group, its file); a session found in two groups keeps the first."""
    top = os.path.join(folder, tree.session)
    out: dict[str, tuple[str, _File]] = {}
    for group in _names(top, folders=True):
        for stem, path, st in _files(os.path.join(top, group)):
            out.setdefault(stem, (group, (stem, path, st)))
    return out


def _session(folder: str, tree: DbTree, sid: str) -> tuple[str, _File] | None:
    top = os.path.join(folder, tree.session)
    for group in _names(top, folders=True):
        path = os.path.join(top, group, sid + _JSON)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if os.path.isfile(path) and not os.path.islink(path):
            return group, (sid, path, st)
    return None


def _levels(
    folder: str, tree: DbTree, sid: str
) -> list[list[tuple[str, str, str, os.stat_result]]]:
    """Per level, (owner, id, path, stat) of the session's files, in row order."""
    out: list[list[tuple[str, str, str, os.stat_result]]] = []
    owners = [sid]
    for name in tree.levels:
        rows = [
            (owner, stem, path, st)
            for owner in owners
            for stem, path, st in _files(os.path.join(folder, name, owner))
        ]
        out.append(rows)
        owners = [row[1] for row in rows]
    return out


def _stamp(
    st: os.stat_result,
    head: _File,
    levels: list[list[tuple[str, str, str, os.stat_result]]],
    size: int,
) -> Stamp:
    parts = [[1, head[2].st_size, head[2].st_mtime_ns]]
    newest = head[2].st_mtime_ns
    for rows in levels:
        mtimes = [r[3].st_mtime_ns for r in rows]
        newest = max([newest, *mtimes])
        parts.append([len(rows), sum(r[3].st_size for r in rows), max(mtimes, default=0)])
    digest = blake3.blake3(orjson.dumps(parts)).digest(8)
    signature = int.from_bytes(digest, "big") >> (64 - _SIGNATURE_BITS)
    return (st.st_dev, st.st_ino, size, newest, signature)


def _json(path: str) -> Any:
    """The file's JSON; its text when it is none (or gone since listed: empty)."""
    try:
        with open(path, "rb") as f:  # noqa: PTH123 - one small file, read whole
            raw = f.read()
    except FileNotFoundError:
        raw = b""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")
