"""The cold lexicon: which cold digests hold a term, for many digests at once, read in place.

Answering "which cold sessions hold this term" from each digest's own vocabulary means a
search per digest, and keeping every vocabulary decoded costs the query process memory in
proportion to the whole history. A lexicon segment merges the vocabularies of a set of
digests once, when the pipeline publishes them, into a sorted term table cut in blocks::

    [b"SDX", LEXICON_VERSION, "lexicon", header, body]              one msgpack array
    header  {"digests": [record name, …], "terms": n, "pairs": m,
             "first": first term of every block, "\\n"-joined,
             "offsets": u64 × (blocks + 1), where each block lies in body}
    body    zstd(block) for every block, concatenated
    block   msgpack [terms "\\n"-joined, counts u32 × terms, postings u32 × pairs]
            a posting is digest ordinal << 2 | IN_ACTIVE | IN_ALL, ascending per term

Integers in the byte arrays are little-endian; terms sort by their UTF-8 bytes and never
contain ``\\n``. ``LexiconSegment`` reads only the block a lookup lands in and decompresses
it, so a lookup touches a few pages and the process holds the block index
(a bytes object per block) instead of a Python object per term. Segments are immutable
records named by content like every other record; a manifest lists the ones it uses.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
import sys
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgpack
import zstandard

from store.errors import CorruptRecord, SchemaVersionError
from store.files import open_quietly

__all__ = [
    "IN_ACTIVE",
    "IN_ALL",
    "LEXICON_KIND",
    "LEXICON_VERSION",
    "DigestVocabulary",
    "LexiconSegment",
    "encode_lexicon",
]

LEXICON_KIND: Final = "lexicon"
LEXICON_VERSION: Final = 1
MAGIC: Final = b"SDX"
IN_ACTIVE: Final = 1
IN_ALL: Final = 2
_BOTH: Final = IN_ACTIVE | IN_ALL
# Terms per block: a lookup decompresses one block (~1-2 KiB of terms and postings).
BLOCK_TERMS: Final = 128
_LEVEL: Final = 3
# Largest ordinal that fits beside the two flag bits of a u32 posting.
MAX_DIGESTS: Final = (1 << 30) - 1
_LITTLE: Final = sys.byteorder == "little"
# Decoded blocks kept per segment: a lookup of a common term hits them again, a one-off does
# not; a cold tier of many segments multiplies this, so it stays small.
_CACHED_BLOCKS: Final = 16
# Writing: a posting tag travels beside its term as nibble bytes, 0x10 | 4 bits each.
_NIBBLE: Final = 0x10
_NIBBLES: Final = bytes(range(_NIBBLE, _NIBBLE + 16))
_NIBBLE_HEX: Final = bytes.maketrans(_NIBBLES, b"0123456789abcdef")
_NOT_NIBBLE: Final = bytes(c for c in range(256) if c not in _NIBBLES)
# Every control character but "\n" as 0x00, every other byte as itself: a blob holds a
# control character other than its separators exactly when its translation holds a 0x00
# (one C-level table pass and a memchr; deleting the controls and counting the newlines
# copied and walked each blob twice, ~5 % of a bucket's encoding on the S corpus).
_CONTROL_FLAG: Final = bytes(0 if c < 0x20 and c != 0x0A else c for c in range(256))


@dataclass(frozen=True, slots=True)
class DigestVocabulary:
    """One cold digest's vocabularies: its record name and the ``active``/``all`` blobs.

    A blob is sorted unique terms joined by ``\\n`` (``ColdView.vocabulary``); ``all_terms``
    is None when the digest has one view for both branch modes.
    """

    name: str
    active: bytes
    all_terms: bytes | None = None


def _split(blob: bytes) -> list[bytes]:
    return blob.split(b"\n") if blob else []


def _le(values: array[int]) -> bytes:
    if not _LITTLE:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_le(code: str, data: bytes) -> array[int]:
    out = array(code, data)
    if not _LITTLE:
        out.byteswap()
    return out


def _from_be(code: str, data: bytes) -> array[int]:
    out = array(code, data)
    if _LITTLE:
        out.byteswap()
    return out


# ---------------------------------------------------------------------------------- writing


class _Blocks:
    """Cuts a sorted stream of (term, postings) into compressed blocks."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_LEVEL)
        self.parts: list[bytes] = []
        self.first: list[bytes] = []
        self.offsets = array("Q", [0])
        self.terms = 0
        self.pairs = 0

    def add(self, terms: Sequence[bytes], counts: array[int], postings: array[int]) -> None:
        block = msgpack.packb([b"\n".join(terms), _le(counts), _le(postings)], use_bin_type=True)
        data = self.compressor.compress(block)
        self.parts.append(data)
        self.first.append(terms[0])
        self.offsets.append(self.offsets[-1] + len(data))
        self.terms += len(terms)
        self.pairs += len(postings)

    def encode(self, digests: Sequence[str]) -> bytes:
        header = {
            "digests": list(digests),
            "terms": self.terms,
            "pairs": self.pairs,
            "first": b"\n".join(self.first),
            "offsets": _le(self.offsets),
        }
        data: bytes = msgpack.packb(
            [MAGIC, LEXICON_VERSION, LEXICON_KIND, header, b"".join(self.parts)],
            use_bin_type=True,
        )
        return data


