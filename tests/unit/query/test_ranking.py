"""Ranking properties a person would call right, each on a few small synthetic entries.

Properties, not golden orderings: coordination, IDF dominance whatever the length, the best
passage of a long output (for its terms' counts and for which terms it holds together),
prose keeping its weight beside a tool call, and cold sessions
ranked by bounded per-session statistics with deterministic ties.
"""

from __future__ import annotations

from typing import Any

from tests.helpers import assistant, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"


def _session(
    sid: str, entries: list[tuple[str, str]], calls: dict[int, Any] | None = None
) -> list[dict[str, Any]]:
    """Records of one linear session: ``(kind, text)`` with kind user, assistant or result."""
    records: list[dict[str, Any]] = [header(sid, CWD, T0)]
    parent = None
    for i, (kind, text) in enumerate(entries):
        eid = f"{sid}-{i}"
        if kind == "user":
            records.append(user(eid, parent, text, T0 + i))
        elif kind == "assistant":
            extra = [(calls or {})[i]] if i in (calls or {}) else []
            records.append(assistant(eid, parent, text, T0 + i, *extra))
        else:
            records.append(tool_result(eid, parent, "read", text, T0 + i))
        parent = eid
    return records


def _hits(kit: Kit, query: str, **args: Any) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = kit.recall(query=query, scope="project", pageSize=50, **args)[
        "hits"
    ]
    return hits


def test_more_distinct_terms_beat_one_term_many_times(kit: Kit) -> None:
    entries = [("user", "deploy the service")] * 10 + [("user", "run the script")] * 10
    entries += [("user", "something else entirely")] * 40
    # One common term many times, in the weightiest provenance, against both terms once in
    # a tool output of middling length.
    entries += [("assistant", "script " * 8), ("result", f"{FILLER} deploy {FILLER} script")]
    kit.session("s", _session("s", entries))
    kit.build()
    top = _hits(kit, "deploy script")[0]
    assert top["entryId"] == "s-61"


def test_a_rare_term_dominates_a_common_one_whatever_the_length(kit: Kit) -> None:
    # The README's "flaky test": hundreds of short prose entries say "test"; the only
    # "flaky" sits in one long tool output (a web page the agent read).
    entries = [("assistant", "run the test again")] * 150 + [("user", "does the test pass")] * 150
    entries += [("user", "something else entirely")] * 700
    page = " ".join([FILLER] * 300)  # ~3,600 tokens
    entries.append(("result", f"{page} a monorepo with flaky tests {page}"))
    kit.session("s", _session("s", entries))
    kit.build()
    hits = _hits(kit, "flaky test")
    assert hits[0]["entryId"] == "s-1000"


def test_a_long_output_holding_both_terms_is_scored_by_its_best_passage(kit: Kit) -> None:
    entries = [("user", "the parser is slow")] * 300
    page = " ".join([FILLER] * 2000)  # ~24,000 tokens
    entries.append(("result", f"{page} parser crash at line 7 {page}"))
    kit.session("s", _session("s", entries))
    kit.build()
    assert _hits(kit, "parser crash")[0]["entryId"] == "s-300"
    # Its one passage counts like a short entry's text: a long tail adds no penalty.
    short = Kit(kit.pi.root.parent / "short")
    try:
        short.session("s", _session("s", [*entries[:300], ("result", "parser crash at line 7")]))
        short.build()
        long_score = _hits(kit, "crash")[0]["score"]
        short_score = _hits(short, "crash")[0]["score"]
        assert short_score >= long_score > 0.6 * short_score
    finally:
        short.close()


def test_terms_count_together_only_where_one_passage_holds_them(kit: Kit) -> None:
    # A long output holding both terms 3,000 tokens apart answers neither question: a
    # short reply holding both together, or the same output with both in one passage,
    # does. (Before, scattered terms earned full coordination: source files the agent read
    # outranked the discussion on natural queries.)
    page = " ".join([FILLER] * 250)  # ~3,000 tokens
    entries = [("user", "something else entirely")] * 40 + [("user", "the footer shows a warning")]
    entries += [("user", "footer")] * 5 + [("user", "warning")] * 5
    entries.append(("result", f"footer {page} warning"))  # 51: apart
    entries.append(("result", f"{page} footer warning {page}"))  # 52: together
    kit.session("s", _session("s", entries))
    kit.build()
    order = [h["entryId"] for h in _hits(kit, "footer warning")]
    assert order.index("s-40") < order.index("s-51")
    assert order.index("s-52") < order.index("s-51")
    score = {h["entryId"]: h["score"] for h in _hits(kit, "footer warning")}
    # apart, the output scores like its best passage: one term, not both
    assert score["s-51"] < score["s-52"] / 1.5


