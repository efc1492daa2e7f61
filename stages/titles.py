"""A session's title, from the typed fields in which its agent records one.

Agents record two kinds: a name the person gave the session (Claude Code ``custom-title``,
Pi ``session_info``, an omp rename, a Codex thread name) and a title the agent generated
(Claude Code ``ai-title`` and ``summary``, omp's automatic title, Gemini CLI's ``summary``,
Qwen Code's ``custom_title`` with ``titleSource: "auto"``; without it, Qwen's is a given name).
A given name wins over a generated one, and the latest of a kind wins (each agent shows it
so). Nothing here reads prose: a title is a string field of a typed record, or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["LATEST_NAMES", "TITLE_CHARS", "TITLE_KINDS", "Titles"]

# A title is a label for a list row; a longer string is kept whole up to this bound.
TITLE_CHARS: Final = 500
# The entry types of Pi's format that set a title, for the tail path (new records alone):
# the latest ``session_info`` alone is Pi's name, so new lines holding one decide it; omp's
# ``title_change`` weighs kinds against the whole file's, so an append holding one is built
# whole.
LATEST_NAMES: Final = frozenset({"session_info"})
TITLE_KINDS: Final = frozenset({"session_info", "title_change"})


@dataclass(slots=True)
class Titles:
    """The latest title of each kind seen so far, in file order."""

    given: str | None = None
    generated: str | None = None

    def name(self, value: Any, *, clears: bool = False) -> None:
        """A name the person gave; with *clears*, an empty or missing one removes it."""
        text = _text(value)
        if text is not None or clears:
            self.given = text

    def generate(self, value: Any) -> None:
        """A title the agent generated."""
        text = _text(value)
        if text is not None:
            self.generated = text

    @property
    def title(self) -> str | None:
        return self.given if self.given is not None else self.generated

    @staticmethod
    def text(value: Any) -> str | None:
        """The title a field holds, on one line; None when it holds no text."""
        return _text(value)


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:TITLE_CHARS] if text else None
