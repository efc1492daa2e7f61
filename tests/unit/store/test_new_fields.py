"""The fields issue 15 added to records: appended to the wire only when set, read back exactly,
and absent in records written before them."""

from __future__ import annotations

from dataclasses import replace

from store.codec import decode, encode
from store.records import NormalizedEntry, SessionChunk, SessionState
from tests.unit.store.factories import entry, state


def test_an_entry_without_family_or_edit_keeps_its_old_wire_form() -> None:
    plain = entry()
    assert len(plain.to_wire()) == 27
    assert NormalizedEntry.from_wire(plain.to_wire()) == plain


def test_family_and_context_edit_round_trip() -> None:
    marked = replace(entry(), family="mcp", context_edited="omitted")
    wire = marked.to_wire()
    assert wire[-2:] == ["mcp", "omitted"]
    assert NormalizedEntry.from_wire(wire) == marked
    edited_only = replace(entry(), context_edited="replaced")
    assert NormalizedEntry.from_wire(edited_only.to_wire()) == edited_only


def test_unknown_record_counts_round_trip_and_old_states_read_as_none() -> None:
    old = state("/s/a.jsonl", "i", "e")
    assert len(old.to_wire()) == 20 and SessionState.from_wire(old.to_wire()).unknown_records == ()
    counted = replace(old, unknown_records=(("2.1.400", "line:new-thing", 3),))
    assert SessionState.from_wire(counted.to_wire()) == counted
    chunk = SessionChunk((old, counted))
    assert decode(encode(chunk), expect=SessionChunk) == chunk