def test_prose_keeps_its_weight_beside_a_tool_call(kit: Kit) -> None:
    call = {"id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    argument = {"id": "c2", "name": "bash", "arguments": {"command": "grep tokenizer"}}
    entries = [
        ("assistant", "I will refactor the tokenizer now"),  # 0: prose only
        ("assistant", "I will refactor the tokenizer now"),  # 1: the same prose with a call
        ("result", "tokenizer"),  # 2: tool output
        ("assistant", "Let me look"),  # 3: the term only in the call's arguments
    ] + [("user", "something else entirely")] * 20
    kit.session("s", _session("s", entries, calls={1: call, 3: argument}))
    kit.build()
    score = {h["entryId"]: h["score"] for h in _hits(kit, "tokenizer")}
    assert score["s-0"] == score["s-1"]  # the call does not demote the message's prose
    assert score["s-1"] > score["s-2"] and score["s-1"] > score["s-3"]
    # Asked for operations, provenance is off: every field weighs the same.
    ops = {h["entryId"]: h["score"] for h in _hits(kit, "tokenizer", tool="bash")}
    assert set(ops) == {"s-1", "s-3"}


def test_cold_sessions_rank_by_their_term_statistics_not_their_mtime(kit: Kit) -> None:
    kit.configure(hotSessions=0)
    talks = [("user", "the widget renders twice")] * 20 + [("assistant", "fixed the widget")] * 5
    once = [("user", "unrelated work")] * 24 + [("result", "widget")]
    kit.session("talks", _session("talks", talks), mtime_s=1000)
    kit.session("once", _session("once", once), mtime_s=2000)  # newer
    kit.build()
    hits = _hits(kit, "widget")
    assert [h["kind"] for h in hits] == ["session", "session"]
    assert [h["sessionId"] for h in hits] == ["pi:talks", "pi:once"]
    assert hits[0]["score"] > hits[1]["score"]


def test_a_cold_session_is_scored_for_its_length(kit: Kit) -> None:
    # Both say "widget" twice in prose; one in 4 entries, the other in 400 (BM25's length
    # norm, a session's length its entry count): the short one is about widgets.
    kit.configure(hotSessions=0)
    short = [("user", "the widget renders twice"), ("assistant", "fixed the widget")]
    short += [("user", "thanks")] * 2
    long = [*short[:2], *[("user", "unrelated work")] * 398]
    kit.session("short", _session("short", short), mtime_s=1000)
    kit.session("long", _session("long", long), mtime_s=2000)  # newer
    kit.session("other", _session("other", [("user", "nothing here")] * 50), mtime_s=500)
    kit.build()
    hits = _hits(kit, "widget")
    assert [h["sessionId"] for h in hits] == ["pi:short", "pi:long"]
    assert hits[0]["score"] > hits[1]["score"]


def test_cold_ties_break_by_mtime_then_path(kit: Kit) -> None:
    kit.configure(hotSessions=0)
    same = [("user", "the widget renders twice")]
    kit.session("b", _session("b", same), mtime_s=1000)
    kit.session("a", _session("a", same), mtime_s=1000)
    kit.session("c", _session("c", same), mtime_s=3000)
    kit.build()
    first = [h["sessionId"] for h in _hits(kit, "widget")]
    assert first == ["pi:c", "pi:a", "pi:b"]
    kit.close()
    assert [h["sessionId"] for h in _hits(kit, "widget")] == first  # and every time


def test_cold_statistics_are_read_for_a_bounded_number_of_candidates(kit: Kit) -> None:
    from query.search import Budgets

    kit.configure(hotSessions=0)
    talks = [("user", "the widget renders twice")] * 20 + [("assistant", "fixed the widget")] * 5
    once = [("user", "unrelated work")] * 24 + [("result", "widget")]
    kit.session("talks", _session("talks", talks), mtime_s=1000)
    kit.session("once", _session("once", once), mtime_s=2000)
    kit.budgets = Budgets(cold_stats=1)
    kit.build()
    # One read: the newest candidate is scored from its statistics ("widget" once, in a tool
    # output: the least a holder can score), the other at that least without a read, so the
    # tie goes to the newer session, deterministically.
    hits = _hits(kit, "widget")
    assert [h["sessionId"] for h in hits] == ["pi:once", "pi:talks"]
    assert hits[0]["score"] == hits[1]["score"]
