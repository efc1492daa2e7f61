"""Query execution: candidates, scores and one ranked stream of entries and cold sessions.

::

    hot shards (display or hydrated text) ──► filtered candidates (≤ 50,000, scope order)
        literal: BM25 from postings (complete text) × provenance weight
        phrase:  NFKC-lowercased substring of the text × weight
        regex:   worker over entry texts × weight
        browse:  score 0 (1 with a structural filter)
    cold digests ──► filter by structural addresses ──► vocabulary candidates (≤ 10,000)
        Σ ln((C − df + 0.5)/(df + 0.5) + 1) over matched terms; browse 0/1; regex = terms hit
    both ──► sort (score ↓, session mtime ↓, entries first, index ↑, file ↑) ──► ≤ 10,000 items

Every cap and every claim the cold tier cannot prove becomes a named coverage reason; the
result never pretends to be more complete than its inputs (reference §1.6/§1.7).
"""

from __future__ import annotations

import bisect
import heapq
import math
from array import array
from collections import Counter
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, overload

from query.args import Filters
from query.generation import ColdSession, HotIndex, RecordUnavailable, ShardData
from query.lexicon import ColdLexicon, ScopePlaces, flag_of
from query.literals import Clauses, fold, required
from query.postings import decode_pairs
from query.prefix import expand, prefixes_of
from query.regex import RegexLimits, RegexRunner
from query.vocabulary import TermIndex, blob_contains, blob_terms
from store.lexicon import LexiconSegment
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
# A regex walks the whole cold lexicon when the scope holds at least 1/this of its digests.
_LEXICON_WALK_SHARE: Final = 8


@dataclass(frozen=True, slots=True)
class Budgets:
    entries: int = 50_000
    digests: int = 10_000
    items: int = 10_000


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
    dl_sum: int
    exceeded: bool


def _select(scope: HotScope, filters: Filters, limit: int) -> _Candidates:
    """Filtered hot candidates in scope order, at most *limit* of them."""
    by_shard: dict[int, _Selection] = {}
    order: list[int] = []
    count = dl_sum = 0
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
        if isinstance(positions, range) and positions.start == 0 and len(positions) == n:
            dl_sum += shard.dl_sum
        else:
            dl_sum += sum(shard.dl(p) for p in positions)
        member: Container[int] = positions if isinstance(positions, range) else set(positions)
        by_shard[no] = _Selection(positions, member)
        order.append(no)
        count += len(positions)
        if exceeded:
            break
    return _Candidates(by_shard, order, count, dl_sum, exceeded)


# -------------------------------------------------------------------------------------- hot


def _hot_literal(scope: HotScope, cand: _Candidates, plan: Plan, filters: Filters) -> list[Item]:
    n = cand.count
    if n == 0 or not plan.terms:
        return []
    avgdl = cand.dl_sum / n
    shards = scope.index.shards
    acc: dict[tuple[int, int], list[float]] = {}
    for term in plan.terms:
        found: list[tuple[int, int, int]] = []
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
        df = len(found)
        if df == 0:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        for no, pos, tf in found:
            dl = shards[no].dl(pos)
            part = idf * (tf * (K1 + 1)) / (tf + K1 * (1 - B + B * dl / avgdl))
            slot = acc.get((no, pos))
            if slot is None:
                acc[(no, pos)] = [part, 1.0]
            else:
                slot[0] += part
                slot[1] += 1
    need = len(plan.terms) if plan.match == "all" else 1
    weigh = not filters.operational
    out: list[Item] = []
    for (no, pos), (score, matched) in acc.items():
        if matched < need or score <= 0:
            continue
        shard = shards[no]
        if weigh:
            score *= _prose_weight(shard.entries[pos])
        out.append(EntryItem(shard, pos, score))
    return out


def _hot_phrase(scope: HotScope, cand: _Candidates, plan: Plan, filters: Filters) -> list[Item]:
    weigh = not filters.operational
    phrase = plan.phrase
    out: list[Item] = []
    for no in cand.order:
        shard = scope.index.shards[no]
        texts = shard.normalized_texts()
        entries = shard.entries
        for pos in cand.by_shard[no].positions:
            if phrase in texts[pos]:
                out.append(EntryItem(shard, pos, _prose_weight(entries[pos]) if weigh else 1.0))
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
    c: ColdSession, exact: Sequence[tuple[int, str]], filters: Filters, result: SearchResult
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
        return _score_regions(regions, eligible.views, counts, len(terms), limit, keep)
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
    scored = _scores(Counter(m for _, m, _ in candidates), len(candidates), len(terms))
    out: list[SessionItem] = []
    for c, m, structural in candidates:
        score, matched = scored[m]
        out.append(SessionItem(c, score, matched, structural))
    return out, len(out), matching <= limit


