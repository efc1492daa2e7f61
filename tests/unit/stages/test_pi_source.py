"""The Pi adapter: header, versions, ids (own and derived), duplicate headers, reasons."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from stages.errors import BadInput
from stages.parse import parse
from stages.pi.source import derived_id, read_pi, v1_entry_id
from stages.read import read_session
from stages.source import SourceSession

DATA = Path(__file__).parents[2] / "data" / "pi"
REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "pi"


def read(name: str) -> SourceSession:
    path = DATA / name
    return read_pi(parse(path.read_bytes()), str(path))


def test_v3_header_and_every_entry_type_become_nodes_in_file_order() -> None:
    session = read("source_v3_all_types.jsonl")
    assert session.agent == "pi"
    assert session.session_id == "sess-all-types"
    assert session.cwd == "/home/u/proj"
    assert session.version == 3
    assert session.header is not None and session.header["type"] == "session"
    assert session.parent_session == (
        "/home/u/.pi/agent/sessions/--home-u-proj--/2026-01-09T09-00-00-000Z_sess-old.jsonl"
    )
    assert session.reasons == ()
    assert session.extra == {}
    assert [(r.position, r.line, r.kind) for r in session.records] == [
        (0, 2, "model_change"),
        (1, 3, "thinking_level_change"),
        (2, 4, "message"),
        (3, 5, "message"),
        (4, 6, "message"),
        (5, 7, "message"),
        (6, 8, "message"),
        (7, 9, "custom_message"),
        (8, 10, "custom"),
        (9, 11, "compaction"),
        (10, 12, "branch_summary"),
        (11, 13, "label"),
        (12, 14, "session_info"),
        (13, 15, "future_entry"),
        (14, 16, "unknown"),
        (15, 17, "message"),
    ]
    ids = [r.id for r in session.records]
    assert ids[:3] == ["m0000001", "t0000001", "u0000001"]
    assert [r.parent_id for r in session.records] == [None, *ids[:-1]]
    assert all(r.leaf_candidate and not r.sidechain for r in session.records)
    assert not session.sidechain


def test_records_keep_their_value_and_offset() -> None:
    path = DATA / "source_v3_all_types.jsonl"
    data = path.read_bytes()
    session = read_pi(parse(data), str(path))
    for record in session.records:
        line = data[record.offset :].split(b"\n", 1)[0]
        assert orjson.loads(line) == record.value


def test_header_only_file_has_no_records() -> None:
    session = read("source_header_only.jsonl")
    assert session.session_id == "sess-header-only"
    assert session.version == 3
    assert session.records == ()
    assert session.reasons == ()


def test_missing_header_uses_the_file_stem_and_says_so() -> None:
    session = read("source_missing_header.jsonl")
    assert session.header is None
    assert session.session_id == "source_missing_header"
    assert session.cwd == ""
    assert session.version == 1
    assert session.reasons == ("missing_session_header",)
    # A v3 body whose header was sliced off keeps its own ids and links.
    assert [(r.id, r.parent_id) for r in session.records] == [
        ("s1000001", "gone0001"),
        ("s1000002", "s1000001"),
        ("s1000003", "s1000002"),
    ]


def test_empty_file_is_a_session_without_header() -> None:
    session = read_pi(parse(b""), "/x/2026-01-01T00-00-00-000Z_abc.jsonl")
    assert session.session_id == "2026-01-01T00-00-00-000Z_abc"
    assert session.records == ()
    assert session.reasons == ("missing_session_header",)


def test_a_header_after_other_records_still_names_the_session() -> None:
    data = b'{"type":"custom","id":"x1","parentId":null}\n{"type":"session","version":3,"id":"S"}\n'
    session = read_pi(parse(data), "/s/f.jsonl")
    assert session.session_id == "S"
    assert session.version == 3
    assert session.reasons == ("missing_session_header",)
    assert [r.id for r in session.records] == ["x1"]


def test_a_duplicated_header_is_skipped_and_positions_stay_dense() -> None:
    session = read("lineage_duplicate_header.jsonl")
    assert session.session_id == "sess-dup"
    assert session.parent_session == "/s/orig.jsonl"
    assert session.reasons == ()
    assert [(r.position, r.line, r.id) for r in session.records] == [
        (0, 2, "d1"),
        (1, 3, "d2"),
        (2, 5, "d1"),
        (3, 6, "d2"),
        (4, 7, "d3"),
    ]


def test_malformed_lines_become_one_session_reason() -> None:
    data = b'{"type":"session","version":3,"id":"S"}\nnope\n[]\n{"type":"custom","id":"a"}\n'
    session = read_pi(parse(data), "/s/f.jsonl")
    assert session.reasons == ("malformed_line",)
    assert [r.line for r in session.records] == [4]
    both = read_pi(parse(b"nope\n"), "/s/f.jsonl")
    assert both.reasons == ("malformed_line", "missing_session_header")


def test_odd_header_fields_fall_back() -> None:
    data = b'{"type":"session","version":"3","id":7,"cwd":null,"parentSession":5}\n'
    session = read_pi(parse(data), "/s/stem.jsonl")
    assert session.session_id == "stem"
    assert session.version == 1
    assert session.cwd == ""
    assert session.parent_session is None
    assert read_pi(parse(b'{"type":"session","version":true}\n'), "/s/a.jsonl").version == 1


def test_v2_records_without_ids_get_none() -> None:
    data = (
        b'{"type":"session","version":2,"id":"S"}\n'
        b'{"type":"message","parentId":null}\n'
        b'{"type":"message","id":"b","parentId":7}\n'
        b'{"type":"message","id":"c","parentId":"b"}\n'
    )
    session = read_pi(parse(data), "/s/f.jsonl")
    assert [(r.id, r.parent_id) for r in session.records] == [(None, None), ("b", None), ("c", "b")]
    assert session.extra == {}


# --- v1: derived ids -----------------------------------------------------------------------


def expected_id(session_id: str, position: int) -> str:
    return blake3(f"{session_id}\x00{position}".encode()).hexdigest()[:8]


def test_v1_ids_are_derived_and_chained_like_pis_migration() -> None:
    session = read("source_v1_concatenated.jsonl")
    assert session.version == 1
    assert session.session_id == "sess-v1"
    assert session.parent_session == (
        "/Users/a/.pi/agent/sessions/--Users-a-proj--/2025-12-09T08-00-00-000Z_sess-v0.jsonl"
    )
    assert session.reasons == ()
    ids = [expected_id("sess-v1", p) for p in range(8)]
    assert [r.id for r in session.records] == ids
    assert [r.parent_id for r in session.records] == [None, *ids[:-1]]
    # The two objects of line 5 are two records.
    assert [r.line for r in session.records] == [2, 3, 4, 5, 5, 6, 7, 8]


def test_v1_first_kept_entry_index_counts_the_header() -> None:
    session = read("source_v1_concatenated.jsonl")
    compaction = session.records[6]
    assert compaction.kind == "compaction"
    index = compaction.value["firstKeptEntryIndex"]
    assert index == 4
    kept = v1_entry_id(session, index)
    assert kept == session.records[3].id
    assert session.records[3].value["message"]["content"] == "second question"
    assert session.extra["v1_entry_ids"] == (None, *(r.id for r in session.records))
    assert v1_entry_id(session, 0) is None  # the header
    assert v1_entry_id(session, 9) is None
    assert v1_entry_id(session, -1) is None
    assert v1_entry_id(read("source_v3_all_types.jsonl"), 1) is None


def test_v1_plain_file() -> None:
    session = read("source_v1_plain.jsonl")
    assert session.version == 1
    assert [r.kind for r in session.records] == ["message", "model_change", "message"]
    assert [r.id for r in session.records] == [expected_id("sess-v1-plain", p) for p in range(3)]


def test_v1_mixed_records_keep_their_own_ids() -> None:
    session = read("lineage_v1_mixed.jsonl")
    d0, d2 = expected_id("sess-mixed", 0), expected_id("sess-mixed", 2)
    assert [(r.id, r.parent_id) for r in session.records] == [
        (d0, None),
        ("own00001", d0),
        (d2, "own00001"),
        ("own00002", "own00001"),
    ]


def test_derived_ids_grow_only_when_they_would_repeat() -> None:
    full = blake3(b"S\x000").hexdigest()
    assert derived_id("S", 0) == full[:8]
    assert derived_id("S", 0, {full[:8]}) == full[:16]
    assert derived_id("S", 0, {full[:8], full[:16]}) == full


def test_a_v1_record_that_repeats_an_earlier_id_gets_the_longer_form() -> None:
    clash = expected_id("S", 1)
    data = f'{{"type":"session","id":"S"}}\n{{"type":"message","id":"{clash}"}}\n{{"type":"x"}}\n'
    session = read_pi(parse(data.encode()), "/s/f.jsonl")
    assert session.records[1].id == blake3(b"S\x001").hexdigest()[:16]


@given(st.lists(st.sampled_from(["message", "custom", "compaction"]), max_size=30), st.data())
def test_v1_ids_never_change_when_the_file_grows(kinds: list[str], data: st.DataObject) -> None:
    lines = [b'{"type":"session","id":"grow"}'] + [orjson.dumps({"type": k}) for k in kinds]
    whole = b"".join(line + b"\n" for line in lines)
    cut = data.draw(st.integers(0, len(whole)))
    before = read_pi(parse(whole[:cut]), "/s/grow.jsonl")
    after = read_pi(parse(whole), "/s/grow.jsonl")
    assert before.records == after.records[: len(before.records)]
    assert len({r.id for r in after.records}) == len(after.records)


# --- read_session ----------------------------------------------------------------------------


def test_read_session_dispatches_to_the_pi_adapter() -> None:
    path = DATA / "source_v3_all_types.jsonl"
    data = path.read_bytes()
    assert read_session(data, str(path), "pi") == read_pi(parse(data), str(path))


def test_read_session_rejects_an_unknown_agent() -> None:
    with pytest.raises(BadInput, match="unknown agent 'msn'"):
        read_session(b"", "/s/f.jsonl", "msn")


# --- real files ------------------------------------------------------------------------------

REAL_FACTS = {
    # name: (objects, malformed lines, version, session id, records)
    "badlogic__pi-mono__packages__coding-agent__test__fixtures__large-session.jsonl": (
        1019,
        (),
        1,
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        1018,
    ),
    "badlogic__pi-mono__session.jsonl": (464, (), 1, "5fd1e58c-9635-410e-a644-133a96057c90", 463),
    "castai__kimchi-dev__session.jsonl": (148, (), 3, "019dcd91-86ff-737d-86b6-08c8e5ec7284", 147),
    "jazzyalex__agent-sessions__Resources__Fixtures__stage0__agents__pi__small.jsonl": (
        9,
        (),
        3,
        "019e19b4-eb48-746a-aa6b-8dfcfa37954b",
        8,
    ),
    "kir-gadjello__pi-session-manager__.pi__messenger__crew__artifacts__873fc059_crew-planner_0.jsonl": (  # noqa: E501
        1,
        (),
        3,
        "ef107df1-507f-4cf4-8f08-797e3a6a47fd",
        0,
    ),
    # line 44 holds an invalid ``\\*`` escape (a redaction tool's): repaired, not malformed
    "pinion05__agent-complex-task__sessions__04-awesome-agent-ide__session.jsonl": (
        160,
        (),
        3,
        "scc6968a3db48",
        159,
    ),
}


def real(name: str) -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real Pi fixtures not found at {REAL} (../shared is absent)")
    return REAL / name


@pytest.mark.real
def test_every_real_pi_file_is_known_here() -> None:
    if not REAL.is_dir():
        pytest.skip(f"real Pi fixtures not found at {REAL} (../shared is absent)")
    assert sorted(p.name for p in REAL.glob("*.jsonl")) == sorted(REAL_FACTS)


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_FACTS))
def test_real_pi_files_parse_and_read(name: str) -> None:
    path = real(name)
    objects, malformed, version, session_id, records = REAL_FACTS[name]
    data = path.read_bytes()
    parsed = parse(data)
    assert parsed.consumed == len(data)
    assert len(parsed.records) == objects
    assert parsed.malformed_lines == malformed
    session = read_session(data, str(path), "pi")
    assert session.version == version
    assert session.session_id == session_id
    assert len(session.records) == records
    repaired = ("repaired_line",) if parsed.repaired_lines else ()
    assert session.reasons == (("malformed_line",) if malformed else ()) + repaired
    assert parsed.repaired_lines == ((44,) if name.startswith("pinion05") else ())
    assert len({r.id for r in session.records}) == records


@pytest.mark.real
def test_real_v1_concatenated_line_and_compaction_index() -> None:
    session = read_session(
        real("badlogic__pi-mono__session.jsonl").read_bytes(), "session.jsonl", "pi"
    )
    assert [r.position for r in session.records if r.line == 440] == [438, 439]
    compaction = session.records[-1]
    assert compaction.kind == "compaction"
    assert compaction.value["firstKeptEntryIndex"] == 355
    kept = v1_entry_id(session, 355)
    assert kept == session.records[354].id
    assert session.records[354].line == 356
