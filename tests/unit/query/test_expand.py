"""memory.expand: exact selection, lossless chunks, the envelope and every error body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from query.errors import InvalidArgument
from query.u16 import json_length
from tests.helpers import assistant, bash, header, user
from tests.unit.query.kit import CWD, T0, Kit


def session(kit: Kit, *texts: str, name: str = "s") -> Path:
    records: list[dict[str, Any]] = [header(name, CWD)]
    parent = None
    for i, text in enumerate(texts):
        records.append(user(f"e{i}", parent, text, T0 + i))
        parent = f"e{i}"
    return kit.session(name, records)


def reassemble(kit: Kit, args: dict[str, Any]) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """Follow ``next`` to the end; the text of every entry, and every response."""
    texts: dict[int, str] = {}
    responses = []
    response = kit.expand(**args)
    while True:
        assert "error" not in response, response.get("error")
        responses.append(response)
        for e in response["entries"]:
            r = e["textRange"]
            assert r["start"] == len(texts.get(e["index"], "").encode("utf-16-le")) // 2
            texts[e["index"]] = texts.get(e["index"], "") + e["text"]
        if response["next"] is None:
            return texts, responses
        response = kit.call(response["next"])


def test_expand_returns_complete_text_beyond_the_display_cut(kit: Kit) -> None:
    kit.configure(maxEntryChars=100)
    long = "word " * 600
    path = session(kit, "short", long)
    kit.build()
    hit = kit.recall(query="word", scope="session")["hits"][0]
    assert hit["truncated"] is True
    detail = kit.call(hit["follow"])
    [entry] = detail["entries"]
    assert entry["text"] == long.strip() or entry["text"] == long
    assert entry["textRange"] == {"start": 0, "end": 3000, "total": 3000, "complete": True}
    assert detail["entryCount"] == 2 and detail["session"] == str(path)


def test_selectors_resolve_to_index_order_once(kit: Kit) -> None:
    path = session(kit, "a", "b", "c", "d", "e")
    kit.build()
    got = kit.expand(session=str(path), indices=[3, 1], entryIds=["e1", "e4"])
    assert [e["index"] for e in got["entries"]] == [1, 3, 4]
    by_range = kit.expand(session=str(path), entryRange={"first": 1, "last": 2})
    assert [e["text"] for e in by_range["entries"]] == ["b", "c"]
    by_id = kit.expand(session="s", entryIds=["e2"])
    assert by_id["entries"][0]["text"] == "c"
    meta = kit.expand(session=str(path))
    assert meta["entries"] == [] and meta["next"] is None and meta["entryCount"] == 5


def test_operation_addresses_expand_exactly(kit: Kit) -> None:
    records = [
        header("s", CWD),
        user("u", None, "run it", T0),
        assistant("a", "u", "", T0 + 1, {"id": "c", "name": "bash", "arguments": {"x": "y"}}),
        bash("b", "a", "make", "boom", T0 + 2, exit_code=1),
    ]  # fmt: skip
    path = kit.session("s", records)
    kit.build()
    got = kit.expand(session=str(path), operationAddresses=["b/bash"])
    [entry] = got["entries"]
    assert (entry["index"], entry["tool"], entry["outcome"], entry["isError"]) == (
        2,
        "bash",
        "failed",
        True,
    )
    assert entry["operationAddress"] == "b/bash" and entry["ref"] == "pi.bash"
    missing = kit.expand(session=str(path), operationAddresses=["zz/0"])
    assert missing["error"] == {
        "code": "address_not_found",
        "message": 'Operation address "zz/0" was not found.',
        "addressType": "operation_address",
        "address": "zz/0",
        "matches": 0,
    }
    assert missing["entries"] == []


def test_duplicate_ids_are_ambiguous_addresses(kit: Kit) -> None:
    records = [header("s", CWD), user("x", None, "one", T0), user("x", "x", "two", T0 + 1)]
    path = kit.session("s", records)
    kit.build()
    page = kit.recall(query="one two", scope="session", branches="all")
    assert "duplicate_entry_id" in page["coverage"]["reasons"]
    amb = kit.expand(session=str(path), entryIds=["x"], branches="all")
    assert amb["error"]["code"] == "ambiguous_address" and amb["error"]["matches"] == 2
    assert amb["entries"] == []


def test_context_around_one_anchor(kit: Kit) -> None:
    path = session(kit, *"abcdefg")
    kit.build()
    got = kit.expand(session=str(path), indices=[3], before=2, after=1)
    assert [(e["index"], e["anchor"]) for e in got["entries"]] == [
        (1, False),
        (2, False),
        (3, True),
        (4, False),
    ]
    edge = kit.expand(session=str(path), entryIds=["e0"], before=5, after=100)
    assert [e["index"] for e in edge["entries"]] == list(range(7))
    with pytest.raises(InvalidArgument, match="one selected anchor"):
        kit.expand(session=str(path), before=1)
    with pytest.raises(InvalidArgument, match="exactly one resolved anchor"):
        kit.expand(session=str(path), indices=[1, 2], after=1)


def test_long_entries_continue_losslessly_without_splitting_pairs(kit: Kit) -> None:
    emoji = "😀"
    texts = ["x" * 10 + emoji * 4000, "short", ("ab" + emoji) * 9000]
    path = session(kit, *texts)
    kit.build()
    got, responses = reassemble(
        kit, {"session": str(path), "entryRange": {"first": 0, "last": 2}, "maxChars": 1001}
    )
    assert [got[i] for i in range(3)] == texts
    assert len(responses) > 10
    for r in responses:
        assert json_length(r) <= 30_000
        for e in r["entries"]:
            units = len(e["text"].encode("utf-16-le")) // 2
            assert e["textRange"]["end"] - e["textRange"]["start"] == units
            assert units <= 1001


def test_context_chunks_stay_in_the_envelope(kit: Kit) -> None:
    big = "z" * 55_000
    path = session(kit, "before-1", "before-0", big, "after-0", "after-1")
    kit.build()
    got, responses = reassemble(
        kit, {"session": str(path), "indices": [2], "before": 2, "after": 2}
    )
    assert got == {0: "before-1", 1: "before-0", 2: big, 3: "after-0", 4: "after-1"}
    assert len(responses) >= 3
    assert all(json_length(r) <= 30_000 for r in responses)
    anchors = {e["index"] for r in responses for e in r["entries"] if e["anchor"]}
    assert anchors == {2}


def test_metadata_is_bounded_and_text_stays_lossless(kit: Kit) -> None:
    paths = [f"/very/long/{'d' * 1500}/file{i}.py" for i in range(20)]
    text = "q" * 23_500
    records = [
        header("s", CWD),
        user("u", None, "go", T0),
        assistant("a", "u", text, T0 + 1, {"id": "c", "name": "ed", "arguments": {"paths": paths}}),
    ]  # fmt: skip
    path = kit.session("s", records)
    kit.build()
    got, responses = reassemble(kit, {"session": str(path), "indices": [1], "maxChars": 24_000})
    entries = kit.engine.refresh().entries(kit.engine.refresh().by_path[str(path)], "active")
    assert got[1] == entries[1].text
    assert all(json_length(r) <= 30_000 for r in responses)
    first = responses[0]["entries"][0]
    # 20 paths of 1.5k chars do not fit beside the text: withheld down to 4 short ones
    assert first["structuredTruncated"] is True
    assert len(first["filesTouched"]) == 4
    assert all(len(f) <= 256 and f.endswith("…") for f in first["filesTouched"])
    assert first["textRange"]["complete"] is False


def test_error_bodies(kit: Kit) -> None:
    path = session(kit, "a", "b")
    kit.build()
    neg = kit.expand(session=str(path), indices=[-1])
    assert neg["error"]["code"] == "index_out_of_bounds" and neg["entries"] == []
    past = kit.expand(session=str(path), indices=[5])
    assert past["error"] == {
        "code": "index_out_of_bounds",
        "message": "Entry index 5 is outside 0..1.",
        "entryCount": 2,
    }
    rng = kit.expand(session=str(path), entryRange={"first": 0, "last": 2})
    assert rng["error"]["code"] == "index_out_of_bounds" and rng["error"]["entryCount"] == 2
    off = kit.expand(session=str(path), indices=[0], textOffset=5)
    assert off["error"] == {
        "code": "text_offset_out_of_bounds",
        "message": "Text offset 5 exceeds entry #0 length 1.",
        "textLength": 1,
    }
    assert kit.expand(session="nobody")["error"]["code"] == "session_not_found"
    with pytest.raises(InvalidArgument, match="at most 100 exact selectors"):
        kit.expand(session=str(path), indices=list(range(101)))
    with pytest.raises(InvalidArgument, match="maxChars"):
        kit.expand(session=str(path), indices=[0], maxChars=100)


def test_stale_and_unavailable_sources(kit: Kit) -> None:
    path = session(kit, "a", "b")
    kit.build()
    follow = kit.recall(query="a", scope="session")["hits"][0]["follow"]
    wrong = kit.expand(**{**follow["args"], "expectedSourceHash": "0" * 64})
    err = wrong["error"]
    assert err["code"] == "stale_pointer"
    assert err["message"] == "Session source changed after the pointer was issued."
    assert err["expectedSourceHash"] == "0" * 64 and err["sessionFile"] == str(path)
    assert err["actualSourceHash"] == follow["args"]["expectedSourceHash"]
    lineage = kit.expand(**{**follow["args"], "expectedLineageFingerprint": "1" * 64})
    assert (
        lineage["error"]["message"]
        == "Session active lineage changed after the pointer was issued."
    )
    kit.append(path, [user("late", "e1", "c", T0 + 9)])
    stale = kit.call(follow)
    assert stale["error"]["code"] == "stale_pointer" and stale["entries"] == []
    assert stale["error"]["actualSourceHash"] != follow["args"]["expectedSourceHash"]
    unbound = kit.expand(session=str(path), indices=[0])
    assert unbound["error"]["code"] == "stale_pointer"
    assert "pipeline run --once" in unbound["error"]["message"]
    path.unlink()
    gone = kit.call(follow)
    assert gone["error"]["code"] == "source_unavailable"


def test_a_global_hit_past_the_display_cut_shows_its_match(kit: Kit) -> None:
    # Search covers the complete text, so a term beyond maxEntryChars can rank an entry first;
    # its snippet must show that term, not the display text's head.
    kit.configure(maxEntryChars=100)
    session(kit, "short", "filler " * 400 + "the zebrafish assay failed " + "tail " * 50)
    session(kit, "other", "nothing here", name="t")  # two sessions: the hot shards are searched
    kit.build()
    [hit] = kit.recall(query="zebrafish", scope="global")["hits"]
    assert hit["tier"] == "hot"
    assert "zebrafish" in hit["snippet"]
    assert hit["snippet"].startswith("…") and hit["truncated"] is True
