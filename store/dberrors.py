"""What reading a session inside a database (or a tree of files kept like one) can raise:
its own module, so ``store.dbsource`` and ``store.dbtree`` both raise them."""

from __future__ import annotations

__all__ = ["DbUnreadable", "MemberTooLarge"]


class DbUnreadable(OSError):
    """A session database that cannot be opened or read (not SQLite, damaged, a schema
    without the layout's tables): its sessions are unavailable, not gone."""


class MemberTooLarge(Exception):
    """A session whose serialized rows pass the size limit (``maxFileBytes``): it is not
    read further, as a session file that large is not read at all."""

    def __init__(self, size: int) -> None:
        super().__init__(f"more than {size} bytes")
        self.size = size
