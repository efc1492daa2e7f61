"""Recall presentation: ranked items become the seed's compact, bounded page.

* an entry hit carries its evidence (bounded metadata, one snippet) and a ``memory.expand``
  follow call bound to the session's source hash and lineage;
* a cold session candidate carries session-level evidence only and a ``memory.recall``
  follow call: the request again, pinned to ``session:<file>`` and its bindings;
* ``next`` is the canonical request plus ``offset``; the page shrinks from the end until its
  JSON fits the 30,000-character envelope (UTF-16 units, as ``JSON.stringify(…).length``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final

from query.args import RESPONSE_MAX_CHARS
from query.search import EntryItem, Item, Plan, SessionItem
from query.u16 import ELLIPSIS, bounded, json_length, u16len, u16slice
from store.records import NormalizedEntry
from store.tokens import normalize_text

__all__ = ["entry_hit", "page", "session_hit", "snippet", "wire_score"]


def wire_score(score: float) -> float | int:
    """Integral scores print as JSON integers (``1``, not ``1.0``), as JavaScript would."""
    return int(score) if score.is_integer() else score


# Occurrences looked at per term: enough to find the densest window of a long tool output
# without scanning a megabyte-sized entry once per occurrence.
_MAX_OCCURRENCES: Final = 256


def _occurrences(normalized: str, term: str) -> list[int]:
    """Where *term* starts in *normalized* as a whole token (code points), at most a few
    hundred. A term of word characters only counts where no word character touches it, so
    ``test`` is not found inside ``latest``; a CJK bigram term has no such boundary."""
    out: list[int] = []
    bounded_word = term.isascii()
    at = normalized.find(term)
    end = len(term)
    while at >= 0 and len(out) < _MAX_OCCURRENCES:
        before = normalized[at - 1] if at > 0 else " "
        after = normalized[at + end] if at + end < len(normalized) else " "
        if not bounded_word or not (_wordish(before) or _wordish(after)):
            out.append(at)
        at = normalized.find(term, at + 1)
    return out


def _wordish(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _best_window(normalized: str, terms: Sequence[str], width: int) -> int | None:
    """The start (code points) of the first occurrence in the window of *width* that holds
    the most distinct query terms, then the most occurrences: the passage that best explains
    the match, where the seed anchored on the first hit of the longest term (which a long
    tool output often holds only in passing, far from the passage that matched)."""
    hits = sorted((at, t) for t in terms for at in _occurrences(normalized, t))
    if not hits:
        return None
    best: tuple[int, int, int] | None = None  # (distinct, occurrences, -start)
    counts: Counter[str] = Counter()
    lo = 0
    for hi, (at, term) in enumerate(hits):
        counts[term] += 1
        while at - hits[lo][0] > width:
            counts[hits[lo][1]] -= 1
            if not counts[hits[lo][1]]:
                del counts[hits[lo][1]]
            lo += 1
        rank = (len(counts), hi - lo + 1, -hits[lo][0])
        if best is None or rank > best:
            best = rank
    assert best is not None
    return -best[2]


def _anchor(text: str, plan: Plan, limit: int) -> int:
    """Where the snippet window is anchored (UTF-16 units): the best-matching passage."""
    if plan.kind not in ("literal", "phrase"):
        return 0
    normalized = normalize_text(text)
    if plan.kind == "phrase":
        at = normalized.find(plan.phrase)
        return u16len(normalized[:at]) if at > 0 else 0
    # the window's matched span may take two thirds of it: the lead third stays context
    width = max(1, limit - limit // 3)
    best = None
    if len(normalized) != len(text):
        # NFKC changed the length (ligatures, compatibility forms): an offset in it would land
        # elsewhere in the raw text, so look in the merely lowercased text first
        lowered = text.lower()
        if len(lowered) == len(text):
            best = _best_window(lowered, plan.terms, width)
            if best is not None:
                return u16len(text[:best])
    best = _best_window(normalized, plan.terms, width)
    return u16len(normalized[:best]) if best else 0


def snippet(text: str, plan: Plan, limit: int) -> tuple[str, bool]:
    """At most *limit* units of *text* around the best-matching passage; True when cut."""
    total = u16len(text)
    if total <= limit:
        return text, False
    lead = limit // 3
    start = max(0, _anchor(text, plan, limit) - lead)
    end = min(total, start + limit)
    if end - start < limit:
        start = max(0, end - limit)
    body = u16slice(text, start, end)
    return f"{ELLIPSIS if start > 0 else ''}{body}{ELLIPSIS if end < total else ''}", True


SUBAGENT_KEYS = ("sidechain", "agentId", "parentToolCallId")


def subagent_fields(e: NormalizedEntry) -> dict[str, Any]:
    """What marks a subagent's entry (none for the session's own): ``sidechain: true`` and,
    when the files name them, ``agentId`` and the parent's spawning ``parentToolCallId``."""
    if not e.sidechain:
        return {}
    out: dict[str, Any] = {"sidechain": True}
    if e.agent_id:
        out["agentId"] = bounded(e.agent_id)
    if e.parent_call_id:
        out["parentToolCallId"] = bounded(e.parent_call_id)
    return out


