"""Opening files to read without writing anything: no access-time update.

Reading a file for the first time after it was written moves its access time (``relatime``),
which dirties the inode's block on disk: a ``pipeline run --once`` with nothing to do would
write ~230 KB at M just by opening the manifest and its chunks, and a build would touch the
access time of every session file it reads (files that are not ours). ``O_NOATIME`` asks the
kernel not to; it is allowed only on files we own (EPERM otherwise), so then the file is
opened plainly. Listing a folder is reading it too (its access time moves the same way), so
folders are listed through such a descriptor.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["names_quietly", "open_quietly", "read_quietly"]

_NOATIME: Final = getattr(os, "O_NOATIME", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


def open_quietly(path: str | Path, flags: int = 0) -> int:
    """A read-only descriptor of *path* (extra *flags* such as ``O_NOFOLLOW`` allowed)."""
    flags |= os.O_RDONLY | _CLOEXEC
    if _NOATIME:
        try:
            return os.open(path, flags | _NOATIME)
        except PermissionError:
            pass  # not the owner: O_NOATIME is refused, the file itself may be readable
    return os.open(path, flags)


def read_quietly(path: str | Path) -> bytes:
    """The bytes of *path*, read without moving its access time (``Path.read_bytes``)."""
    fd = open_quietly(path)
    try:
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 24):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def names_quietly(folder: str | Path, flags: int = 0) -> list[str]:
    """The names in *folder* (``os.listdir``), listed without moving its access time.
    FileNotFoundError when it is not there, NotADirectoryError when it is no folder; extra
    *flags* as ``open_quietly``'s (``O_NOFOLLOW``: a symbolic link is refused, ELOOP)."""
    fd = open_quietly(folder, flags | os.O_DIRECTORY)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)