def _check(blob: bytes, name: str) -> None:
    if b"\x00" in blob.translate(_CONTROL_FLAG):
        raise ValueError(f"a term of {name} holds a control character")


def _views(digest: DigestVocabulary) -> list[tuple[bytes, int]]:
    """*digest*'s terms as sorted ``\\n``-joined blobs, each with the flags of the views
    that hold them (checked for control characters)."""
    active, every = digest.active, digest.all_terms
    _check(active, digest.name)
    if every is None or every == active:
        return [(active, _BOTH)]
    # A branched session: a term may be in one view only (the all view's vocabulary can
    # also be the one a size cap cut). Filtering a sorted list keeps it sorted, so each
    # group is sorted with no sort, and set lookups keep it at C speed.
    _check(every, digest.name)
    active_terms, every_terms = _split(active), _split(every)
    only_all = list(itertools.filterfalse(set(active_terms).__contains__, every_terms))
    if len(active_terms) + len(only_all) == len(every_terms):
        # (the usual case) every active term is in the all view too: both hold all of them
        return [(active, _BOTH), (b"\n".join(only_all), IN_ALL)]
    in_every = set(every_terms).__contains__
    both = list(filter(in_every, active_terms))
    only_active = list(itertools.filterfalse(in_every, active_terms))
    return [
        (b"\n".join(both), _BOTH),
        (b"\n".join(only_all), IN_ALL),
        (b"\n".join(only_active), IN_ACTIVE),
    ]


def _tagged(digest: DigestVocabulary, ordinal: int, width: int) -> Iterator[bytes]:
    """*digest*'s terms as one ``\\n``-joined blob per posting tag, each term followed by
    the tag in *width* nibble bytes (see ``encode_lexicon``)."""
    base = ordinal << 2
    for blob, flag in _views(digest):
        if not blob:
            continue
        tag = base | flag
        suffix = bytes(_NIBBLE | (tag >> shift) & 0xF for shift in range(4 * width - 4, -4, -4))
        yield blob.replace(b"\n", suffix + b"\n") + suffix


def _postings(tags: bytes, width: int) -> array[int]:
    """The big-endian tags (*width* nibbles each) as u32 postings: 16-bit ones are widened
    by slice assignment (``array("I", array("H", …))`` goes through an int per posting)."""
    if width == 8:
        return _from_be("I", tags)
    wide = bytearray(2 * len(tags))
    wide[0::4] = tags[1::2]
    wide[1::4] = tags[0::2]
    return _from_le("I", bytes(wide))


def _joined(lines: list[bytes]) -> bytes:
    """``b"\\n".join(lines)`` in slices: a join holds a buffer view (80 bytes) per item while
    it runs, 44 MB for a bucket's pairs at once."""
    step = 1 << 14
    return b"\n".join([b"\n".join(lines[k : k + step]) for k in range(0, len(lines), step)])