def _scores(tally: Mapping[int, int], total: int, n_terms: int) -> dict[int, tuple[float, int]]:
    """Score and matched-term count per set of matched terms (as bits), given how many of the
    *total* candidates matched each set. A digest's score depends only on which terms it
    matched, so it is computed once per distinct set, summed in term order as always."""
    df = [sum(n for m, n in tally.items() if m >> i & 1) for i in range(n_terms)]
    scored: dict[int, tuple[float, int]] = {}
    for m in tally:
        score = 0.0
        for i in range(n_terms):
            if m >> i & 1:
                score += math.log((total - df[i] + 0.5) / (df[i] + 0.5) + 1)
        scored[m] = (score, m.bit_count())
    return scored


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
    n_terms: int,
    limit: int,
    keep: int | None,
) -> tuple[list[SessionItem], int, bool]:
    """``_cold_terms``' answer from position groups: the first *limit* positions count, and
    of each group only its first *keep* can rank (same score, scope order is rank order)."""
    matching = sum(map(len, regions.values()))
    if matching > limit:
        last = sorted(set().union(*regions.values()))[limit - 1]
        regions = {m: kept for m, r in regions.items() if (kept := {p for p in r if p <= last})}
    total = min(matching, limit)
    scored = _scores({m: len(r) for m, r in regions.items()}, total, n_terms)
    out: list[SessionItem] = []
    for m, region in regions.items():
        score, matched = scored[m]
        if keep is None or keep >= len(region):
            first = sorted(region)
        else:
            first = heapq.nsmallest(keep, region)
        out.extend(SessionItem(views[p], score, matched, structural.get(p, 0)) for p in first)
    return out, total, matching <= limit


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
    if lexicon is not None:
        position = {c.name: d for d, (c, _) in enumerate(eligible)}
        covered = sum(1 for name in position if name in lexicon.covered)
        if covered and covered * _LEXICON_WALK_SHARE >= len(lexicon.covered):
            flag = flag_of(cold.branches)
            for segment in lexicon.segments:
                # ordinal -> eligible position (-1: not in scope, or not cold any more)
                at = [position.get(name, -1) for name in segment.digests]
                for term, postings in segment.iter_terms():
                    digests = [d for p in postings if p & flag and (d := at[p >> 2]) >= 0]
                    if digests:
                        yield term, digests
            own = [d for d, (c, _) in enumerate(eligible) if c.name not in lexicon.covered]
    for d in own:
        c = eligible[d][0]
        try:
            vocabulary = c.vocabulary
        except RecordUnavailable:
            result.unavailable.add(c.state.path)
            continue
        for term in blob_terms(vocabulary):
            yield term, (d,)


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
    if lexicon is not None:
        position = {c.name: d for d, (c, _) in enumerate(eligible)}
        covered = sum(1 for name in position if name in lexicon.covered)
        if covered and covered * _LEXICON_WALK_SHARE >= len(lexicon.covered):
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
    for d in own:
        c = eligible[d][0]
        try:
            vocabulary = c.vocabulary
        except RecordUnavailable:
            out.unavailable.add(c.state.path)
            continue
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
            out.reasons.add("regex_max_haystack_terms")
            return False
        if size + n > limits.max_haystack_bytes:
            out.reasons.add("regex_max_haystack_bytes")
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
        result.reasons.add("candidate_entry_budget")
        located = located[: budgets.entries]
    sessions: list[SessionItem] = []
    for d in sorted(hits_per_digest):
        c, structural = eligible[d]
        n = hits_per_digest[d]
        sessions.append(SessionItem(c, float(n), n, structural))
    if len(sessions) > budgets.digests:
        result.reasons.add("candidate_digest_budget")
        sessions = sessions[: budgets.digests]
    if sessions and filters.any:
        result.reasons.add("cold_structural_filter_requires_hydration")
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
            result.reasons.add("prefix_expansion_limit")
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
        if hot is not None:
            cand = _select(hot, filters, budgets.entries)
            if cand.exceeded:
                result.reasons.add("candidate_entry_budget")
            if plan.kind == "literal":
                items.extend(_hot_literal(hot, cand, plan, filters))
            elif plan.kind == "phrase":
                items.extend(_hot_phrase(hot, cand, plan, filters))
            else:
                items.extend(_hot_browse(hot, cand, filters))
        if cold is not None:
            found, matched = _cold(cold, eligible, plan, filters, budgets, keep, result)
            # the cold items that cannot rank among the first *keep* are counted, not made
            items.extend(found)
            pruned = matched - len(found)
    total = len(items) + pruned
    if total > budgets.items:
        result.reasons.add("candidate_item_budget")
        total = budgets.items
    want = total if keep is None else min(total, max(keep, 0))
    if want < total // 4:
        # nsmallest is sorted(...)[:want] by definition, in O(n log want)
        result.items = heapq.nsmallest(want, items, key=_rank)
    else:
        items.sort(key=_rank)
        del items[want:]
        result.items = items
    result.total = total
    return result


def _rank(item: Item) -> tuple[float, int, int, int, bytes]:
    return item.key()


def _cold(
    cold: ColdScope,
    eligible: Sequence[tuple[ColdSession, int]],
    plan: Plan,
    filters: Filters,
    budgets: Budgets,
    keep: int | None,
    result: SearchResult,
) -> tuple[list[SessionItem], int]:
    """The cold items (with *keep*, at least those that can rank among the first *keep*)
    and how many there are."""
    if plan.kind == "browse":
        score = 1.0 if filters.any else 0.0
        if len(eligible) > budgets.digests:
            result.reasons.add("candidate_digest_budget")
        count = min(len(eligible), budgets.digests)
        # one score for all: scope order is rank order
        first = count if keep is None else min(count, max(keep, 0))
        return [SessionItem(c, score, 0, n) for c, n in eligible[:first]], count
    if plan.kind == "phrase" and not plan.terms:
        # Punctuation-only phrase: a vocabulary cannot hold it, so only hydration can tell.
        if eligible:
            result.reasons.add("cold_phrase_requires_hydration")
        return [], 0
    found, count, complete = _cold_terms(
        cold, eligible, plan.terms, plan.match == "all", filters, budgets.digests, keep, result
    )
    if not complete:
        result.reasons.add("candidate_digest_budget")
    if count:
        if plan.kind == "phrase":
            result.reasons.add("cold_phrase_requires_hydration")
        elif plan.match == "all" and len(plan.terms) > 1:
            result.reasons.add("cold_all_terms_requires_hydration")
        if filters.any:
            result.reasons.add("cold_structural_filter_requires_hydration")
    return found, count
