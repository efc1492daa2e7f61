"""Query execution: candidates, scores and one ranked stream of entries and cold sessions.

::

    hot shards (display or hydrated text) ──► filtered candidates, scope order (≤ 50,000 that
        hold a query term for a literal; ≤ 50,000 in scope for phrase, regex and browse)
        literal: Σ idf × (FLOOR + (1 − FLOOR) × BM25F quality of the best passage, per
                 field with its provenance weight) × share of the query's idf matched
        phrase:  NFKC-lowercased substring of the text × weight
        regex:   worker over entry texts × weight
        browse:  score 0 (1 with a structural filter)
    cold digests ──► filter by structural addresses ──► vocabulary candidates (≤ 10,000)
        literal and phrase: the same shape, quality from the digest's per-term byte, one IDF
        with the hot tier (``_Idf``); browse 0/1; regex = terms hit
    both ──► sort (score ↓, session mtime ↓, entries first, index ↑, file ↑) ──► ≤ 10,000 items

Every cap and every claim the cold tier cannot prove becomes a named coverage reason; the
result never pretends to be more complete than its inputs (reference §1.6/§1.7).
"""

from __future__ import annotations

import bisect
import heapq
import math
import sys
from array import array
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, overload

from query.args import Filters
from query.generation import ColdSession, HotIndex, RecordUnavailable, ShardData
from query.lexicon import ColdLexicon, ScopePlaces, flag_of
from query.literals import Clauses, fold, required
from query.prefix import expand, prefixes_of
from query.regex import RegexLimits, RegexRunner
from query.vocabulary import TermIndex, blob_contains, blob_terms
from store.lexicon import LexiconSegment
from store.postings import decode_pairs
from store.rankstats import BUCKET_BITS, SEGMENTS, segments, split
from store.reasons import (
    CANDIDATE_DIGEST_BUDGET,
    CANDIDATE_ENTRY_BUDGET,
    CANDIDATE_ITEM_BUDGET,
    COLD_ALL_TERMS_REQUIRES_HYDRATION,
    COLD_PHRASE_REQUIRES_HYDRATION,
    COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION,
    PREFIX_EXPANSION_LIMIT,
    REGEX_MAX_HAYSTACK_BYTES,
    REGEX_MAX_HAYSTACK_TERMS,
)
from store.records import NormalizedEntry
from store.tokens import normalize_text, unique_terms

__all__ = [
    "DEFAULT_BUDGETS",
    "Budgets",
    "ColdScope",
    "EntryItem",
    "HotScope",
    "Plan",
    "SearchResult",
    "SessionItem",
    "plan_query",
    "provenance_weight",
    "search",
]

K1: Final = 1.2
B: Final = 0.75
# A field's length (tokens, capped at store.rankstats.PASSAGE) at which its tf counts as is.
PIVOT: Final = 40
# Share of a matched term's IDF an entry earns however weak its tf, length and provenance:
# tf, length and provenance order entries that match the same terms, IDF orders the rest.
FLOOR: Final = 0.5
# A cold session's term quality from its digest byte: only in plumbing, or in prose, plus up
# to COLD_SPAN more by BM25's saturated tf of how often its prose says it, for its length.
COLD_PROSE: Final = 0.6
COLD_PLUMBING: Final = 0.2
COLD_SPAN: Final = 0.4
# A regex walks the whole cold lexicon when the scope holds at least 1/this of its digests.
_LEXICON_WALK_SHARE: Final = 8


@dataclass(frozen=True, slots=True)
class Budgets:
    entries: int = 50_000
    digests: int = 10_000
    items: int = 10_000
    # cold candidates whose digest term statistics a query reads (best bound first): at most
    # this many, and at most cold_stats_per_kept per item a page keeps (a page of 10: 20)
    cold_stats: int = 256
    cold_stats_per_kept: int = 2


DEFAULT_BUDGETS: Final = Budgets()


@dataclass(frozen=True, slots=True)
class Plan:
    """What to look for: ``kind`` is browse, literal, phrase or regex."""

    kind: str
    terms: tuple[str, ...] = ()
    phrase: str = ""
    pattern: str = ""
    match: str = "any"
    # literal terms (also in ``terms``) that stand for every term they begin (query.prefix)
    prefixes: tuple[str, ...] = ()


def plan_query(query: str | None, mode: str, match: str) -> Plan:
    """The seed's planner: a blank query browses; literal input is only ever tokenized."""
    if query is None or not query.strip():
        return Plan("browse")
    if mode == "regex":
        return Plan("regex", pattern=query)
    if mode == "phrase":
        phrase = normalize_text(query.strip())
        return Plan("phrase", terms=tuple(unique_terms(phrase)), phrase=phrase, match="all")
    prefixes = prefixes_of(query, match)
    return Plan("literal", terms=tuple(unique_terms(query)), match=match, prefixes=prefixes)


def provenance_weight(e: NormalizedEntry, filters: Filters) -> float:
    """Human prose ahead of tool plumbing, unless the filters ask for operations."""
    return 1.0 if filters.operational else _prose_weight(e)


def _prose_weight(e: NormalizedEntry) -> float:
    tool, role = e.tool, e.role
    if tool is None and role == "assistant":
        return 2.5
    if tool is None and role == "user":
        return 2.25
    if tool is None and role in ("compactionSummary", "custom"):
        return 1.5
    if role in ("toolResult", "fabricOperation"):
        return 0.75
    if tool is not None:
        return 0.7
    return 1.0


# ------------------------------------------------------------------------------------ items


@dataclass(slots=True)
class EntryItem:
    shard: ShardData
    pos: int
    score: float

    @property
    def entry(self) -> NormalizedEntry:
        return self.shard.entries[self.pos]

    def key(self) -> tuple[float, int, int, int, bytes]:
        order = self.shard.order
        return (-self.score, order[0], 0, self.shard.entries[self.pos].index, order[1])


@dataclass(slots=True)
class SessionItem:
    cold: ColdSession
    score: float
    matched_terms: int
    matched_structural: int

    def key(self) -> tuple[float, int, int, int, bytes]:
        order = self.cold.order
        return (-self.score, order[0], 1, 0, order[1])


Item = EntryItem | SessionItem


@dataclass(slots=True)
class SearchResult:
    """The ranked items (the first ``total``, or only the first ``keep`` asked for)."""

    items: list[Item] = field(default_factory=list)
    total: int = 0
    reasons: set[str] = field(default_factory=set)
    error: dict[str, str] | None = None
    # cold sessions whose digest record could not be read when the search needed it
    unavailable: set[str] = field(default_factory=set)
    # a cold lexical candidate of which the structural filters hold for some entries only:
    # which of its entries holds the terms, only hydration can tell
    partly_filtered: bool = False


