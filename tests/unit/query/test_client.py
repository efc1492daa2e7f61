"""query.client: typed results over the seed's objects, call tokens, paging, the fallback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import query.client as client_module
from query.client import Memory
from query.errors import InvalidArgument
from query.results import (
    Call,
    EntryHit,
    ExpandPage,
    RecallPage,
    SessionCounts,
    SessionHit,
    SessionList,
)
from query.transport import ServerUnavailable
from store.errors import SnapshotMissing
from tests.helpers import assistant, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit


@pytest.fixture
def memory(kit: Kit) -> Iterator[Memory]:
    m = Memory(kit.config, cwd=CWD)
    yield m
    m.close()


def corpus(kit: Kit) -> None:
    kit.configure(hotSessions=1)
    for n in range(3):
        kit.session(
            f"s{n}",
            [
                header(f"s{n}", CWD),
                user("u", None, f"needle number {n}", T0 + n),
                assistant("a", "u", "", T0 + n, {"id": "c", "name": "bash", "arguments": {}}),
                tool_result("r", "a", "bash", "needle output", T0 + n, error=True),
            ],
            mtime_s=1000 + n,
        )
    kit.build()


def test_typed_results_keep_the_seed_object(kit: Kit, memory: Memory) -> None:
    corpus(kit)
    page = memory.recall(query="needle", scope="project", pageSize=2)
    assert isinstance(page, RecallPage)
    assert page.raw == kit.recall(query="needle", scope="project", pageSize=2)
    assert memory.served_by == "in-process"  # no server runs in unit tests
    assert page.total == 4 and len(page.hits) == 2  # 2 hot entries + 2 cold sessions
    assert page.coverage.complete is True and page.coverage.indexed_sessions == 3
    entry = next(h for h in page.hits if isinstance(h, EntryHit))
    assert entry.follow.ref == "memory.expand" and entry.session_id == "pi:s2"
    assert page.next is not None and page.next.args["offset"] == 2
    kinds = {type(h) for p in memory.pages(page) for h in p.hits}
    assert kinds == {EntryHit, SessionHit}


def test_call_accepts_typed_and_raw_tokens(kit: Kit, memory: Memory) -> None:
    corpus(kit)
    page = memory.recall({"query": "needle"}, scope="project")
    hit = page.hits[0]
    detail = memory.call(hit.follow)
    assert isinstance(detail, ExpandPage) and detail.error is None
    [entry] = detail.entries
    assert entry.index == hit.raw["index"] and entry.text_range.complete is True
    assert memory.call(hit.follow.to_dict()).raw == detail.raw
    cold = next(h for p in memory.pages(page) for h in p.hits if isinstance(h, SessionHit))
    resolved = memory.call(cold.follow)
    assert isinstance(resolved, RecallPage) and resolved.hits
    assert all(isinstance(h, EntryHit) for h in resolved.hits)
    listing = memory.call(Call("memory.sessions", {"scope": "project"}))
    assert isinstance(listing, SessionList) and len(listing.sessions) == 3
    assert listing.sessions[0].file.endswith("s2.jsonl")


def test_session_rows_say_what_each_session_was(kit: Kit, memory: Memory) -> None:
    # Given three sessions, one hot and two cold, each a prompt and a failed bash call
    corpus(kit)
    # When the client lists them
    listing = memory.sessions(scope="project")
    # Then each typed row carries its first prompt and its counts, hot and cold alike
    assert [r.first_prompt for r in listing.sessions] == [f"needle number {n}" for n in (2, 1, 0)]
    assert {r.tier for r in listing.sessions} == {"hot", "cold"}
    assert all(r.counts == SessionCounts(1, 1, 1) for r in listing.sessions)


def test_session_rows_carry_the_recorded_title(kit: Kit, memory: Memory) -> None:
    named = {"type": "session_info", "id": "i", "parentId": "u", "name": "needle hunt"}
    kit.session("t", [header("t", CWD), user("u", None, "find it", T0), named])
    kit.session("u", [header("u", CWD), user("u", None, "plain", T0)], mtime_s=1)
    kit.build()
    rows = memory.sessions(scope="project").sessions
    assert [(r.title, r.first_prompt) for r in rows] == [
        ("needle hunt", "find it"),
        (None, "plain"),
    ]


def test_expand_errors_are_answered_and_bad_calls_raise(kit: Kit, memory: Memory) -> None:
    corpus(kit)
    answered = memory.expand(session="s0", indices=[99])
    assert answered.error is not None and answered.error.code == "index_out_of_bounds"
    with pytest.raises(InvalidArgument):
        memory.recall(bogus=True)
    with pytest.raises(InvalidArgument):
        memory.call({"ref": "memory.nothing", "args": {}})


def test_catalog_is_typed(kit: Kit, memory: Memory) -> None:
    corpus(kit)
    catalog = memory.catalog()
    [(agent, head)] = catalog.heads()
    assert (agent, head.ref, head.count, head.failures) == ("pi", "pi.bash", 6, 3)
    assert head.follow is not None
    assert isinstance(memory.call(head.follow), RecallPage)


def test_no_index_raises_snapshot_missing(kit: Kit, memory: Memory) -> None:
    with pytest.raises(SnapshotMissing):
        memory.recall(query="x")


def test_require_server_without_one_raises(kit: Kit) -> None:
    corpus(kit)
    with Memory(kit.config, server="require") as strict, pytest.raises(ServerUnavailable):
        strict.recall(query="needle")


def test_module_functions_use_the_default_configuration(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(kit)
    monkeypatch.setenv("SESSIONDEX_CONFIG", str(kit.pi.config_path))
    monkeypatch.chdir(kit.pi.base)
    monkeypatch.setattr(client_module, "_shared", None)
    try:
        page = client_module.recall(query="needle", scope="global")
        assert page.total == 4
        assert client_module.catalog(scope="global").total == 1
        seen: list[int] = []
        hit = page.hits[0]
        assert client_module.walk(hit.follow, lambda e: seen.append(e.index)).visited == 1
    finally:
        if client_module._shared is not None:
            client_module._shared.close()
        monkeypatch.setattr(client_module, "_shared", None)
