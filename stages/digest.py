"""Digest: fold normalized entries into the records the query side reads.

    NormalizeResult (complete text) ──► SessionEntries   every session (expand, hydration)
                                    ──► HotShard         hot tier: display text + postings
                                    ──► ColdDigest       cold tier: vocabulary + addresses

Postings and vocabulary always cover each entry's *complete* normalized text; only the
shard's display text is cut to ``maxEntryChars`` Unicode scalars. So a literal query stays
provable on sessions with huge tool outputs, and ``max_entry_chars`` only qualifies phrase and
regex answers, whose haystack is the display text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from stages.lineage import Lineage
from stages.normalized import NormalizeResult
from stages.policy import Policy
from stages.source import SourceSession
from store.codec import encode
from store.names import SIDECHAIN
from store.postings import index_entries, shared_stats
from store.rankstats import (
    entry_stats,
    session_term_stats,
    session_term_stats_over,
    term_stats_bytes,
)
from store.reasons import (
    MAX_COLD_CACHE_BYTES,
    MAX_COLD_VOCABULARY_BYTES,
    MAX_ENTRY_CHARS,
    RECORD_REASONS,
)
from store.records import (
    Address,
    ColdDigest,
    ColdView,
    EntriesView,
    HotShard,
    NormalizedEntry,
    SessionEntries,
    ShardView,
    ViewSummary,
)
from store.tokens import tokenize

__all__ = [
    "MAX_FILES_TOUCHED",
    "SessionFold",
    "ViewInput",
    "address_of",
    "build_digest",
    "build_entries",
    "build_shard",
    "summarize",
]

MAX_FILES_TOUCHED = 50


@dataclass(frozen=True, slots=True)
class ViewInput:
    """One branch mode's lineage and normalized entries, with its merged coverage reasons."""

    lineage: Lineage
    normalized: NormalizeResult

    @property
    def branches(self) -> str:
        return self.lineage.branches

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.lineage.reasons) | set(self.normalized.reasons)))


@dataclass(frozen=True, slots=True)
class SessionFold:
    """Identity of the session a record describes (shared by every record of it)."""

    path: str
    session_id: str
    agent: str
    cwd: str
    source_hash: str
    policy: str
    file_reasons: tuple[str, ...]

    @classmethod
    def of(
        cls,
        session: SourceSession,
        *,
        path: str,
        source_hash: str,
        policy: Policy,
        file_reasons: tuple[str, ...],
    ) -> SessionFold:
        """The fold of *session* read from *path*, its bytes hashing to *source_hash*."""
        return cls(
            path=path,
            session_id=session.session_id,
            agent=session.agent,
            cwd=session.cwd,
            source_hash=source_hash,
            policy=policy.fingerprint(),
            file_reasons=file_reasons,
        )


def _distinct(views: Sequence[ViewInput]) -> list[ViewInput]:
    """``active`` first; ``all`` only when it selects other records than ``active``."""
    active = next(v for v in views if v.branches == "active")
    out = [active]
    for v in views:
        if v.branches != "active" and v.lineage.selected != active.lineage.selected:
            out.append(v)
    return out


def _reasons(fold: SessionFold, view: ViewInput, extra: Sequence[str] = ()) -> tuple[str, ...]:
    return tuple(sorted(set(fold.file_reasons) | set(view.reasons) | set(extra)))


def build_entries(fold: SessionFold, views: Sequence[ViewInput]) -> SessionEntries:
    """The complete normalized entries of every distinct view."""
    return SessionEntries(
        path=fold.path,
        session_id=fold.session_id,
        agent=fold.agent,
        source_hash=fold.source_hash,
        policy=fold.policy,
        views=tuple(
            EntriesView(
                branches=v.branches,
                lineage_fingerprint=v.lineage.fingerprint,
                entries=v.normalized.entries,
                reasons=_reasons(fold, v),
            )
            for v in _distinct(views)
        ),
    )


def _display(
    entries: Sequence[NormalizedEntry], max_chars: int
) -> tuple[list[NormalizedEntry], bool]:
    out: list[NormalizedEntry] = []
    cut_any = False
    for e in entries:
        if len(e.text) > max_chars:
            # Python str indexes by Unicode scalar, so a cut never splits a character.
            out.append(replace(e, text=e.text[:max_chars], truncated=True))
            cut_any = True
        else:
            out.append(e)
    return out, cut_any


def build_shard(fold: SessionFold, views: Sequence[ViewInput], policy: Policy) -> HotShard:
    """A hot shard: display entries plus postings over the complete texts
    (``store.postings.index_entries``, as the query side indexes a hydrated session)."""
    shard_views: list[ShardView] = []
    distinct = _distinct(views)
    # one view: no entry comes twice, nothing to share
    stats = shared_stats() if len(distinct) > 1 else entry_stats
    for v in distinct:
        entries, cut = _display(v.normalized.entries, policy.max_entry_chars)
        lengths, postings = index_entries(v.normalized.entries, stats)
        shard_views.append(
            ShardView(
                branches=v.branches,
                lineage_fingerprint=v.lineage.fingerprint,
                entries=tuple(entries),
                token_counts=tuple(lengths),
                postings=postings,
                reasons=_reasons(fold, v, [MAX_ENTRY_CHARS] if cut else []),
            )
        )
    return HotShard(
        path=fold.path,
        session_id=fold.session_id,
        agent=fold.agent,
        cwd=fold.cwd,
        source_hash=fold.source_hash,
        policy=fold.policy,
        views=tuple(shard_views),
    )


