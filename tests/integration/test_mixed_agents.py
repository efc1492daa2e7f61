"""Issue 5 acceptance: Pi, Claude Code and Codex in one index and one recall."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools.corpus import CorpusManifest
from pipeline.catchup import catch_up
from pipeline.status import collect_status
from query.engine import Engine
from store.config import Config
from tests.helpers import generated

pytestmark = pytest.mark.integration
AGENTS = ("pi", "claude", "codex")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CorpusManifest, Config]]:
    base = tmp_path_factory.mktemp("mixed")
    manifest, config = generated(base, sessions=30, mean_kb=8, seed=21, hot_sessions=8)
    report = catch_up(config, processes=1)
    assert report.failed == 0
    yield manifest, config


def resolve_top(engine: Engine, page: dict[str, Any]) -> dict[str, Any]:
    """The rank-1 entry hit, following a cold session candidate when needed."""
    top = page["hits"][0]
    if top["kind"] == "session":
        page = engine.call(top["follow"], cwd="/")
        top = page["hits"][0]
    assert top["kind"] == "entry"
    return top


def test_mixed_corpus_indexes_completely(mixed) -> None:
    _, config = mixed
    status = collect_status(config).as_dict()
    assert status["indexed"] == status["eligible"] > 0
    assert set(status["agents"]) == set(AGENTS)
    assert status["skipped"] == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_user_terms_rank_first_with_and_without_the_agent_filter(mixed, agent) -> None:
    manifest, config = mixed
    planted = [p for p in manifest.planted if p.agent == agent and p.role == "user"]
    assert planted
    with Engine(config) as engine:
        for p in planted:
            for extra in ({}, {"agent": agent}):
                page = engine.recall({"query": p.term, "scope": "global", **extra}, cwd="/")
                top = resolve_top(engine, page)
                assert top["sessionId"].startswith(f"{agent}:"), (p.term, top)
                assert top["role"] == "user"
                text = engine.call(top["follow"], cwd="/")["entries"][0]["text"]
                assert p.term in text
            others = [a for a in AGENTS if a != agent]
            for other in others:
                page = engine.recall({"query": p.term, "scope": "global", "agent": other}, cwd="/")
                assert page["total"] == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_failed_tool_calls_are_found_per_agent(mixed, agent) -> None:
    manifest, config = mixed
    errors = [e for e in manifest.tool_errors if e.agent == agent]
    assert errors
    with Engine(config) as engine:
        page = engine.recall(
            {"scope": "global", "outcome": "failed", "agent": agent, "pageSize": 50}, cwd="/"
        )
        sessions: set[str] = set()
        while True:
            for hit in page["hits"]:
                assert hit["sessionId"].startswith(f"{agent}:")
                sessions.add(hit["sessionId"])
                if hit["kind"] == "entry":
                    assert hit["outcome"] == "failed"
            if page["next"] is None:
                break
            page = engine.call(page["next"], cwd="/")
    failing = {f"{agent}:{e.session_id}" for e in errors}
    # every session the generator made a tool fail in is found (subagent ids are namespaced
    # under their parent, so compare by prefix)
    for sid in failing:
        assert any(s == sid or s.startswith(sid + "/") for s in sessions), sid
