"""Appends equal a whole build for every rule that decides which entries are searchable:
repaired lines, bridged parents, inline and file subagents, pretty-printed Codex objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stages.lineage import lineage
from stages.read import read_session
from store.records import NormalizedEntry
from tests.helpers import assistant, claude_line, header, iso, jsonl, user
from tests.unit.stages.test_append import POLICY, Grower

CLAUDE_SID = "c0ffee00-0000-4000-8000-000000000001"


def newline_cuts(data: bytes, start: int = 1) -> list[int]:
    """Every line end from the *start*-th on, plus a cut in the middle of each line."""
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    mids = [e - 3 for e in ends[start + 1 :] if e - 3 > ends[start - 1]]
    return sorted({*ends[start - 1 :], *mids})


def grown(tmp_path: Path, data: bytes, path: str, agent: str) -> tuple[Grower, Any, int, int]:
    grower = Grower(tmp_path / "index", path, agent)
    cuts = newline_cuts(data)
    hot, deltas, fast = grower.grow(data, cuts)
    grower.check(data, hot, deltas)
    return grower, hot, fast, len(cuts) - 1


def active_entries(grower: Grower, data: bytes) -> tuple[NormalizedEntry, ...]:
    built = grower.build(data)
    views = {v.branches: v for v in built.views}
    return views["active"].normalized.entries


# -- Pi ---------------------------------------------------------------------------------------


def pi_lines(bad: bytes) -> bytes:
    ms = 1_700_000_000_000
    good = [
        header("grow", "/work"),
        user("u1", None, "first question", ms),
        assistant("a1", "u1", "first answer", ms + 1),
    ]
    tail = [user("u3", "u2", "third question", ms + 3), assistant("a3", "u3", "done", ms + 4)]
    return jsonl(good) + bad + b"\n" + jsonl(tail)


def test_a_pi_line_with_an_invalid_escape_is_repaired_on_the_append_path(tmp_path: Path) -> None:
    bad = orjson.dumps(user("u2", "a1", "MARK", 1_700_000_000_002)).replace(b"MARK", b"a\\*b")
    data = pi_lines(bad)
    grower, hot, fast, steps = grown(tmp_path, data, "/s/--work--/grow.jsonl", "pi")
    assert fast == steps  # every append took the tail path
    assert "repaired_line" in hot.state.view("active").reasons
    texts = [e.text for e in active_entries(grower, data)]
    assert texts == ["first question", "first answer", "a\\*b", "third question", "done"]


def test_a_lost_pi_line_is_bridged_on_the_append_path_as_in_a_whole_build(tmp_path: Path) -> None:
    data = pi_lines(b'{"type":"message","id":"u2","parentId":"a1","mess')  # cut mid-object
    grower, hot, _, _ = grown(tmp_path, data, "/s/--work--/grow.jsonl", "pi")
    reasons = hot.state.view("active").reasons
    assert {"malformed_line", "bridged_parent"} <= set(reasons)
    texts = [e.text for e in active_entries(grower, data)]
    assert texts == ["first question", "first answer", "third question", "done"]


# -- Claude Code ------------------------------------------------------------------------------


def said(uuid: str, parent: str | None, ms: int, words: str, *, side: bool = False) -> Any:
    kind = "user" if uuid.startswith("u") else "assistant"
    content: object = words if kind == "user" else [{"type": "text", "text": words}]
    line = claude_line(kind, uuid, parent, ms, content, message_id=f"m-{uuid}")
    if side:
        line["isSidechain"] = True
        line["agentId"] = "a7f3"
    return line


def test_inline_claude_subagent_lines_are_searchable_and_marked_on_the_append_path(
    tmp_path: Path,
) -> None:
    ms = 1_700_000_000_000
    data = jsonl(
        [
            said("u1", None, ms, "look into the flaky test"),
            said("a1", "u1", ms + 1, "asking a subagent"),
            said("u2", None, ms + 2, "find the flaky test", side=True),
            said("a2", "u2", ms + 3, "the fixture sleeps", side=True),
            said("u3", "a1", ms + 4, "thanks"),
            said("a3", "u3", ms + 5, "fixed"),
        ]
    )
    grower, _, fast, steps = grown(tmp_path, data, f"/s/-p/{CLAUDE_SID}.jsonl", "claude")
    assert fast == steps
    found = [(e.text, e.sidechain, e.agent_id) for e in active_entries(grower, data)]
    assert found == [
        ("look into the flaky test", False, None),
        ("asking a subagent", False, None),
        ("find the flaky test", True, "a7f3"),
        ("the fixture sleeps", True, "a7f3"),
        ("thanks", False, None),
        ("fixed", False, None),
    ]


def test_a_claude_subagent_file_names_its_spawning_call_from_its_meta_sidecar(
    tmp_path: Path,
) -> None:
    ms = 1_700_000_000_000
    folder = tmp_path / "projects" / "-p" / CLAUDE_SID / "subagents"
    folder.mkdir(parents=True)
    path = folder / "agent-a7f3.jsonl"
    meta = {"agentType": "Explore", "description": "d", "toolUseId": "toolu_9", "spawnDepth": 1}
    (folder / "agent-a7f3.meta.json").write_bytes(orjson.dumps(meta))
    lines = [
        said("u1", None, ms, "find the flaky test", side=True),
        said("a1", "u1", ms + 1, "the fixture sleeps", side=True),
        said("u2", "a1", ms + 2, "and the other one", side=True),
        said("a2", "u2", ms + 3, "same fixture", side=True),
    ]
    data = jsonl(lines)
    path.write_bytes(data)
    grower, hot, fast, steps = grown(tmp_path, data, str(path), "claude")
    assert fast == steps
    assert hot.state.sidechain and hot.state.session_id == f"{CLAUDE_SID}/agent-a7f3"
    found = {(e.sidechain, e.agent_id, e.parent_call_id) for e in active_entries(grower, data)}
    assert found == {(True, "a7f3", "toolu_9")}


def test_a_claude_parent_missing_from_the_file_is_bridged_and_named(tmp_path: Path) -> None:
    ms = 1_700_000_000_000
    data = jsonl(
        [
            said("u1", None, ms, "first"),
            said("a1", "u1", ms + 1, "answer"),
            said("u2", "never-written", ms + 2, "second"),
            said("a2", "u2", ms + 3, "again"),
        ]
    )
    grower, hot, _, _ = grown(tmp_path, data, f"/s/-p/{CLAUDE_SID}.jsonl", "claude")
    assert "bridged_parent" in hot.state.view("active").reasons
    assert [e.text for e in active_entries(grower, data)] == ["first", "answer", "second", "again"]


# -- Codex ------------------------------------------------------------------------------------


def codex_objects() -> list[dict[str, Any]]:
    meta = {"id": "0199a000-0000-7000-8000-00000000c0de", "cwd": "/work", "cli_version": "0.1"}
    out: list[dict[str, Any]] = [{"timestamp": iso(0), "type": "session_meta", "payload": meta}]
    for n, (role, text) in enumerate(
        [("user", "why is the build red"), ("assistant", "a missing import"), ("user", "fix it")]
    ):
        kind = "output_text" if role == "assistant" else "input_text"
        item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        out.append({"timestamp": iso(1000 * (n + 1)), "type": "response_item", "payload": item})
    return out


def test_a_pretty_printed_codex_rollout_is_a_stream_of_objects(tmp_path: Path) -> None:
    objects = codex_objects()
    data = b"".join(orjson.dumps(o, option=orjson.OPT_INDENT_2) + b"\n" for o in objects)
    path = "/s/codex/rollout-2026-01-01T00-00-00-0199a000.jsonl"
    session = read_session(data, path, "codex")
    assert session.reasons == ()
    assert session.session_id == "0199a000-0000-7000-8000-00000000c0de"
    assert len(session.records) == 3 and session.records[1].line > 2
    # Grown at every line end and mid-line, the unfinished object waits like a partial line.
    grower, hot, _, _ = grown(tmp_path, data, path, "codex")
    assert "malformed_line" not in hot.state.view("active").reasons
    texts = [e.text for e in active_entries(grower, data)]
    assert texts == ["why is the build red", "a missing import", "fix it"]
    assert len(lineage(session, "active").selected) == 3


def test_an_unclosed_pretty_printed_object_is_withheld_until_it_closes() -> None:
    from stages.parse import parse

    first, second = (
        orjson.dumps(o, option=orjson.OPT_INDENT_2) + b"\n" for o in codex_objects()[:2]
    )
    half = first + second[: second.index(b"\n", len(second) // 2) + 1]
    parsed = parse(half)
    assert (len(parsed.records), parsed.consumed, parsed.malformed_lines) == (1, len(first), ())
    assert parsed.next_line == first.count(b"\n") + 1
    rest = parse(first + second)
    assert len(rest.records) == 2 and rest.records[1].offset == len(first)


def test_a_codex_line_with_an_invalid_escape_is_repaired(tmp_path: Path) -> None:
    objects = codex_objects()
    objects[3]["payload"]["content"][0]["text"] = "MARK"
    data = jsonl(objects).replace(b"MARK", b"fix \\* it")
    grower, hot, fast, steps = grown(tmp_path, data, "/s/codex/rollout-x.jsonl", "codex")
    assert fast == steps
    assert "repaired_line" in hot.state.view("active").reasons
    assert active_entries(grower, data)[-1].text == "fix \\* it"


@pytest.mark.parametrize("agent", ["pi", "claude", "codex"])
def test_a_file_of_only_a_bad_line_stays_honest(agent: str) -> None:
    session = read_session(b'{"a": [1, 2\n', f"/s/{agent}/x.jsonl", agent)
    assert "malformed_line" in session.reasons
    assert session.records == ()


def test_a_meta_sidecar_written_after_the_first_build_is_read_by_the_next_append(
    tmp_path: Path,
) -> None:
    from pipeline.discovery import subagent_meta
    from stages.appender import asks_sidecar, extend

    ms = 1_700_000_000_000
    folder = tmp_path / CLAUDE_SID / "subagents"
    folder.mkdir(parents=True)
    path = folder / "agent-late.jsonl"
    first = jsonl([said("u1", None, ms, "find it", side=True)])
    data = first + jsonl([said("a1", "u1", ms + 1, "found", side=True)])
    grower = Grower(tmp_path / "index", str(path), "claude")
    hot = grower.hot(first)
    assert hot.rederive is not None and hot.rederive.meta is None
    (folder / "agent-late.meta.json").write_bytes(orjson.dumps({"toolUseId": "toolu_late"}))
    stamp = (1, 2, len(data), 10, 20)
    # The stage reads no file: it asks, the pipeline looks (pipeline.engine), and told that a
    # sidecar exists now it declines, so that a whole build reads it
    assert asks_sidecar(hot)
    sidecar = subagent_meta(str(path), "claude") is not None
    assert (
        extend(hot, data[hot.consumed :], stamp, POLICY, expected_hash=None, sidecar=sidecar)
        is None
    )
    assert extend(hot, data[hot.consumed :], stamp, POLICY, expected_hash=None) is not None
    assert {e.parent_call_id for e in active_entries(grower, data)} == {"toolu_late"}
