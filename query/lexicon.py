"""A generation's cold lexicon: which cold digests hold a term, by digest record name.

The pipeline keeps a few segments (``store.lexicon``) covering every cold digest of the
generation it publishes; a segment may still name digests that are no longer cold (they
are skipped here: the set of live names decides), and a digest named by two segments
counts once. Lookups read the segments in place, a block at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.lexicon import IN_ACTIVE, IN_ALL, LexiconSegment

__all__ = ["ColdLexicon", "flag_of"]


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