def session_label(agent: str, session_id: str) -> str:
    return f"{agent}:{session_id}"


# The complete text of a hit whose shard holds only its display text (None: unavailable).
CompleteText = Callable[[EntryItem], str | None]


def entry_hit(
    item: EntryItem,
    plan: Plan,
    snippet_chars: int,
    branches: str,
    complete: CompleteText | None = None,
) -> dict[str, Any]:
    e = item.entry
    state = item.shard.state
    full = e.text
    shown_complete = item.shard.complete_text or not e.truncated
    if not shown_complete and complete is not None:
        # A term past the display cut matched (search covers the complete text): the snippet
        # must show it, so the window is taken from the complete text of this one hit.
        found = complete(item)
        if found is not None:
            full, shown_complete = found, True
    text, cut = snippet(full, plan, snippet_chars)
    hit: dict[str, Any] = {
        "kind": "entry",
        "sessionId": bounded(session_label(state.agent, state.session_id)),
        "tier": state.tier,
        "index": e.index,
        "entryId": bounded(e.entry_id),
        "parentId": bounded(e.parent_id),
        "operationAddress": bounded(e.operation_address),
        "type": bounded(e.type) or "entry",
        "role": bounded(e.role),
        "tool": bounded(e.tool),
        "ref": bounded(e.ref),
        "provider": bounded(e.provider),
        "action": bounded(e.action),
        "timestamp": e.timestamp,
        "isError": e.is_error,
    }
    if e.outcome:
        hit["outcome"] = e.outcome
    hit.update(subagent_fields(e))
    if e.family:
        hit["family"] = e.family
    if state.archived:
        hit["archived"] = True  # the source is gone: read from the archive's kept copy
    hit["score"] = wire_score(item.score)
    hit["snippet"] = text
    hit["truncated"] = cut or not shown_complete
    hit["follow"] = {
        "ref": "memory.expand",
        "args": {
            "session": state.path,
            "expectedSourceHash": state.source_hash,
            "expectedLineageFingerprint": state.view(branches).lineage_fingerprint,
            "branches": branches,
            "indices": [e.index],
        },
    }
    return hit


def session_hit(item: SessionItem, request_args: dict[str, Any], branches: str) -> dict[str, Any]:
    state = item.cold.state
    args = {k: v for k, v in request_args.items() if k not in ("offset", "entryRange", "cwd")}
    args["scope"] = f"session:{state.path}"
    args["branches"] = branches
    args["expectedSourceHash"] = state.source_hash
    args["expectedLineageFingerprint"] = state.view(branches).lineage_fingerprint
    hit = {
        "kind": "session",
        "sessionId": bounded(session_label(state.agent, state.session_id)),
        "tier": "cold",
        "cwd": bounded(state.cwd, 2048) or "",
        "lastTimestamp": item.cold.last_ts,
        "score": wire_score(item.score),
        "matchedTerms": item.matched_terms,
        "matchedStructuralEntries": item.matched_structural,
        "follow": {"ref": "memory.recall", "args": args},
    }
    if state.archived:
        hit["archived"] = True
    return hit


def page(
    items: Sequence[Item],
    *,
    plan: Plan,
    offset: int,
    page_size: int,
    snippet_chars: int,
    branches: str,
    request_args: dict[str, Any],
    coverage: dict[str, Any],
    total: int | None = None,
    complete: CompleteText | None = None,
) -> dict[str, Any]:
    """One page of *items* from *offset*, within the envelope.

    *items* may stop after the page (the rest unranked); *total* then counts them all.
    *complete* gives a display-cut hit's complete text, for its snippet.
    """
    count = len(items) if total is None else total
    selected = list(items[offset : offset + page_size])
    hits = [
        entry_hit(i, plan, snippet_chars, branches, complete)
        if isinstance(i, EntryItem)
        else session_hit(i, request_args, branches)
        for i in selected
    ]

    def build(n: int) -> dict[str, Any]:
        end = offset + n
        nxt = (
            {"ref": "memory.recall", "args": {**request_args, "offset": end}}
            if end < count
            else None
        )
        return {"total": count, "hits": hits[:n], "next": nxt, "coverage": coverage}

    n = len(hits)
    response = build(n)
    while n > 1 and json_length(response) > RESPONSE_MAX_CHARS:
        n -= 1
        response = build(n)
    return response
