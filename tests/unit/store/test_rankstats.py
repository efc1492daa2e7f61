"""The ranking statistics records store: fields from typed fields, best passage, cold bytes."""

from __future__ import annotations

from store.rankstats import (
    PASSAGE,
    PROSE_BIT,
    entry_stats,
    fields_of,
    session_term_stats,
    split,
    term_stats_bytes,
    unpack,
)
from store.records import NormalizedEntry


def _entry(role: str, text: str, tool: str | None = None) -> NormalizedEntry:
    return NormalizedEntry(
        index=0, entry_id="e", parent_id=None, type="message", role=role, tool=tool,
        text=text, timestamp=None, is_error=False, truncated=False, line=1, offset=0,
    )  # fmt: skip


def test_fields_follow_the_typed_role_and_tool() -> None:
    said = 'I will look at it\nTool: bash({"command":"ls"})'
    assert fields_of(_entry("assistant", said, tool="bash")) == (
        "I will look at it",
        'Tool: bash({"command":"ls"})',
    )
    assert fields_of(_entry("assistant", "Tool: bash(ls)", tool="bash")) == ("", "Tool: bash(ls)")
    assert fields_of(_entry("assistant", "no call here")) == ("no call here", "")
    # Without a typed call, a line that looks like one is prose: text is never classified.
    assert fields_of(_entry("user", "Tool: bash(ls)")) == ("Tool: bash(ls)", "")
    assert fields_of(_entry("toolResult", "output")) == ("", "output")


def test_prose_and_plumbing_counts_are_packed_apart() -> None:
    counts, length = entry_stats(_entry("assistant", "grep for it\nTool: grep(it)", tool="grep"))
    assert unpack(counts["it"]) == (1, 1)
    assert unpack(counts["grep"]) == (1, 1)
    assert unpack(counts["for"]) == (1, 0)
    assert unpack(length) == (3, 3)


def test_a_long_field_counts_by_its_best_passage() -> None:
    filler = " ".join(f"w{i % 50}" for i in range(20_000))
    text = f"{filler} needle needle {filler} needle"
    counts, length = entry_stats(_entry("toolResult", text))
    assert unpack(length) == (0, PASSAGE)
    assert split(counts["needle"], length)[0] == (0, 2)  # the two together, not all three
    assert split(counts["w7"], length)[0][1] <= PASSAGE // 50 + 1  # a window's share, not 400
    assert split(counts["w7"], length)[1] == (0, PASSAGE)


def test_cold_bytes_bucket_the_segments_holding_a_term_and_mark_prose() -> None:
    entries = [_entry("user", "alpha beta")] * 80 + [_entry("toolResult", "beta gamma")] * 4800
    held, in_prose = session_term_stats(entries)
    assert (held[b"alpha"], held[b"beta"], held[b"gamma"]) == (5, 305, 300)  # of 16 entries
    assert in_prose == {b"alpha", b"beta"}
    stats = term_stats_bytes([b"alpha", b"beta", b"gamma"], held, in_prose)
    assert stats == bytes([PROSE_BIT | 3, PROSE_BIT | 8, 8])  # 4-7, then capped at 255
