"""A generation's cold lexicon: which cold digests hold a term, by digest record name.

The pipeline keeps a few segments (``store.lexicon``) covering every cold digest of the
generation it publishes; a segment may still name digests that are no longer cold (they
are skipped here: the set of live names decides), and a digest named by two segments
counts once. Lookups read the segments in place, a block at a time.

``ScopePlaces`` answers the same question in one scope's terms: the positions, in the
scope's order, of the digests holding a term. Each segment gets a table from raw posting
(ordinal << 2 | flags) to scope position, built once per scope and branch mode, so a term's
postings become positions in one C-level pass however many digests hold it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from store.lexicon import IN_ACTIVE, IN_ALL, LexiconSegment

__all__ = ["ColdLexicon", "Named", "ScopePlaces", "flag_of"]

_ABSENT = -1  # a posting whose digest is out of scope, or holds the term in the other view


def flag_of(branches: str) -> int:
    return IN_ACTIVE if branches == "active" else IN_ALL


class ColdLexicon:
    """The segments of one generation and the cold digest names they cover."""

    __slots__ = ("covered", "segments")

    def __init__(self, segments: Sequence[LexiconSegment], live: set[str]) -> None:
        self.segments = tuple(segments)
        self.covered: set[str] = set()
        for seg in self.segments:
            self.covered.update(n for n in seg.digests if n in live)

    def holders(self, term: bytes, branches: str) -> set[str]:
        """Names of the covered digests whose *branches* view holds *term*."""
        flag = flag_of(branches)
        out: set[str] = set()
        for seg in self.segments:
            postings = seg.postings(term)
            if postings:
                names = seg.digests
                out.update(names[p >> 2] for p in postings if p & flag)
        return out


class Named(Protocol):
    @property
    def name(self) -> str: ...


class ScopePlaces:
    """Where each cold digest of one scope sits in the scope's order, for lexicon lookups."""

    __slots__ = ("_lexicon", "_tables", "positions", "uncovered")

    def __init__(self, views: Sequence[Named], lexicon: ColdLexicon) -> None:
        self._lexicon = lexicon
        self.positions = {c.name: i for i, c in enumerate(views)}
        # digests no segment covers answer from their own vocabulary
        self.uncovered = [i for i, c in enumerate(views) if c.name not in lexicon.covered]
        self._tables: dict[int, list[list[int]]] = {}

    def holding(self, term: bytes, branches: str) -> set[int]:
        """Scope positions of the covered digests whose *branches* view holds *term*."""
        flag = flag_of(branches)
        tables = self._tables.get(flag)
        if tables is None:
            tables = self._tables[flag] = [self._table(seg, flag) for seg in self._lexicon.segments]
        out: set[int] = set()
        for seg, table in zip(self._lexicon.segments, tables, strict=True):
            postings = seg.postings(term)
            if postings:
                out.update(map(table.__getitem__, postings))
        out.discard(_ABSENT)
        return out

    def _table(self, segment: LexiconSegment, flag: int) -> list[int]:
        table: list[int] = []
        for name in segment.digests:
            at = self.positions.get(name, _ABSENT)
            table.extend(at if f & flag else _ABSENT for f in range(4))
        return table
