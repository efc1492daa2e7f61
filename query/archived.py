"""What an answer says about sessions read from the archive (their source is gone).

Such a session is searched and read in full from the copy the archive kept, so it hides
nothing: the answer says so with the note ``source_deleted`` (``coverage.notes``, beside
``max_entry_chars``) rather than a reason (a reason is a gap that makes an empty result
non-authoritative), ``coverage.archived`` counts them and names the archive folder holding
the kept copies, and each hit and session row of one says ``archived: true``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from store.records import SessionState

__all__ = ["SOURCE_DELETED", "note_archived"]

SOURCE_DELETED: Final = "source_deleted"


def note_archived(
    coverage: dict[str, Any], sessions: Iterable[SessionState], archive: object | None
) -> None:
    """Add the note and the count to *coverage* when *sessions* hold archived ones."""
    count = sum(1 for s in sessions if s.archived)
    if not count:
        return
    notes = coverage.setdefault("notes", [])
    if SOURCE_DELETED not in notes:
        notes.append(SOURCE_DELETED)
    root = getattr(archive, "root", None)
    coverage["archived"] = {"sessions": count, "copies": str(root) if root else None}
