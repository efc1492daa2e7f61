"""Planted search terms: single tokens that occur nowhere else in the corpus.

Every term is ``qj`` + 10 characters from ``[a-p r-z 0-9]``: lowercase ASCII letters and digits
only (one token under ``store.tokens``), and ``devtools.corpus.words`` never emits ``qj``, so a
term's only occurrences are the ones the generator plants.
"""

from __future__ import annotations

import random

__all__ = ["TERM_PREFIX", "TermPool"]

TERM_PREFIX = "qj"
_BODY = "abcdefghijklmnoprstuvwxyz0123456789"


class TermPool:
    """Hands out distinct terms; one pool serves a whole corpus."""

    __slots__ = ("_rng", "_used")

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._used: set[str] = set()

    def new(self) -> str:
        while True:
            term = TERM_PREFIX + "".join(self._rng.choices(_BODY, k=10))
            if term not in self._used:
                self._used.add(term)
                return term