# ----------------------------------------------------------------------------------- scopes


@dataclass(frozen=True, slots=True)
class HotScope:
    """Hot (or hydrated) shards to search, in scope order, and an optional index range."""

    index: HotIndex
    shards: tuple[int, ...]
    entry_range: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class ColdScope:
    """Cold digests to search, in scope order; ``lexicon`` when the generation has one (it
    answers for the digests it covers), else ``terms`` once the merged index is built."""

    sessions: tuple[ColdSession, ...]
    terms: tuple[TermIndex, dict[str, int]] | None = None
    lexicon: ColdLexicon | None = None
    branches: str = "active"
    # where each digest sits in ``sessions`` for the lexicon (memoized per scope by the
    # generation, so a lookup need not visit every session)
    places: ScopePlaces | None = None


@dataclass(slots=True)
class _Selection:
    positions: Sequence[int]
    member: Container[int]


@dataclass(slots=True)
class _Candidates:
    by_shard: dict[int, _Selection]
    order: list[int]
    count: int
    exceeded: bool


# No cap on the candidates of a literal query: its budget counts the entries that match.
_UNCAPPED: Final = sys.maxsize


def _select(scope: HotScope, filters: Filters, limit: int) -> _Candidates:
    """Filtered hot candidates in scope order, at most *limit* of them."""
    by_shard: dict[int, _Selection] = {}
    order: list[int] = []
    count = 0
    exceeded = False
    first, last = scope.entry_range or (None, None)
    filtered = filters.any
    for no in scope.shards:
        shard = scope.index.shards[no]
        n = len(shard.entries)
        if first is None and not filtered:
            positions: Sequence[int] = range(n)
        else:
            positions = [
                pos
                for pos, e in enumerate(shard.entries)
                if (first is None or (first <= e.index and (last is None or e.index <= last)))
                and filters.matches(e)
            ]
        if not positions:
            continue
        room = limit - count
        if len(positions) > room:
            exceeded = True
            positions = positions[:room]
            if not positions:
                break
        member: Container[int] = positions if isinstance(positions, range) else set(positions)
        by_shard[no] = _Selection(positions, member)
        order.append(no)
        count += len(positions)
        if exceeded:
            break
    return _Candidates(by_shard, order, count, exceeded)


# -------------------------------------------------------------------------------------- hot


def _field_weights(e: NormalizedEntry, filters: Filters) -> tuple[float, float]:
    """Provenance per field (prose, plumbing); 1 for both when the filters ask for operations."""
    if filters.operational:
        return 1.0, 1.0
    role = e.role
    plumbing = 0.75 if role in ("toolResult", "fabricOperation") else 0.7
    if role == "assistant":
        return 2.5, plumbing
    if role == "user":
        return 2.25, plumbing
    if role in ("compactionSummary", "custom"):
        return 1.5, plumbing
    return 1.0, plumbing


def _norm(length: int) -> float:
    return 1 - B + B * length / PIVOT


def _quality(tf: int, length: int, weights: tuple[float, float]) -> float:
    """How well one entry holds one term, in [0, 1): BM25F's saturated, length-normalised tf
    over its prose and plumbing fields (``store.rankstats`` packs both in *tf* and *length*)."""
    (t_prose, t_plumbing), (l_prose, l_plumbing) = split(tf, length)
    weighted = 0.0
    if t_prose:
        weighted += weights[0] * t_prose / _norm(l_prose)
    if t_plumbing:
        weighted += weights[1] * t_plumbing / _norm(l_plumbing)
    return weighted / (weighted + K1)


def idf_of(n: float, df: float) -> float:
    return math.log((n - df + 0.5) / (df + 0.5) + 1)


class _Idf:
    """One IDF per query term over the hot candidates and the cold sessions together, so hot
    entries and cold sessions are scored on one scale.

    ``N`` is the hot candidates plus the entries of the cold sessions in scope; a term's
    ``df`` its hot entries plus an estimate for the cold sessions holding it: each holds it in
    as many entries as the hot sessions holding it do on average (1 when no hot one does),
    at most ``N`` in all.
    Without cold sessions this is the seed's BM25 IDF over the hot candidates.
    """

    __slots__ = (
        "_values",
        "cold_entries",
        "cold_holders",
        "cold_sessions",
        "hot_df",
        "hot_holders",
        "hot_n",
    )

    def __init__(self, hot_n: int, hot_df: list[int], hot_holders: list[int]) -> None:
        self.hot_n = hot_n
        self.hot_df = hot_df
        self.hot_holders = hot_holders
        self.cold_entries = 0
        self.cold_sessions = 0
        self.cold_holders = [0] * len(hot_df)
        self._values: list[float] | None = None

    def norm(self, entries: int) -> float:
        """BM25's length norm of a cold session of *entries* entries, against the average
        cold session in scope (a session's length is its entry count, from the manifest)."""
        average = self.cold_entries / self.cold_sessions if self.cold_sessions else 1.0
        return 1 - B + B * entries / max(average, 1.0)

    @classmethod
    def cold_only(cls, n_terms: int) -> _Idf:
        return cls(0, [0] * n_terms, [0] * n_terms)

    def values(self) -> list[float]:
        if self._values is None:
            n = self.hot_n + self.cold_entries
            out: list[float] = []
            for df, holders, cold in zip(
                self.hot_df, self.hot_holders, self.cold_holders, strict=True
            ):
                density = df / holders if holders else 1.0
                total = min(df + cold * density, n)  # an estimate never passes N
                out.append(idf_of(max(n, 1), total) if total else 0.0)
            self._values = out
        return self._values


Found = list[list[tuple[int, int, int]]]  # per term: (shard, position, packed tf)


def _hot_found(scope: HotScope, cand: _Candidates, plan: Plan) -> Found:
    """The candidates holding each term, with their packed tf."""
    out: Found = []
    for term in plan.terms:
        found: list[tuple[int, int, int]] = []
        out.append(found)
        if cand.count == 0:
            continue
        for no, data in scope.index.postings(term):
            sel = cand.by_shard.get(no)
            if sel is None:
                continue
            pairs = decode_pairs(data)
            member = sel.member
            for i in range(0, len(pairs), 2):
                pos = pairs[i]
                if pos in member:
                    found.append((no, pos, pairs[i + 1]))
    return out


