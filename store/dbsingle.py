"""A file that holds one session of an older version of a database writer (``DbLayout.singles``:
Goose's ``sessions/<id>.jsonl`` before ``sessions.db``), read as a member of its own,
``<file>#<id>``, so the same machinery as a database's sessions serves it.

The member's bytes are the file's bytes as they are (no serialization: the adapter reads the
older format), its id the file's stem, its stamp the file's ``(dev, inode, size, mtime_ns,
ctime_ns)`` (compared, like every member's, without the size: ``same_stamp``)."""

from __future__ import annotations

import os

from store.dberrors import MemberTooLarge
from store.dblayout import Stamp
from store.files import open_quietly

__all__ = ["list_single", "read_single", "single_id", "single_stamp"]


def single_id(path: str) -> str:
    """The id of the session the file at *path* holds: its name without the extension."""
    return os.path.splitext(os.path.basename(path))[0]


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def list_single(path: str, skip: frozenset[str] = frozenset()) -> dict[str, Stamp]:
    """The one session of *path* with its stamp, none when it is in *skip*. Raises
    ``FileNotFoundError`` when the file is gone."""
    st = os.lstat(path)
    sid = single_id(path)
    return {} if sid in skip else {sid: _stamp(st)}


def single_stamp(path: str, session_id: str) -> Stamp | None:
    """The stamp of session *session_id* of *path*, None when the file is gone or holds another."""
    if session_id != single_id(path):
        return None
    try:
        return _stamp(os.lstat(path))
    except FileNotFoundError:
        return None


def read_single(path: str, session_id: str, limit: int | None = None) -> tuple[bytes, Stamp]:
    """The file's bytes and the stamp of the descriptor they were read from. Raises
    ``FileNotFoundError`` when it is gone (or holds another session), ``MemberTooLarge`` when
    it is larger than *limit* (not read)."""
    if session_id != single_id(path):
        raise FileNotFoundError(f"{path}#{session_id}")
    fd = open_quietly(path, getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if limit is not None and st.st_size > limit:
            raise MemberTooLarge(st.st_size)
        chunks = []
        while chunk := os.read(fd, 1 << 24):
            chunks.append(chunk)
        return b"".join(chunks), _stamp(st)
    finally:
        os.close(fd)
