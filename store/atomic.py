"""Durable, all-or-nothing file replacement, and private directories.

Everything the index publishes is written with ``atomic_write``: a reader (or a process that
survives a crash) sees the old bytes or the new ones, never a mix. Files are 0600 and folders
0700 whatever the umask, since session logs hold private conversations.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "atomic_write", "ensure_dir", "fsync_dir"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def fsync_dir(path: Path) -> None:
    """Make renames and unlinks inside *path* durable."""
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Replace *path* with *data* so readers see the old bytes or the new ones, never a mix.

    The temp file lives in the same directory (rename is only atomic within one
    filesystem) and starts with "." so directory scans and GC skip it. ``sync_dir=False``
    leaves the rename's durability to the caller, who must ``fsync_dir`` the folder before
    anything that points at *path* is made durable (the writer does so once per folder when
    it publishes, instead of once per record).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            # mkstemp's 0600 is still filtered by the umask; set it exactly.
            os.fchmod(f.fileno(), FILE_MODE)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)  # make the rename itself durable


def ensure_dir(path: Path) -> Path:
    """Create *path* and any missing parents as 0700 folders; existing ones are left alone."""
    missing: list[Path] = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue  # another process made it: not ours to chmod
        # mkdir's mode is filtered by the umask (e.g. 0o277 would give 0o500).
        os.chmod(d, DIR_MODE)
    return path
