"""Argument validation: schema violations raise, with a message that says what is accepted."""

from __future__ import annotations

from typing import Any

import pytest

from query.args import parse_expand, parse_recall, parse_scope, parse_sessions
from query.errors import InvalidArgument


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"bogus": 1}, "does not accept 'bogus'"),
        ({"queryMode": "fuzzy"}, "queryMode must be one of"),
        ({"query": "x", "queryMode": "phrase", "queryMatch": "all"}, "only valid with literal"),
        ({"queryMatch": "most"}, "queryMatch must be one of"),
        ({"pageSize": 0}, "pageSize must be an integer in 1..50"),
        ({"pageSize": 51}, "pageSize"),
        ({"snippetChars": 79}, "snippetChars must be an integer in 80..2000"),
        ({"offset": -1}, "offset must be a non-negative integer"),
        ({"outcome": "crashed"}, "outcome must be one of"),
        ({"role": "User"}, "role must be one of"),
        ({"branches": "some"}, "branches must be one of"),
        ({"scope": "everywhere"}, "scope must be session, project, global"),
        ({"scope": "session:  "}, "needs a session id or file path"),
        ({"entryRange": {"first": 1}, "scope": "session:x"}, "requires both first and last"),
        ({"entryRange": {"first": 1, "last": 2}}, "entryRange requires scope session"),
        ({"expectedSourceHash": "ab"}, "integrity expectations require scope session"),
        ({"since": "yesterday"}, "since must be epoch milliseconds"),
        ({"query": "x" * 4097}, "longer than 4096"),
        ({"agent": "gpt"}, "agent must be one of"),
    ],
)
def test_recall_rejects(args: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_recall(args)


def test_recall_defaults_and_canonical_token() -> None:
    req = parse_recall({"query": "x", "scope": "repo", "tool": "bash", "since": 5})
    assert (req.mode, req.match, req.page_size, req.snippet_chars) == ("literal", "any", 10, 480)
    assert req.canonical() == {
        "query": "x",
        "queryMode": "literal",
        "queryMatch": "any",
        "branches": "active",
        "scope": "project",
        "pageSize": 10,
        "snippetChars": 480,
        "tool": "bash",
        "since": 5,
    }
    phrase = parse_recall({"query": "x", "queryMode": "phrase"})
    assert "queryMatch" not in phrase.canonical()


def test_scope_aliases() -> None:
    assert parse_scope("t", "cwd").kind == "project"
    assert parse_scope("t", "folder").kind == "project"
    assert parse_scope("t", "all").kind == "global"
    assert parse_scope("t", "current").kind == "session"
    assert parse_scope("t", None).kind == "session"
    explicit = parse_scope("t", " session: /a/b.jsonl ")
    assert explicit.explicit and explicit.target == "/a/b.jsonl"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "requires a session"),
        ({"session": "s", "indices": 3}, "indices must be an array"),
        ({"session": "s", "entryIds": [""]}, "non-empty strings"),
        ({"session": "s", "entryIds": ["x" * 513]}, "at most 512"),
        ({"session": "s", "maxChars": 255}, "maxChars must be an integer in 256..24000"),
        ({"session": "s", "maxChars": 24_001}, "maxChars"),
        ({"session": "s", "maxEntries": 21}, "maxEntries must be an integer in 1..20"),
        ({"session": "s", "before": 101}, "before must be an integer in 0..100"),
        ({"session": "s", "operationAddresses": ["a"] * 101}, "at most 100 exact selectors"),
    ],
)
def test_expand_rejects(args: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_expand(args)


def test_expand_keeps_bad_indices_for_an_answered_error() -> None:
    req = parse_expand({"session": "s", "indices": [-1]})
    assert req.indices_valid is False


def test_sessions_limit() -> None:
    assert parse_sessions({}).limit == 500
    assert parse_sessions({}, default_limit=20).limit == 20
    with pytest.raises(InvalidArgument, match="limit must be an integer in 1..500"):
        parse_sessions({"limit": 501})
