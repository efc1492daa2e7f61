"""walk: complete entries across expand pages, continuity, stopping, and provider errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from query.client import Memory
from query.errors import InvalidArgument
from query.results import Entry
from query.walk import DISCONTINUITY, drive, steps
from tests.helpers import assistant, header, tool_result, user
from tests.unit.query.kit import CWD, T0, Kit

# Longer than maxChars (256) several times over, with astral characters that a cut must not
# split and a chunk boundary that falls all over them.
LONG = "".join(f"line {i} 😀 naïve\n" for i in range(200))
LONGER = "🚀" * 700 + "tail"


@pytest.fixture
def memory(kit: Kit) -> Iterator[Memory]:
    m = Memory(kit.config, cwd=CWD, server="off")
    yield m
    m.close()


def session(kit: Kit, name: str = "s") -> Path:
    records = [
        header(name, CWD),
        user("u1", None, "short question", T0),
        assistant("a1", "u1", LONG, T0 + 1, {"id": "c1", "name": "bash", "arguments": {}}),
        tool_result("r1", "a1", "bash", LONGER, T0 + 2, error=True),
        user("u2", "r1", "thanks", T0 + 3),
    ]
    return kit.session(name, records)


def expected_texts(kit: Kit, path: Path) -> list[str]:
    """Every entry's complete text, read by expand in one large chunk per entry."""
    out = []
    meta = kit.expand(session=str(path))
    for i in range(meta["entryCount"]):
        got = kit.expand(session=str(path), indices=[i], maxChars=24_000)
        [entry] = got["entries"]
        assert entry["textRange"]["complete"] is True
        out.append(entry["text"])
    return out


