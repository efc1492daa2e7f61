"""``memory.recall``: ranked, bounded, honest search over one generation.

::

    request ─► scope ─► freshness (stat; hash only when needed) ─► bindings check
        one session in scope ─► hydrate: complete entries (+ hot postings when hot)
        several ─► global hot index + cold digests (merged term index when many)
    ─► search ─► coverage (index ∪ staleness ∪ query reasons) ─► page ─► RecallPage

A single-session answer is always computed from the session's complete entries, exactly as
its ``session:<file>`` continuation will be, so paging never shifts between the first page
and the next. Sessions whose file changed after indexing are still searched (the index is a
consistent snapshot) but counted in ``staleSessions``; a file that is gone is left out.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from query.archived import note_archived
from query.args import RecallRequest
from query.freshness import Freshness, Observation
from query.generation import (
    Generation,
    HotIndex,
    RecordUnavailable,
    ShardData,
)
from query.present import CompleteText, page
from query.regex import RegexRunner
from query.scope import Listings, Resolved, resolve_scope, widen_hints
from query.search import (
    DEFAULT_BUDGETS,
    Budgets,
    ColdScope,
    EntryItem,
    HotScope,
    Plan,
    plan_query,
    search,
)
from store.postings import index_entries
from store.reasons import (
    MAX_COLD_CACHE_BYTES,
    MAX_COLD_VOCABULARY_BYTES,
    MAX_ENTRY_CHARS,
    READ_NOTES,
    SOURCE_UNAVAILABLE,
    STALE_SESSION,
)
from store.records import NormalizedEntry, SessionState

__all__ = ["failure", "recall", "stale_pointer"]

HYDRATION_LIFTS: Final = frozenset(
    {MAX_ENTRY_CHARS, MAX_COLD_VOCABULARY_BYTES, MAX_COLD_CACHE_BYTES}
)


def empty_coverage() -> dict[str, Any]:
    return {
        "complete": False,
        "indexedSessions": 0,
        "eligibleSessions": 0,
        "staleSessions": 0,
        "incompleteSessions": 0,
        "reasons": [],
    }


def failure(error: dict[str, Any]) -> dict[str, Any]:
    """A recall that cannot be answered: no hits, incomplete, the error named (seed)."""
    coverage = empty_coverage()
    coverage["reasons"] = [error["code"]]
    return {"total": 0, "hits": [], "next": None, "coverage": coverage, "error": error}


def stale_pointer(
    path: str,
    expected_source: str | None,
    actual_source: str | None,
    expected_lineage: str | None,
    actual_lineage: str | None,
    *,
    message: str | None = None,
) -> dict[str, Any]:
    lineage_moved = expected_lineage is not None and expected_lineage != actual_lineage
    body: dict[str, Any] = {
        "code": "stale_pointer",
        "message": message
        or (
            "Session active lineage changed after the pointer was issued."
            if lineage_moved and actual_lineage is not None
            else "Session source changed after the pointer was issued."
        ),
        "sessionFile": path,
    }
    if expected_source is not None:
        body["expectedSourceHash"] = expected_source
    body["actualSourceHash"] = actual_source or ""
    if expected_lineage is not None:
        body["expectedLineageFingerprint"] = expected_lineage
    if actual_lineage is not None:
        body["actualLineageFingerprint"] = actual_lineage
    return body


def check_bindings(
    state: SessionState,
    branches: str,
    observed: Observation,
    expected_source: str | None,
    expected_lineage: str | None,
) -> dict[str, Any] | None:
    """The stale_pointer body when the live source or lineage no longer matches, else None.

    The index can serve a pointer only while the live file is the indexed one; when the file
    moved on, the live lineage is unknown here (the query side never parses sources), so the
    error names the source change.
    """
    live_source = state.source_hash if observed.fresh else observed.actual_hash
    live_lineage = state.view(branches).lineage_fingerprint if observed.fresh else None
    if observed.fresh:
        if expected_source not in (None, live_source) or expected_lineage not in (
            None,
            live_lineage,
        ):
            return stale_pointer(
                state.path, expected_source, live_source, expected_lineage, live_lineage
            )
        return None
    return stale_pointer(state.path, expected_source, live_source, expected_lineage, live_lineage)


@dataclass(slots=True)
class _Observed:
    searchable: list[SessionState]
    stale: int
    reasons: set[str]
    # path -> status of every session that is not fresh
    odd: dict[str, str] = field(default_factory=dict)
    _tiers: tuple[list[SessionState], list[SessionState]] | None = None
    _by_path: dict[str, SessionState] | None = None

    def tiers(self) -> tuple[list[SessionState], list[SessionState]]:
        """The searchable hot and cold sessions (kept: a memoized scope is split once)."""
        if self._tiers is None:
            hot = [s for s in self.searchable if s.tier == "hot"]
            cold = [s for s in self.searchable if s.tier != "hot"]
            self._tiers = (hot, cold)
        return self._tiers

    def holds(
        self, sessions: Sequence[SessionState], moved: frozenset[str], freshness: Freshness
    ) -> bool:
        """Whether observing the *moved* paths again leaves every status as it was."""
        if not moved:
            return True
        if self._by_path is None:
            self._by_path = {s.path: s for s in sessions}
        if len(self._by_path) != len(sessions):
            return False
        for path in moved:
            s = self._by_path.get(path)
            if s is not None and freshness.observe(s).status != self.odd.get(path, "fresh"):
                return False
        return True


def _observe(sessions: Sequence[SessionState], freshness: Freshness) -> _Observed:
    """The scope's searchable sessions and staleness; memoized while the feed vouches for it.

    A global scope is the generation's one ordered tuple, so on a long-lived engine the
    memo answers after observing again only the files that changed since it was made (a
    session being written to moves on every request, its status rarely).
    """
    epoch = freshness.epoch
    found = freshness.memo(sessions)
    if found is not None:
        old, moved = found
        if isinstance(old, _Observed) and old.holds(sessions, moved, freshness):
            freshness.remember(sessions, epoch, old)
            return old
    carried = _carried(sessions, freshness)
    out = carried if carried is not None else _observe_whole(sessions, freshness)
    freshness.remember(sessions, epoch, out)
    if len(sessions) >= _CARRY_MIN:
        if len(_LAST_SCOPE) >= 8 and id(freshness) not in _LAST_SCOPE:
            _LAST_SCOPE.clear()  # engines come and go (tests, in-process CLIs): stay small
        _LAST_SCOPE[id(freshness)] = (sessions, out)
    return out


def _observe_whole(sessions: Sequence[SessionState], freshness: Freshness) -> _Observed:
    out = _Observed([], 0, set())
    for s in sessions:
        o = freshness.observe(s)
        if o.status != "fresh":
            out.odd[s.path] = o.status
        if o.status in ("missing", "unreadable"):
            out.stale += 1
            out.reasons.add(SOURCE_UNAVAILABLE)
            continue
        if o.status == "changed":
            out.stale += 1
            out.reasons.add(STALE_SESSION)
        out.searchable.append(s)
    return out


# The last large scope each Freshness observed: a new generation's global scope is the last
# one with the few sessions a publish moved replaced, so it is carried over, not observed
# whole (8,300 sessions at M: ~4 ms per new generation, paid by the request after a publish).
_CARRY_MIN: Final = 64
_CARRY_MAX_CHANGED: Final = 64
_LAST_SCOPE: dict[int, tuple[Sequence[SessionState], _Observed]] = {}


def _carried(sessions: Sequence[SessionState], freshness: Freshness) -> _Observed | None:
    """*sessions* observed by patching the last large scope this *freshness* observed, when
    every session of that scope was fresh, the two differ in a few places, and each session
    that changed there or moved on disk since is fresh now; else None (observe it whole)."""
    last = _LAST_SCOPE.get(id(freshness))
    if last is None or len(sessions) < _CARRY_MIN:
        return None
    old_sessions, old = last
    if len(old_sessions) != len(sessions) or old.stale or old.odd:
        return None
    found = freshness.memo(old_sessions)  # also proves this freshness made it
    if found is None or found[0] is not old:
        return None
    changed = list(
        itertools.compress(range(len(sessions)), map(operator.is_not, old_sessions, sessions))
    )
    if len(changed) > _CARRY_MAX_CHANGED:
        return None
    for i in changed:
        if freshness.observe(sessions[i]).status != "fresh":
            return None
    moved = found[1]
    if moved:
        by_path = {s.path: s for s in sessions}
        for path in moved:
            s = by_path.get(path)
            if s is not None and freshness.observe(s).status != "fresh":
                return None
    return _Observed(list(sessions), 0, set())


def view_reasons(
    state: SessionState, branches: str, *, display_haystack: bool, hydrated: bool
) -> set[str]:
    """A session's index coverage reasons for this query.

    ``max_entry_chars`` only says the stored *display* text was cut; postings and vocabulary
    cover the complete text, so it matters only when display text is the haystack (phrase
    and regex over hot shards). A hydrated session is searched from its complete entries, so
    no record cap (display cut, vocabulary or digest size) limits it.
    """
    reasons = set(state.view(branches).reasons)
    if hydrated:
        return reasons - HYDRATION_LIFTS
    if not (display_haystack and state.tier == "hot"):
        reasons.discard(MAX_ENTRY_CHARS)
    return reasons


@dataclass(slots=True)
class _Cut:
    """``_incomplete``'s answer over one searched list, with what patching it needs."""

    searched: list[SessionState]
    count: int
    held: Counter[str]  # reason -> how many searched sessions give it
    reasons: frozenset[str]