def address_of(e: NormalizedEntry) -> Address:
    return (
        e.index,
        e.entry_id,
        e.operation_address,
        e.role,
        e.tool,
        e.timestamp,
        e.ref,
        e.provider,
        e.action,
        e.outcome,
        e.is_error,
        e.family,
        SIDECHAIN if e.sidechain else None,
    )


def _vocabulary(
    entries: Sequence[NormalizedEntry],
    terms: Collection[bytes],
    budget: int,
    ordered: list[bytes] | None = None,
) -> tuple[bytes, int, bool, list[bytes] | None]:
    """The sorted vocabulary blob, its size by the seed's estimate, whether it was cut, and
    (uncut) its terms in order (*ordered*, when the caller has them sorted already).

    *terms* is every term of *entries* (``term_set`` of their texts). The seed folds unique
    terms in entry order and stops at the first term that would pass *budget* (each term costs
    its JSON string's UTF-8 bytes, plus a comma after the first, inside "[]"). Most sessions
    fit whole, so the ordered fold runs only when the whole set would not fit.
    """
    # Byte order is code point order, the order the query side searches the blob in.
    if ordered is None:
        ordered = sorted(terms)
    blob = b"\n".join(ordered)
    n = len(terms)
    # 2 for "[]"; per term its bytes plus 2 quotes; n - 1 commas == the blob's n - 1 newlines
    used = 2 + len(blob) + 2 * n
    if used <= budget:
        return blob, used, False, ordered
    seen: set[str] = set()
    order: list[str] = []
    used = 2
    for e in entries:
        for term in dict.fromkeys(tokenize(e.text)):
            if term in seen:
                continue
            size = len(term) if term.isascii() else len(term.encode("utf-8"))
            cost = size + 2 + (1 if order else 0)
            if used + cost > budget:
                return _blob(order), used, True, None
            seen.add(term)
            order.append(term)
            used += cost
    return _blob(order), used, False, None  # pragma: no cover - the whole set did not fit


def _blob(terms: Iterable[str]) -> bytes:
    # Code point order is UTF-8 byte order, so sorting the strings sorts the bytes.
    return "\n".join(sorted(terms)).encode("utf-8")


def _view_terms(views: Sequence[ViewInput]) -> list[tuple[set[bytes], Counter[bytes]]]:
    """Every term of each view's texts and its prose counts (``store.rankstats``). A later
    view with the very same entries (``all`` without other branches) shares the first's; one
    holding the first's entries and more tokenizes only what it adds."""
    out: list[tuple[set[bytes], Counter[bytes]]] = []
    for v in views:
        if out and v.normalized is views[0].normalized:
            out.append(out[0])
        elif out:
            first = views[0].normalized.entries
            out.append(session_term_stats_over(v.normalized.entries, first, out[0]))
        else:
            out.append(session_term_stats(v.normalized.entries))
    return out


def _sorted_over(
    terms: set[bytes], first: tuple[set[bytes], list[bytes]] | None
) -> list[bytes] | None:
    """*terms* sorted, when they hold the terms *first* has in order (``all`` holds every
    term of ``active``, and often no other): only the terms it adds are sorted, and one
    merge of the two runs (Timsort finds them) puts them in place; else None."""
    if first is None:
        return None
    base, ordered = first
    if terms is base:
        return ordered
    if len(terms) < len(base) or not base <= terms:
        return None
    merged = ordered + sorted(terms - base)
    merged.sort()
    return merged


def _term_stats(
    vocabulary: bytes, ordered: list[bytes] | None, stats: tuple[set[bytes], Counter[bytes]]
) -> bytes:
    """The vocabulary's ranking bytes; *ordered* is its terms when ``_vocabulary`` has them."""
    if not vocabulary:
        return b""
    return term_stats_bytes(ordered or vocabulary.split(b"\n"), stats[1])


