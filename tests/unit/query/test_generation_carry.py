"""A new generation keeps what the previous one built for sessions that did not change."""

from __future__ import annotations

import os

from pipeline.indexer import build_index
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
    build_index(config)
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
        build_index(config)
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
    build_index(config)
    with Engine(config) as engine:
        first = engine.refresh()
        terms = first.terms("active")
        pi.session("c", session("sc", "gamma"), mtime_s=4000)  # demotes a
        build_index(config)
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
    newest = paths[-1]
    # the appended session's chunk also holds cold rows (rewritten with it)
    assert any(chunk_of(str(p)) == chunk_of(str(newest)) for p in paths[:-2])
    build_index(config)
    with Engine(config, changes=True) as engine:
        engine.recall({"query": "word3", "scope": "global"}, cwd="/")
        first = engine.refresh()
        lexicon = first.lexicon()
        assert lexicon is not None
        with newest.open("ab") as f:
            f.write(jsonl([user("u2", "a1", "and delta", T0 + 5)]))
        os.utime(newest, (1149, 1149))
        build_index(config)
        page = engine.recall({"query": "word3", "scope": "global"}, cwd="/")
        second = engine.refresh()
        assert second.generation == first.generation + 1
        # Then the cold side is carried whole: the same lexicon and the same cold views
        assert second.lexicon() is lexicon
        assert second._views["active"][1] is first._views["active"][1]
        assert page["total"] == 1
        assert engine.recall({"query": "delta", "scope": "global"}, cwd="/")["total"] == 1
