"""`query mcp` driven by the MCP SDK's own client over stdio, as Claude Code or Codex would."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from devtools.corpus import generate
from pipeline.catchup import catch_up
from query.engine import Engine
from query.transport import Backend
from tests.helpers import PiRoot, assistant, header, tool_result, user
from tests.integration.test_serve import Served, wait_for
from tests.unit.query.kit import CWD, T0, Kit

pytestmark = pytest.mark.integration

TOOLS = {"memory_recall", "memory_expand", "memory_sessions", "memory_catalog"}


def run_client(config: Path, body: Callable[[ClientSession], Awaitable[Any]], *extra: str) -> Any:
    """Start `query mcp` as a stdio subprocess, initialize a session and run *body* on it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "query", "mcp", "--config", str(config), *extra]
    )

    async def go() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(go)


def tool(name: str) -> Callable[..., Awaitable[Any]]:
    async def call(session: ClientSession, args: dict[str, Any]) -> Any:
        return await session.call_tool(name, args)

    return call


def corpus(kit: Kit) -> Path:
    kit.configure(hotSessions=1)
    path = kit.session(
        "main",
        [
            header("main", CWD),
            user("u", None, "why does the flaky timeout test fail", T0),
            assistant("a", "u", "x" * 30_000, T0 + 1, {"id": "c", "name": "bash", "arguments": {}}),
            tool_result("r", "a", "bash", "timeout after 30s", T0 + 2, error=True),
        ],
        mtime_s=2000,
    )
    kit.session(
        "older",
        [header("older", CWD), user("u", None, "an older timeout note", T0)],
        mtime_s=1000,
    )
    kit.build()
    return path


