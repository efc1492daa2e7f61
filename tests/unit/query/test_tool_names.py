"""One MCP tool name and one tool family on every agent, found by the same filters hot and cold.

Three sessions, one per agent, each calling the MCP tool ``needle.lookup`` and a shell, in
the shapes Pi 1.6.0, Claude Code 2.1.332 and Codex 0.171.0 write them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from query.catalog import catalog_for, render_catalog
from tests.helpers import assistant, claude_line, header, iso, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

CLAUDE = "c0ffee00-0000-4000-8000-0000000000aa"
CODEX = "01a233a5-7ca9-7a02-814c-3e8a48ccea89"


def _write(path: Path, lines: list[dict[str, Any]], mtime_s: float) -> None:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    os.utime(path, (mtime_s, mtime_s))


def _pi(kit: Kit) -> None:
    kit.session(
        "pi-s",
        [
            header("pi-s", CWD),
            user("u", None, "pi needle question", T0),
            assistant(
                "a",
                "u",
                "",
                T0 + 1,
                {"id": "c1", "name": "mcp__needle__lookup", "arguments": {"word": "w"}},
            ),  # fmt: skip
            tool_result("r", "a", "mcp__needle__lookup", "pi found", T0 + 2),
            assistant(
                "b", "r", "", T0 + 3, {"id": "c2", "name": "bash", "arguments": {"command": "ls"}}
            ),  # fmt: skip
            tool_result("s", "b", "bash", "pi listing", T0 + 4, error=True),
        ],
        mtime_s=3000,
    )


def _claude(base: Path) -> None:
    s = CLAUDE
    lookup = [{"type": "tool_use", "id": "t1", "name": "mcp__needle__lookup", "input": {}}]
    shell = [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]
    lines = [
        claude_line("user", "u1", None, T0, "claude needle question", session=s, cwd=CWD),
        claude_line("assistant", "a1", "u1", T0 + 1, lookup, message_id="m1", session=s, cwd=CWD),
        claude_line("user", "r1", "a1", T0 + 2,
                    [{"type": "tool_result", "tool_use_id": "t1", "content": "claude found"}],
                    session=s, cwd=CWD),
        claude_line("assistant", "a2", "r1", T0 + 3, shell, message_id="m2", session=s, cwd=CWD),
        claude_line("user", "r2", "a2", T0 + 4,
                    [{"type": "tool_result", "tool_use_id": "t2", "content": "claude listing",
                      "is_error": True}],
                    session=s, cwd=CWD),
    ]  # fmt: skip
    _write(base / "claude" / "-work-proj" / f"{s}.jsonl", lines, 2000)


def _codex(base: Path) -> None:
    def line(kind: str, payload: dict[str, Any], n: int) -> dict[str, Any]:
        return {"timestamp": iso(T0 + n), "ordinal": n, "type": kind, "payload": payload}

    def done(item: dict[str, Any], n: int) -> dict[str, Any]:
        return line("event_msg", {"type": "item_completed", "item": item}, n)

    lines = [
        line("session_meta", {"id": CODEX, "timestamp": iso(T0), "cwd": CWD,
                              "cli_version": "0.171.0"}, 0),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "codex needle question"}]}, 1),
        line("response_item", {"type": "function_call", "name": "lookup",
                               "namespace": "mcp__needle", "arguments": "{}", "call_id": "k1"}, 2),
        done({"type": "McpToolCall", "id": "k1", "server": "needle", "tool": "lookup",
              "status": "completed", "result": {"content": []}}, 3),
        line("response_item", {"type": "function_call_output", "call_id": "k1",
                               "output": [{"type": "input_text", "text": "codex found"}]}, 4),
        line("response_item", {"type": "function_call", "name": "exec_command",
                               "arguments": '{"cmd":"ls"}', "call_id": "k2"}, 5),
        done({"type": "CommandExecution", "id": "k2", "exit_code": 3, "status": "failed"}, 6),
        line("response_item", {"type": "function_call_output", "call_id": "k2",
                               "output": "codex listing"}, 7),
    ]  # fmt: skip
    _write(base / "codex" / "2026" / "12" / "01" / f"rollout-2026-12-01T22-06-53-{CODEX}.jsonl",
           lines, 1000)  # fmt: skip


@pytest.fixture(params=["hot", "cold"])
def three(request: pytest.FixtureRequest, kit: Kit) -> Kit:
    kit.configure(hotSessions=3 if request.param == "hot" else 0)
    _pi(kit)
    _claude(kit.pi.base)
    _codex(kit.pi.base)
    kit.build()
    return kit


def _agents(kit: Kit, **filters: Any) -> dict[str, int]:
    """Agent → how many matching entries (hot) or matching sessions (cold) a recall finds."""
    page = kit.recall(scope="global", pageSize=50, **filters)
    found: dict[str, int] = {}
    for hit in page["hits"]:
        agent = hit["sessionId"].split(":", 1)[0]
        found[agent] = found.get(agent, 0) + 1
    return found


@pytest.mark.parametrize(
    "filters",
    [
        {"tool": "mcp__needle__lookup"},
        {"ref": "needle.lookup"},
        {"provider": "needle"},
        {"action": "lookup"},
        {"kind": "mcp"},
        {"kind": "mcp", "outcome": "succeeded"},
    ],
)
def test_one_mcp_filter_finds_the_call_on_every_agent(three: Kit, filters: dict[str, Any]) -> None:
    assert set(_agents(three, **filters)) == {"pi", "claude", "codex"}


def test_kind_shell_finds_bash_Bash_and_exec_command(three: Kit) -> None:
    assert set(_agents(three, kind="shell")) == {"pi", "claude", "codex"}
    assert set(_agents(three, kind="shell", outcome="failed")) == {"pi", "claude", "codex"}
    assert _agents(three, kind="subagent") == {}
    assert set(_agents(three, query="listing", kind="shell")) == {"pi", "claude", "codex"}


def test_the_catalog_groups_mcp_heads_under_their_server_with_families(three: Kit) -> None:
    got = catalog_for(three.engine, {"scope": "global"}, cwd=CWD)
    by_agent = {a["agent"]: {p["provider"]: p for p in a["providers"]} for a in got["agents"]}
    assert set(by_agent) == {"pi", "claude", "codex"}
    for providers in by_agent.values():
        [head] = providers["needle"]["heads"]
        assert (head["ref"], head["tool"], head["action"], head["family"]) == (
            "needle.lookup", "mcp__needle__lookup", "lookup", "mcp",
        )  # fmt: skip
    shells = {a: [h for p in ps.values() for h in p["heads"] if h["family"] == "shell"]
              for a, ps in by_agent.items()}  # fmt: skip
    assert {a: [h["tool"] for h in hs] for a, hs in shells.items()} == {
        "pi": ["bash"], "claude": ["Bash"], "codex": ["exec_command"],
    }  # fmt: skip
    assert " mcp " in render_catalog(got)


def test_an_unknown_kind_is_refused(three: Kit) -> None:
    from query.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="kind"):
        three.recall(kind="telepathy")


def test_calls_a_codemode_script_made_are_found_by_tool_and_kind(kit: Kit) -> None:
    from tests.helpers import message

    kit.session(
        "cm",
        [
            header("cm", CWD),
            user("u", None, "run a script", T0),
            assistant("a", "u", "", T0 + 1, {"id": "k", "name": "codemode",
                                              "arguments": {"code": "..."}}),  # fmt: skip
            message("r", "a", "toolResult", T0 + 2, toolCallId="k", toolName="codemode",
                    content=[{"type": "text", "text": "Script completed"}], isError=False,
                    nestedCalls={"complete": True, "calls": [
                        {"id": "k/1", "name": "grep", "status": "ok",
                         "arguments": {"pattern": "needle", "path": "src"}},
                        {"id": "k/2", "name": "mcp__needle__explode", "status": "error",
                         "arguments": {}, "error": "boom"}]}),
        ],
    )  # fmt: skip
    kit.build()
    [hit] = kit.recall(scope="global", tool="grep")["hits"]
    assert (hit["tool"], hit["family"], hit["outcome"]) == ("grep", "search", "succeeded")
    assert hit["operationAddress"] == "r/call:k/1"
    [failed] = kit.recall(scope="global", kind="mcp", outcome="failed")["hits"]
    assert (failed["ref"], failed["provider"]) == ("needle.explode", "needle")


def test_kind_reaches_every_front_end(three: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    from query.cli import main
    from query.client import Memory
    from query.mcp import RECALL_SCHEMA
    from store.names import TOOL_FAMILIES

    # the CLI
    code = main(["recall", "--kind", "shell", "--scope", "global", "--json",
                 "--config", str(three.pi.config_path), "--cwd", CWD])  # fmt: skip
    page = orjson.loads(capsys.readouterr().out)
    assert code == 0 and {h["sessionId"].split(":")[0] for h in page["hits"]} == {
        "pi", "claude", "codex",
    }  # fmt: skip
    # the MCP tool's input schema
    assert RECALL_SCHEMA["properties"]["kind"]["enum"] == list(TOOL_FAMILIES)
    # the Python client, typed, and its next-page tokens keep the filter
    memory = Memory(three.config, cwd=CWD)
    try:
        got = memory.recall(kind="mcp", scope="global", pageSize=1)
        assert got.next is not None and got.next.args["kind"] == "mcp"
        if three.memory.get("hotSessions"):
            assert {getattr(h, "family", None) for h in got.hits} == {"mcp"}
    finally:
        memory.close()
