"""The bench's work folder: what an earlier run left is set aside, not deleted, until the end.

Deleting many files makes creating files near them slow for minutes afterwards on ext4: a new
inode's search skips every free inode deleted in the last 60 s (6 min while its inode table
block is dirty), and each skip is a buffer-cache lookup (``find_inode_bit`` ->
``recently_deleted``). Measured on the project machine, same file system: 15 us per create
in a folder under /root, 0.4-1 ms under /tmp where bench runs had just deleted indexes, and
the S build's system time 0.8-1.0 s against 1.5-2.4 s. Our build creates ~2,000 record files and 256
folders, FTS5 and agentsview one database file each, so a bench that deletes its previous
index and corpus right before the timed builds charges its own cleanup to us alone. The
earlier run's corpus, index and FTS5 database are therefore renamed into ``.old-*`` (a rename
frees no inode) and deleted after every measurement. The build rows report user and system
CPU seconds, so a slow file system shows as system time instead of hiding in the wall time.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["OLD_PREFIX", "clear_aside", "set_aside"]

OLD_PREFIX = ".old-"


def set_aside(work: Path, names: Iterable[str]) -> Path | None:
    """Move each existing ``work/NAME`` into one new ``.old-*`` folder; returns it (None when
    nothing was there)."""
    found = [work / n for n in names if (work / n).exists() or (work / n).is_symlink()]
    if not found:
        return None
    aside = work / f"{OLD_PREFIX}{time.time_ns()}"
    aside.mkdir()
    for path in found:
        path.rename(aside / path.name)
    return aside


def clear_aside(work: Path) -> None:
    """Delete what ``set_aside`` moved in *work* (after the measurements)."""
    for path in work.iterdir():
        if path.name.startswith(OLD_PREFIX):
            shutil.rmtree(path, ignore_errors=True)