def test_tools_answer_follow_tokens_and_report_bad_arguments(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "k")
    try:
        path = corpus(kit)
        engine = Engine(kit.config)

        async def body(s: ClientSession) -> None:
            listed = (await s.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for t in listed:
                assert t.description and len(t.description) > 80
                assert t.input_schema["additionalProperties"] is False
                assert all("description" in p for p in t.input_schema["properties"].values())
                assert t.annotations is not None and t.annotations.read_only_hint is True

            args = {"query": "timeout", "scope": "project", "pageSize": 1}
            page = await s.call_tool("memory_recall", args)
            assert page.is_error is False
            assert page.structured_content == engine.recall(args, cwd=CWD)
            assert page.content[0].text.startswith('{"total":')
            hit = page.structured_content["hits"][0]
            assert hit["follow"]["ref"] == "memory.expand"
            # A follow token: its args to the tool it names, or the whole token.
            detail = await s.call_tool("memory_expand", hit["follow"]["args"])
            assert detail.is_error is False
            assert detail.structured_content["entries"][0]["index"] == hit["index"]
            whole = await s.call_tool("memory_expand", hit["follow"])
            assert whole.structured_content == detail.structured_content
            # A next token pages on; a cold session's follow resolves it.
            seen = [hit]
            nxt = page.structured_content["next"]
            while nxt is not None:
                more = await s.call_tool(nxt["ref"].replace(".", "_"), nxt["args"])
                seen += more.structured_content["hits"]
                nxt = more.structured_content["next"]
            assert len(seen) == page.structured_content["total"] == 3
            cold = next(h for h in seen if h["kind"] == "session")
            resolved = await s.call_tool("memory_recall", cold["follow"]["args"])
            assert resolved.structured_content["hits"][0]["kind"] == "entry"
            # Long text continues through next, within the envelope.
            long = await s.call_tool("memory_expand", {"session": str(path), "indices": [1]})
            chunk = long.structured_content
            assert chunk["entries"][0]["textRange"]["complete"] is False
            assert chunk["next"] is not None and len(long.content[0].text) <= 30_000

            sessions = await s.call_tool("memory_sessions", {"scope": "project"})
            assert [r["file"] for r in sessions.structured_content["sessions"]][0] == str(path)
            catalog = await s.call_tool("memory_catalog", {})
            heads = catalog.structured_content["agents"][0]["providers"][0]["heads"]
            assert [h["ref"] for h in heads] == ["pi.bash"]
            failed = await s.call_tool("memory_recall", heads[0]["follow"]["args"])
            assert {h["ref"] for h in failed.structured_content["hits"]} == {"pi.bash"}

            bad = await s.call_tool("memory_recall", {"query": "x", "bogus": True})
            assert bad.is_error is True
            assert bad.structured_content["error"]["code"] == "invalid_argument"
            assert "bogus" in bad.structured_content["error"]["message"]
            wrong = await s.call_tool("memory_recall", hit["follow"])
            assert wrong.is_error is True and "memory_expand" in wrong.content[0].text
            range_error = await s.call_tool("memory_expand", {"session": "main", "indices": [9]})
            assert range_error.is_error is False  # an answered error, as the CLI prints it
            assert range_error.structured_content["error"]["code"] == "index_out_of_bounds"
            unknown = await s.call_tool("memory_forget", {})
            assert unknown.is_error is True

        run_client(kit.pi.config_path, body, "--cwd", CWD)
        engine.close()
    finally:
        kit.close()


def test_answers_through_query_serve_when_it_runs(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "k")
    corpus(kit)
    server = Served(kit.pi.config_path)
    try:
        with Backend(kit.config, server="require") as probe:
            wait_for(lambda: probe.ping() is not None)
            before = probe.ping()

            async def body(s: ClientSession) -> Any:
                return await s.call_tool("memory_recall", {"query": "flaky", "scope": "project"})

            result = run_client(kit.pi.config_path, body, "--cwd", CWD)
            assert result.structured_content["total"] == 1
            after = probe.ping()
            assert before is not None and after is not None
            assert after["requests"] == before["requests"] + 1
    finally:
        server.stop()
        kit.close()


def test_no_index_is_a_structured_error(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    pi.write_config()

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("memory_recall", {"query": "anything"})

    result = run_client(pi.config_path, body)
    assert result.is_error is True
    assert result.structured_content["error"]["code"] == "no_index"


def test_acceptance_planted_term_is_rank_1_over_a_generated_corpus(tmp_path: Path) -> None:
    """A stock MCP client lists the four tools and recalls a planted term at rank 1."""
    manifest = generate(
        tmp_path / "corpus",
        sessions=12,
        mean_kb=24,
        seed=11,
        agents=("pi", "claude", "codex"),
        malformed_lines=False,
    )
    config = tmp_path / "config.toml"
    config.write_text(
        "[sources]\n"
        + "".join(f'{a} = "{tmp_path / "corpus" / a}"\n' for a in ("pi", "claude", "codex"))
        + f'[memory]\nindexDir = "{tmp_path / "index"}"\nhotSessions = 4\n'
    )
    from store.config import load_config

    catch_up(load_config(config), processes=1)
    planted = manifest.planted
    assert len(planted) >= 10

    async def body(s: ClientSession) -> list[dict[str, Any]]:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        out = []
        for p in planted:
            r = await s.call_tool("memory_recall", {"query": p.term, "scope": "global"})
            assert r.is_error is False
            out.append(r.structured_content)
        return out

    tiers = set()
    for p, result in zip(planted, run_client(config, body), strict=True):
        assert result["hits"], p.term
        first = result["hits"][0]
        assert first["sessionId"] == f"{p.agent}:{p.session_id}", (p.term, first)
        if first["kind"] == "entry" and p.agent == "pi":
            assert first["entryId"] == p.entry_id
        tiers.add(first["tier"])
    assert tiers == {"hot", "cold"}  # both ways a session can be found


class FakeBackend:
    """Stands in for Backend in call_tool: answers from canned results, records arguments."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.seen: list[tuple[str, Any]] = []

    def __getattr__(self, op: str) -> Callable[..., dict[str, Any]]:
        def run(args: Any, *, cwd: str) -> dict[str, Any]:
            self.seen.append((op, dict(args)))
            return self.result

        return run


def test_call_tool_unwraps_tokens_and_bounds_long_listings() -> None:
    from query.mcp import call_tool
    from query.u16 import json_length

    rows = [{"id": f"pi:{i}", "file": f"/s/{'x' * 200}{i}.jsonl", "cwd": "/w"} for i in range(500)]
    fake = FakeBackend({"scope": "global", "branches": "active", "sessions": rows})
    listing, failed = call_tool(fake, "memory_sessions", {"scope": "global"}, cwd="/w")
    assert failed is False and json_length(listing) <= 30_000
    assert listing["omittedSessions"] == 500 - len(listing["sessions"]) > 0
    token = {"ref": "memory.expand", "args": {"session": "/s.jsonl", "indices": [2]}}
    call_tool(fake, "memory_expand", token, cwd="/w")
    assert fake.seen[-1] == ("expand", {"session": "/s.jsonl", "indices": [2]})
    wrong, failed = call_tool(fake, "memory_recall", token, cwd="/w")
    assert failed is True and wrong["error"]["code"] == "invalid_argument"