def _cap_matched(found: Found, cand: _Candidates, limit: int) -> bool:
    """Keep in *found* only the first *limit* entries holding a term, in scope order (the
    order ``_select`` chose the shards in, then position); True when any were dropped."""
    matched = {(no, pos) for term_found in found for no, pos, _ in term_found}
    if len(matched) <= limit:
        return False
    rank = {no: i for i, no in enumerate(cand.order)}
    kept = set(sorted(matched, key=lambda key: (rank[key[0]], key[1]))[:limit])
    for term_found in found:
        term_found[:] = [hit for hit in term_found if (hit[0], hit[1]) in kept]
    return True


def _hot_idf(cand: _Candidates, found: Found) -> _Idf:
    return _Idf(cand.count, [len(f) for f in found], [len({no for no, _, _ in f}) for f in found])


def _hot_literal(
    scope: HotScope, found: Found, idf_values: Sequence[float], plan: Plan, filters: Filters
) -> list[Item]:
    """Score = Σ over matched terms of idf × (FLOOR + (1 − FLOOR) × quality), times the share
    of the query's IDF the entry matches (coordination weighted by IDF: a rare term and more
    distinct terms count most; a stop word matched adds little). An entry longer than one
    passage is scored by its best passage: only the terms one passage of it holds count
    (``_best_passage``)."""
    shards = scope.index.shards
    # -> [score, matched idf, matched terms, (idf, part, segment bits) of a long entry's terms]
    acc: dict[tuple[int, int], list[Any]] = {}
    weights: dict[tuple[int, int], tuple[float, float]] = {}
    query_idf = sum(idf_values) or 1.0
    for term_found, idf in zip(found, idf_values, strict=True):
        for no, pos, tf in term_found:
            key = (no, pos)
            w = weights.get(key)
            if w is None:
                w = weights[key] = _field_weights(shards[no].entries[pos], filters)
            part = idf * (FLOOR + (1 - FLOOR) * _quality(tf, shards[no].token_counts[pos], w))
            bits = segments(tf)
            slot = acc.get(key)
            if slot is None:
                acc[key] = [part, idf, 1, [(idf, part, bits)] if bits else None]
            else:
                slot[0] += part
                slot[1] += idf
                slot[2] += 1
                if bits:
                    slot[3].append((idf, part, bits))
    need = len(plan.terms) if plan.match == "all" else 1
    out: list[Item] = []
    for (no, pos), (score, matched_idf, matched, held) in acc.items():
        if matched < need or score <= 0:
            continue
        if held is not None and matched > 1:
            score, matched_idf = _best_passage(held)
        out.append(EntryItem(shards[no], pos, score * matched_idf / query_idf))
    return out


def _best_passage(held: Sequence[tuple[float, float, int]]) -> tuple[float, float]:
    """(Σ part, Σ idf) of the terms of the passage of a long entry holding the most query IDF
    (then the highest score): a passage is two neighbouring segments (``store.rankstats``)."""
    union = 0
    for _, _, bits in held:
        union |= bits
    best = (0.0, 0.0)
    for start in range(SEGMENTS):
        window = 3 << start
        if not union & window:
            continue
        idf = part = 0.0
        for term_idf, term_part, bits in held:
            if bits & window:
                idf += term_idf
                part += term_part
        if (idf, part) > (best[1], best[0]):
            best = (part, idf)
    return best


def _hot_phrase(
    scope: HotScope,
    cand: _Candidates,
    found: Found,
    idf_values: Sequence[float],
    plan: Plan,
    filters: Filters,
) -> list[Item]:
    """Entries whose NFKC-lowercased text holds the phrase, on the literal scale: Σ over the
    phrase's terms of idf × (FLOOR + (1 − FLOOR) × quality), the quality 0 for a term the
    entry holds only inside a longer token. The phrase is all there, so there is no
    coordination share and no passage to pick. Without terms (punctuation only) the score is
    the provenance weight (the seed's)."""
    phrase = plan.phrase
    hits: list[tuple[int, int]] = []
    for no in cand.order:
        texts = scope.index.shards[no].normalized_texts()
        hits.extend((no, pos) for pos in cand.by_shard[no].positions if phrase in texts[pos])
    shards = scope.index.shards
    if not plan.terms:
        weigh = not filters.operational
        return [
            EntryItem(shards[no], pos, _prose_weight(shards[no].entries[pos]) if weigh else 1.0)
            for no, pos in hits
        ]
    quality: list[dict[tuple[int, int], float]] = []
    wanted = set(hits)
    for term_found in found:
        q: dict[tuple[int, int], float] = {}
        quality.append(q)
        for no, pos, tf in term_found:
            key = (no, pos)
            if key in wanted:
                w = _field_weights(shards[no].entries[pos], filters)
                q[key] = _quality(tf, shards[no].token_counts[pos], w)
    out: list[Item] = []
    for key in hits:
        score = 0.0
        for q, idf in zip(quality, idf_values, strict=True):
            score += idf * (FLOOR + (1 - FLOOR) * q.get(key, 0.0))
        out.append(EntryItem(shards[key[0]], key[1], score))
    return out


def _hot_browse(scope: HotScope, cand: _Candidates, filters: Filters) -> list[Item]:
    score = 1.0 if filters.any else 0.0
    out: list[Item] = []
    for no in cand.order:
        shard = scope.index.shards[no]
        out.extend(EntryItem(shard, pos, score) for pos in cand.by_shard[no].positions)
    return out


# ------------------------------------------------------------------------------------- cold


class _Unfiltered(Sequence[tuple[ColdSession, int]]):
    """Every cold view of the scope with no structural count: no filter asked for one."""

    __slots__ = ("views",)

    def __init__(self, views: Sequence[ColdSession]) -> None:
        self.views = views

    def __len__(self) -> int:
        return len(self.views)

    @overload
    def __getitem__(self, i: int) -> tuple[ColdSession, int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[ColdSession, int]]: ...
    def __getitem__(
        self, i: int | slice
    ) -> tuple[ColdSession, int] | list[tuple[ColdSession, int]]:
        if isinstance(i, slice):
            return [(c, 0) for c in self.views[i]]
        return (self.views[i], 0)


def _eligible(
    cold: ColdScope, filters: Filters, result: SearchResult
) -> Sequence[tuple[ColdSession, int]]:
    """Digests that hold at least one address matching the filters, with that count."""
    if not filters.any:
        return _Unfiltered(cold.sessions)
    exact = filters.exact()
    out: list[tuple[ColdSession, int]] = []
    for c in cold.sessions:
        n = _matching_addresses(c, exact, filters, result)
        if n > 0:
            out.append((c, n))
    return out


