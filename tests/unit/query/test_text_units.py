"""UTF-16 measures, vocabulary search and time specs: the small pure helpers."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from query.timespec import TimeSpecError, parse_time
from query.u16 import bounded, is_low_surrogate_at, json_length, u16len, u16slice
from query.vocabulary import TermIndex, blob_contains

EMOJI = "😀"


def test_lengths_count_utf16_units() -> None:
    assert u16len("abc") == 3
    assert u16len("é") == 1
    assert u16len(EMOJI) == 2
    assert u16len(f"a{EMOJI}b") == 4


def test_slices_never_split_a_pair() -> None:
    text = f"a{EMOJI}b"
    assert u16slice(text, 0, 2) == "a"  # end inside the pair moves back
    assert u16slice(text, 2, 4) == "b"  # start inside the pair moves forward
    assert u16slice(text, 1, 3) == EMOJI
    assert is_low_surrogate_at(text, 2) and not is_low_surrogate_at(text, 1)


@given(st.text(alphabet=st.sampled_from(["a", "é", EMOJI, "\n", '"'])), st.integers(0, 40))
def test_consecutive_safe_slices_reassemble(text: str, step: int) -> None:
    total = u16len(text)
    out, at = "", 0
    while at < total:
        end = min(total, at + max(step, 2))
        if end < total and is_low_surrogate_at(text, end):
            end -= 1
        out += u16slice(text, at, end)
        at = end
    assert out == text


def test_bounded_metadata() -> None:
    assert bounded(None) is None
    assert bounded("x" * 512) == "x" * 512
    assert bounded("x" * 513) == "x" * 511 + "…"


@given(
    st.recursive(
        st.text() | st.integers() | st.booleans() | st.none(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=10,
    )
)
def test_json_length_is_javascript_stringify_length(value: object) -> None:
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json_length(value) == len(compact.encode("utf-16-le", "surrogatepass")) // 2


@given(
    st.sets(st.text(alphabet="abcé日_0", min_size=1, max_size=6), max_size=40),
    st.text(alphabet="abcé日_0", min_size=1, max_size=6),
)
def test_blob_search_agrees_with_set_membership(terms: set[str], probe: str) -> None:
    blob = b"\n".join(sorted(t.encode() for t in terms))
    assert blob_contains(blob, probe.encode()) == (probe in terms)
    for t in terms:
        assert blob_contains(blob, t.encode())


def test_term_index_lists_holders() -> None:
    blobs = [b"alpha\nbeta", b"", b"beta\ngamma", b"alpha\nbeta\ngamma"]
    index = TermIndex(blobs)
    assert index.holders(b"beta") == array("I", [0, 2, 3])
    assert index.holders(b"alpha") == array("I", [0, 3])
    assert index.holders(b"delta") == array("I")
    assert index.terms == 3


def test_time_specs() -> None:
    now = 1_800_000_000_000
    assert parse_time("1700000000000") == 1_700_000_000_000
    assert parse_time("7d", now_ms=now) == now - 7 * 86_400_000
    assert parse_time("30m", now_ms=now) == now - 1_800_000
    assert parse_time("2026-01-15T00:00:00Z") == 1_768_435_200_000
    start = parse_time("2026-01-15")
    assert parse_time("2026-01-15", end_of_day=True) == start + 86_400_000 - 1
    with pytest.raises(TimeSpecError, match="7d"):
        parse_time("last tuesday")
