"""Digest: display cut vs complete postings, cold vocabulary and its two caps."""

from __future__ import annotations

from array import array

from hypothesis import given
from hypothesis import strategies as st

from stages.digest import (
    SessionFold,
    ViewInput,
    build_digest,
    build_entries,
    build_shard,
    summarize,
)
from stages.lineage import Lineage
from stages.normalized import NormalizeResult
from stages.policy import Policy
from stages.tier import assign_tiers
from store.codec import encode
from store.records import NormalizedEntry

FOLD = SessionFold("/s/a.jsonl", "sess", "pi", "/w", "h" * 64, "p", ())


def entry(i: int, text: str, **kw: object) -> NormalizedEntry:
    base: dict[str, object] = dict(
        index=i,
        entry_id=f"e{i}",
        parent_id=None,
        type="message",
        role="user",
        tool=None,
        text=text,
        timestamp=1000 + i,
        is_error=False,
        truncated=False,
        line=i + 2,
        offset=0,
    )
    base.update(kw)
    return NormalizedEntry(**base)  # type: ignore[arg-type]


def view(entries: list[NormalizedEntry], branches: str = "active", selected=None, reasons=()):
    sel = tuple(range(len(entries))) if selected is None else selected
    lin = Lineage(branches, None, (), sel, branches[0] * 64, tuple(reasons))
    return ViewInput(lin, NormalizeResult(tuple(entries)))


def postings(shard_view, term: str) -> list[tuple[int, int]]:
    a = array("I")
    a.frombytes(shard_view.postings[term])
    return list(zip(a[::2], a[1::2], strict=True))


def test_shard_postings_cover_text_past_the_display_cut():
    text = "alpha " * 20 + "needle"
    shard = build_shard(
        FOLD, [view([entry(0, text), entry(1, "alpha beta")])], Policy(max_entry_chars=100)
    )
    v = shard.view("active")
    assert v.entries[0].truncated and len(v.entries[0].text) == 100
    assert "needle" not in v.entries[0].text
    assert postings(v, "needle") == [(0, 1)]
    assert postings(v, "alpha") == [(0, 20), (1, 1)]
    assert v.token_counts == (21, 2)
    assert v.reasons == ("max_entry_chars",)


def test_display_cut_counts_unicode_scalars():
    shard = build_shard(FOLD, [view([entry(0, "a😀b" * 40)])], Policy(max_entry_chars=100))
    cut = shard.view("active").entries[0].text
    assert len(cut) == 100 and cut.encode("utf-8")


def test_all_view_is_stored_only_when_it_differs():
    es = [entry(0, "x"), entry(1, "y")]
    same = [view(es), view(es, "all")]
    assert [v.branches for v in build_shard(FOLD, same, Policy()).views] == ["active"]
    assert [v.branches for v in build_entries(FOLD, same).views] == ["active"]
    differs = [view(es[:1], selected=(0,)), view(es, "all", selected=(0, 1))]
    assert [v.branches for v in build_digest(FOLD, differs, Policy()).views] == ["active", "all"]


def test_digest_fields():
    es = [
        entry(0, "Fix src/a.py", files_touched=("src/a.py",)),
        entry(
            1,
            "Tool: bash",
            role="assistant",
            tool="bash",
            ref="pi.bash",
            provider="pi",
            action="bash",
            outcome="failed",
            is_error=True,
            timestamp=None,
        ),
        entry(2, "beta alpha", tool="read", timestamp=900),
    ]
    d = build_digest(FOLD, [view(es)], Policy()).view("active")
    assert d.vocabulary == b"\n".join(
        sorted([b"fix", b"src", b"a", b"py", b"tool", b"bash", b"beta", b"alpha"])
    )
    assert d.tool_histogram == (("bash", 1), ("read", 1))
    assert d.error_count == 1
    assert (d.first_ts, d.last_ts) == (900, 1000)
    assert d.files_touched == ("src/a.py",)
    assert d.addresses[1] == (
        1,
        "e1",
        None,
        "assistant",
        "bash",
        None,
        "pi.bash",
        "pi",
        "bash",
        "failed",
        True,
        None,  # family: set by the normalizers, not by this hand-built entry
        None,  # the session's own entry, not a subagent's
    )
    assert d.reasons == ()