def _matching_addresses(
    c: ColdSession, exact: Sequence[tuple[int, str | None]], filters: Filters, result: SearchResult
) -> int:
    """How many of *c*'s addresses match the filters; 0 (and *c* noted as unavailable) when
    its record cannot be read."""
    try:
        return c.structural_matches(exact, filters.since, filters.until)
    except RecordUnavailable:
        result.unavailable.add(c.state.path)
        return 0


def _has_terms(c: ColdSession, encoded: Sequence[bytes], result: SearchResult) -> list[int]:
    """Which of *encoded* one digest's own vocabulary holds (no lexicon covers it)."""
    try:
        vocabulary = c.vocabulary
    except RecordUnavailable:
        result.unavailable.add(c.state.path)
        return []
    return [i for i, t in enumerate(encoded) if blob_contains(vocabulary, t)]


def _cold_terms(
    cold: ColdScope,
    eligible: Sequence[tuple[ColdSession, int]],
    terms: Sequence[str],
    match_all: bool,
    filters: Filters,
    limit: int,
    keep: int | None,
    stats_budget: int,
    idf_model: _Idf,
    result: SearchResult,
) -> tuple[list[SessionItem], int, bool]:
    """Vocabulary candidates, scored: the items (with *keep*, at least every one that can
    rank among the first *keep*), how many candidates there are, and False when *limit*
    cut them. *eligible* is already filtered unless the lexicon answers (see ``search``)."""
    if not eligible or not terms:
        return [], 0, True
    encoded = [t.encode("utf-8") for t in terms]
    if cold.places is not None and isinstance(eligible, _Unfiltered):
        regions = _lexicon_regions(cold, cold.places, eligible, encoded, match_all, result)
        counts = _structural(regions, eligible.views, filters, result)
        return _score_regions(
            regions, eligible.views, counts, encoded, limit, keep, stats_budget, idf_model, result
        )
    # No lexicon: the merged term index when built, else each digest's own vocabulary.
    holders: list[set[int]] | None = None
    numbers: dict[str, int] = {}
    if cold.terms is not None:
        index, numbers = cold.terms
        holders = [set(index.holders(t)) for t in encoded]
    full = (1 << len(terms)) - 1
    masks: list[tuple[ColdSession, int, int]] = []  # (view, matched terms as bits, structural)
    # A digest outside every holder set is skipped with one set probe, so a rare term
    # costs a dict lookup per digest in scope instead of one per (digest, term).
    anywhere: set[int] = set().union(*holders) if holders is not None else set()
    for c, structural in eligible:
        if holders is not None:
            number = numbers.get(c.state.path, -1)
            if number not in anywhere:
                continue
            hit = [i for i, h in enumerate(holders) if number in h]
        else:
            hit = _has_terms(c, encoded, result)
        if hit:
            masks.append((c, sum(1 << i for i in hit), structural))
    candidates = [m for m in masks if not match_all or m[1] == full]
    matching = len(candidates)
    del candidates[limit:]
    if filters.any:
        result.partly_filtered |= not all(c.covers_every_entry(n) for c, _, n in candidates)
    groups: dict[int, list[tuple[int, ColdSession, int]]] = {}
    for p, (c, m, structural) in enumerate(candidates):
        groups.setdefault(m, []).append((p, c, structural))
    out = _rank_cold(groups, idf_model, encoded, keep, stats_budget, result)
    return out, len(candidates), matching <= limit


# The last scope's cold entry count, held with the sessions tuple it was summed over.
_LAST_COLD_ENTRIES: list[tuple[tuple[ColdSession, ...], str, int]] = []


def _cold_entries(cold: ColdScope) -> int:
    """How many entries the cold sessions in scope hold (from the manifest, no record read)."""
    if _LAST_COLD_ENTRIES:
        sessions, branches, n = _LAST_COLD_ENTRIES[0]
        if sessions is cold.sessions and branches == cold.branches:
            return n
    n = sum(c.state.view(cold.branches).entry_count for c in cold.sessions)
    _LAST_COLD_ENTRIES[:] = [(cold.sessions, cold.branches, n)]
    return n


def _stats_budget(budgets: Budgets, keep: int | None) -> int:
    if keep is None:
        return budgets.cold_stats
    return min(budgets.cold_stats, budgets.cold_stats_per_kept * max(keep, 1))


def _cold_quality(stat: int, norm: float) -> float:
    """A cold session's quality for one term from its digest byte (``store.rankstats``): only
    in tool output (COLD_PLUMBING), or said in prose: COLD_PROSE plus COLD_SPAN times BM25's
    saturated tf, the tf the least of its bucket (1, 2, 4, ... times) over the session's
    length *norm* (``_Idf.norm``). A session that says the term twice in 20 entries is more
    about it than one that says it twice in 2,000."""
    bucket = stat & BUCKET_BITS
    if not bucket:
        return COLD_PLUMBING
    tf = (1 << (bucket - 1)) / norm
    return COLD_PROSE + COLD_SPAN * tf / (tf + K1)


def _rank_cold(
    groups: Mapping[int, Sequence[tuple[int, ColdSession, int]]],
    idf_model: _Idf,
    encoded: Sequence[bytes],
    keep: int | None,
    budget: int,
    result: SearchResult,
) -> list[SessionItem]:
    """Score cold candidates grouped by the set of terms they hold (bits of *encoded*), each
    member ``(scope position, view, structural count)`` in scope order.

    The score has the hot formula's shape: Σ idf × (FLOOR + (1 − FLOOR) × quality), times the
    share of the query's IDF matched, with the IDF shared with the hot tier (``_Idf``; this
    sets its cold holders) and quality from the digest's per-term byte (prose or plumbing, how
    many entries hold it). Reading a byte costs a digest read, so only the first *budget*
    (``Budgets.cold_stats``) candidates in order of their best possible score, then scope
    order, are read; every other candidate scores its group's least possible score, and of
    those only the first *keep* per group are made (they share one score, so scope order is
    their rank order).
    """
    n_terms = len(encoded)
    idf_model.cold_holders = [
        sum(len(g) for m, g in groups.items() if m >> i & 1) for i in range(n_terms)
    ]
    idf = idf_model.values()
    query_idf = sum(idf) or 1.0
    least = FLOOR + (1 - FLOOR) * COLD_PLUMBING
    held_of = {m: [i for i in range(n_terms) if m >> i & 1] for m in groups}
    best: dict[int, float] = {}
    for m, held in held_of.items():
        matched = sum(idf[i] for i in held)
        best[m] = matched * matched / query_idf
    out: list[SessionItem] = []
    for m in sorted(groups, key=lambda m: (-best[m], m)):
        held = held_of[m]
        share = sum(idf[i] for i in held) / query_idf
        terms = [encoded[i] for i in held]
        rest: list[tuple[int, ColdSession, int]] = []
        for member in groups[m]:
            _, c, structural = member
            if budget <= 0:
                rest.append(member)
                continue
            budget -= 1
            try:
                stats = c.term_stats(terms)
            except RecordUnavailable:
                result.unavailable.add(c.state.path)
                stats = [0] * len(terms)
            norm = idf_model.norm(c.entry_count)
            score = share * sum(
                idf[i] * (FLOOR + (1 - FLOOR) * _cold_quality(stat, norm))
                for i, stat in zip(held, stats, strict=True)
            )
            out.append(SessionItem(c, score, len(held), structural))
        if keep is not None:
            del rest[max(keep, 0) :]
        lower = share * least * sum(idf[i] for i in held)
        out.extend(SessionItem(c, lower, len(held), structural) for _, c, structural in rest)
    return out


