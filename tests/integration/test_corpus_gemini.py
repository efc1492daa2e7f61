"""Generated Gemini CLI sessions (``devtools/corpus/gemini.py``) beside Pi's in one index: every
planted term is found at rank 1 with and without ``--agent gemini``, and every tool call the
generator made fail is found by ``--outcome failed`` (a search that found nothing never is)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools.corpus import CorpusManifest
from pipeline.indexer import build_index
from pipeline.status import collect_status
from query.engine import Engine
from store.config import Config
from tests.helpers import generated

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CorpusManifest, Config]]:
    base = tmp_path_factory.mktemp("gemini-corpus")
    manifest, config = generated(
        base, sessions=12, mean_kb=10, seed=7, agents=("pi", "gemini"), hot_sessions=50
    )
    report = build_index(config, processes=1)
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
    gemini = sum(1 for s in manifest.sessions if s.agent == "gemini")
    assert gemini >= 2 and status["agents"]["gemini"] == gemini
    assert status["indexed"] == status["eligible"] == len(manifest.sessions)
    assert status["incomplete"] == 0, status["incompleteSessions"]


def test_planted_terms_rank_first_with_and_without_the_agent(corpus) -> None:
    manifest, config = corpus
    planted = [p for p in manifest.planted if p.agent == "gemini"]
    assert {p.role for p in planted} >= {"user"}
    with Engine(config) as engine:
        for p in planted:
            for extra in ({}, {"agent": "gemini"}):
                page = engine.recall({"query": p.term, "scope": "global", **extra}, cwd="/")
                top = _top(engine, page)
                assert top["sessionId"] == f"gemini:{p.session_id}", (p.term, extra, top)
                assert top["role"] == p.role, (p.term, top)


def test_every_failed_call_is_found_and_only_those(corpus) -> None:
    manifest, config = corpus
    errors = {(f"gemini:{e.session_id}", e.tool) for e in manifest.tool_errors
              if e.agent == "gemini"}  # fmt: skip
    assert errors
    found: set[tuple[str, str]] = set()
    with Engine(config) as engine:
        page = engine.recall(
            {"scope": "global", "outcome": "failed", "agent": "gemini", "branches": "all",
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
