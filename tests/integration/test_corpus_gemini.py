"""Generated Gemini CLI and Qwen Code sessions (``devtools/corpus/gemini.py``, ``qwen.py``)
beside Pi's in one index: every planted term is found at rank 1 with and without ``--agent``,
and every tool call the generator made fail is found by ``--outcome failed``, nothing else."""

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
AGENTS = ("gemini", "qwen")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CorpusManifest, Config]]:
    base = tmp_path_factory.mktemp("gemini-corpus")
    manifest, config = generated(
        base, sessions=12, mean_kb=10, seed=7, agents=("pi", "gemini", "qwen"), hot_sessions=50
    )
    report = catch_up(config, processes=1)
    assert report.failed == 0
    yield manifest, config


def _top(engine: Engine, page: dict[str, Any]) -> dict[str, Any]:
    top = page["hits"][0]
    if top["kind"] == "session":  # a cold session: follow it to its entry
        top = engine.call(top["follow"], cwd="/")["hits"][0]
    return top


def test_the_generated_sessions_index_completely(corpus) -> None:
    manifest, config = corpus
    status = collect_status(config).as_dict()
    for agent in AGENTS:
        count = sum(1 for s in manifest.sessions if s.agent == agent)
        assert count >= 2 and status["agents"][agent] == count
    assert status["indexed"] == status["eligible"] == len(manifest.sessions)
    assert status["incomplete"] == 0, status["incompleteSessions"]


@pytest.mark.parametrize("agent", AGENTS)
def test_planted_terms_rank_first_with_and_without_the_agent(corpus, agent) -> None:
    manifest, config = corpus
    planted = [p for p in manifest.planted if p.agent == agent]
    assert {p.role for p in planted} >= {"user"}
    with Engine(config) as engine:
        for p in planted:
            for extra in ({}, {"agent": agent}):
                page = engine.recall({"query": p.term, "scope": "global", **extra}, cwd="/")
                top = _top(engine, page)
                assert top["sessionId"] == f"{agent}:{p.session_id}", (p.term, extra, top)
                assert top["role"] == p.role, (p.term, top)


@pytest.mark.parametrize("agent", AGENTS)
def test_every_failed_call_is_found_and_only_those(corpus, agent) -> None:
    manifest, config = corpus
    errors = {(f"{agent}:{e.session_id}", e.tool) for e in manifest.tool_errors
              if e.agent == agent}  # fmt: skip
    assert errors
    found: set[tuple[str, str]] = set()
    with Engine(config) as engine:
        page = engine.recall(
            {"scope": "global", "outcome": "failed", "agent": agent, "branches": "all",
             "role": "toolResult", "pageSize": 50}, cwd="/",
        )  # fmt: skip
        while True:
            for hit in page["hits"]:
                if hit["kind"] == "session":
                    continue
                found.add((hit["sessionId"], hit["tool"]))
            if page["next"] is None:
                break
            page = engine.call(page["next"], cwd="/")
    # every session is hot: each failed call is an entry hit, and nothing else is one
    assert found == errors, (errors, found)