def _lexicon_regions(
    cold: ColdScope,
    places: ScopePlaces,
    eligible: _Unfiltered,
    encoded: Sequence[bytes],
    match_all: bool,
    result: SearchResult,
) -> dict[int, set[int]]:
    """Scope positions of the candidates, grouped by the set of terms they hold (as bits).

    Only the digests the lexicon names, and those it does not cover (they answer from their
    own vocabulary), can match. Holder sets come straight in scope positions and the groups
    by set algebra, so a common term costs C-level passes, not Python steps per holder.
    """
    sets = [places.holding(t, cold.branches) for t in encoded]
    for p in places.uncovered:
        for i in _has_terms(eligible[p][0], encoded, result):
            sets[i].add(p)
    if match_all:
        common = set.intersection(*sets)
        return {(1 << len(sets)) - 1: common} if common else {}
    regions: dict[int, set[int]] = {}
    for i, holding in enumerate(sets):
        bit, rest = 1 << i, set(holding)
        split: dict[int, set[int]] = {}
        for m, region in regions.items():
            both = region & rest
            if both:
                split[m | bit] = both
                region -= both
                rest -= both
            if region:
                split[m] = region
        if rest:
            split[bit] = rest
        regions = split
    return regions


def _by_lexicon(cold: ColdScope) -> bool:
    return cold.places is not None  # a scope has places exactly when a lexicon covers it


def _structural(
    regions: dict[int, set[int]],
    views: Sequence[ColdSession],
    filters: Filters,
    result: SearchResult,
) -> dict[int, int]:
    """With structural filters, drop from *regions* the candidates without a matching address
    and return each kept one's count of them (as ``_eligible`` counts, for candidates only)."""
    if not filters.any:
        return {}
    exact = filters.exact()
    counts: dict[int, int] = {}
    for m in list(regions):
        kept: set[int] = set()
        for p in regions[m]:
            n = _matching_addresses(views[p], exact, filters, result)
            if n > 0:
                kept.add(p)
                counts[p] = n
        if kept:
            regions[m] = kept
        else:
            del regions[m]
    return counts


def _score_regions(
    regions: dict[int, set[int]],
    views: Sequence[ColdSession],
    structural: Mapping[int, int],
    encoded: Sequence[bytes],
    limit: int,
    keep: int | None,
    stats_budget: int,
    idf_model: _Idf,
    result: SearchResult,
) -> tuple[list[SessionItem], int, bool]:
    """``_cold_terms``' answer from position groups: the first *limit* positions count."""
    matching = sum(map(len, regions.values()))
    if matching > limit:
        last = sorted(set().union(*regions.values()))[limit - 1]
        regions = {m: kept for m, r in regions.items() if (kept := {p for p in r if p <= last})}
    total = min(matching, limit)
    groups = {
        m: [(p, views[p], structural.get(p, 0)) for p in sorted(region)]
        for m, region in regions.items()
    }
    if structural:
        result.partly_filtered |= not all(
            c.covers_every_entry(n) for group in groups.values() for _, c, n in group
        )
    ranked = _rank_cold(groups, idf_model, encoded, keep, stats_budget, result)
    return ranked, total, matching <= limit


# ------------------------------------------------------------------------------------ regex


def _cold_haystack(
    cold: ColdScope, eligible: Sequence[tuple[ColdSession, int]], result: SearchResult
) -> Iterator[tuple[bytes, Sequence[int]]]:
    """Cold terms of the eligible digests, each with the eligible positions holding it.

    A broad scope walks the lexicon's segments (each term once per segment; the caller
    merges repeats); a scope holding a small share of the covered digests reads their own
    vocabularies instead, since a lexicon walk costs the same however few are in scope.
    """
    lexicon = cold.lexicon
    own: Sequence[int] = range(len(eligible))
    position = _lexicon_walk(cold, eligible)
    if lexicon is not None and position is not None:
        flag = flag_of(cold.branches)
        for segment in lexicon.segments:
            # ordinal -> eligible position (-1: not in scope, or not cold any more)
            at = [position.get(name, -1) for name in segment.digests]
            for term, postings in segment.iter_terms():
                digests = [d for p in postings if p & flag and (d := at[p >> 2]) >= 0]
                if digests:
                    yield term, digests
        own = [d for d, (c, _) in enumerate(eligible) if c.name not in lexicon.covered]
    for d, vocabulary in _own_vocabularies(eligible, own, result.unavailable):
        for term in blob_terms(vocabulary):
            yield term, (d,)


def _lexicon_walk(
    cold: ColdScope, eligible: Sequence[tuple[ColdSession, int]]
) -> dict[str, int] | None:
    """Each eligible digest's position by name when walking the lexicon's segments pays (the
    scope holds a large enough share of the digests they cover), else None: then each
    digest's own vocabulary is read."""
    lexicon = cold.lexicon
    if lexicon is None:
        return None
    position = {c.name: d for d, (c, _) in enumerate(eligible)}
    covered = sum(1 for name in position if name in lexicon.covered)
    if covered and covered * _LEXICON_WALK_SHARE >= len(lexicon.covered):
        return position
    return None


def _own_vocabularies(
    eligible: Sequence[tuple[ColdSession, int]], own: Iterable[int], unavailable: set[str]
) -> Iterator[tuple[int, bytes]]:
    """(position, vocabulary) of the eligible digests at *own*; one whose record cannot be
    read is named in *unavailable* instead."""
    for d in own:
        c = eligible[d][0]
        try:
            vocabulary = c.vocabulary
        except RecordUnavailable:
            unavailable.add(c.state.path)
            continue
        yield d, vocabulary


