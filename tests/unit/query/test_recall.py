"""memory.recall on hand-written Pi sessions (reference §3 groups B and C, in our words)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from query.errors import InvalidArgument
from tests.helpers import (
    assistant,
    bash,
    codex_object_rollout,
    codex_said,
    header,
    tool_result,
    user,
)
from tests.unit.query.kit import CWD, T0, Kit, follow_all

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def chat(sid: str, *texts: str, cwd: str = CWD, start: int = T0) -> list[dict[str, Any]]:
    """A linear session alternating user / assistant texts."""
    records: list[dict[str, Any]] = [header(sid, cwd, start)]
    parent = None
    for i, text in enumerate(texts):
        eid = f"e{i}"
        if i % 2 == 0:
            records.append(user(eid, parent, text, start + i))
        else:
            records.append(assistant(eid, parent, text, start + i))
        parent = eid
    return records


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def indices(page: dict[str, Any]) -> list[int]:
    return [h["index"] for h in page["hits"]]


# ------------------------------------------------------------------------------- literal


def test_bm25_ranking_is_deterministic_and_only_matching_entries_return(kit: Kit) -> None:
    kit.session(
        "s",
        chat(
            "s",
            "the auth module keeps failing",
            "I will look at the auth module now",
            "unrelated weather chatter",
            "more chatter about lunch",
        ),
    )
    kit.build()
    first = kit.recall(query="auth module", scope="session")
    second = kit.recall(query="auth module", scope="session")
    assert first == second
    assert sorted(indices(first)) == [0, 1]
    assert first["coverage"]["complete"] is True
    assert all("auth" in h["snippet"] for h in first["hits"])
    assert "text" not in first


def test_equal_scores_tie_break_by_newer_session_then_index(kit: Kit) -> None:
    kit.session("old", chat("old", "needle here", "needle here"), mtime_s=1000)
    kit.session("new", chat("new", "needle here", "needle here"), mtime_s=2000)
    kit.build()
    page = kit.recall(query="needle", scope="project")
    order = [(h["sessionId"], h["index"]) for h in page["hits"]]
    # equal BM25; assistant prose (2.5) ranks ahead of user prose (2.25)
    assert order == [("pi:new", 1), ("pi:old", 1), ("pi:new", 0), ("pi:old", 0)]


def test_literal_input_is_never_a_regex(kit: Kit) -> None:
    kit.session("s", chat("s", "edited src/foo.ts today", "srcXfooYts is a different token"))
    kit.build()
    page = kit.recall(query="srcXfooYts.*", scope="session")
    assert indices(page) == [1]
    page = kit.recall(query="src/foo.ts", scope="session", queryMatch="all")
    assert indices(page) == [0]
    page = kit.recall(query="nothing(here", scope="session")
    assert page["total"] == 0 and page["coverage"]["complete"] is True


def test_regex_runs_only_when_asked(kit: Kit) -> None:
    kit.session("s", chat("s", "got code 404 back", "code review notes"))
    kit.build()
    assert sorted(indices(kit.recall(query="code 4[0-9]", scope="session"))) == [0, 1]
    page = kit.recall(query="code 4[0-9]", scope="session", queryMode="regex")
    assert indices(page) == [0]
    assert page["coverage"]["complete"] is True


def test_query_match_all_and_phrase(kit: Kit) -> None:
    kit.session(
        "s",
        chat(
            "s",
            "use the browser for Heddlework",
            "Stage 1 is done",
            "We will Use CEF for Heddlework in Stage 1 of the browser",
            "heddlework use cef ordering differs: cef use",
        ),
    )
    kit.build()
    page = kit.recall(
        query='"Use CEF" "Stage 1" browser Heddlework', queryMatch="all", scope="session"
    )
    assert indices(page) == [2]
    phrase = kit.recall(query="use cef for heddlework", queryMode="phrase", scope="session")
    assert indices(phrase) == [2]
    # a phrase hit scores on the literal scale: as the entry's all-terms literal score
    both = kit.recall(query="use cef for heddlework", queryMatch="all", scope="session")
    assert indices(both) == [2]
    assert phrase["hits"][0]["score"] == both["hits"][0]["score"] > 0


@pytest.mark.parametrize("mode", ["phrase", "regex"])
def test_query_match_outside_literal_is_rejected(kit: Kit, mode: str) -> None:
    kit.session("s", chat("s", "x"))
    kit.build()
    with pytest.raises(InvalidArgument, match="queryMatch is only valid with literal"):
        kit.recall(query="x", queryMode=mode, queryMatch="any")


def test_human_prose_outranks_tool_plumbing_that_echoes_the_query(kit: Kit) -> None:
    records = [
        header("s", CWD),
        user("u", None, "what did we decide about caching", T0),
        assistant(
            "a1", "u", "", T0 + 1,
            {"id": "c", "name": "fabric_exec", "arguments": {"query": "decide caching"}},
        ),
        tool_result("r", "a1", "fabric_exec", "decide caching decide caching", T0 + 2),
        assistant("a2", "r", "We decide caching stays off", T0 + 3),
    ]  # fmt: skip
    kit.session("s", records)
    kit.build()
    page = kit.recall(query="decide caching", scope="session")
    assert page["hits"][0]["index"] == 3
    assert page["hits"][0]["tool"] is None
    roles = [h["role"] for h in page["hits"]]
    assert roles.index("toolResult") > 0 and roles.index("user") > 0


def test_structural_filters_force_unit_weights_and_keep_only_typed_matches(kit: Kit) -> None:
    records = [
        header("s", CWD),
        user("u", None, "please grep for flaky", T0),
        assistant("a", "u", "", T0 + 1, call("c1", "grep", pattern="flaky")),
        tool_result("r", "a", "grep", "flaky.py:1 flaky", T0 + 2),
        assistant("a2", "r", "", T0 + 3, call("c2", "read", path="flaky.py")),
        tool_result("r2", "a2", "read", "def flaky(): pass", T0 + 4),
    ]  # fmt: skip
    kit.session("s", records)
    kit.build()
    grep = kit.recall(tool="grep", scope="session")
    assert indices(grep) == [2, 1]  # browsing: newest first
    assert all(h["tool"] == "grep" and h["score"] == 1 for h in grep["hits"])
    assert indices(kit.recall(role="user", scope="session")) == [0]
    combined = kit.recall(query="flaky", tool="read", scope="session")
    assert sorted(indices(combined)) == [3, 4]
    assert {h["score"] for h in combined["hits"]} != {1}  # BM25, weight forced to 1


def test_browse_keeps_every_candidate_for_paging(kit: Kit) -> None:
    kit.session("s", chat("s", *[f"line {i}" for i in range(30)]))
    kit.build()
    first = kit.recall(scope="session", pageSize=7)
    assert first["total"] == 30
    seen = [h["index"] for p in follow_all(kit, first) for h in p["hits"]]
    assert seen == list(range(29, -1, -1))  # browsing lists the newest entry first
    assert {h["score"] for h in first["hits"]} == {0}


def test_since_until_are_inclusive(kit: Kit) -> None:
    kit.session("s", chat("s", "a0", "a1", "a2", "a3"))
    kit.build()
    page = kit.recall(scope="session", since=T0 + 1, until=T0 + 2)
    assert indices(page) == [2, 1]
    assert {h["score"] for h in page["hits"]} == {1}  # a time filter is a structural filter


# ---------------------------------------------------------------------------- envelope


def test_broad_recall_is_bounded_and_continues_losslessly(kit: Kit) -> None:
    body = "needle " + "x" * 1400
    path = kit.session("s", chat("s", *[f"{body} {i}" for i in range(600)]))
    kit.build()
    first = kit.recall(query="needle", scope="session", pageSize=50, snippetChars=2000)
    assert first["total"] == 600
    assert 0 < len(first["hits"]) < 50
    assert len(first["hits"]) > 10
    from query.u16 import json_length

    assert json_length(first) <= 30_000
    args = first["next"]["args"]
    assert args["scope"] == f"session:{path}"
    assert HEX64.match(args["expectedSourceHash"])
    assert HEX64.match(args["expectedLineageFingerprint"])
    assert args["offset"] == len(first["hits"])
    second = kit.call(first["next"])
    assert {h["index"] for h in second["hits"]}.isdisjoint(indices(first))
    assert json_length(second) <= 30_000
    kit.append(path, [user("late", "e599", "appended later", T0 + 9999)])
    stale = kit.call(first["next"])
    assert stale["hits"] == [] and stale["error"]["code"] == "stale_pointer"
    assert stale["coverage"]["complete"] is False


def test_every_page_fits_and_every_hit_appears_once(kit: Kit) -> None:
    for n in range(3):
        kit.session(
            f"s{n}",
            chat(f"s{n}", *[f"needle {'y' * (900 * (i % 4))}" for i in range(40)]),
            mtime_s=1000 + n,
        )
    kit.build()
    from query.u16 import json_length

    pages = follow_all(
        kit, kit.recall(query="needle", scope="project", pageSize=50, snippetChars=2000)
    )
    seen = [(h["sessionId"], h["index"]) for p in pages for h in p["hits"]]
    assert len(seen) == len(set(seen)) == 120
    assert all(json_length(p) <= 30_000 for p in pages)
    assert all(p["total"] == 120 for p in pages)


def test_snippets_center_on_the_match_and_say_when_cut(kit: Kit) -> None:
    text = "a " * 600 + "needle " + "b " * 600
    kit.session("s", chat("s", text))
    kit.build()
    hit = kit.recall(query="needle", scope="session", snippetChars=90)["hits"][0]
    assert hit["truncated"] is True
    assert "needle" in hit["snippet"]
    assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    assert len(hit["snippet"]) == 92


# -------------------------------------------------------------------------- cold tier


def two_tiers(kit: Kit) -> tuple[Path, Path]:
    kit.configure(hotSessions=1)
    hot = kit.session("hot", chat("hot", "fresh words", "needle hot side"), mtime_s=2000)
    cold = kit.session(
        "cold",
        [
            header("cold", CWD),
            user("u1", None, "needle in the cold session", T0),
            assistant("a1", "u1", "", T0 + 1, call("c", "bash", command="make")),
            bash("b1", "a1", "make", "boom", T0 + 2, exit_code=2),
            user("u2", "b1", "needle again, with coldonly", T0 + 3),
        ],
        mtime_s=1000,
    )  # fmt: skip
    kit.build()
    return hot, cold


def test_cold_sessions_return_bound_candidates_never_entry_ranges(kit: Kit) -> None:
    _, cold = two_tiers(kit)
    page = kit.recall(query="coldonly", scope="project")
    [hit] = page["hits"]
    assert hit["kind"] == "session" and hit["tier"] == "cold"
    assert hit["matchedTerms"] == 1 and hit["matchedStructuralEntries"] == 0
    args = hit["follow"]["args"]
    assert hit["follow"]["ref"] == "memory.recall"
    assert args["scope"] == f"session:{cold}"
    assert HEX64.match(args["expectedSourceHash"])
    assert "entryRange" not in args and "entryIds" not in args and "offset" not in args
    resolved = kit.call(hit["follow"])
    assert [(h["kind"], h["index"], h["tier"]) for h in resolved["hits"]] == [("entry", 3, "cold")]
    assert resolved["coverage"]["complete"] is True


def test_mixed_stream_pages_entries_and_candidates_together(kit: Kit) -> None:
    two_tiers(kit)
    first = kit.recall(query="needle", scope="project", pageSize=1)
    pages = follow_all(kit, first)
    kinds = [p["hits"][0]["kind"] for p in pages]
    assert len(pages) == 2 and all(p["total"] == 2 for p in pages)
    assert sorted(kinds) == ["entry", "session"]


def test_cold_structural_membership_is_exact_and_combined_needs_hydration(kit: Kit) -> None:
    two_tiers(kit)
    structural = kit.recall(scope="project", tool="bash", outcome="failed")
    [hit] = structural["hits"]
    assert hit["kind"] == "session" and hit["matchedStructuralEntries"] == 1
    assert structural["coverage"]["complete"] is True
    entries = kit.call(hit["follow"])
    assert [(h["index"], h["outcome"]) for h in entries["hits"]] == [(2, "failed")]
    combined = kit.recall(query="needle", scope="project", tool="bash")
    assert "cold_structural_filter_requires_hydration" in combined["coverage"]["reasons"]
    assert combined["coverage"]["complete"] is False
    assert kit.recall(scope="project", ref="pi.grep")["total"] == 0


def test_cold_all_terms_and_phrases_cannot_be_proven_without_hydration(kit: Kit) -> None:
    two_tiers(kit)
    both = kit.recall(query="needle coldonly", queryMatch="all", scope="project")
    assert "cold_all_terms_requires_hydration" in both["coverage"]["reasons"]
    phrase = kit.recall(query="needle again", queryMode="phrase", scope="project")
    assert "cold_phrase_requires_hydration" in phrase["coverage"]["reasons"]
    resolved = kit.call(next(h for h in phrase["hits"] if h["kind"] == "session")["follow"])
    assert indices(resolved) == [3] and resolved["coverage"]["complete"] is True


def test_hydration_does_not_promote_or_write(kit: Kit) -> None:
    _, cold = two_tiers(kit)
    index = kit.config.index_dir
    before = sorted(p.relative_to(index) for p in index.rglob("*"))
    kit.recall(query="needle", scope=f"session:{cold}")
    kit.recall(query="needle", scope="global")
    kit.sessions(scope="global")
    assert sorted(p.relative_to(index) for p in index.rglob("*")) == before
    tiers = {s["file"]: s["tier"] for s in kit.sessions(scope="global")["sessions"]}
    assert tiers[str(cold)] == "cold"


def test_vocabulary_cap_makes_absence_non_authoritative(kit: Kit) -> None:
    kit.configure(hotSessions=0, maxColdVocabularyBytes=10)
    path = kit.session("s", chat("s", "alpha beta gamma delta epsilon"), mtime_s=2000)
    kit.session("t", chat("t", "zeta"), mtime_s=1000)
    kit.build()
    page = kit.recall(query="epsilon", scope="project")
    assert page["total"] == 0
    assert page["coverage"]["complete"] is False
    assert page["coverage"]["incompleteSessions"] == 1
    assert page["coverage"]["reasons"] == ["max_cold_vocabulary_bytes"]
    # hydrating the one session reads its complete entries: the cap no longer applies
    hydrated = kit.recall(query="epsilon", scope=f"session:{path}")
    assert indices(hydrated) == [0] and hydrated["coverage"]["complete"] is True


# --------------------------------------------------------------------------- coverage


def test_display_cut_matters_only_to_phrase_and_regex(kit: Kit) -> None:
    kit.configure(maxEntryChars=100)
    kit.session("a", chat("a", "w " * 80 + "tailtoken at the end"), mtime_s=2000)
    kit.session("b", chat("b", "other"), mtime_s=1000)
    kit.build()
    literal = kit.recall(query="tailtoken", scope="project")
    assert indices(literal) == [0] and literal["coverage"]["complete"] is True
    # the snippet is taken from the complete text (it fits whole here), so it shows the match
    assert "tailtoken" in literal["hits"][0]["snippet"]
    assert literal["hits"][0]["truncated"] is False
    phrase = kit.recall(query="tailtoken at", queryMode="phrase", scope="project")
    assert phrase["total"] == 0
    assert phrase["coverage"]["reasons"] == ["max_entry_chars"]
    # one session in scope reads complete entries: the phrase is provable there
    single = kit.recall(query="tailtoken at", queryMode="phrase", scope="session")
    assert indices(single) == [0] and single["coverage"]["complete"] is True


def test_malformed_lines_and_duplicates_name_their_reasons(kit: Kit) -> None:
    path = kit.session("s", chat("s", "one", "two"))
    with path.open("ab") as f:
        f.write(b'{"type": "message", "id": \n')
    kit.session(
        "d",
        [header("d", CWD), user("x", None, "dup one", T0), user("x", None, "dup two", T0 + 1)],
        mtime_s=10,
    )
    kit.build()
    page = kit.recall(query="one", scope="project")
    reasons = page["coverage"]["reasons"]
    assert "malformed_line" in reasons
    assert page["coverage"]["complete"] is False
    assert page["coverage"]["incompleteSessions"] >= 1


def test_append_without_reindex_marks_the_session_stale(kit: Kit) -> None:
    path = kit.session("s", chat("s", "needle first"))
    kit.session("t", chat("t", "other"), mtime_s=10)
    kit.build()
    assert kit.recall(query="needle", scope="project")["coverage"]["complete"] is True
    kit.append(path, [user("late", "e0", "needle later", T0 + 5)])
    page = kit.recall(query="needle", scope="project")
    assert page["coverage"]["staleSessions"] == 1
    assert page["coverage"]["complete"] is False
    assert "stale_session" in page["coverage"]["reasons"]
    assert indices(page) == [0]  # the indexed snapshot still answers
    kit.build()
    fresh = kit.recall(query="needle", scope="project")
    assert fresh["coverage"]["complete"] is True and fresh["total"] == 2


def test_touch_without_change_is_not_stale(kit: Kit) -> None:
    path = kit.session("s", chat("s", "needle"))
    kit.build()
    os.utime(path, (5000, 5000))
    page = kit.recall(query="needle", scope=f"session:{path}")
    assert page["coverage"]["complete"] is True and page["coverage"]["staleSessions"] == 0


def test_deleted_source_is_unavailable(kit: Kit) -> None:
    path = kit.session("s", chat("s", "needle"))
    kit.session("t", chat("t", "needle too"), mtime_s=10)
    kit.build()
    path.unlink()
    page = kit.recall(query="needle", scope="project")
    assert "source_unavailable" in page["coverage"]["reasons"]
    assert [h["sessionId"] for h in page["hits"]] == ["pi:t"]
    gone = kit.recall(query="needle", scope=f"session:{path}")
    assert gone["error"]["code"] == "source_unavailable"


def test_budgets_name_their_reasons(kit: Kit) -> None:
    from query.search import Budgets

    kit.configure(hotSessions=1)
    kit.budgets = Budgets(entries=3, digests=1, items=4)
    kit.session("h", chat("h", *["needle"] * 6), mtime_s=3000)
    kit.session("c1", chat("c1", "needle"), mtime_s=2000)
    kit.session("c2", chat("c2", "needle"), mtime_s=1000)
    kit.build()
    page = kit.recall(query="needle", scope="project")
    assert {"candidate_entry_budget", "candidate_digest_budget"} <= set(page["coverage"]["reasons"])
    assert page["total"] == 4
    kit.close()
    kit.budgets = Budgets(items=4)
    browse = kit.recall(scope="project")
    assert "candidate_item_budget" in browse["coverage"]["reasons"]
    assert browse["total"] == 4


def test_entry_budget_counts_entries_that_can_match(kit: Kit) -> None:
    """Issue 22 item 10: the budget used to count hot entries before matching, so a term only
    the oldest hot session held returned nothing once newer sessions filled the budget."""
    from query.search import Budgets

    kit.configure(hotSessions=3)
    kit.budgets = Budgets(entries=4)
    kit.session("old", chat("old", "oldestunique word"), mtime_s=1000)
    kit.session("mid", chat("mid", *["filler word"] * 5), mtime_s=2000)
    kit.session("new", chat("new", *["filler word"] * 5), mtime_s=3000)
    kit.build()
    page = kit.recall(query="oldestunique", scope="global")
    assert [h["sessionId"] for h in page["hits"]] == ["pi:old"]
    assert "candidate_entry_budget" not in page["coverage"]["reasons"]
    assert page["coverage"]["complete"] is True
    # more matching entries than the budget: named, the first four in scope order ranked
    crowded = kit.recall(query="word", scope="global")
    assert "candidate_entry_budget" in crowded["coverage"]["reasons"]
    assert crowded["total"] == 4
    assert {h["sessionId"] for h in crowded["hits"]} == {"pi:new"}


# ------------------------------------------------------------------------------ scopes


def test_session_scope_is_the_newest_session_of_the_cwd(kit: Kit) -> None:
    kit.session("old", chat("old", "needle old"), mtime_s=1000)
    kit.session("new", chat("new", "needle new"), mtime_s=2000)
    kit.session("else", chat("else", "needle", cwd="/elsewhere"), cwd="/elsewhere", mtime_s=3000)
    kit.build()
    assert [h["sessionId"] for h in kit.recall(query="needle")["hits"]] == ["pi:new"]
    project = {h["sessionId"] for h in kit.recall(query="needle", scope="project")["hits"]}
    assert project == {"pi:old", "pi:new"}
    assert kit.recall(query="needle", scope="repo")["total"] == 2
    assert kit.recall(query="needle", scope="global")["total"] == 3
    assert kit.recall(query="needle", scope="all", agent="claude")["total"] == 0
    assert kit.recall(query="needle", cwd="/nowhere")["coverage"]["eligibleSessions"] == 0


def test_explicit_sessions_by_id_path_and_ambiguity(kit: Kit) -> None:
    a = kit.session("a", chat("same", "needle a"), mtime_s=1000)
    b = kit.session("b", chat("same", "needle b"), mtime_s=2000, cwd="/other")
    kit.session("c", chat("unique", "needle c"), mtime_s=3000)
    kit.build()
    amb = kit.recall(query="needle", scope="session:same")
    assert amb["error"]["code"] == "ambiguous_session"
    assert amb["error"]["candidates"] == sorted([str(a), str(b)])
    assert amb["hits"] == [] and amb["coverage"]["reasons"] == ["ambiguous_session"]
    assert kit.recall(query="needle", scope=f"session:{a}")["total"] == 1
    assert kit.recall(query="needle", scope="session:unique")["total"] == 1
    assert kit.recall(query="needle", scope="session:pi:unique")["total"] == 1
    missing = kit.recall(query="needle", scope="session:nope")
    assert missing["error"]["code"] == "session_not_found"


def test_paths_outside_the_roots_and_escaping_links_are_refused(kit: Kit, tmp_path: Path) -> None:
    inside = kit.session("s", chat("s", "needle"))
    kit.build()
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(inside.read_bytes())
    refused = kit.recall(query="needle", scope=f"session:{outside}")
    assert refused["error"]["code"] == "session_outside_roots"
    link = inside.parent / "link.jsonl"
    link.symlink_to(outside)
    refused = kit.recall(query="needle", scope=f"session:{link}")
    assert refused["error"]["code"] == "session_outside_roots"
    dotted = kit.recall(query="needle", scope=f"session:{inside.parent}/../../../outside.jsonl")
    assert dotted["error"]["code"] == "session_outside_roots"
    expand = kit.expand(session=str(link), indices=[0])
    assert expand["error"]["code"] == "session_outside_roots" and expand["entries"] == []


def test_entry_range_bounds_single_session_recall(kit: Kit) -> None:
    path = kit.session("s", chat("s", *["needle"] * 6))
    kit.build()
    page = kit.recall(query="needle", scope=f"session:{path}", entryRange={"first": 2, "last": 4})
    assert sorted(indices(page)) == [2, 3, 4]
    assert page["next"] is None
    over = kit.recall(query="needle", scope=f"session:{path}", entryRange={"first": 2, "last": 6})
    assert over["error"]["code"] == "index_out_of_bounds" and over["error"]["entryCount"] == 6
    neg = kit.recall(query="needle", scope=f"session:{path}", entryRange={"first": -1, "last": 2})
    assert neg["error"]["code"] == "index_out_of_bounds"
    with pytest.raises(InvalidArgument, match="entryRange requires scope session"):
        kit.recall(query="needle", scope="project", entryRange={"first": 0, "last": 1})
    with pytest.raises(InvalidArgument, match="integrity expectations"):
        kit.recall(query="needle", scope="project", expectedSourceHash="ab")


# ---------------------------------------------------------------------------- branches


def branched(kit: Kit) -> Path:
    records = [
        header("b", CWD),
        user("u1", None, "root question", T0),
        assistant("a1", "u1", "abandoned sibling answer", T0 + 1),
        assistant("a2", "u1", "kept answer", T0 + 2),
        user("u2", "a2", "follow up", T0 + 3),
    ]
    path = kit.session("b", records)
    kit.build()
    return path


def test_active_branch_hides_abandoned_siblings(kit: Kit) -> None:
    path = branched(kit)
    assert kit.recall(query="abandoned", scope="session")["total"] == 0
    every = kit.recall(query="abandoned", scope="session", branches="all")
    assert every["total"] == 1
    follow = every["hits"][0]["follow"]
    assert follow["args"]["branches"] == "all"
    assert kit.call(follow)["entries"][0]["text"] == "abandoned sibling answer"
    off = kit.expand(session=str(path), entryIds=["a1"])
    assert off["error"]["code"] == "address_not_found"
    assert (
        kit.expand(session=str(path), entryIds=["a1"], branches="all")["entries"][0]["entryId"]
        == "a1"
    )


def test_branch_change_makes_pointers_stale(kit: Kit) -> None:
    path = branched(kit)
    page = kit.recall(query="answer", scope="session", pageSize=1, branches="active")
    follow = page["hits"][0]["follow"]
    kit.append(path, [assistant("a3", "u1", "a new branch answer", T0 + 9)])
    kit.build()
    stale = kit.call(follow)
    assert stale["error"]["code"] == "stale_pointer"
    assert stale["entries"] == []


def test_entries_rank_before_sessions_on_equal_score_and_mtime(kit: Kit) -> None:
    kit.configure(hotSessions=1)
    for name in ("a", "b"):  # same mtime: "a" is hot (path order), "b" cold
        kit.session(
            name,
            [
                header(name, CWD),
                user("u", None, "go", T0),
                bash("b", "u", "make", "boom", T0 + 1, exit_code=1),
            ],
            mtime_s=1000,
        )
    kit.build()
    page = kit.recall(scope="project", tool="bash")
    assert [(h["kind"], h["sessionId"], h.get("index")) for h in page["hits"]] == [
        ("entry", "pi:a", 1),
        ("session", "pi:b", None),
    ]


def test_sessions_written_after_the_generation_are_stale_not_absent(kit: Kit) -> None:
    kit.session("old", chat("old", "needle"), mtime_s=1000)
    kit.session("other", chat("other", "x", cwd="/elsewhere"), cwd="/elsewhere", mtime_s=1000)
    kit.build()
    assert kit.recall(query="needle", scope="project")["coverage"]["complete"] is True
    kit.session("new", chat("new", "needle too"), mtime_s=2000)
    kit.session("far", chat("far", "needle", cwd="/elsewhere"), cwd="/elsewhere", mtime_s=2000)
    for scope, eligible in (("session", 1), ("project", 2), ("global", 4)):
        coverage = kit.recall(query="needle", scope=scope)["coverage"]
        assert coverage["complete"] is False, scope
        assert coverage["staleSessions"] >= 1 and "stale_session" in coverage["reasons"]
        assert coverage["eligibleSessions"] == eligible + (scope == "session")
    kit.build()
    assert kit.recall(query="needle", scope="project")["coverage"]["complete"] is True
    assert kit.recall(query="needle", scope="session")["hits"][0]["sessionId"] == "pi:new"


def test_index_wide_budget_reasons_and_skipped_files_count(kit: Kit) -> None:
    from dataclasses import replace

    from store.records import SkippedFile
    from store.writer import StoreWriter

    kit.session("a", chat("a", "needle"), mtime_s=3000)
    pending = kit.session("b", chat("b", "needle"), mtime_s=2000)
    kit.build()
    # a generation published mid-catch-up: one session done, one left for the next batch
    writer = StoreWriter(kit.config.index_dir)
    with writer.lock():
        current = kit.engine.refresh().manifest
        writer.publish(
            replace(
                current,
                generation=current.generation + 1,
                sessions=tuple(s for s in current.sessions if s.path != str(pending)),
                skipped=(SkippedFile(str(pending), "pi", "max_sync_sessions"),),
                reasons=("max_sync_sessions",),
            )
        )
    page = kit.recall(query="needle", scope="project")
    coverage = page["coverage"]
    assert (coverage["indexedSessions"], coverage["eligibleSessions"]) == (1, 2)
    assert coverage["reasons"] == ["max_sync_sessions"] and coverage["complete"] is False
    assert page["total"] == 1
    explicit = kit.recall(query="needle", scope=f"session:{pending}")
    assert explicit["coverage"]["reasons"] == ["max_sync_sessions"]
    assert kit.expand(session=str(pending), indices=[0])["error"]["code"] == "source_unavailable"


def test_an_era_a_codex_rollout_written_after_the_generation_is_stale(kit: Kit) -> None:
    kit.session("old", chat("old", "needle"), mtime_s=1000)
    kit.build()
    assert kit.recall(query="needle", scope="global")["coverage"]["complete"] is True
    # a rollout-*.json is a session under the Codex root only
    (kit.pi.root / "rollout-2025-05-01-x.json").write_bytes(b"{}")
    assert kit.recall(query="needle", scope="global")["coverage"]["complete"] is True
    codex = kit.pi.base / "codex"
    codex.mkdir()
    rollout = codex_object_rollout("era-a", [codex_said("user", "needle")])
    (codex / "rollout-2025-05-01-era-a.json").write_bytes(rollout)
    coverage = kit.recall(query="needle", scope="global")["coverage"]
    assert coverage["complete"] is False and coverage["staleSessions"] == 1
    kit.build()
    page = kit.recall(query="needle", scope="global")
    assert page["coverage"]["complete"] is True
    assert sorted(h["sessionId"] for h in page["hits"]) == ["codex:era-a", "pi:old"]
    # and a session can be named by its file stem
    for target in ("rollout-2025-05-01-era-a", str(codex / "rollout-2025-05-01-era-a.json")):
        named = kit.recall(query="needle", scope=f"session:{target}")
        assert [h["sessionId"] for h in named["hits"]] == ["codex:era-a"], target
