"""Names every layer shares: the agents whose sessions are indexed, and the branch modes.

Kept apart from ``store.records`` so that a caller needing only these (the ``query`` CLI
building its options) does not define every record type first.
"""

from __future__ import annotations

from typing import Final

__all__ = ["AGENTS", "BRANCH_MODES"]

AGENTS: Final = ("pi", "claude", "codex")
BRANCH_MODES: Final = ("active", "all")