@dataclass(slots=True)
class _Folded:
    """Texts joined (``\\n`` between) after ``fold``, to find which hold a literal at C speed:
    text *k* is ``folded[starts[k] : starts[k + 1] - 1]``."""

    folded: str
    starts: array[int]

    @classmethod
    def of(cls, texts: Sequence[str]) -> _Folded:
        starts = array("Q", [0])
        at = 0
        parts: list[str] = []
        for text in texts:
            part = fold(text)
            parts.append(part)
            at += len(part) + 1
            starts.append(at)
        return cls("\n".join(parts), starts)

    def holding(self, clauses: Clauses) -> list[int]:
        """Ascending numbers of the texts that hold a string of every clause.

        The clause with the longest shortest string drives: each hit skips to the next text,
        so the work is one C-level ``find`` per candidate; the other clauses are checked on
        the candidates only.
        """
        driver = max(clauses, key=lambda c: min(map(len, c)))
        rest = [c for c in clauses if c is not driver]
        folded, starts = self.folded, self.starts
        found: set[int] = set()
        for literal in driver:
            at = folded.find(literal)
            while at >= 0:
                k = bisect.bisect_right(starts, at) - 1
                found.add(k)
                at = folded.find(literal, starts[k + 1])
        if not rest:
            return sorted(found)
        out: list[int] = []
        for k in sorted(found):
            text = folded[starts[k] : starts[k + 1] - 1]
            if all(any(s in text for s in clause) for clause in rest):
                out.append(k)
        return out


def _span(blob: bytes | str, at: int) -> tuple[int, int]:
    """Start and end of the ``\\n``-separated line of *blob* holding position *at*."""
    if isinstance(blob, bytes):
        end = blob.find(b"\n", at)
        return blob.rfind(b"\n", 0, at) + 1, len(blob) if end < 0 else end
    end = blob.find("\n", at)
    return blob.rfind("\n", 0, at) + 1, len(blob) if end < 0 else end


@dataclass(slots=True)
class _TermText:
    """Sorted terms of one vocabulary (or lexicon segment), ``\\n``-joined: ``search`` after
    ``fold`` and ``original`` at the same positions (bytes while they are ASCII, where folding
    is lowercasing and terms are lowercase already); ``source`` says where holders come from:
    a lexicon segment's number in ``_Corpus.segments``, or -1 for ``digest``'s own."""

    search: bytes | str
    original: bytes | str
    source: int
    digest: int = -1

    def holding(self, clauses: Clauses) -> Iterator[bytes]:
        """The original UTF-8 bytes of every term holding a string of every clause."""
        blob, wide = self.search, isinstance(self.search, str)
        # an ASCII blob cannot hold a string that is not ASCII
        usable = [
            [x if wide else x.encode() for x in clause if wide or x.isascii()] for clause in clauses
        ]
        if not all(usable):
            return
        driver = max(usable, key=lambda c: min(map(len, c)))
        rest = [c for c in usable if c is not driver]
        seen: set[int] = set()
        for literal in driver:
            at = blob.find(literal)  # type: ignore[arg-type]
            while at >= 0:
                start, end = _span(blob, at)
                if start not in seen:
                    seen.add(start)
                    term = blob[start:end]
                    if all(any(x in term for x in clause) for clause in rest):  # type: ignore[operator]
                        found = self.original[start:end]
                        yield found if isinstance(found, bytes) else found.encode("utf-8")
                at = blob.find(literal, end)  # type: ignore[arg-type]


def _term_texts(blob: bytes, source: int, digest: int = -1) -> list[_TermText]:
    if blob.isascii():
        return [_TermText(blob, blob, source, digest)]
    text = blob.decode("utf-8", "surrogateescape")
    folded = fold(text)
    if len(folded) == len(text):
        return [_TermText(folded, text, source, digest)]
    # folding changed a length (it does not for lowercase tokens): each term apart
    return [_TermText(fold(t), t, source, digest) for t in text.split("\n")]


@dataclass(slots=True)
class _Corpus:
    """Everything a regex may run over in one scope, with what finds its candidates: every
    hot entry of the index folded, and the cold vocabularies of the eligible digests as
    joined term texts (the lexicon's segments, or the digests' own)."""

    hot: _Folded | None = None
    hot_targets: list[tuple[int, int]] = field(default_factory=list)  # (shard number, pos)
    cold: list[_TermText] = field(default_factory=list)
    # per lexicon segment used: the segment, and its digest ordinal -> eligible position
    segments: list[tuple[LexiconSegment, list[int]]] = field(default_factory=list)
    flag: int = 0
    unavailable: set[str] = field(default_factory=set)

    def cold_candidates(self, clauses: Clauses) -> list[tuple[str, list[int]]]:
        """Distinct cold terms holding every clause, each with its eligible holders, sorted."""
        found: dict[bytes, list[int]] = {}
        for text in self.cold:
            for term in text.holding(clauses):
                if text.source < 0:
                    holders = [text.digest]
                else:
                    segment, at = self.segments[text.source]
                    flag = self.flag
                    postings = segment.postings(term)
                    holders = [d for p in postings if p & flag and (d := at[p >> 2]) >= 0]
                if holders:
                    found.setdefault(term, []).extend(holders)
        return [(t.decode("utf-8", "replace"), found[t]) for t in sorted(found)]


def _cold_corpus(
    cold: ColdScope, eligible: Sequence[tuple[ColdSession, int]], out: _Corpus
) -> None:
    """The joined term texts ``_cold_haystack`` would walk, read block by block (see there
    for when the lexicon is read and when the digests' own vocabularies are)."""
    lexicon = cold.lexicon
    own: Sequence[int] = range(len(eligible))
    position = _lexicon_walk(cold, eligible)
    if lexicon is not None and position is not None:
        out.flag = flag_of(cold.branches)
        for segment in lexicon.segments:
            at = [position.get(name, -1) for name in segment.digests]
            if max(at, default=-1) < 0:
                continue
            source = len(out.segments)
            out.segments.append((segment, at))
            narrow: list[bytes] = []
            for blob in segment.term_blobs():
                if blob.isascii():
                    narrow.append(blob)
                else:
                    out.cold.extend(_term_texts(blob, source))
            if narrow:
                out.cold.extend(_term_texts(b"\n".join(narrow), source))
        own = [d for d, (c, _) in enumerate(eligible) if c.name not in lexicon.covered]
    for d, vocabulary in _own_vocabularies(eligible, own, out.unavailable):
        if vocabulary:
            out.cold.extend(_term_texts(vocabulary, -1, d))


@dataclass(slots=True)
class _Haystack:
    """What a regex runs over: hot entry texts, then distinct cold terms, within the caps."""

    texts: list[str] = field(default_factory=list)
    targets: list[tuple[ShardData, int]] = field(default_factory=list)
    hot_count: int = 0
    term_holders: list[list[int]] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)
    unavailable: set[str] = field(default_factory=set)