def test_vocabulary_budget_stops_folding_and_says_so():
    es = [entry(0, "aa bb cc dd")]
    d = build_digest(FOLD, [view(es)], Policy(max_cold_vocabulary_bytes=2 + 4 + 5)).view("active")
    assert d.vocabulary == b"aa\nbb"
    assert d.reasons == ("max_cold_vocabulary_bytes",)


def test_cache_cap_keeps_prefixes_and_says_so():
    es = [entry(i, f"word{i} common") for i in range(300)]
    full = build_digest(FOLD, [view(es)], Policy())
    cap = len(encode(full)) // 2
    d = build_digest(FOLD, [view(es)], Policy(max_cold_cache_bytes=cap))
    assert len(encode(d)) <= cap
    v = d.view("active")
    assert "max_cold_cache_bytes" in v.reasons
    assert 0 < len(v.addresses) < 300
    assert v.addresses == full.view("active").addresses[: len(v.addresses)]


def test_summary_carries_record_reasons():
    es = [entry(0, "z" * 300)]
    views = [view(es, reasons=("dangling_parent",)), view(es, "all")]
    shard = build_shard(FOLD, views, Policy(max_entry_chars=100))
    active, all_ = summarize(FOLD, views, shard)
    assert active.reasons == ("dangling_parent", "max_entry_chars")
    assert all_.branches == "all" and all_.reasons == ("max_entry_chars",)


def test_tiers_are_global_by_mtime_then_path():
    tiers = assign_tiers([("/b", 5), ("/a", 5), ("/c", 9), ("/d", 1)], 2)
    assert tiers == {"/c": "hot", "/a": "hot", "/b": "cold", "/d": "cold"}
    assert set(assign_tiers([("/x", 1)], 0).values()) == {"cold"}


@given(st.lists(st.text(max_size=40), max_size=8))
def test_digest_vocabulary_is_sorted_unique_and_complete(texts):
    from store.tokens import tokenize

    es = [entry(i, t) for i, t in enumerate(texts)]
    d = build_digest(FOLD, [view(es)], Policy()).view("active")
    terms = d.vocabulary.split(b"\n") if d.vocabulary else []
    expected = sorted({tok.encode() for t in texts for tok in tokenize(t)})
    assert terms == expected


def reference_fold(texts: list[str], budget: int) -> tuple[bytes, bool]:
    """The seed's fold, literally: unique terms in entry order until one would not fit."""
    from store.tokens import tokenize

    order: list[str] = []
    used = 2
    for t in texts:
        for term in tokenize(t):
            if term in order:
                continue
            cost = len(term.encode()) + 2 + (1 if order else 0)
            if used + cost > budget:
                return b"\n".join(sorted(x.encode() for x in order)), True
            order.append(term)
            used += cost
    return b"\n".join(sorted(x.encode() for x in order)), False


@given(st.lists(st.text(max_size=30), max_size=6), st.integers(min_value=2, max_value=120))
def test_vocabulary_matches_the_seeds_fold_for_any_budget(texts, budget):
    es = [entry(i, t) for i, t in enumerate(texts)]
    v = build_digest(FOLD, [view(es)], Policy(max_cold_vocabulary_bytes=budget)).view("active")
    blob, capped = reference_fold(texts, budget)
    assert v.vocabulary == blob
    assert ("max_cold_vocabulary_bytes" in v.reasons) == capped


@given(
    st.lists(st.text(max_size=30), max_size=6),
    st.lists(st.text(max_size=30), max_size=6),
    st.booleans(),
    st.integers(min_value=2, max_value=400),
)
def test_each_views_vocabulary_is_its_own_texts(active, extra, superset, budget):
    # "all" mostly repeats "active"'s texts; it must still get exactly the vocabulary of its own.
    all_texts = (active + extra) if superset else (active[1:] + extra)
    a = [entry(i, t) for i, t in enumerate(active)]
    b = [entry(i, t) for i, t in enumerate(all_texts)]
    views = [view(a), view(b, "all", selected=tuple(range(99, 100 + len(b))))]
    d = build_digest(FOLD, views, Policy(max_cold_vocabulary_bytes=budget))
    assert [v.branches for v in d.views] == ["active", "all"]
    for branches, texts in (("active", active), ("all", all_texts)):
        v = d.view(branches)
        blob, capped = reference_fold(texts, budget)
        assert v.vocabulary == blob
        assert ("max_cold_vocabulary_bytes" in v.reasons) == capped
