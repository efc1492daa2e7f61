"""The ranking statistics records store: fields from typed fields, best passage, cold bytes."""

from __future__ import annotations

from store.rankstats import (
    PASSAGE,
    SEGMENTS,
    entry_stats,
    fields_of,
    segments,
    session_term_stats,
    session_term_stats_over,
    split,
    term_stats_bytes,
    unpack,
)
from store.records import NormalizedEntry
from store.tokens import term_set


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
    counts, length = entry_stats(_entry("assistant", "grep for it\nTool: grep(it it)", tool="grep"))
    assert split(counts["it"], length) == ((1, 2), (3, 4))
    assert split(counts["grep"], length)[0] == (1, 1)
    assert split(counts["for"], length)[0] == (1, 0)
    assert unpack(length) == (3, 4)
    # one passage: no segment bits
    assert not any(segments(v) for v in counts.values())


def test_a_one_field_entry_keeps_its_count_unpacked() -> None:
    counts, length = entry_stats(_entry("toolResult", "it it it"))
    assert counts["it"] == 3
    assert split(counts["it"], length) == ((0, 3), (0, 3))


def test_a_long_entry_says_which_segments_hold_each_term() -> None:
    # 2,048 tokens: SEGMENTS runs of 128 (two blocks of half a passage each); "alpha" opens
    # the entry, "omega" ends it, "both" is in the first and the last, "middle" in run 8 only
    words = [f"w{i}" for i in range(2048)]
    words[0], words[-1], words[1100] = "alpha", "omega", "middle"
    for at in (5, 2043):
        words[at] = "both"
    counts, length = entry_stats(_entry("toolResult", " ".join(words)))
    assert segments(counts["alpha"]) == 1
    assert segments(counts["omega"]) == 1 << (SEGMENTS - 1)
    assert segments(counts["middle"]) == 1 << 8
    assert segments(counts["both"]) == 1 | 1 << (SEGMENTS - 1)
    # the count under the bits is the best passage's, as before
    assert split(counts["both"], length) == ((0, 1), (0, PASSAGE))
    # runs are at least half a passage: 200 tokens make 4 runs, prose and plumbing as one text
    said = (
        " ".join(f"p{i}" for i in range(100))
        + "\nTool: x("
        + " ".join(f"c{i}" for i in range(100))
        + ")"
    )
    counts, _ = entry_stats(_entry("assistant", said, tool="x"))
    assert segments(counts["p0"]) == 1
    assert segments(counts["p99"]) == 2
    assert segments(counts["c99"]) == 8


def test_a_long_field_counts_by_its_best_passage() -> None:
    filler = " ".join(f"w{i % 50}" for i in range(20_000))
    text = f"{filler} needle needle {filler} needle"
    counts, length = entry_stats(_entry("toolResult", text))
    assert unpack(length) == (0, PASSAGE)
    assert split(counts["needle"], length)[0] == (0, 2)  # the two together, not all three
    assert split(counts["w7"], length)[0][1] <= PASSAGE // 50 + 1  # a window's share, not 400
    assert split(counts["w7"], length)[1] == (0, PASSAGE)


def test_cold_bytes_bucket_how_often_prose_says_a_term() -> None:
    entries = [_entry("user", "alpha beta Alpha")] * 2 + [_entry("toolResult", "beta gamma")] * 300
    entries += [_entry("assistant", "naïve Naïve gamma")] * 200
    terms, prose = session_term_stats(entries)
    assert terms == term_set(e.text for e in entries)
    assert (prose[b"alpha"], prose[b"beta"], prose[b"gamma"]) == (4, 2, 200)
    assert prose["naïve".encode()] == 400  # the canonical tokens, as term_set gives them
    stats = term_stats_bytes([b"alpha", b"beta", b"gamma", b"zeta"], prose)
    assert stats == bytes([3, 2, 8, 0])  # 4-7, 2-3, capped at 255, never said in prose


def test_the_term_set_is_taken_from_prose_and_plumbing_apart_as_from_whole_texts() -> None:
    # a call line among prose lines, marks that compose with what precedes them ("<" + U+0338
    # is "≮", "e" + U+0301 is "é") at the start and the end of lines, Hangul, CJK, an arrow
    said = 'Plan \u0338first\nTool: bash({"cmd":"a<\u0338b"})\ncafe\u0301 한국어 技術\n12→x'
    entries = [
        _entry("assistant", said, tool="bash"),
        _entry("assistant", 'Tool: read({"path":"ｆｕｌｌ"})', tool="read"),
        _entry("toolResult", "e\u0301\nTool: not a call here"),
        _entry("user", "Ⅻ ﬁle straße"),
    ]
    terms, prose = session_term_stats(entries)
    assert terms == term_set(e.text for e in entries)
    assert set(prose) <= terms
    assert (
        prose == session_term_stats_over(entries, entries[:1], session_term_stats(entries[:1]))[1]
    )


def test_a_view_over_another_adds_only_its_own_entries() -> None:
    active = [_entry("user", "alpha beta"), _entry("toolResult", "beta gamma")]
    active += [_entry("assistant", "alpha 技術スタック")] * 3
    stats = session_term_stats(active)
    more = [*active, _entry("user", "alpha delta"), _entry("toolResult", "epsilon")]
    assert session_term_stats_over(more, active, stats) == session_term_stats(more)
    # the same texts under another role: the prose counts cannot be derived, only recounted
    moved = [_entry("toolResult", "alpha beta"), *active[1:], _entry("user", "zeta")]
    assert session_term_stats_over(moved, active, stats) == session_term_stats(moved)
    # a view lacking one of the first's texts is taken whole
    fewer = active[1:]
    assert session_term_stats_over(fewer, active, stats) == session_term_stats(fewer)
    # the very same entries again
    assert session_term_stats_over(list(active), active, stats) == stats


def test_cold_bytes_of_a_cut_vocabulary_and_huge_counts() -> None:
    prose = {b"alpha": 70_000, b"beta": 2, b"omega": 9}  # omega: past the vocabulary's cut
    assert term_stats_bytes([b"alpha", b"beta", b"delta"], prose) == bytes([8, 2, 0])
    assert term_stats_bytes([], prose) == b""


def _bisected(terms: list[bytes], prose: dict[bytes, int]) -> bytes:
    """The term_stats bytes as the bisection per prose term made them (the reference)."""
    from bisect import bisect_left

    out = bytearray(len(terms))
    for term, count in prose.items():
        i = bisect_left(terms, term)
        if i < len(terms) and terms[i] == term:
            out[i] = min(count, 255).bit_length()
    return bytes(out)


def test_cold_bytes_are_those_a_bisection_per_prose_term_gives() -> None:
    import random

    rng = random.Random(7)
    words = [f"w{rng.randrange(5000)}".encode() for _ in range(3000)]
    for trial in range(40):
        terms = sorted(set(rng.sample(words, rng.randrange(0, 400))))
        said = rng.sample(words, rng.randrange(0, 300))  # some past the vocabulary
        prose = {w: rng.choice([1, 2, 3, 7, 8, 200, 255, 256, 65_535]) for w in said}
        if trial % 5 == 0 and prose:
            prose[next(iter(prose))] = 1 << 20  # a count past the lookup table
        assert term_stats_bytes(terms, prose) == _bisected(terms, prose)
    assert term_stats_bytes([b"a", b"b"], {}) == bytes(2)