# The last corpus and what it was built from (held, so the identities stay valid): a
# long-lived engine asked regexes over the same scope builds it once per generation.
_LAST_CORPUS: list[tuple[tuple[object, ...], _Corpus]] = []


def _corpus(
    hot: HotScope | None,
    cold: ColdScope | None,
    eligible: Sequence[tuple[ColdSession, int]],
    filters: Filters,
) -> _Corpus:
    key = (
        hot.index if hot else None,
        cold.sessions if cold else None,
        cold.branches if cold else None,
        cold.lexicon if cold else None,
        filters if cold and filters.any else None,  # filters decide the eligible digests
    )
    if _LAST_CORPUS:
        (held, found) = _LAST_CORPUS[0]
        if all(a is b or a == b for a, b in zip(held, key, strict=True)):
            return found
    out = _Corpus()
    if hot is not None:
        shards = hot.index.shards
        out.hot_targets = [
            (no, pos) for no, s in enumerate(shards) for pos in range(len(s.entries))
        ]
        out.hot = _Folded.of([shards[no].entries[pos].text for no, pos in out.hot_targets])
    if eligible and cold is not None:
        _cold_corpus(cold, eligible, out)
    _LAST_CORPUS[:] = [(key, out)]
    return out


def _haystack(
    hot: HotScope | None,
    cold: ColdScope | None,
    eligible: Sequence[tuple[ColdSession, int]],
    plan: Plan,
    filters: Filters,
    limits: RegexLimits,
) -> _Haystack:
    """The candidates of *plan*'s pattern: the texts holding its required literals (every
    text when it requires none), in scope order, within the limits."""
    clauses = required(plan.pattern)
    if clauses is None:
        return _Haystack()  # does not parse: the worker answers invalid_regex on nothing
    # no literal: nothing to find candidates with, every text is one (cut by the limits)
    corpus = _corpus(hot, cold, eligible, filters) if clauses else _Corpus()
    return _build_haystack(hot, cold, eligible, corpus, clauses, filters, limits)


def _build_haystack(
    hot: HotScope | None,
    cold: ColdScope | None,
    eligible: Sequence[tuple[ColdSession, int]],
    corpus: _Corpus,
    clauses: Clauses,
    filters: Filters,
    limits: RegexLimits,
) -> _Haystack:
    out = _Haystack(unavailable=corpus.unavailable)
    haystacks = out.texts
    size = 0

    def fits(text: str, n: int = -1) -> bool:
        nonlocal size
        if n < 0:
            n = len(text.encode("utf-8", "surrogatepass"))
        if len(haystacks) >= limits.max_haystack_terms:
            out.reasons.add(REGEX_MAX_HAYSTACK_TERMS)
            return False
        if size + n > limits.max_haystack_bytes:
            out.reasons.add(REGEX_MAX_HAYSTACK_BYTES)
            return False
        size += n
        return True

    if hot is not None:
        cand = _select(hot, filters, 2**62)
        rank = {no: r for r, no in enumerate(cand.order)}
        targets = corpus.hot_targets
        if clauses and corpus.hot is not None:
            picked = [
                (rank[no], pos)
                for k in corpus.hot.holding(clauses)
                if (no := targets[k][0]) in rank
                and (pos := targets[k][1]) in cand.by_shard[no].member
            ]
            picked.sort()
            chosen = [(cand.order[r], pos) for r, pos in picked]
        else:
            chosen = [(no, pos) for no in cand.order for pos in cand.by_shard[no].positions]
        shards = hot.index.shards
        for no, pos in chosen:
            shard = shards[no]
            text = shard.entries[pos].text
            if not fits(text):
                break
            haystacks.append(text)
            out.targets.append((shard, pos))
    out.hot_count = len(haystacks)
    if out.reasons or not eligible or cold is None:
        return out
    if clauses:
        for term, holders in corpus.cold_candidates(clauses):
            if not fits(term):
                break
            haystacks.append(term)
            out.term_holders.append(holders)
        return out
    # No literal: every distinct term, in walk order, until the limits cut them.
    seen: dict[bytes, int] = {}
    found = SearchResult()
    for raw, digests in _cold_haystack(cold, eligible, found):
        at = seen.get(raw)
        if at is not None:
            out.term_holders[at - out.hot_count].extend(digests)
            continue
        term = raw.decode("utf-8", "replace")
        if not fits(term, len(raw)):
            break
        seen[raw] = len(haystacks)
        haystacks.append(term)
        out.term_holders.append(list(digests))
    out.unavailable = out.unavailable | found.unavailable
    return out


def _regex(
    hot: HotScope | None,
    cold: ColdScope | None,
    eligible: Sequence[tuple[ColdSession, int]],
    plan: Plan,
    filters: Filters,
    runner: RegexRunner,
    budgets: Budgets,
    result: SearchResult,
) -> list[Item]:
    hay = _haystack(hot, cold, eligible, plan, filters, runner.limits)
    result.reasons |= hay.reasons
    result.unavailable |= hay.unavailable
    haystacks, targets, hot_count, term_holders = (
        hay.texts,
        hay.targets,
        hay.hot_count,
        hay.term_holders,
    )
    outcome = runner.run(plan.pattern, haystacks)
    if not outcome.complete:
        assert outcome.error is not None
        result.error = outcome.error
        result.reasons.add(outcome.error["code"])
        return []
    located: list[EntryItem] = []
    hits_per_digest: dict[int, int] = {}
    for i in outcome.matched:
        if i < hot_count:
            shard, pos = targets[i]
            located.append(EntryItem(shard, pos, provenance_weight(shard.entries[pos], filters)))
        else:
            for d in term_holders[i - hot_count]:
                hits_per_digest[d] = hits_per_digest.get(d, 0) + 1
    if len(located) > budgets.entries:
        result.reasons.add(CANDIDATE_ENTRY_BUDGET)
        located = located[: budgets.entries]
    sessions: list[SessionItem] = []
    for d in sorted(hits_per_digest):
        c, structural = eligible[d]
        n = hits_per_digest[d]
        sessions.append(SessionItem(c, float(n), n, structural))
    if len(sessions) > budgets.digests:
        result.reasons.add(CANDIDATE_DIGEST_BUDGET)
        sessions = sessions[: budgets.digests]
    if sessions and filters.any:
        result.reasons.add(COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION)
    return [*located, *sessions]


