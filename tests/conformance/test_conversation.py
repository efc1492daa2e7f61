"""Prompts, answers and system prompts, as sessiondex indexes what the real CLIs wrote."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.indexed import Indexed
from tests.conformance.runs import Runs
from tests.conformance.scenarios import SCENARIOS

pytestmark = pytest.mark.conformance

CLI_SCENARIOS = [key for key, s in SCENARIOS.items() if not s.sdk]
CONVERSATION_ROLES = ("user", "assistant")


def split(indexed: Indexed) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(main session entries, subagent entries), active branch: a subagent's session, or its
    entries inside the parent's (Copilot CLI writes them there)."""
    sidechain = {s.path for s in indexed.states() if s.sidechain}
    main: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []
    for session, entry in indexed.all_entries():
        inline = entry.get("sidechain") is True
        (side if session["file"] in sidechain or inline else main).append(entry)
    return main, side


def brief(entries: list[dict[str, Any]]) -> list[str]:
    return [f"{e.get('role')}/{e.get('tool') or '-'}: {e.get('text', '')[:60]!r}" for e in entries]


@pytest.mark.parametrize("key", CLI_SCENARIOS)
def test_every_prompt_is_exactly_one_user_entry(runs: Runs, key: str) -> None:
    produced = runs.produced(key)
    main, _ = split(runs.indexed(key))
    prompts = [step.prompt for step in produced.scenario.steps(produced.home)]
    users = [e["text"] for e in main if e.get("role") == "user"]
    assert users == prompts, (
        f"{key}: the user entries must be exactly the prompts typed, once each and in order; "
        f"got {users!r}, expected {prompts!r}"
    )


@pytest.mark.parametrize("key", CLI_SCENARIOS)
def test_every_final_answer_is_exactly_one_assistant_entry(runs: Runs, key: str) -> None:
    scenario = SCENARIOS[key]
    main, _ = split(runs.indexed(key))
    for word in scenario.finals:
        holding = [e for e in main if word in e.get("text", "")]
        assert [e.get("role") for e in holding] == ["assistant"], (
            f"{key}: the final answer {word} must be one assistant entry; entries holding it: "
            f"{brief(holding)}"
        )


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_entry_count_is_prompts_calls_results_and_answers(runs: Runs, key: str) -> None:
    scenario = SCENARIOS[key]
    main, side = split(runs.indexed(key))
    assert len(main) == scenario.entries, (
        f"{key}: expected {scenario.entries} entries (prompts, tool calls, tool results, "
        f"answers; nothing from system prompts, attachments or bookkeeping lines), got "
        f"{len(main)}:\n  " + "\n  ".join(brief(main))
    )
    assert len(side) == scenario.sidechain_entries, (
        f"{key}: expected {scenario.sidechain_entries} subagent entries, got {len(side)}:\n  "
        + "\n  ".join(brief(side))
    )


@pytest.mark.parametrize("key", CLI_SCENARIOS)
def test_system_prompts_and_attachments_are_never_conversation_text(runs: Runs, key: str) -> None:
    """AGENTS.md / CLAUDE.md / Pi's appended system prompt hold a marker no entry may show."""
    produced = runs.produced(key)
    indexed = runs.indexed(key)
    marker = produced.home.marker
    assert produced.marker_sent or any(
        marker in p.read_text(errors="replace") for p in produced.files
    ), (
        f"{key}: the writer did not record the system-prompt marker at all, nor send it to "
        "the model; the scenario no longer proves anything (was AGENTS.md/CLAUDE.md read?)"
    )
    for branches in ("active", "all"):
        leaked = [
            (s["file"], e) for s, e in indexed.all_entries(branches) if marker in e.get("text", "")
        ]
        assert not leaked, (
            f"{key}: system-prompt text (marker {marker}) became entry text "
            f"({branches} branches): {[brief([e])[0] for _, e in leaked]}"
        )
    hits = indexed.recall(query=marker)
    assert not hits, (
        f"{key}: recall finds the system-prompt marker {marker}: "
        f"{[(h.get('role'), h.get('snippet', '')[:80]) for h in hits]}"
    )
    roles = sorted({str(e.get("role")) for _, e in indexed.all_entries("all")})
    assert "system" not in roles, f"{key}: a system message became an entry (roles: {roles})"


def test_claude_non_turn_lines_are_not_searchable(runs: Runs) -> None:
    """api-request-blob repeats the prompt as role user; prompt_snapshot holds the system prompt."""
    key = "claude/shell"
    produced = runs.produced(key)
    indexed = runs.indexed(key)
    snapshot_words = ["ReportFindings", "ScheduleWakeup"]  # tool names only attachments list
    text = "".join(p.read_text(errors="replace") for p in produced.files)
    for word in snapshot_words:
        assert word in text, f"{key}: the writer no longer mentions {word}; pick another word"
        hits = indexed.recall(query=word)
        assert not hits, (
            f"{key}: {word} (only in attachment / api-request lines) is searchable: "
            f"{[(h.get('role'), h.get('snippet', '')[:80]) for h in hits]}"
        )
