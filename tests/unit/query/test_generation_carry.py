"""A new generation keeps what the previous one built for sessions that did not change."""

from __future__ import annotations

import os

from pipeline.catchup import catch_up
from query.engine import Engine
from tests.helpers import PiRoot, assistant, header, jsonl, user

T0 = 1_700_000_000_000


def session(sid: str, word: str) -> list[dict]:
    return [
        header(sid, "/work/proj"),
        user("u1", None, f"tell me about {word}", T0),
        assistant("a1", "u1", f"{word} is a word", T0 + 1),
    ]


def test_unchanged_sessions_are_served_from_the_previous_generation(tmp_path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=2)
    a = pi.session("a", session("sa", "alpha"), mtime_s=3000)
    pi.session("b", session("sb", "beta"), mtime_s=2000)
    pi.session("c", session("sc", "gamma"), mtime_s=1000)  # cold
    catch_up(config)
    with Engine(config) as engine:
        first = engine.refresh()
        first.warm()
        hot_b = next(s for s in first.sessions if s.path.endswith("b.jsonl"))
        shard_b = first.shard(hot_b, "active")
        terms = first.terms("active")
        # When a grows and a new generation is published
        with a.open("ab") as f:
            f.write(jsonl([user("u2", "a1", "and delta", T0 + 5)]))
        os.utime(a, (3001, 3001))
        catch_up(config)
        second = engine.refresh()
        assert second.generation == first.generation + 1
        # Then b's shard and the cold term index are the very same objects
        assert second.shard(hot_b, "active") is shard_b
        assert second.terms("active")[0] is terms[0]
        # and a is rebuilt with its new entry
        page = engine.recall({"query": "delta", "scope": "global"}, cwd="/")
        assert page["total"] == 1 and page["hits"][0]["sessionId"] == "pi:sa"


def test_a_changed_cold_set_rebuilds_the_term_index(tmp_path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=1)
    pi.session("a", session("sa", "alpha"), mtime_s=3000)
    pi.session("b", session("sb", "beta"), mtime_s=2000)
    catch_up(config)
    with Engine(config) as engine:
        first = engine.refresh()
        terms = first.terms("active")
        pi.session("c", session("sc", "gamma"), mtime_s=4000)  # demotes a
        catch_up(config)
        second = engine.refresh()
        assert second.terms("active")[0] is not terms[0]
        page = engine.recall({"query": "alpha", "scope": "global"}, cwd="/")
        assert page["hits"][0]["kind"] == "session" and page["hits"][0]["sessionId"] == "pi:sa"


def test_an_append_keeps_the_cold_lexicon_although_its_chunk_holds_cold_rows(tmp_path) -> None:
    from store.layout import chunk_of

    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=2)
    paths = [
        pi.session(f"s{n:03d}", session(f"s{n:03d}", f"word{n}"), mtime_s=1000 + n)
        for n in range(150)
    ]
    # The appended session's chunk must also hold cold rows (rewritten with it). Chunks hash
    # the path, which holds tmp_path: pick a session that shares its chunk (150 paths in 64
    # chunks always have one) and make it the newest, with the other hot one elsewhere.
    newest, partner = next(
        (p, q) for p in paths for q in paths if p != q and chunk_of(str(p)) == chunk_of(str(q))
    )
    other = next(p for p in paths if chunk_of(str(p)) != chunk_of(str(newest)))
    os.utime(other, (1999, 1999))
    os.utime(newest, (2000, 2000))
    assert partner not in (newest, other)  # cold: hotSessions is 2
    catch_up(config)
    with Engine(config, changes=True) as engine:
        engine.recall({"query": "word3", "scope": "global"}, cwd="/")
        first = engine.refresh()
        lexicon = first.lexicon()
        assert lexicon is not None
        with newest.open("ab") as f:
            f.write(jsonl([user("u2", "a1", "and delta", T0 + 5)]))
        os.utime(newest, (2001, 2001))
        catch_up(config)
        page = engine.recall({"query": "word3", "scope": "global"}, cwd="/")
        second = engine.refresh()
        assert second.generation == first.generation + 1
        # Then the cold side is carried whole: the same lexicon and the same cold views
        assert second.lexicon() is lexicon
        assert second._views["active"][1] is first._views["active"][1]
        assert page["total"] == 1
        assert engine.recall({"query": "delta", "scope": "global"}, cwd="/")["total"] == 1


def test_carried_lookups_equal_rebuilt_ones() -> None:
    from dataclasses import replace

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from query.generation import _built_lookups, _patched_lookups, order_key
    from tests.unit.store.factories import state

    # few ids, stems and folders, so lists are shared and a moved session changes lists
    ids, folders = ["s1", "s2", "s3"], ["/w/a", "/w/b/", "/w/b", ""]

    @st.composite
    def generations(draw: st.DrawFn) -> tuple[list, list]:
        n = draw(st.integers(1, 12))
        old = [
            replace(
                state(f"/r/{draw(st.sampled_from('abc'))}/{k}.jsonl", "x", "y"),
                session_id=draw(st.sampled_from(ids)),
                cwd=draw(st.sampled_from(folders)),
                mtime_ns=draw(st.integers(0, 5)),
            )
            for k in range(n)
        ]
        which = draw(st.sets(st.integers(0, n - 1)))
        new = [
            replace(
                s,
                session_id=draw(st.sampled_from(ids)),
                cwd=draw(st.sampled_from(folders)),
                mtime_ns=draw(st.integers(0, 9)),
            )
            if k in which
            else s
            for k, s in enumerate(old)
        ]
        return old, new

    @settings(max_examples=300, deadline=None)
    @given(generations())
    def check(pair: tuple[list, list]) -> None:
        old, new = pair
        by_path = {s.path: s for s in old}
        moved = [s for s in new if by_path[s.path] is not s]
        previous = _built_lookups(sorted(old, key=order_key))
        patched = _patched_lookups(previous, moved, by_path)
        assert patched == _built_lookups(sorted(new, key=order_key))
        # and the previous generation's lookups are left as they were
        assert previous == _built_lookups(sorted(old, key=order_key))

    check()


def test_an_append_carries_the_lookups_to_the_next_generation(tmp_path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=2)
    a = pi.session("a", session("sa", "alpha"), mtime_s=1000)
    pi.session("b", session("sb", "beta"), mtime_s=2000)
    catch_up(config)
    with Engine(config) as engine:
        first = engine.refresh()
        assert [s.session_id for s in first.by_cwd["/work/proj"]] == ["sb", "sa"]
        with a.open("ab") as f:
            f.write(jsonl([user("u2", "a1", "and delta", T0 + 5)]))
        os.utime(a, (3000, 3000))
        catch_up(config)
        second = engine.refresh()
        assert second._lookup is not None  # patched from the first, not rebuilt on use
        assert [s.session_id for s in second.by_cwd["/work/proj"]] == ["sa", "sb"]
        assert second.by_id["sa"] == [second.by_path[str(a)]]