def _expanded(
    plan: Plan, hot: HotScope | None, cold: ColdScope | None, result: SearchResult
) -> Plan:
    """*plan* with each prefix replaced by the terms it begins (see ``query.prefix``)."""
    terms = [t for t in plan.terms if t not in plan.prefixes]
    for prefix in plan.prefixes:
        found, complete = expand(
            prefix,
            hot=hot.index if hot is not None else None,
            cold=cold.sessions if cold is not None else (),
            lexicon=cold.lexicon if cold is not None else None,
            term_index=cold.terms[0] if cold is not None and cold.terms is not None else None,
        )
        if not complete:
            result.reasons.add(PREFIX_EXPANSION_LIMIT)
        terms.extend(found)
    return replace(plan, terms=tuple(dict.fromkeys(terms)), prefixes=())


# ----------------------------------------------------------------------------------- search


def search(
    plan: Plan,
    filters: Filters,
    *,
    hot: HotScope | None,
    cold: ColdScope | None,
    runner: RegexRunner | None,
    budgets: Budgets = DEFAULT_BUDGETS,
    keep: int | None = None,
) -> SearchResult:
    """Run *plan* over the hot and cold scopes; see the module docstring.

    With *keep*, only the first *keep* items are ranked and returned (a page needs no more);
    ``total`` still counts every item within the budget.
    """
    result = SearchResult()
    if plan.prefixes:
        plan = _expanded(plan, hot, cold, result)
    eligible: Sequence[tuple[ColdSession, int]] = []
    if cold is not None:
        # A term lookup through the lexicon checks the structural filters on its candidates
        # only, instead of on every digest in scope first.
        by_lexicon = plan.kind in ("literal", "phrase") and bool(plan.terms) and _by_lexicon(cold)
        eligible = _Unfiltered(cold.sessions) if by_lexicon else _eligible(cold, filters, result)
    items: list[Item] = []
    pruned = 0
    if plan.kind == "regex":
        if runner is None:
            raise RuntimeError("regex mode needs a RegexRunner")
        items = _regex(hot, cold, eligible, plan, filters, runner, budgets, result)
    else:
        # A literal query scores hot entries and cold sessions with one IDF (``_Idf``): the hot
        # postings are read first, the cold tier adds its holders, then both are scored.
        hot_found: Found | None = None
        idf_model: _Idf | None = None
        if hot is not None:
            # A literal query's candidates are the entries its terms' postings hold: the
            # budget counts those, so a rare term in the oldest hot session is still found.
            # A phrase may sit inside longer tokens no posting names, and a browse has no
            # terms: both count every filtered entry in scope order.
            literal = plan.kind == "literal"
            cand = _select(hot, filters, _UNCAPPED if literal else budgets.entries)
            if cand.exceeded:
                result.reasons.add(CANDIDATE_ENTRY_BUDGET)
            if plan.kind in ("literal", "phrase"):
                hot_found = _hot_found(hot, cand, plan)
                if literal and _cap_matched(hot_found, cand, budgets.entries):
                    result.reasons.add(CANDIDATE_ENTRY_BUDGET)
                idf_model = _hot_idf(cand, hot_found)
            else:
                items.extend(_hot_browse(hot, cand, filters))
        if cold is not None:
            if plan.kind in ("literal", "phrase"):
                if idf_model is None:
                    idf_model = _Idf.cold_only(len(plan.terms))
                idf_model.cold_entries = _cold_entries(cold)
                idf_model.cold_sessions = len(cold.sessions)
            found, matched = _cold(cold, eligible, plan, filters, budgets, keep, result, idf_model)
            # the cold items that cannot rank among the first *keep* are counted, not made
            items.extend(found)
            pruned = matched - len(found)
        if hot is not None and hot_found is not None and idf_model is not None:
            if plan.kind == "phrase":
                items.extend(_hot_phrase(hot, cand, hot_found, idf_model.values(), plan, filters))
            else:
                items.extend(_hot_literal(hot, hot_found, idf_model.values(), plan, filters))
    total = len(items) + pruned
    if total > budgets.items:
        result.reasons.add(CANDIDATE_ITEM_BUDGET)
        total = budgets.items
    want = total if keep is None else min(total, max(keep, 0))
    rank = _browse_rank if plan.kind == "browse" else _rank
    if want < total // 4:
        # nsmallest is sorted(...)[:want] by definition, in O(n log want)
        result.items = heapq.nsmallest(want, items, key=rank)
    else:
        items.sort(key=rank)
        del items[want:]
        result.items = items
    result.total = total
    return result


def _rank(item: Item) -> tuple[float, int, int, int, bytes]:
    return item.key()


def _browse_rank(item: Item) -> tuple[float, int, int, int, bytes]:
    """Browsing ("which bash calls failed last week") wants the newest first: sessions are
    already newest first, so a session's entries go last to first."""
    score, session, kind, index, path = item.key()
    return (score, session, kind, -index, path)


def _cold(
    cold: ColdScope,
    eligible: Sequence[tuple[ColdSession, int]],
    plan: Plan,
    filters: Filters,
    budgets: Budgets,
    keep: int | None,
    result: SearchResult,
    idf_model: _Idf | None = None,
) -> tuple[list[SessionItem], int]:
    """The cold items (with *keep*, at least those that can rank among the first *keep*)
    and how many there are."""
    if plan.kind == "browse":
        score = 1.0 if filters.any else 0.0
        if len(eligible) > budgets.digests:
            result.reasons.add(CANDIDATE_DIGEST_BUDGET)
        count = min(len(eligible), budgets.digests)
        # one score for all: scope order is rank order
        first = count if keep is None else min(count, max(keep, 0))
        return [SessionItem(c, score, 0, n) for c, n in eligible[:first]], count
    if plan.kind == "phrase" and not plan.terms:
        # Punctuation-only phrase: a vocabulary cannot hold it, so only hydration can tell.
        if eligible:
            result.reasons.add(COLD_PHRASE_REQUIRES_HYDRATION)
        return [], 0
    found, count, complete = _cold_terms(
        cold,
        eligible,
        plan.terms,
        plan.match == "all",
        filters,
        budgets.digests,
        keep,
        _stats_budget(budgets, keep),
        idf_model or _Idf.cold_only(len(plan.terms)),
        result,
    )
    if not complete:
        result.reasons.add(CANDIDATE_DIGEST_BUDGET)
    if count:
        if plan.kind == "phrase":
            result.reasons.add(COLD_PHRASE_REQUIRES_HYDRATION)
        elif plan.match == "all" and len(plan.terms) > 1:
            result.reasons.add(COLD_ALL_TERMS_REQUIRES_HYDRATION)
        if filters.any and result.partly_filtered:
            result.reasons.add(COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION)
    return found, count
