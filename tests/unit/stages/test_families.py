"""stages.families: one MCP name and identity on every agent, one family per kind of tool."""

from __future__ import annotations

import pytest

from stages.families import (
    TOOL_FAMILIES,
    fabric_family,
    mcp_parts,
    mcp_tool_name,
    tool_family,
    tool_identity,
)


def test_mcp_names_split_at_the_first_separator_after_the_prefix() -> None:
    assert mcp_parts("mcp__needle__lookup") == ("needle", "lookup")
    assert mcp_parts("mcp__gh__issues__list") == ("gh", "issues__list")
    for name in ("mcp__needle", "mcp____lookup", "mcp__needle__", "Mcp__a__b", "lookup", ""):
        assert mcp_parts(name) is None, name


def test_a_codex_namespace_and_name_make_the_one_mcp_name() -> None:
    assert mcp_tool_name("mcp__needle", "lookup") == "mcp__needle__lookup"
    assert mcp_tool_name("multi_agent_v1", "spawn_agent") is None
    assert mcp_tool_name("mcp__needle", "") is None
    assert mcp_tool_name("mcp__", "lookup") is None


@pytest.mark.parametrize("agent", ["pi", "claude", "codex"])
def test_an_mcp_tool_has_its_servers_identity_on_every_agent(agent: str) -> None:
    assert tool_identity(agent, "mcp__needle__lookup") == ("needle.lookup", "needle", "lookup")
    assert tool_family(agent, "mcp__needle__lookup") == "mcp"


def test_other_tools_keep_their_agents_identity() -> None:
    assert tool_identity("pi", "bash") == ("pi.bash", "pi", "bash")
    assert tool_identity("claude", "Bash") == ("claude.Bash", "claude", "Bash")
    assert tool_identity("codex", "exec_command") == ("codex.exec_command", "codex", "exec_command")


@pytest.mark.parametrize(
    ("agent", "tool", "family"),
    [
        ("pi", "bash", "shell"),
        ("claude", "Bash", "shell"),
        ("codex", "exec_command", "shell"),
        ("codex", "shell", "shell"),
        ("codex", "local_shell", "shell"),
        ("pi", "read", "read"),
        ("claude", "Read", "read"),
        ("pi", "edit", "edit"),
        ("claude", "MultiEdit", "edit"),
        ("codex", "apply_patch", "edit"),
        ("pi", "write", "write"),
        ("claude", "Write", "write"),
        ("pi", "grep", "search"),
        ("claude", "Glob", "search"),
        ("claude", "Grep", "search"),
        ("claude", "Agent", "subagent"),
        ("claude", "Task", "subagent"),
        ("codex", "spawn_agent", "subagent"),
        ("pi", "subagent", "subagent"),
        ("claude", "WebFetch", "web"),
        ("codex", "web_search", "web"),
        ("claude", "ToolSearch", "other"),
        ("pi", "codemode", "other"),
        # names are exact per agent: Claude's spelling is not Pi's
        ("pi", "Bash", "other"),
        ("claude", "bash", "other"),
    ],
)
def test_the_family_comes_from_the_writers_exact_tool_name(
    agent: str, tool: str, family: str
) -> None:
    assert tool_family(agent, tool) == family
    assert family in TOOL_FAMILIES


def test_no_tool_has_no_family() -> None:
    assert tool_family("pi", None) is None
    assert tool_family("claude", "") is None


def test_fabric_operations_take_pis_family_for_pi_refs_only() -> None:
    assert fabric_family("pi", "read", "read") == "read"
    assert fabric_family("github", "read", "read") == "other"
    assert fabric_family("needle", "lookup", "mcp__needle__lookup") == "mcp"
