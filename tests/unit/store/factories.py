"""Small, valid records for the store tests (hand-written, no fixtures needed)."""

from __future__ import annotations

from store.records import (
    ColdDigest,
    ColdView,
    EntriesView,
    HotShard,
    Manifest,
    NormalizedEntry,
    SessionEntries,
    SessionState,
    ShardView,
    SkippedFile,
    SourceEvent,
    ViewSummary,
)

HASH = "ab" * 32


def entry(index: int = 0, text: str = "hello world", **kw: object) -> NormalizedEntry:
    fields: dict[str, object] = {
        "index": index,
        "entry_id": f"e{index}",
        "parent_id": f"e{index - 1}" if index else None,
        "type": "message",
        "role": "user",
        "tool": None,
        "text": text,
        "timestamp": 1_700_000_000_000 + index,
        "is_error": False,
        "truncated": False,
        "line": index + 1,
        "offset": index * 100,
    }
    fields.update(kw)
    return NormalizedEntry(**fields)  # type: ignore[arg-type]


def session_entries(path: str = "/s/a.jsonl", n: int = 3, text: str = "hello") -> SessionEntries:
    entries = tuple(entry(i, f"{text} {i}") for i in range(n))
    return SessionEntries(
        path, "sid-" + path, "pi", HASH, "pol", (EntriesView("active", HASH, entries, ()),)
    )


def hot_shard(path: str = "/s/a.jsonl", text: str = "hello") -> HotShard:
    view = ShardView(
        "active",
        HASH,
        (entry(0, text), entry(1, "second")),
        (2, 1),
        {"world": b"\x00\x00\x00\x00\x01\x00\x00\x00", "hello": b"\x00" * 8},
        ("malformed_line",),
    )
    return HotShard(path, "sid", "pi", "/repo", HASH, "pol", (view,))


def cold_digest(path: str = "/s/b.jsonl") -> ColdDigest:
    view = ColdView(
        "active",
        HASH,
        2,
        1,
        2,
        ("a.py", "b.py"),
        (("bash", 2), ("read", 1)),
        1,
        b"alpha\nbeta",
        10,
        ((0, "e0", None, "user", None, 1, None, None, None, None, False),),
        (),
    )
    return ColdDigest(path, "sid", "claude", "/repo", HASH, "pol", (view,))


def state(path: str, index_record: str, entries_record: str, tier: str = "hot") -> SessionState:
    summary = ViewSummary("active", HASH, "e2", 3, (), 1, 3)
    return SessionState(
        path, "pi", "sid", "/repo", None, 1, 2, 300, 10**18, 10**18, HASH, tier,
        index_record, 10, entries_record, 20, (summary,),
    )  # fmt: skip


def manifest(generation: int, sessions: tuple[SessionState, ...] = ()) -> Manifest:
    return Manifest(
        generation,
        1_700_000_000_000_000_000 + generation,
        "pol",
        {"pi": "/home/u/.pi", "claude": "/home/u/.claude"},
        50,
        tuple(sorted(sessions, key=lambda s: s.path)),
        (SkippedFile("/s/x.jsonl", "pi", "unreadable"),),
        ("work_budget",),
    )


def event() -> SourceEvent:
    return SourceEvent(
        "append", "/s/a.jsonl", "pi", 1, 2, 300, 10**18, 100, 300, 10**18, 7, {"k": [1, "x"]}
    )
