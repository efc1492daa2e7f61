"""Which session files are kept out of the index: ``[sources] exclude`` and forgotten paths.

::

    exclude globs (config) ─┐
                            ├─► blocks(path) ─► discovery skips it; what the index and the
    tombstones (archive) ───┘                   archive hold of it is purged (a forget event)

An absolute (or ``~``) glob matches the file's path, a relative one its path below any of the
roots; ``**`` crosses folders, ``*`` and ``?`` do not, and a leading ``.`` needs no special
mention (wcmatch: a small, pure-Python matcher with the globstar rules people expect, where
``fnmatch`` lets ``*`` cross ``/``). A tombstone holds the blake3 of a forgotten path, so the
list of what was forgotten is not itself a record of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TypeVar

from wcmatch import glob

from store.archive import Archive, path_hash, source_of
from store.config import Config

__all__ = ["KeepOut"]

_FLAGS = glob.GLOBSTAR | glob.DOTGLOB

T = TypeVar("T")


class KeepOut:
    """The exclusion rules and the tombstones of one configuration."""

    def __init__(self, config: Config) -> None:
        self._absolute = [g for g in config.exclude if os.path.isabs(g)]
        self._relative = [g for g in config.exclude if not os.path.isabs(g)]
        self._roots = sorted((str(r) for r in config.roots.values()), key=len, reverse=True)
        self.archive = Archive(config.archive_dir)

    @property
    def excludes(self) -> bool:
        return bool(self._absolute or self._relative)

    def excluded(self, path: str) -> bool:
        """True when an ``exclude`` glob matches *path* (or the file a retired version of
        the session came from)."""
        if not (self._absolute or self._relative):
            return False
        path = source_of(path)
        if self._absolute and glob.globmatch(path, self._absolute, flags=_FLAGS):
            return True
        if self._relative:
            for root in self._roots:
                if path.startswith(root.rstrip("/") + "/"):
                    below = path[len(root.rstrip("/")) + 1 :]
                    return bool(glob.globmatch(below, self._relative, flags=_FLAGS))
        return False

    def forgotten(self, path: str, tombstones: frozenset[str] | None = None) -> bool:
        found = self.archive.tombstones() if tombstones is None else tombstones
        return bool(found) and path_hash(path) in found

    def blocks(self, path: str, tombstones: frozenset[str] | None = None) -> bool:
        return self.forgotten(path, tombstones) or self.excluded(path)

    def keep(self, items: Sequence[T], path_of: str = "path") -> list[T]:
        """*items* (with a ``path`` attribute) less the ones kept out."""
        tombstones = self.archive.tombstones()
        if not tombstones and not self.excludes:
            return list(items)
        return [i for i in items if not self.blocks(getattr(i, path_of), tombstones)]

    def blocked(self, paths: Iterable[str]) -> list[str]:
        tombstones = self.archive.tombstones()
        if not tombstones and not self.excludes:
            return []
        return [p for p in paths if self.blocks(p, tombstones)]