# The last answer of _incomplete per (branches, display_haystack, hydrated): a long-lived
# engine searches the same global session list request after request, and after a publish
# the same list with a few states replaced, which patches the answer.
_INCOMPLETE: dict[tuple[str, bool, bool], _Cut] = {}


def _incomplete(
    searched: list[SessionState], branches: str, *, display_haystack: bool, hydrated: bool
) -> tuple[int, frozenset[str], frozenset[str]]:
    """How many searched sessions the index cut for this query, and why (``view_reasons``);
    then the ``READ_NOTES`` they hold, which cut nothing and count no session."""
    key = (branches, display_haystack, hydrated)
    hit = _INCOMPLETE.get(key)
    # list == compares element by element, identity first: cheap for the very same states
    if hit is not None and hit.searched == searched:
        return hit.count, hit.reasons - READ_NOTES, hit.reasons & READ_NOTES

    def own(s: SessionState) -> set[str]:
        return view_reasons(s, branches, display_haystack=display_haystack, hydrated=hydrated)

    changed: list[int] | None = None
    if hit is not None and len(hit.searched) == len(searched):
        changed = list(
            itertools.compress(range(len(searched)), map(operator.is_not, hit.searched, searched))
        )
    if changed is not None and len(changed) <= _CARRY_MAX_CHANGED:
        assert hit is not None
        count, held = hit.count, Counter(hit.held)
        for i in changed:
            before, after = own(hit.searched[i]), own(searched[i])
            count += bool(after - READ_NOTES) - bool(before - READ_NOTES)
            held.subtract(before)
            held.update(after)
        held = +held  # drop the reasons no session gives any more
    else:
        count, held = 0, Counter()
        for s in searched:
            found = own(s)
            if found:
                count += bool(found - READ_NOTES)
                held.update(found)
    out = _Cut(list(searched), count, held, frozenset(held))
    if len(searched) >= _CARRY_MIN:
        _INCOMPLETE[key] = out
    return out.count, out.reasons - READ_NOTES, out.reasons & READ_NOTES


