"""Tool calls as sessiondex indexes them from the real writers: names, outcomes, MCP, files."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from query.errors import InvalidArgument
from tests.conformance.indexed import Indexed
from tests.conformance.runs import Runs
from tests.conformance.scenarios import MCP_ERR, MCP_OK, MCP_SERVER, SCENARIOS, Expected

pytestmark = pytest.mark.conformance

TOOL_SCENARIOS = [key for key, s in SCENARIOS.items() if not s.sdk]
AGENTS = ("pi", "claude", "codex", "omp", "copilot")
SHELL_TOOL = {"pi": "bash", "claude": "Bash", "codex": "exec_command", "omp": "bash",
              "gemini": "run_shell_command", "qwen": "run_shell_command",
              "copilot": "bash"}  # fmt: skip


def tool_entries(
    indexed: Indexed, tool: str, *, sidechain: bool | None = None
) -> list[dict[str, Any]]:
    side = {s.path for s in indexed.states() if s.sidechain}
    return [
        e
        for s, e in indexed.all_entries()
        if e.get("tool") == tool
        and (sidechain is None or (s["file"] in side or e.get("sidechain") is True) == sidechain)
    ]


def tools_seen(indexed: Indexed) -> list[str]:
    return sorted({str(e.get("tool")) for _, e in indexed.all_entries() if e.get("tool")})


def expected(runs: Runs, key: str) -> list[Expected]:
    produced = runs.produced(key)
    return produced.scenario.expected(produced.home)


@pytest.mark.parametrize("key", TOOL_SCENARIOS)
def test_each_call_has_the_writers_tool_name_and_one_outcome(runs: Runs, key: str) -> None:
    indexed = runs.indexed(key)
    wanted = Counter((e.tool, e.outcome, e.sidechain) for e in expected(runs, key))
    for (tool, outcome, sidechain), count in wanted.items():
        found = tool_entries(indexed, tool, sidechain=sidechain)
        assert found, (
            f"{key}: no entry has tool {tool!r} (sidechain={sidechain}); tools seen: "
            f"{tools_seen(indexed)}"
        )
        outcomes = [e["outcome"] for e in found if e.get("outcome")]
        assert outcomes == [outcome] * count, (
            f"{key}: tool {tool!r} must carry outcome {outcome!r} on exactly {count} entry "
            f"(one per call, no double entries); outcomes found: {outcomes} on "
            f"{[(e.get('role'), e.get('text', '')[:50]) for e in found]}"
        )


@pytest.mark.parametrize("key", TOOL_SCENARIOS)
def test_tool_and_outcome_filters_find_each_call(runs: Runs, key: str) -> None:
    indexed = runs.indexed(key)
    for e in expected(runs, key):
        hits = indexed.recall(tool=e.tool, outcome=e.outcome)
        assert [h for h in hits if h.get("tool") == e.tool], (
            f"{key}: recall --tool {e.tool} --outcome {e.outcome} finds nothing "
            f"(hits: {[(h.get('tool'), h.get('outcome')) for h in hits]})"
        )


@pytest.mark.parametrize(
    "key", [k for k in TOOL_SCENARIOS if SCENARIOS[k].name in ("mcp", "codemode", "mcp-unapproved")]
)
def test_mcp_calls_are_named_by_server_and_tool(runs: Runs, key: str) -> None:
    indexed = runs.indexed(key)
    for e in expected(runs, key):
        if e.provider is None:
            continue
        found = tool_entries(indexed, e.tool)
        assert found, f"{key}: no entry has tool {e.tool!r}; tools seen: {tools_seen(indexed)}"
        identity = {(x.get("provider"), x.get("action"), x.get("ref")) for x in found}
        want = (e.provider, e.action, f"{e.provider}.{e.action}")
        assert identity == {want}, (
            f"{key}: MCP tool {e.tool} must be provider={want[0]!r} action={want[1]!r} "
            f"ref={want[2]!r} on every entry; got {sorted(map(str, identity))}"
        )
        for filters in ({"provider": e.provider, "action": e.action}, {"ref": want[2]}):
            hits = indexed.recall(**filters)
            assert any(h.get("tool") == e.tool for h in hits), (
                f"{key}: recall {filters} does not find the {e.tool} call "
                f"(hits: {[h.get('tool') for h in hits]})"
            )


@pytest.mark.parametrize("agent", AGENTS)
def test_mcp_filters_find_cold_sessions_too(runs: Runs, agent: str) -> None:
    """A cold session answers filters from its digest: the same names must be in it."""
    indexed = runs.indexed(f"{agent}/mcp", cold=True)
    assert all(s["tier"] == "cold" for s in indexed.sessions()), "the session is not cold"
    failing = [e.tool for e in expected(runs, f"{agent}/mcp") if e.outcome == "failed"]
    for filters in (
        {"tool": failing[0], "outcome": "failed"},
        {"provider": MCP_SERVER, "action": "explode"},
        {"ref": f"{MCP_SERVER}.explode"},
    ):
        hits = indexed.recall(**filters)
        assert hits, f"{agent}/mcp (cold): recall {filters} finds nothing"


def test_mcp_call_has_one_identity_on_every_agent(runs: Runs) -> None:
    """The same MCP call, made by Pi, Claude Code, Codex and omp, is one provider, action and
    ref, and one name on the agents that share Claude Code's naming (omp mints its own,
    ``mcp__<server>_<tool>``, kept as the writer wrote it)."""
    seen: dict[str, set[tuple[Any, ...]]] = {}
    for agent in AGENTS:
        indexed = runs.indexed(f"{agent}/mcp")
        for e in expected(runs, f"{agent}/mcp"):
            if e.provider is None:
                continue
            found = tool_entries(indexed, e.tool)
            assert found, (
                f"{agent}/mcp: no entry named {e.tool} (Codex writes namespace "
                f"mcp__{MCP_SERVER} + name; sessiondex must join them); tools seen: "
                f"{tools_seen(indexed)}"
            )
            if agent != "omp":
                assert e.tool in (MCP_OK, MCP_ERR), f"{agent}/mcp: {e.tool}"
            seen.setdefault(str(e.action), set()).update(
                (x.get("provider"), x.get("action"), x.get("ref")) for x in found
            )
    for action, identities in seen.items():
        assert len(identities) == 1, f"{action} is indexed differently per agent: {identities}"


@pytest.mark.parametrize("agent", AGENTS)
def test_catalog_groups_mcp_heads_under_their_server(runs: Runs, agent: str) -> None:
    catalog = runs.indexed(f"{agent}/mcp").catalog()
    providers = {
        p["provider"]: p for a in catalog.get("agents", []) for p in a.get("providers", [])
    }
    assert MCP_SERVER in providers, (
        f"{agent}/mcp: query catalog has no provider {MCP_SERVER!r}; providers: {sorted(providers)}"
    )
    actions = sorted(h.get("action") for h in providers[MCP_SERVER]["heads"])
    assert actions == ["explode", "lookup"], f"{agent}/mcp: heads under {MCP_SERVER}: {actions}"
    families = {h.get("action"): h.get("family") for h in providers[MCP_SERVER]["heads"]}
    assert set(families.values()) == {"mcp"}, (
        f"{agent}/mcp: catalog heads must show their tool family 'mcp': {families}"
    )


@pytest.mark.parametrize("key", TOOL_SCENARIOS)
def test_files_touched_come_from_typed_arguments(runs: Runs, key: str) -> None:
    indexed = runs.indexed(key)
    for e in expected(runs, key):
        if not e.files:
            continue
        found = tool_entries(indexed, e.tool)
        touched = {f for x in found for f in x.get("filesTouched", [])}
        assert set(e.files) <= touched, (
            f"{key}: {e.tool} names {list(e.files)} in its typed arguments; filesTouched: "
            f"{sorted(touched)}"
        )


@pytest.mark.parametrize("agent", list(SHELL_TOOL))
def test_kind_shell_finds_each_agents_shell_tool(runs: Runs, agent: str) -> None:
    indexed = runs.indexed(f"{agent}/shell")
    try:
        hits = indexed.recall(kind="shell")
    except InvalidArgument as exc:
        pytest.fail(f"{agent}/shell: recall does not take kind (issue 15 point 4): {exc}")
    tools = {h.get("tool") for h in hits}
    assert SHELL_TOOL[agent] in tools, (
        f"{agent}/shell: recall --kind shell must find {SHELL_TOOL[agent]}; found {tools}"
    )
    assert tools == {SHELL_TOOL[agent]}, f"{agent}/shell: --kind shell also found {tools}"
