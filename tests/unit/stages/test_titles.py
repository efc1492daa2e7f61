"""A session's title comes from the typed fields its agent records one in (``stages.titles``):
a name the person gave wins over a generated title, the latest of a kind wins, and prose is
never read for one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stages.agents import adapter
from stages.parse import parse
from stages.source import SourceSession
from stages.titles import TITLE_CHARS
from tests.helpers import claude_line, header, jsonl, user

REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real"
SID = "c0ffee00-0000-4000-8000-000000000001"
T0 = 1_770_000_000_000


def read(agent: str, records: list[dict[str, Any]], path: str) -> SourceSession:
    return adapter(agent).read(parse(jsonl(records)), path, None)


def claude(*extra: dict[str, Any]) -> SourceSession:
    lines = [claude_line("user", "u1", None, T0, "Title: not a title, just what I typed")]
    return read("claude", [*lines, *extra], f"/p/{SID}.jsonl")


def test_claude_custom_title_wins_over_ai_title_and_the_latest_of_each_wins() -> None:
    ai = {"type": "ai-title", "aiTitle": "Fix the parser", "sessionId": SID}
    newer_ai = {"type": "ai-title", "aiTitle": "Fix the  parser\nretries", "sessionId": SID}
    named = {"type": "custom-title", "customTitle": "parser work", "sessionId": SID}
    renamed = {"type": "custom-title", "customTitle": "parser, done", "sessionId": SID}
    assert claude().title is None  # the prompt's "Title:" is prose, never a title
    assert claude(ai, newer_ai).title == "Fix the parser retries"  # one line
    assert claude(named, ai).title == "parser work"  # a given name wins, even an older one
    assert claude(named, renamed, newer_ai).title == "parser, done"
    assert claude({"type": "ai-title", "aiTitle": "  ", "sessionId": SID}).title is None
    assert claude({"type": "ai-title", "aiTitle": 7, "sessionId": SID}).title is None
    assert len(claude({"type": "ai-title", "aiTitle": "x" * 9999}).title or "") == TITLE_CHARS


def test_claude_summary_titles_only_a_leaf_of_its_own_file() -> None:
    own = {"type": "summary", "summary": "Parser retries removed", "leafUuid": "u1"}
    other = {"type": "summary", "summary": "Another file's talk", "leafUuid": "elsewhere"}
    assert claude(other).title is None
    assert claude(own).title == "Parser retries removed"
    named = {"type": "custom-title", "customTitle": "mine", "sessionId": SID}
    assert claude(named, own).title == "mine"


def pi(*extra: dict[str, Any], agent: str = "pi") -> SourceSession:
    records = [header("s", "/w"), user("u", None, "what I typed first", T0), *extra]
    return read(agent, records, "/s/2026-05-01T10-00-00-000Z_s.jsonl")


def test_pi_session_info_latest_wins_and_an_empty_name_clears() -> None:
    named = {"type": "session_info", "id": "i1", "parentId": "u", "name": " parser fix "}
    renamed = {"type": "session_info", "id": "i2", "parentId": "i1", "name": "parser, done"}
    cleared = {"type": "session_info", "id": "i3", "parentId": "i2", "name": ""}
    assert pi().title is None
    assert pi(named).title == "parser fix"
    assert pi(named, renamed).title == "parser, done"
    assert pi(named, renamed, cleared).title is None


def test_omp_title_slot_then_title_change_entries() -> None:
    def change(entry_id: str, title: str, source: str) -> dict[str, Any]:
        return {"type": "title_change", "id": entry_id, "parentId": "u", "title": title,
                "source": source}  # fmt: skip

    slot = {"type": "title", "v": 1, "title": "Flaky test fixed", "updatedAt": T0, "pad": " "}
    records = [header("s", "/w"), user("u", None, "fix it", T0)]
    path = "/s/2026-05-01T10-00-00-000Z_s.jsonl"
    assert read("omp", [slot, *records], path).title == "Flaky test fixed"
    assert read("omp", [{**slot, "title": ""}, *records], path).title is None
    auto, named = change("t1", "Fix the flaky test", "auto"), change("t2", "flaky", "user")
    assert pi(auto, agent="omp").title == "Fix the flaky test"
    assert pi(named, auto, agent="omp").title == "flaky"  # a rename wins over a generated one
    assert pi(auto, agent="pi").title is None  # Pi writes no title_change


def codex(*events: dict[str, Any], copied: bool = False) -> SourceSession:
    meta = {"type": "session_meta", "payload": {"id": "t-1", "cwd": "/w", "cli_version": "0.9"}}
    said = {"type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "hello"}]}}  # fmt: skip
    lines = [meta, said, *({"type": "event_msg", "payload": e} for e in events)]
    return read("codex", lines, "/c/rollout-2026-05-01T10-00-00-t-1.jsonl")


def test_codex_thread_name_latest_wins_and_a_missing_one_clears() -> None:
    def named(name: str | None) -> dict[str, Any]:
        event: dict[str, Any] = {"type": "thread_name_updated", "thread_id": "t-1"}
        return event if name is None else {**event, "thread_name": name}

    assert codex().title is None
    assert codex(named("deploy fix")).title == "deploy fix"
    assert codex(named("deploy fix"), named("deploy, done")).title == "deploy, done"
    assert codex(named("deploy fix"), named(None)).title is None


def test_gemini_summary_latest_wins() -> None:
    head = {"sessionId": "g-1", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z"}
    said = {"id": "m1", "type": "user", "content": [{"text": "hi"}], "timestamp": "x"}
    path = "/g/tmp/h/chats/session-g-1.jsonl"
    assert read("gemini", [head, said], path).title is None
    first, later = {"$set": {"summary": "Greeting"}}, {"$set": {"summary": "Greeting, twice"}}
    assert read("gemini", [head, said, first, later], path).title == "Greeting, twice"


def test_copilot_title_changed_latest_wins() -> None:
    start = {"type": "session.start", "id": "e0", "parentId": None, "timestamp": "x",
             "data": {"sessionId": "cp-1", "version": 1, "context": {"cwd": "/w"}}}  # fmt: skip

    def titled(n: int, title: str) -> dict[str, Any]:
        return {"type": "session.title_changed", "id": f"e{n}", "parentId": "e0",
                "timestamp": "x", "data": {"title": title}}  # fmt: skip

    path = "/h/.copilot/session-state/cp-1/events.jsonl"
    assert read("copilot", [start], path).title is None
    assert read("copilot", [start, titled(1, "A"), titled(2, "B")], path).title == "B"


def test_qwen_custom_title_a_rename_over_an_automatic_one() -> None:
    # Qwen Code's ChatRecordingService.recordCustomTitle: a ``system`` record of subtype
    # ``custom_title``, ``systemPayload.customTitle`` and (later writers) ``titleSource``
    # ``manual`` / ``auto`` (a title its fast model generated); none is a /rename
    def record(n: int, kind: str, **extra: Any) -> dict[str, Any]:
        return {"uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "q-1",
                "timestamp": "2026-05-01T10:00:00Z", "type": kind, "cwd": "/w",
                "version": "0.24.4", **extra}  # fmt: skip

    def titled(n: int, title: object, source: str | None = None) -> dict[str, Any]:
        payload = {"customTitle": title} | ({"titleSource": source} if source else {})
        return record(n, "system", subtype="custom_title", systemPayload=payload)

    said = record(0, "user", message={"role": "user", "parts": [{"text": "hi"}]})
    path = "/h/.qwen/projects/-w/chats/q-1.jsonl"
    assert read("qwen", [said], path).title is None
    assert read("qwen", [said, titled(1, "Fix login", "auto")], path).title == "Fix login"
    both = [said, titled(1, "my-feature"), titled(2, "Fix login", "auto")]
    assert read("qwen", both, path).title == "my-feature"
    renamed = [*both, titled(3, "my-feature, done", "manual")]
    assert read("qwen", renamed, path).title == "my-feature, done"
    assert read("qwen", [said, titled(1, None), titled(2, 5)], path).title is None


def real(agent: str, name: str) -> bytes:
    path = REAL / agent / name
    if not path.is_file():
        pytest.skip(f"real fixture not found at {path} (../shared is absent)")
    return path.read_bytes()


def test_real_sessions_give_the_titles_their_agents_recorded() -> None:
    name = "frederick-douglas-pearce__claude-code-sessions__fixtures__sanitized__hook-trace-stop-hook-error.jsonl"  # noqa: E501
    session = adapter("claude").read(parse(real("claude", name)), f"/p/{name}", None)
    assert session.title == "Run three"  # its ai-title lines
    name = "jazzyalex__agent-sessions__Resources__Fixtures__stage0__agents__codex__small.jsonl"
    session = adapter("codex").read(parse(real("codex", name)), f"/c/{name}", None)
    assert session.title == "[trimmed for fixture]"  # its thread_name_updated, as sanitized