def hydrate(gen: Generation, state: SessionState, branches: str, plan: Plan) -> ShardData:
    """One session's complete entries, ready for search (postings only when a literal or
    phrase query scores with them)."""
    entries = gen.entries(state, branches)
    counts: list[int]
    postings: dict[str, bytes]
    if plan.kind not in ("literal", "phrase") or not plan.terms:
        counts, postings = [0] * len(entries), {}
    else:
        shard = None
        if state.tier == "hot":
            try:
                shard = gen.hot_shard(state, branches)
            except RecordUnavailable:
                shard = None
        if shard is not None and _aligned(shard.entries, entries):
            counts, postings = list(shard.token_counts), dict(shard.postings)
        else:
            counts, postings = index_entries(entries)
    return ShardData(state, entries, counts, postings, complete_text=True)


def _aligned(display: Iterable[NormalizedEntry], complete: tuple[NormalizedEntry, ...]) -> bool:
    shown = list(display)
    return len(shown) == len(complete) and all(
        a.index == b.index for a, b in zip(shown, complete, strict=True)
    )


def complete_texts(gen: Generation, branches: str) -> CompleteText:
    """The complete text of a hit from its session's SessionEntries (loaded only for the few
    display-cut hits of one page; the generation caches them)."""

    def complete(item: EntryItem) -> str | None:
        try:
            entries = gen.entries(item.shard.state, branches)
        except RecordUnavailable:
            return None
        index = item.entry.index
        at = item.pos
        if at < len(entries) and entries[at].index == index:
            return entries[at].text
        return next((e.text for e in entries if e.index == index), None)

    return complete


