"""Cold lookups through the lexicon answer exactly as each digest's own vocabulary would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from query.engine import Engine
from store.reader import open_snapshot
from store.writer import StoreWriter
from tests.helpers import assistant, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

QUERIES: list[dict[str, Any]] = [
    {"query": "zebra"},
    {"query": "zebra quokka", "queryMatch": "all"},
    {"query": "zebra quokka"},
    {"query": "zebra quokka giraffe words"},
    {"query": "giraffe zebra quokka", "queryMatch": "all"},
    {"query": "alpha beta", "queryMode": "phrase"},
    {"query": "nothinghere"},
    {"query": "q[a-z]+ka", "queryMode": "regex"},
    {"query": "zebra", "role": "toolResult"},
    {"query": "zebra giraffe", "outcome": "failed"},
    {"query": "alpha beta", "queryMode": "phrase", "outcome": "failed"},
    {"outcome": "failed"},
    {"tool": "bash"},
    {"query": "zebra", "branches": "all"},
]


def _session(kit: Kit, i: int, words: str, cwd: str) -> None:
    sid = f"s{i}"
    records = [
        header(sid, cwd, T0 + i),
        user(f"{sid}-u", None, f"question {words} alpha beta", T0 + i),
        assistant(
            f"{sid}-a",
            f"{sid}-u",
            f"answer {words}",
            T0 + i + 1,
            {"id": f"call-{sid}", "name": "bash", "arguments": {"command": f"echo {words}"}},
        ),
        # every third tool call fails: a structural filter then keeps some holders of a term
        tool_result(
            f"{sid}-r", f"{sid}-a", "bash", f"output {words}", T0 + i + 2, error=i % 3 == 0
        ),
    ]
    kit.session(sid, records, cwd=cwd, mtime_s=1000 + i)


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    kit = Kit(tmp_path / "k", hotSessions=1)
    words = ["zebra quokka", "zebra", "quokka", "giraffe", "zebra giraffe", "other words"] * 3
    for i, w in enumerate(words):
        # one project session among 17 cold ones: a regex there reads its own digest, a
        # global one walks the lexicon
        _session(kit, i, w, CWD if i == 1 else "/elsewhere")
    kit.build()
    yield kit
    kit.close()


def answers(engine: Engine) -> list[dict[str, Any]]:
    out = []
    for q in QUERIES:
        for scope in ("global", "project"):
            out.append(engine.recall({**q, "scope": scope, "pageSize": 50}, cwd=CWD))
            # small pages: each ranks only its first items, the rest are counted
            page = engine.recall({**q, "scope": scope, "pageSize": 2}, cwd=CWD)
            out.append(page)
            while page["next"] is not None:
                page = engine.call(page["next"], cwd=CWD)
                out.append(page)
    return out


def _republish(kit: Kit, **changes: Any) -> None:
    writer = StoreWriter(kit.config.index_dir)
    manifest = open_snapshot(kit.config.index_dir).manifest
    writer.publish(replace(manifest, generation=manifest.generation + 1, **changes))


def test_the_pipeline_writes_a_lexicon_covering_every_cold_digest(kit: Kit) -> None:
    gen = kit.engine.refresh()
    lexicon = gen.lexicon()
    assert lexicon is not None
    cold = {s.index_record for s in gen.sessions if s.tier == "cold"}
    assert len(cold) == 17 and lexicon.covered == cold
    assert lexicon.holders(b"zebra", "active") == {
        s.index_record for s in gen.sessions if s.tier == "cold" and "zebra" in _words(kit, s.path)
    }


def _words(kit: Kit, path: str) -> str:
    return Path(path).read_text()


def test_without_a_lexicon_the_answers_are_the_same(kit: Kit) -> None:
    with_lexicon = answers(kit.engine)
    assert any(a["total"] for a in with_lexicon)
    _republish(kit, lexicon=())
    kit.close()
    assert kit.engine.refresh().lexicon() is None
    assert answers(kit.engine) == with_lexicon


def _ranked(page: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(h["sessionId"], h.get("entryId"), h["score"]) for h in page["hits"]]


@pytest.mark.parametrize("hot", [1, 0])
def test_small_pages_followed_to_the_end_give_the_one_big_page(kit: Kit, hot: int) -> None:
    if hot != 1:
        kit.configure(hotSessions=hot)
        kit.build()
    for query in QUERIES:
        big = kit.engine.recall({**query, "scope": "global", "pageSize": 50}, cwd=CWD)
        page = kit.engine.recall({**query, "scope": "global", "pageSize": 2}, cwd=CWD)
        pages = [page]
        while page["next"] is not None:
            page = kit.engine.call(page["next"], cwd=CWD)
            pages.append(page)
        assert [row for p in pages for row in _ranked(p)] == _ranked(big), query
        assert all(len(p["hits"]) == 2 for p in pages[:-1]), query
        assert {p["total"] for p in pages} == {big["total"]}, query


def test_under_a_digest_budget_the_answers_are_the_same(kit: Kit) -> None:
    from query.search import Budgets

    kit.budgets = Budgets(digests=4)
    kit.close()
    with_lexicon = answers(kit.engine)
    assert any("candidate_digest_budget" in a["coverage"]["reasons"] for a in with_lexicon)
    _republish(kit, lexicon=())
    kit.close()
    assert kit.engine.refresh().lexicon() is None
    assert answers(kit.engine) == with_lexicon


def test_a_damaged_segment_falls_back_to_the_digests(kit: Kit) -> None:
    with_lexicon = answers(kit.engine)
    gen = kit.engine.refresh()
    kit.close()
    for name in gen.manifest.lexicon:
        path = gen.snapshot.layout.record_path(name)
        path.chmod(0o600)
        path.write_bytes(path.read_bytes()[:20])
    assert kit.engine.refresh().lexicon() is None
    assert answers(kit.engine) == with_lexicon


def test_a_long_lived_engine_follows_a_new_lexicon(kit: Kit) -> None:
    engine = kit.engine
    before = answers(engine)
    _republish(kit, lexicon=())
    assert answers(engine) == before  # refreshed: per-digest vocabularies now
    assert open_snapshot(kit.config.index_dir).manifest.lexicon == ()
    kit.build()  # the next catch-up run writes the lexicon back (an upgrade does too)
    assert open_snapshot(kit.config.index_dir).manifest.lexicon
    assert answers(engine) == before
