"""Cold vocabularies: membership in one digest's blob, and one merged term index over all.

A digest stores its vocabulary as the sorted (by UTF-8 bytes) unique terms joined by ``\\n``.
``blob_contains`` binary-searches that blob in place — O(log V) without splitting it into
Python strings — which is the right tool for a handful of digests (a project, a hydration).

``TermIndex`` is the structure for many: every distinct term of every cold digest once, in one
sorted blob with an offsets array, and for each term a run of digest numbers in one flat
uint32 array. A lookup is one binary search however many digests there are, and the whole
thing costs a few bytes per distinct term plus four per (term, digest) pair.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Sequence

__all__ = ["TermIndex", "blob_contains", "blob_index", "blob_terms"]


def _line_start(blob: bytes, term: bytes) -> int:
    """Where *term* starts as one of the ``\n``-separated sorted terms of *blob*, or -1."""
    lo, hi = 0, len(blob)  # [lo, hi) always holds whole lines
    while lo < hi:
        mid = (lo + hi) // 2
        cut = blob.rfind(b"\n", lo, mid)
        start = lo if cut < 0 else cut + 1
        end = blob.find(b"\n", start, hi)
        if end < 0:
            end = hi
        line = blob[start:end]
        if line == term:
            return start
        if line < term:
            lo = end + 1
        else:
            if start == lo:
                return -1
            hi = start - 1
    return -1


def blob_contains(blob: bytes, term: bytes) -> bool:
    """True when *term* is one of the ``\n``-separated sorted terms of *blob*."""
    return _line_start(blob, term) >= 0


def blob_index(blob: bytes, term: bytes) -> int:
    """The position of *term* among the sorted terms of *blob*, or -1 when it holds none."""
    start = _line_start(blob, term)
    return -1 if start < 0 else blob.count(b"\n", 0, start)


def blob_terms(blob: bytes) -> list[bytes]:
    return blob.split(b"\n") if blob else []


class TermIndex:
    """term → the digest numbers whose vocabulary holds it, over a fixed list of digests."""

    __slots__ = ("_blob", "_offsets", "_postings", "_starts", "terms")

    def __init__(self, vocabularies: Sequence[bytes]) -> None:
        merged: defaultdict[bytes, list[int]] = defaultdict(list)
        for number, blob in enumerate(vocabularies):
            if blob:
                for term in blob.split(b"\n"):
                    merged[term].append(number)
        ordered = sorted(merged)
        self.terms = len(ordered)
        self._blob = b"".join(ordered)
        self._offsets = array("Q", [0])
        self._postings = array("I")
        self._starts = array("Q", [0])
        at = 0
        for term in ordered:
            at += len(term)
            self._offsets.append(at)
            self._postings.extend(merged[term])
            self._starts.append(len(self._postings))

    def _term(self, i: int) -> bytes:
        return self._blob[self._offsets[i] : self._offsets[i + 1]]

    def holders(self, term: bytes) -> array[int]:
        """Digest numbers (ascending) whose vocabulary contains *term*."""
        lo, hi = 0, self.terms
        while lo < hi:
            mid = (lo + hi) // 2
            found = self._term(mid)
            if found < term:
                lo = mid + 1
            elif found > term:
                hi = mid
            else:
                return self._postings[self._starts[mid] : self._starts[mid + 1]]
        return array("I")

    def with_prefix(self, prefix: bytes, limit: int) -> list[bytes]:
        """The first *limit* terms (in order) that start with *prefix* (prefix search)."""
        lo, hi = 0, self.terms
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(mid) < prefix:
                lo = mid + 1
            else:
                hi = mid
        out: list[bytes] = []
        while lo < self.terms and len(out) < limit:
            term = self._term(lo)
            if not term.startswith(prefix):
                break
            out.append(term)
            lo += 1
        return out

    def nbytes(self) -> int:
        return (
            len(self._blob)
            + self._offsets.itemsize * len(self._offsets)
            + self._postings.itemsize * len(self._postings)
            + self._starts.itemsize * len(self._starts)
        )