def recall(
    gen: Generation,
    req: RecallRequest,
    *,
    cwd: str,
    roots: Iterable[Path],
    freshness: Freshness,
    listings: Listings | None = None,
    runner: RegexRunner | None,
    budgets: Budgets = DEFAULT_BUDGETS,
    term_index: str = "auto",
) -> dict[str, Any]:
    """Answer one recall request (see the module docstring).

    ``term_index`` is ``auto`` (build the merged hot and cold term maps once they pay),
    ``always`` or ``never``; the answer is the same either way.
    """
    resolved: Resolved = resolve_scope(
        gen,
        req.scope,
        cwd=req.cwd or cwd,
        agent=req.agent,
        roots=roots,
        listings=listings or Listings(),
    )
    if resolved.error is not None:
        return failure(resolved.error)
    plan = plan_query(req.query, req.mode, req.match)
    single = len(resolved.sessions) == 1 and not resolved.unindexed
    sole = resolved.sessions[0] if single else None
    if sole is not None and req.scope.explicit:
        observed = freshness.observe(sole, need_hash=True)
        if observed.status in ("missing", "unreadable"):
            return failure(
                {
                    "code": SOURCE_UNAVAILABLE,
                    "message": f"Session source is unavailable: {sole.path}",
                    "sessionFile": sole.path,
                }
            )
        if req.expected_source_hash is not None or req.expected_lineage_fingerprint is not None:
            stale = check_bindings(
                sole,
                req.branches,
                observed,
                req.expected_source_hash,
                req.expected_lineage_fingerprint,
            )
            if stale is not None:
                return failure(stale)
    obs = _observe(resolved.sessions, freshness)
    reasons = set(obs.reasons) | set(resolved.index_reasons)
    stale_count = obs.stale
    for u in resolved.unindexed:
        reasons.add(u.reason)
        if u.stale:
            stale_count += 1
    display_haystack = plan.kind in ("phrase", "regex")
    hot_scope: HotScope | None = None
    cold_scope: ColdScope | None = None
    searched: list[SessionState] = []
    hydrated = False
    if single and obs.searchable:
        state = obs.searchable[0]
        try:
            shard = hydrate(gen, state, req.branches, plan)
        except RecordUnavailable:
            reasons.add(SOURCE_UNAVAILABLE)
        else:
            entry_range = None
            if req.entry_range is not None:
                if not req.entry_range.valid:
                    return failure(
                        {
                            "code": "index_out_of_bounds",
                            "message": "Entry range requires safe integers with "
                            "0 <= first <= last.",
                        }
                    )
                count = len(shard.entries)
                if req.entry_range.last >= count:
                    return failure(
                        {
                            "code": "index_out_of_bounds",
                            "message": f"Entry range ends at {req.entry_range.last}, but the "
                            f"session has {count} entries.",
                            "entryCount": count,
                        }
                    )
                entry_range = (req.entry_range.first, req.entry_range.last)
            hot_scope = HotScope(HotIndex([shard]), (0,), entry_range)
            searched.append(state)
            hydrated = True
    else:
        hot_states, cold_states = obs.tiers()
        if hot_states:
            index = gen.hot(req.branches)
            if term_index == "always":
                index.merge()
            numbers = [index.number[s.path] for s in hot_states if s.path in index.number]
            if len(numbers) < len(hot_states):
                reasons.add(SOURCE_UNAVAILABLE)
            hot_scope = HotScope(index, tuple(numbers))
            searched.extend(s for s in hot_states if s.path in index.number)
        if cold_states:
            # Lazy views: a digest record is read only if the search needs it (filters,
            # a vocabulary no lexicon covers, regex); one that cannot be read then is
            # reported by the search and taken out of the searched sessions below.
            colds = gen.cold_views(cold_states, req.branches)
            searched.extend(cold_states)
            lexicon = gen.lexicon()
            terms = None
            if lexicon is None and plan.kind in ("literal", "phrase") and plan.terms:
                lookups = len(colds) * len(plan.terms)
                if term_index == "always" or (
                    term_index == "auto" and gen.want_terms(req.branches, lookups)
                ):
                    terms = gen.terms(req.branches)
            cold_scope = ColdScope(colds, terms, lexicon, req.branches, gen.cold_places(colds))
    result = search(
        plan,
        req.filters,
        hot=hot_scope,
        cold=cold_scope,
        runner=runner,
        budgets=budgets,
        keep=req.offset + req.page_size,
    )
    reasons |= result.reasons
    if result.unavailable:
        reasons.add(SOURCE_UNAVAILABLE)
        searched = [s for s in searched if s.path not in result.unavailable]
    incomplete, own, read_notes = _incomplete(
        searched, req.branches, display_haystack=display_haystack, hydrated=hydrated
    )
    reasons |= own
    coverage: dict[str, Any] = {
        "complete": not reasons and result.error is None and stale_count == 0,
        "indexedSessions": len(searched),
        "eligibleSessions": len(resolved.sessions) + len(resolved.unindexed),
        "staleSessions": stale_count,
        "incompleteSessions": incomplete,
        "reasons": sorted(reasons),
    }
    if result.error is not None:
        coverage["error"] = result.error
    if not display_haystack and not hydrated and MAX_ENTRY_CHARS not in reasons:
        # Display text cut to maxEntryChars hides nothing from this search (it covers the
        # complete text); say so apart from the reasons, which are gaps that can hide hits.
        _, shown, _ = _incomplete(searched, req.branches, display_haystack=True, hydrated=False)
        if MAX_ENTRY_CHARS in shown:
            coverage["notes"] = [MAX_ENTRY_CHARS]
    if read_notes:
        coverage.setdefault("notes", []).extend(sorted(read_notes))
    note_archived(coverage, searched, freshness.archive)
    hints = widen_hints(
        gen,
        resolved,
        agent=req.agent,
        branches=req.branches,
        found=result.total,
        cwd=req.cwd or cwd,
        roots=roots,
    )
    if hints:
        coverage["hints"] = hints
    request_args = req.canonical()
    if sole is not None:
        request_args.pop("cwd", None)
        request_args["scope"] = f"session:{sole.path}"
        request_args["expectedSourceHash"] = req.expected_source_hash or sole.source_hash
        request_args["expectedLineageFingerprint"] = (
            req.expected_lineage_fingerprint or sole.view(req.branches).lineage_fingerprint
        )
    return page(
        result.items,
        plan=plan,
        offset=req.offset,
        page_size=req.page_size,
        snippet_chars=req.snippet_chars,
        branches=req.branches,
        request_args=request_args,
        coverage=coverage,
        total=result.total,
        complete=complete_texts(gen, req.branches),
    )
