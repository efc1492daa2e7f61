"""Keep a generation's cold lexicon segments: one per bucket of its cold digests.

::

    cold sessions ─► buckets (a hash of the path; ~BUCKET_DIGESTS sessions per bucket)
        a segment over exactly that bucket exists ─► reuse it
        otherwise ─► build it from the bucket's vocabularies (now, or one per idle step)
    ─► the manifest's ``lexicon``: every bucket's segment, in bucket order

The segmentation is a function of the set of cold digests only, so a live pipeline and a
clean rebuild of the same sources publish the same segment files (the index converges to
exactly what a rebuild gives), and a session that turns cold rewrites one bucket, not the
history's lexicon. Until a changed bucket is rebuilt, the segments it replaces stay listed:
readers ignore the digests that are no longer cold and answer for the one a segment does
not cover yet from its own digest, so coverage never has a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import blake3
import structlog

from store.codec import decode
from store.errors import CorruptRecord, SchemaVersionError
from store.lexicon import DigestVocabulary, LexiconSegment, encode_lexicon
from store.records import ColdDigest, SessionState
from store.writer import StoreWriter

__all__ = [
    "BUCKET_DIGESTS",
    "LexiconKeeper",
    "LexiconPlan",
    "bucket_count",
    "bucket_of",
    "build_bucket",
    "vocabulary_from_record",
]

log = structlog.get_logger()

# Digests per bucket, about: a lookup probes every bucket's segment, a cold change rebuilds
# one bucket. The count of buckets doubles as the cold tier grows (a power of two).
BUCKET_DIGESTS: Final = 256

VocabularySource = Callable[[str], DigestVocabulary]


def bucket_count(digests: int) -> int:
    count = 1
    while count * BUCKET_DIGESTS < digests:
        count *= 2
    return count


def _path_hash(path: str) -> int:
    digest = blake3.blake3(path.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big")


def bucket_of(path: str, count: int) -> int:
    """The bucket (of *count*) the session at *path* falls in."""
    return _path_hash(path) % count


def vocabulary_from_record(writer: StoreWriter) -> VocabularySource:
    """Read a cold digest's vocabularies back from its stored record."""

    def read(name: str) -> DigestVocabulary:
        path = writer.layout.record_path(name)
        digest = decode(path.read_bytes(), expect=ColdDigest, path=str(path))
        active = digest.view("active").vocabulary
        every = digest.view("all").vocabulary
        return DigestVocabulary(name, active, None if every == active else every)

    return read


@dataclass(frozen=True, slots=True)
class LexiconPlan:
    """What one generation's lexicon should be and what is still missing."""

    buckets: tuple[tuple[str, ...], ...]  # every bucket's digest names (sorted), in order
    found: tuple[str | None, ...]  # the segment over each bucket, None when not written
    stale: tuple[str, ...]  # earlier segments listed until the missing buckets are built

    @property
    def todo(self) -> tuple[tuple[str, ...], ...]:
        return tuple(b for b, f in zip(self.buckets, self.found, strict=True) if f is None)

    @property
    def segments(self) -> tuple[str, ...]:
        ready = tuple(f for f in self.found if f is not None)
        return ready + self.stale if self.todo else ready


class LexiconKeeper:
    """Plans, builds and remembers the lexicon segments one writer publishes."""

    def __init__(self, writer: StoreWriter, vocabulary: VocabularySource | None = None) -> None:
        self.writer = writer
        self.vocabulary = vocabulary or vocabulary_from_record(writer)
        self._digests: dict[str, tuple[str, ...]] = {}
        self._hashes: dict[str, int] = {}  # path -> its bucket hash (a live pipeline replans)

    def digests(self, segment: str) -> tuple[str, ...] | None:
        """The digest names *segment* covers (read once), or None when it cannot be read."""
        found = self._digests.get(segment)
        if found is None:
            try:
                segment_file = LexiconSegment(self.writer.layout.record_path(segment))
            except (OSError, CorruptRecord, SchemaVersionError) as exc:
                log.warning("lexicon.unreadable", segment=segment, error=str(exc))
                return None
            found = self._digests[segment] = segment_file.digests
            segment_file.close()
        return found

    def plan(self, known: Iterable[str], cold: Iterable[SessionState]) -> LexiconPlan:
        """The plan for cold sessions *cold*, reusing any of the *known* segments."""
        by_name = {s.index_record: s.path for s in cold}
        names = sorted(by_name)
        count = bucket_count(len(names))
        buckets: dict[int, list[str]] = {}
        hashes = self._hashes
        for name in names:
            path = by_name[name]
            h = hashes.get(path)
            if h is None:
                h = hashes[path] = _path_hash(path)
            buckets.setdefault(h % count, []).append(name)
        have: dict[tuple[str, ...], str] = {}
        for segment in dict.fromkeys(known):
            digests = self.digests(segment)
            if digests is not None:
                have.setdefault(digests, segment)
        ordered = [tuple(buckets[n]) for n in sorted(buckets)]
        found = tuple(have.get(b) for b in ordered)
        used = {f for f in found if f is not None}
        live = set(names)
        stale = tuple(
            s
            for s in dict.fromkeys(known)
            if None in found and s not in used and any(d in live for d in self._digests.get(s, ()))
        )
        return LexiconPlan(tuple(ordered), found, stale)

    def build(self, digests: Sequence[str]) -> str:
        """Write the segment over *digests* (one bucket, names sorted); returns its name."""
        data = encode_lexicon([self.vocabulary(name) for name in digests])
        segment, _ = self.writer.put_lexicon(data)
        self._digests[segment] = tuple(digests)
        return segment

    def complete(
        self,
        known: Iterable[str],
        cold: Iterable[SessionState],
        build_all: BucketBuilder | None = None,
    ) -> tuple[str, ...]:
        """Every bucket's segment for *cold*, building the missing ones now.

        *build_all* builds a list of buckets (elsewhere: in worker processes) and returns
        their segment names in order; by default this keeper builds them one by one.
        """
        plan = self.plan(known, cold)
        todo = list(plan.todo)
        built = iter(build_all(todo) if build_all is not None and todo else map(self.build, todo))
        out = tuple(f if f is not None else next(built) for f in plan.found)
        for segment, digests in zip(out, plan.buckets, strict=True):
            self._digests.setdefault(segment, digests)
        if todo:
            log.info("lexicon.built", segments=len(todo), reused=len(out) - len(todo))
        return out


BucketBuilder = Callable[[list[tuple[str, ...]]], Sequence[str]]


def build_bucket(index_dir: str, digests: tuple[str, ...]) -> tuple[str, int]:
    """Build one bucket's segment in a worker process: (segment name, bytes written)."""
    writer = StoreWriter(Path(index_dir))
    segment = LexiconKeeper(writer).build(digests)
    return segment, writer.bytes_written