def test_whole_session_visits_complete_exact_texts(kit: Kit, memory: Memory) -> None:
    path = session(kit)
    kit.build()
    want = expected_texts(kit, path)
    assert any(len(t.encode("utf-16-le")) // 2 > 256 * 3 for t in want)
    seen: list[Entry] = []
    result = memory.walk({"session": str(path), "maxChars": 256, "maxEntries": 1}, seen.append)
    assert result.error is None and result.stopped is False
    assert result.visited == len(want) == len(seen)
    assert [e.text for e in seen] == want
    assert [e.index for e in seen] == list(range(len(want)))
    for e in seen:
        total = len(e.text.encode("utf-16-le")) // 2
        assert (e.text_range.start, e.text_range.end, e.text_range.total) == (0, total, total)
        assert e.text_range.complete is True
    assert seen[2].tool == "bash" and seen[2].is_error is True and seen[2].outcome == "failed"


def test_selection_and_context_visit_only_what_was_selected(kit: Kit, memory: Memory) -> None:
    path = session(kit)
    kit.build()
    want = expected_texts(kit, path)
    picked: list[int] = []
    result = memory.walk(
        {"session": str(path), "indices": [2], "before": 1, "maxChars": 300},
        lambda e: picked.append(e.index),
    )
    assert (result.visited, result.error) == (2, None) and picked == [1, 2]
    hit = kit.recall(query="thanks", scope="session")["hits"][0]
    texts: list[str] = []
    assert memory.walk(hit["follow"], lambda e: texts.append(e.text)).visited == 1
    assert texts == [want[3]]


def test_exactly_false_stops_and_other_falsy_values_do_not(kit: Kit, memory: Memory) -> None:
    path = session(kit)
    kit.build()
    count = len(expected_texts(kit, path))
    none = memory.walk({"session": str(path), "maxChars": 256}, lambda e: None)
    assert (none.visited, none.stopped) == (count, False)
    early = memory.walk({"session": str(path), "maxChars": 256}, lambda e: e.index < 1)
    assert (early.visited, early.stopped, early.error) == (2, True, None)
    zero = memory.walk(str(path), lambda e: 0)
    assert (zero.visited, zero.stopped) == (count, False)


def test_async_visitors_are_awaited(kit: Kit, memory: Memory) -> None:
    path = session(kit)
    kit.build()
    order: list[int] = []

    async def visit(entry: Entry) -> bool:
        await asyncio.sleep(0)
        order.append(entry.index)
        return entry.index < 2

    result = memory.walk({"session": str(path), "maxChars": 256}, visit)
    assert (result.visited, result.stopped, order) == (3, True, [0, 1, 2])
    order.clear()
    again = asyncio.run(memory.awalk({"session": str(path), "maxChars": 256}, visit))
    assert (again.visited, again.stopped, order) == (3, True, [0, 1, 2])


def test_no_selector_walks_the_newest_session_of_the_cwd(kit: Kit, memory: Memory) -> None:
    session(kit, "old")
    newest = kit.session("new", [header("new", CWD), user("x", None, "only entry", T0 + 9)])
    kit.build()
    texts: list[str] = []
    result = memory.walk(None, lambda e: texts.append(e.text))
    assert result.visited == 1 and texts == ["only entry"]
    assert memory.sessions(scope="session").sessions[0].file == str(newest)


def test_an_append_during_a_walk_is_a_stale_pointer(kit: Kit, memory: Memory) -> None:
    path = session(kit)
    kit.build()

    def visit(entry: Entry) -> None:
        if entry.index == 0:
            kit.append(path, [user("late", "u2", "appended meanwhile", T0 + 10)])

    result = memory.walk({"session": str(path), "maxChars": 256, "maxEntries": 1}, visit)
    assert result.visited == 1 and result.stopped is False
    assert result.error is not None and result.error.code == "stale_pointer"
    assert result.error.raw["sessionFile"] == str(path)


def test_provider_errors_come_back_as_walk_error(kit: Kit, memory: Memory) -> None:
    session(kit)
    kit.build()
    missing = memory.walk({"session": "no-such-session"}, lambda e: None)
    assert missing.visited == 0 and missing.error is not None
    assert missing.error.code == "session_not_found"
    refused = memory.walk({"session": "s", "bogus": 1}, lambda e: None)
    assert refused.error is not None and refused.error.code == "invalid_argument"


def test_a_continuation_inside_an_entry_is_not_a_start() -> None:
    with pytest.raises(InvalidArgument, match="textOffset"):
        next(steps({"session": "s", "indices": [1], "textOffset": 5}))
    with pytest.raises(InvalidArgument, match="memory.expand"):
        next(steps({"ref": "memory.recall", "args": {}}))


# -- continuity, against a scripted provider --------------------------------------------


def page(entries: list[dict[str, Any]], nxt: bool, **bindings: Any) -> dict[str, Any]:
    return {
        "session": "/s.jsonl",
        "sourceHash": bindings.get("sourceHash", "h"),
        "lineageFingerprint": "l",
        "branches": "active",
        "entryCount": 9,
        "entries": entries,
        "next": {"ref": "memory.expand", "args": {"session": "/s.jsonl"}} if nxt else None,
    }


def chunk(index: int, text: str, start: int, total: int) -> dict[str, Any]:
    end = start + len(text)
    r = {"start": start, "end": end, "total": total, "complete": end >= total}
    return {"index": index, "type": "message", "role": "user", "text": text, "textRange": r}


def scripted(pages: list[dict[str, Any]]) -> tuple[list[str], str | None]:
    script = iter(pages)

    def expand(args: Mapping[str, Any]) -> Mapping[str, Any]:
        return next(script)

    texts: list[str] = []
    result = drive(
        steps({"session": "/s.jsonl", "indices": [1, 2]}),
        lambda e: texts.append(e.text),
        expand=expand,
        sessions=expand,
    )
    return texts, None if result.error is None else result.error.code


def test_chunks_reassemble_across_pages() -> None:
    texts, error = scripted(
        [
            page([chunk(1, "abc", 0, 3), chunk(2, "de", 0, 5)], True),
            page([chunk(2, "fgh", 2, 5)], False),
        ]
    )
    assert (texts, error) == (["abc", "defgh"], None)


@pytest.mark.parametrize(
    "second",
    [
        page([chunk(2, "fgh", 3, 6)], False),  # a gap inside the entry
        page([chunk(3, "fgh", 2, 5)], False),  # another entry continues it
        page([chunk(2, "fgh", 2, 5)], False, sourceHash="moved"),  # bindings moved
        page([], True),  # no progress
        page([chunk(2, "fg", 2, 5)], False),  # ends inside the entry
    ],
)
def test_discontinuity_is_reported(second: dict[str, Any]) -> None:
    texts, error = scripted([page([chunk(1, "abc", 0, 3), chunk(2, "de", 0, 5)], True), second])
    assert texts == ["abc"] and error == DISCONTINUITY


def test_indices_must_increase_and_totals_must_add_up() -> None:
    backwards = [page([chunk(2, "ab", 0, 2), chunk(1, "cd", 0, 2)], False)]
    assert scripted(backwards) == (["ab"], DISCONTINUITY)
    short = [page([chunk(1, "ab", 0, 2)], False)]
    short[0]["entries"][0]["textRange"]["total"] = 2
    short[0]["entries"][0]["text"] = "a"
    assert scripted(short) == ([], DISCONTINUITY)