def encode_lexicon(digests: Sequence[DigestVocabulary]) -> bytes:
    """The lexicon segment over *digests* (ordinal = position in the sequence).

    Deterministic: the same digests in the same order give the same bytes. The merge is one
    sort and C-level passes; no Python code runs per (term, digest) pair. Each term is
    sorted with its posting tag appended as nibble bytes (0x10-0x1F): a term's own bytes are
    word characters (never below 0x30), so ``term + tag`` sorts by term, then by tag (the
    digest's ordinal), and each vocabulary arrives sorted, so the sort mostly merges runs.
    One ``translate`` then pulls every tag out as hex and another drops them from the terms.
    """
    if len(digests) > MAX_DIGESTS:
        raise ValueError(f"a lexicon segment holds at most {MAX_DIGESTS} digests")
    # 4 nibbles hold the tags of 16,384 digests (a bucket is far smaller), else 8.
    width = 4 if len(digests) <= 1 << 14 else 8
    # Each step lets go of what the next no longer needs: a bucket's pairs are ~0.5 M.
    pairs: list[bytes] = []
    for ordinal, d in enumerate(digests):
        for piece in _tagged(d, ordinal, width):
            pairs += piece.split(b"\n")
    blocks = _Blocks()
    if not pairs:
        return blocks.encode([d.name for d in digests])
    pairs.sort()
    joined = _joined(pairs)
    del pairs
    tags = bytes.fromhex(joined.translate(_NIBBLE_HEX, _NOT_NIBBLE).decode("ascii"))
    postings = _postings(tags, width)
    del tags
    stripped = joined.translate(None, _NIBBLES)
    del joined
    terms = stripped.split(b"\n")
    del stripped
    # A sorted list: a term's run of postings ends where the next term differs (or at the
    # end); its count is the distance from the end of the run before.
    last = list(map(operator.ne, terms, itertools.islice(terms, 1, None)))
    last.append(True)
    ends = array("Q", itertools.compress(range(1, len(terms) + 1), last))
    distinct = list(itertools.compress(terms, last))
    del terms, last
    counts = array("I", map(operator.sub, ends, itertools.chain((0,), ends)))
    starts = array("Q", [0])
    starts += ends
    del ends
    for k in range(0, len(distinct), BLOCK_TERMS):
        stop = min(k + BLOCK_TERMS, len(distinct))
        blocks.add(distinct[k:stop], counts[k:stop], postings[starts[k] : starts[stop]])
    return blocks.encode([d.name for d in digests])


# ---------------------------------------------------------------------------------- reading


