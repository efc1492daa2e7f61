"""Discovery: which files under the configured roots are sessions, and their stat stamps.

A stamp is (dev, inode, size, mtime_ns, ctime_ns). An in-place rewrite always moves ctime,
even when the writer restores mtime and keeps the size, so an unchanged stamp proves the
bytes the index holds are still the file's bytes without reading it.

An agent whose sessions are rows of SQLite files (``Adapter.database``) has a candidate per
session inside each database file directly in its root (the writer's data folder, whose
other folders are not walked), ``<db path>#<session id>``, stamped from inside the
database (``store.dbsource``): its size is not known until it is read, so its stamps are
compared by ``unchanged``. A folder there that an older version of the writer kept its
sessions in (``DbLayout.trees``: OpenCode's ``storage/``) has a candidate per session it holds
that no database beside it holds, ``<folder>#<session id>`` (``store.dbtree``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from stages.agents import adapter
from store.dblayout import MEMBER, DbLayout, member_path, same_stamp
from store.dbsource import DbUnreadable, superseded, survey
from store.files import open_quietly
from store.reasons import SOURCE_UNAVAILABLE, SOURCE_UNREADABLE
from store.sources import SourceSpec

__all__ = [
    "Candidate",
    "Stamp",
    "discover",
    "is_session",
    "source_specs",
    "stamp_of",
    "subagent_meta",
    "under",
    "unchanged",
]

log = structlog.get_logger()

_META_MAX_BYTES = 65_536

Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A session file found under an agent's root."""

    path: str
    agent: str
    stamp: Stamp

    @property
    def size(self) -> int:
        return self.stamp[2]

    @property
    def mtime_ns(self) -> int:
        return self.stamp[3]


def unchanged(agent: str, old: Stamp, new: Stamp) -> bool:
    """True when stamps *old* and *new* of one of *agent*'s sessions say the same state."""
    if adapter(agent).database is not None:
        return same_stamp(old, new)
    return old == new


def is_session(agent: str, path: str) -> bool:
    """True when the file at *path* under *agent*'s root is one of its sessions."""
    return adapter(agent).files.holds(path)


def source_specs(roots: Mapping[str, Path]) -> dict[str, SourceSpec]:
    """What each manifest records of the sources of *roots* for the query side."""
    return {agent: adapter(agent).spec for agent in roots}


def _walk(root: Path, agent: str, unreadable: list[str]) -> Iterator[Path]:
    def refused(exc: OSError) -> None:
        # A folder that vanished mid-walk is simply gone; one that cannot be listed still
        # holds sessions nobody can vouch for, so it is named, never skipped in silence.
        if not isinstance(exc, FileNotFoundError | NotADirectoryError):
            unreadable.append(str(exc.filename))

    found = adapter(agent)
    database = found.database
    if database is not None:
        # A writer keeps its session database in its data folder itself: that folder also
        # holds its logs, caches and snapshots (OpenCode's git snapshots), never walked.
        try:
            names = sorted(e.name for e in os.scandir(root) if database.holds(e.name))
        except FileNotFoundError:
            return
        except OSError as exc:
            refused(exc)
            return
        yield from (root / name for name in names)
        return
    files = found.files
    # os.walk without following symlinks: a link out of the root must never be indexed.
    for dirpath, dirnames, filenames in os.walk(root, onerror=refused, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            if files.holds(f"{dirpath}/{name}"):
                yield Path(dirpath) / name


def discover(roots: Mapping[str, Path]) -> tuple[list[Candidate], list[tuple[str, str, str]]]:
    """Every session file (its adapter's ``files``) under each root, with its stamp.

    Returns (candidates, problems) where a problem is (path, agent, reason) for a file that
    cannot be stat'ed between listing and stat (``source_unavailable``) or a folder that
    cannot be listed (``source_unreadable``; see ``under``). A missing root is simply empty.
    """
    found: list[Candidate] = []
    problems: list[tuple[str, str, str]] = []
    for agent, root in sorted(roots.items()):
        if not root.is_dir():
            continue
        unreadable: list[str] = []
        for path in _walk(root, agent, unreadable):
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            except OSError:
                problems.append((str(path), agent, SOURCE_UNAVAILABLE))
                continue
            database = adapter(agent).database
            if database is None and (not os.path.isfile(path) or path.is_symlink()):
                continue
            tree = database is not None and database.tree(path.name) is not None
            if tree and (not os.path.isdir(path) or path.is_symlink()):
                # a tree of session files that is no folder of its own: named, not followed
                problems.append((str(path), agent, SOURCE_UNREADABLE))
                continue
            if database is None:
                found.append(Candidate(str(path), agent, stamp_of(st)))
            elif not _members(str(path), agent, database, found):
                # unreadable, or it holds sessions no member can name: not all of it is read
                problems.append((str(path), agent, SOURCE_UNREADABLE))
        problems += [(folder, agent, SOURCE_UNREADABLE) for folder in unreadable]
    return found, problems


def _members(db: str, agent: str, layout: DbLayout, found: list[Candidate]) -> bool:
    """Add a candidate per session in database *db*; False when it cannot be read, or not
    all of it: a session whose id names no member (``store.dbsource.survey``)."""
    try:
        members, unnamed = survey(db, layout)
    except FileNotFoundError:
        return True  # gone between the listing and the open
    except DbUnreadable as exc:
        log.warning("source.unreadable", path=db, agent=agent, error=str(exc))
        return False
    found.extend(Candidate(member_path(db, i), agent, s) for i, s in members.items())
    # the writer migrated these into its database: read there only, named here once
    if layout.tree(os.path.basename(db)) is not None and (skipped := superseded(db, layout)):
        log.info("source.superseded", path=db, agent=agent, sessions=len(skipped))
    if unnamed:
        log.warning("source.unreadable", path=db, agent=agent, error=f"{unnamed} unusable ids")
    return not unnamed


def under(folders: Iterable[str], path: str) -> bool:
    """True when *path* lies inside one of *folders* (or is a session inside a database file
    named there): its state cannot be known while the folder cannot be listed (the database
    read), so what the index holds of it is kept, not dropped as deleted."""
    return any(path.startswith((folder.rstrip("/") + "/", folder + MEMBER)) for folder in folders)


def subagent_meta(path: str, agent: str) -> dict[str, Any] | None:
    """The sidecar the agent's adapter reads beside *path* (a Claude Code subagent
    transcript's ``.meta.json``, a Gemini CLI project's ``.project_root``) as the adapter's
    ``sidecar_value`` makes it, or None when the file has none (or it is unreadable, too large
    or not what the adapter takes: a sidecar only adds facts such as the spawning tool call's
    id or the cwd to the session, never hides its entries)."""
    where = adapter(agent).sidecar(path)
    if where is None:
        return None
    try:
        fd = open_quietly(where, getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, _META_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > _META_MAX_BYTES:
        return None
    return adapter(agent).sidecar_value(data)