def build_digest(fold: SessionFold, views: Sequence[ViewInput], policy: Policy) -> ColdDigest:
    """A cold digest honouring ``maxColdVocabularyBytes`` and ``maxColdCacheBytes``."""
    cold_views: list[ColdView] = []
    distinct = _distinct(views)
    whole: tuple[tuple[set[bytes], Counter[bytes]], tuple[bytes, int, bool, bytes]] | None = None
    # the first uncut view's term set and its terms in order
    first: tuple[set[bytes], list[bytes]] | None = None
    for v, stats in zip(distinct, _view_terms(distinct), strict=True):
        entries = v.normalized.entries
        if whole is not None and whole[0] is stats:
            # Uncut, a vocabulary depends on its term set alone (a cut one on entry order).
            vocabulary, vocab_bytes, vocab_capped, term_stats = whole[1]
        else:
            vocabulary, vocab_bytes, vocab_capped, ordered = _vocabulary(
                entries,
                stats[0],
                policy.max_cold_vocabulary_bytes,
                _sorted_over(stats[0], first),
            )
            term_stats = _term_stats(vocabulary, ordered, stats)
            if not vocab_capped:
                whole = (stats, (vocabulary, vocab_bytes, vocab_capped, term_stats))
                if first is None and ordered is not None:
                    first = (stats[0], ordered)
        histogram: dict[str, int] = {}
        files: dict[str, None] = {}
        stamps = [e.timestamp for e in entries if e.timestamp is not None]
        for e in entries:
            if e.tool is not None:
                histogram[e.tool] = histogram.get(e.tool, 0) + 1
            for f in e.files_touched:
                f = f.strip()
                if f and len(files) < MAX_FILES_TOUCHED:
                    files.setdefault(f, None)
        extra = [MAX_COLD_VOCABULARY_BYTES] if vocab_capped else []
        cold_views.append(
            ColdView(
                branches=v.branches,
                lineage_fingerprint=v.lineage.fingerprint,
                entry_count=len(entries),
                first_ts=min(stamps) if stamps else None,
                last_ts=max(stamps) if stamps else None,
                files_touched=tuple(files),
                tool_histogram=tuple(sorted(histogram.items())),
                error_count=sum(1 for e in entries if e.is_error),
                vocabulary=vocabulary,
                vocabulary_bytes=vocab_bytes,
                addresses=tuple(address_of(e) for e in entries),
                reasons=_reasons(fold, v, extra),
                term_stats=term_stats,
            )
        )
    digest = ColdDigest(
        path=fold.path,
        session_id=fold.session_id,
        agent=fold.agent,
        cwd=fold.cwd,
        source_hash=fold.source_hash,
        policy=fold.policy,
        views=tuple(cold_views),
    )
    return _fit(digest, policy.max_cold_cache_bytes)


def _fit(digest: ColdDigest, cap: int) -> ColdDigest:
    """Keep the persisted digest within *cap*: the longest address prefix that fits, then the
    longest vocabulary prefix; either cut marks ``max_cold_cache_bytes``."""
    if len(encode(digest)) <= cap:
        return digest

    def with_views(views: list[ColdView]) -> ColdDigest:
        return replace(digest, views=tuple(views))

    views = list(digest.views)
    for i, view in enumerate(views):
        reasons = tuple(sorted(set(view.reasons) | {MAX_COLD_CACHE_BYTES}))
        views[i] = replace(view, reasons=reasons)
    # Trim the views in order; a later view is emptied first so "active" keeps the most.
    for i in reversed(range(len(views))):
        full = views[i]

        def addresses(n: int, full: ColdView = full, i: int = i) -> ColdDigest:
            trial = list(views)
            trial[i] = replace(full, addresses=full.addresses[:n])
            return with_views(trial)

        n = _longest(len(full.addresses), lambda n: len(encode(addresses(n))) <= cap)
        if n >= 0:
            views[i] = replace(full, addresses=full.addresses[:n])
            return with_views(views)
        terms = full.vocabulary.split(b"\n") if full.vocabulary else []

        def vocab(
            n: int, full: ColdView = full, i: int = i, terms: list[bytes] = terms
        ) -> ColdDigest:
            trial = list(views)
            trial[i] = replace(
                full,
                addresses=(),
                vocabulary=b"\n".join(terms[:n]),
                term_stats=full.term_stats[:n],
            )
            return with_views(trial)

        m = _longest(len(terms), lambda n: len(encode(vocab(n))) <= cap)
        views[i] = replace(
            full,
            addresses=(),
            vocabulary=b"\n".join(terms[: max(m, 0)]),
            term_stats=full.term_stats[: max(m, 0)],
        )
        if m >= 0:
            return with_views(views)
    return with_views(views)


def _longest(size: int, fits: Callable[[int], bool]) -> int:
    """The largest n in 0..size with fits(n), or -1 when even 0 does not fit."""
    if not fits(0):
        return -1
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# Reasons a record adds on top of lineage and normalization (display cut, digest caps).


def summarize(
    fold: SessionFold, views: Sequence[ViewInput], record: HotShard | ColdDigest
) -> tuple[ViewSummary, ...]:
    """Every view's summary (``all`` included even when it shares the active record)."""
    out: list[ViewSummary] = []
    for v in sorted(views, key=lambda v: v.branches != "active"):
        added = [r for r in record.view(v.branches).reasons if r in RECORD_REASONS]
        stamps = [e.timestamp for e in v.normalized.entries if e.timestamp is not None]
        out.append(
            ViewSummary(
                branches=v.branches,
                lineage_fingerprint=v.lineage.fingerprint,
                leaf_id=v.lineage.leaf_id,
                entry_count=len(v.normalized.entries),
                reasons=_reasons(fold, v, added),
                first_ts=min(stamps) if stamps else None,
                last_ts=max(stamps) if stamps else None,
            )
        )
    return tuple(out)