class _Reader:
    """A file-like view of a descriptor for msgpack.Unpacker (it reads the header only)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._at = 0

    def read(self, n: int = -1) -> bytes:
        out = os.pread(self._fd, n if n >= 0 else 1 << 30, self._at)
        self._at += len(out)
        return out


def _bin_span(fd: int, at: int, path: Path) -> tuple[int, int]:
    """(start, length) of the msgpack bin object at *at*."""
    head = os.pread(fd, 5, at)
    width = {0xC4: 1, 0xC5: 2, 0xC6: 4}.get(head[0] if head else -1)
    if width is None or len(head) < 1 + width:
        raise CorruptRecord(path, "lexicon body is not a msgpack bin")
    return at + 1 + width, int.from_bytes(head[1 : 1 + width], "big")


@dataclass(frozen=True, slots=True)
class _Block:
    terms: list[bytes]
    starts: array[int]  # start of each term's postings; starts[-1] is the total
    postings: array[int]


class LexiconSegment:
    """One lexicon segment, read in place: a lookup reads and decompresses the one block it
    lands in (``pread``; the file is not mapped, so its pages stay the kernel's cache, not
    this process's memory)."""

    __slots__ = (
        "_base",
        "_blocks",
        "_cache",
        "_decompressor",
        "_fd",
        "_first",
        "_offsets",
        "digests",
        "nbytes",
        "pairs",
        "path",
        "terms",
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        fd = open_quietly(path)
        try:
            self._open(fd, path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _open(self, fd: int, path: Path) -> None:
        self.nbytes = os.fstat(fd).st_size
        if self.nbytes == 0:
            raise CorruptRecord(path, "empty lexicon record")
        unpacker = msgpack.Unpacker(_Reader(fd), read_size=1 << 16, raw=False, strict_map_key=False)
        try:
            size = unpacker.read_array_header()
            magic, version, kind = unpacker.unpack(), unpacker.unpack(), unpacker.unpack()
            header = unpacker.unpack() if size == 5 else None
            at = unpacker.tell()
        except (ValueError, TypeError, msgpack.UnpackException, msgpack.OutOfData) as exc:
            raise CorruptRecord(path, f"lexicon header unreadable: {exc}") from exc
        if size != 5 or magic != MAGIC or kind != LEXICON_KIND:
            raise CorruptRecord(path, "not a lexicon record")
        if version != LEXICON_VERSION:
            raise SchemaVersionError(path, version, LEXICON_VERSION, "lexicon version")
        if not isinstance(header, dict):
            raise CorruptRecord(path, "lexicon header is not a map")
        start, length = _bin_span(fd, at, path)
        try:
            digests = header["digests"]
            self.terms = int(header["terms"])
            self.pairs = int(header["pairs"])
            first: bytes = header["first"]
            offsets = _from_le("Q", header["offsets"])
            if not (isinstance(digests, list) and all(isinstance(n, str) for n in digests)):
                raise TypeError("digest names")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptRecord(path, f"lexicon header incomplete: {exc}") from exc
        self.digests: tuple[str, ...] = tuple(digests)
        self._first = first.split(b"\n") if self.terms else []
        self._blocks = len(self._first)
        if (
            start + length != self.nbytes
            or len(offsets) != self._blocks + 1
            or (self._blocks and offsets[-1] != length)
            or any(b < a for a, b in itertools.pairwise(offsets))
        ):
            raise CorruptRecord(path, "lexicon blocks do not fit the body")
        self._offsets = offsets
        self._base = start
        self._decompressor = zstandard.ZstdDecompressor()
        self._cache: OrderedDict[int, _Block] = OrderedDict()

    # -- blocks ------------------------------------------------------------------------------

    def _block(self, k: int) -> _Block:
        found = self._cache.get(k)
        if found is not None:
            self._cache.move_to_end(k)
            return found
        terms_blob, counts_b, postings_b = self._unpacked(k)
        terms = terms_blob.split(b"\n")
        counts = _from_le("I", counts_b)
        postings = _from_le("I", postings_b)
        starts = array("Q", [0])
        starts.extend(itertools.accumulate(counts))
        if len(terms) != len(counts) or starts[-1] != len(postings):
            raise CorruptRecord(self.path, f"lexicon block {k} is inconsistent")
        found = _Block(terms, starts, postings)
        self._cache[k] = found
        if len(self._cache) > _CACHED_BLOCKS:
            self._cache.popitem(last=False)
        return found

    def _unpacked(self, k: int) -> tuple[bytes, bytes, bytes]:
        size = self._offsets[k + 1] - self._offsets[k]
        data = os.pread(self._fd, size, self._base + self._offsets[k])
        if len(data) != size:
            raise CorruptRecord(self.path, f"lexicon block {k} is cut short")
        try:
            raw = self._decompressor.decompress(data)
            terms_blob, counts_b, postings_b = msgpack.unpackb(raw, raw=True)
        except (zstandard.ZstdError, ValueError, TypeError, msgpack.UnpackException) as exc:
            raise CorruptRecord(self.path, f"lexicon block {k} unreadable: {exc}") from exc
        if not all(isinstance(b, bytes) for b in (terms_blob, counts_b, postings_b)):
            raise CorruptRecord(self.path, f"lexicon block {k} is inconsistent")
        return terms_blob, counts_b, postings_b

    def term_blobs(self) -> Iterator[bytes]:
        """Each block's terms ``\\n``-joined as stored, in order, uncached and unsplit (a
        regex looks for its literals in them, then asks ``postings`` for the few hits)."""
        for k in range(self._blocks):
            yield self._unpacked(k)[0]

    # -- lookups -----------------------------------------------------------------------------

    def postings(self, term: bytes) -> Sequence[int]:
        """The raw postings (ordinal << 2 | flags) of *term*; empty when no digest holds it."""
        k = bisect.bisect_right(self._first, term) - 1
        if k < 0:
            return ()
        block = self._block(k)
        i = bisect.bisect_left(block.terms, term)
        if i == len(block.terms) or block.terms[i] != term:
            return ()
        return block.postings[block.starts[i] : block.starts[i + 1]]

    def holders(self, term: bytes, flag: int) -> list[int]:
        """Ordinals (ascending) of the digests whose *flag* view (IN_ACTIVE/IN_ALL) holds it."""
        return [p >> 2 for p in self.postings(term) if p & flag]

    def iter_terms(self) -> Iterator[tuple[bytes, Sequence[int]]]:
        """Every (term, raw postings) in term order (a regex scans the distinct terms)."""
        for k in range(self._blocks):
            block = self._block(k) if k in self._cache else self._read_once(k)
            starts, postings = block.starts, block.postings
            for i, term in enumerate(block.terms):
                yield term, postings[starts[i] : starts[i + 1]]

    def with_prefix(self, prefix: bytes, limit: int) -> list[bytes]:
        """The first *limit* terms (in order) that start with *prefix* (prefix search)."""
        out: list[bytes] = []
        k = max(bisect.bisect_right(self._first, prefix) - 1, 0)
        while k < self._blocks and len(out) < limit:
            terms = self._block(k).terms
            for i in range(bisect.bisect_left(terms, prefix), len(terms)):
                if not terms[i].startswith(prefix) or len(out) >= limit:
                    return out
                out.append(terms[i])
            k += 1
        return out

    def _read_once(self, k: int) -> _Block:
        """Block *k* without caching it (a full scan should not evict the lookups' blocks)."""
        found = self._block(k)
        self._cache.pop(k, None)
        return found

    def close(self) -> None:
        self._cache.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
