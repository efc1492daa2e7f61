"""lineage: the active path (leaf → root, never a silent cut), ``all``, and the fingerprint."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from stages.errors import BadInput
from stages.lineage import Lineage, fingerprint, fingerprint_payload, lineage
from stages.parse import parse
from stages.pi.source import read_pi
from stages.source import SourceRecord, SourceSession

DATA = Path(__file__).parents[2] / "data" / "pi"
REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "pi"


def read(name: str) -> SourceSession:
    path = DATA / name
    return read_pi(parse(path.read_bytes()), str(path))


def session_of(*records: SourceRecord) -> SourceSession:
    return SourceSession(
        agent="test",
        path="/s/t.jsonl",
        session_id="t",
        cwd="",
        version=3,
        header=None,
        records=records,
    )


def node(position: int, id: str | None, parent: str | None, **flags: bool) -> SourceRecord:
    return SourceRecord(
        position=position,
        line=position + 2,
        offset=position * 10,
        id=id,
        parent_id=parent,
        kind="x",
        value={},
        **flags,
    )


def active(
    session: SourceSession,
) -> tuple[str | None, tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    result = lineage(session, "active")
    assert result.branches == "active"
    side = [session.records[p].id or "" for p in result.selected if session.records[p].sidechain]
    assert result.fingerprint == fingerprint("active", result.leaf_id, [*result.path_ids, *side])
    return result.leaf_id, result.path_ids, result.selected, result.reasons


# --- fingerprint ---------------------------------------------------------------------------


def test_fingerprint_payload_is_byte_for_byte_pi_fabrics() -> None:
    # Pi Fabric's SHA-256 constants prove the JSON bytes match; we hash them with blake3.
    assert hashlib.sha256(fingerprint_payload("all", None, [])).hexdigest() == (
        "151b50b5d43ace9ebb84edae27b7e5d257f0207df6f0142d4e80dfe72bcdc7e2"
    )
    one = hashlib.sha256(fingerprint_payload("active", "u1", ["u1"])).hexdigest()
    assert one.startswith("f95fcdce") and one.endswith("95513602")
    assert fingerprint_payload("active", "b", ("a", "b")) == (
        b'{"branches":"active","leafId":"b","ids":["a","b"]}'
    )


def test_fingerprint_is_blake3_of_the_payload() -> None:
    payload = fingerprint_payload("active", "é", ["a", "é"])
    assert fingerprint("active", "é", ["a", "é"]) == blake3(payload).hexdigest()
    assert fingerprint("active", "b", ["a", "b"]) != fingerprint("active", "b", ["b"])
    assert fingerprint("all", None, []) != fingerprint("active", None, [])


# --- all -----------------------------------------------------------------------------------


def test_all_selects_every_record_including_sidechains_and_id_less_ones() -> None:
    session = session_of(
        node(0, "a", None),
        node(1, None, "a"),
        node(2, "s", "a", sidechain=True),
        node(3, "b", "zzz"),
    )
    assert lineage(session, "all") == Lineage(
        branches="all",
        leaf_id=None,
        path_ids=(),
        selected=(0, 1, 2, 3),
        fingerprint=fingerprint("all", None, []),
    )


def test_all_never_reports_graph_problems() -> None:
    assert lineage(read("lineage_cycle.jsonl"), "all").reasons == ()
    assert lineage(read("lineage_lost_middle.jsonl"), "all").selected == (0, 1, 2, 3)


def test_an_unknown_branch_mode_is_a_callers_mistake() -> None:
    with pytest.raises(BadInput, match="unknown branch mode"):
        lineage(session_of(), "newest")


# --- active, golden Pi sessions --------------------------------------------------------------


def test_a_linear_v3_session_is_all_on_the_path() -> None:
    session = read("source_v3_all_types.jsonl")
    leaf, path, selected, reasons = active(session)
    assert leaf == "u0000002"
    assert path == tuple(r.id for r in session.records)
    assert selected == tuple(range(16))
    assert reasons == ()


def test_an_abandoned_branch_is_off_the_path() -> None:
    assert active(read("lineage_branched.jsonl")) == (
        "l1",
        ("u1", "a1", "u3", "a3", "l1"),
        (0, 1, 4, 5, 6),
        (),
    )


def test_a_branch_summary_to_root_starts_a_second_root() -> None:
    assert active(read("lineage_second_root.jsonl")) == (
        "l2",
        ("bs1", "l1", "u2", "l2"),
        (2, 3, 4, 5),
        (),
    )


def test_a_v1_file_is_one_chain() -> None:
    for name in ("source_v1_concatenated.jsonl", "source_v1_plain.jsonl"):
        session = read(name)
        leaf, path, selected, reasons = active(session)
        assert path == tuple(r.id for r in session.records)
        assert leaf == session.records[-1].id
        assert selected == tuple(range(len(session.records)))
        assert reasons == ()


def test_a_mixed_v1_file_follows_the_links_it_has() -> None:
    session = read("lineage_v1_mixed.jsonl")
    leaf, path, selected, reasons = active(session)
    assert leaf == "own00002"
    assert path == (session.records[0].id, "own00001", "own00002")
    assert selected == (0, 1, 3)
    assert reasons == ()


def test_a_header_only_file_has_an_empty_path() -> None:
    result = lineage(read("source_header_only.jsonl"), "active")
    assert result == Lineage("active", None, (), (), fingerprint("active", None, []))


def test_duplicate_ids_resolve_to_their_last_record() -> None:
    assert active(read("lineage_duplicate_header.jsonl")) == (
        "d3",
        ("d1", "d2", "d3"),
        (2, 3, 4),
        (),
    )


def test_an_invalid_escape_mid_file_is_repaired_and_the_path_is_whole() -> None:
    session = read("lineage_malformed_middle.jsonl")
    assert session.reasons == ("repaired_line",)
    assert session.records[2].value["message"]["content"] == "bad \\q escape"
    assert active(session) == ("m5", ("m1", "m2", "m3", "m4", "m5"), (0, 1, 2, 3, 4), ())


def test_a_lost_line_mid_file_is_bridged_to_the_entry_before_it_not_a_silent_cut() -> None:
    session = read("lineage_lost_middle.jsonl")
    assert session.reasons == ("malformed_line",)
    assert active(session) == ("m5", ("m1", "m2", "m4", "m5"), (0, 1, 2, 3), ("bridged_parent",))


def test_a_sliced_file_dangles_at_its_first_record() -> None:
    assert active(read("source_missing_header.jsonl")) == (
        "s1000003",
        ("s1000001", "s1000002", "s1000003"),
        (0, 1, 2),
        ("dangling_parent",),
    )


def test_a_cycle_stops_the_walk_and_keeps_what_was_walked() -> None:
    assert active(read("lineage_cycle.jsonl")) == (
        "c4",
        ("c1", "c2", "c3", "c4"),
        (0, 1, 2, 3),
        ("invalid_parent_graph",),
    )


def test_a_self_parent_is_a_root() -> None:
    assert active(read("lineage_self_parent.jsonl")) == ("child", ("self", "child"), (1, 2), ())


def test_orphans_and_id_less_records_off_the_path_change_nothing() -> None:
    assert active(read("lineage_orphans.jsonl")) == ("r2c", ("r2", "r2c"), (5, 6), ())


# --- active, adapter flags ------------------------------------------------------------------


def test_records_without_ids_are_never_on_the_path_or_the_leaf() -> None:
    session = session_of(node(0, "a", None), node(1, "b", "a"), node(2, None, "b"))
    assert active(session) == ("b", ("a", "b"), (0, 1), ())
    assert active(session_of(node(0, None, None))) == (None, (), (), ())


def test_non_candidates_can_be_on_the_path_but_never_the_leaf() -> None:
    session = session_of(
        node(0, "a", None),
        node(1, "p", "a", leaf_candidate=False),
        node(2, "b", "p"),
        node(3, "q", "b", leaf_candidate=False),
    )
    assert active(session) == ("b", ("a", "p", "b"), (0, 1, 2), ())


def test_sidechain_records_are_neither_leaf_nor_path_but_are_selected() -> None:
    session = session_of(
        node(0, "a", None),
        node(1, "s1", "a", sidechain=True),
        node(2, "b", "a"),
        node(3, "s2", "s1", sidechain=True),
        node(4, "s3", "s2", sidechain=True, leaf_candidate=False),  # a subagent's progress line
    )
    # A subagent is the session's work, not an abandoned branch: active selects its records.
    assert active(session) == ("b", ("a", "b"), (0, 1, 2, 3), ())
    assert lineage(session, "active").fingerprint == fingerprint(
        "active", "b", ["a", "b", "s1", "s2"]
    )
    through_sidechain = session_of(node(0, "s1", None, sidechain=True), node(1, "b", "s1"))
    assert active(through_sidechain) == ("b", ("b",), (0, 1), ("dangling_parent",))
    only_sidechain = session_of(node(0, "s1", None, sidechain=True))
    assert active(only_sidechain) == (None, (), (0,), ())


def test_a_missing_parent_is_bridged_to_the_leaf_candidate_before_it_in_file_order() -> None:
    session = session_of(
        node(0, "a", None),
        node(1, "p", "a", leaf_candidate=False),
        node(2, "b", "gone"),
        node(3, "c", "b"),
    )
    assert active(session) == ("c", ("a", "b", "c"), (0, 2, 3), ("bridged_parent",))
    twice = session_of(node(0, "a", None), node(1, "b", "x"), node(2, "c", "y"))
    assert active(twice) == ("c", ("a", "b", "c"), (0, 1, 2), ("bridged_parent",))


def test_a_sidechain_record_never_shadows_a_main_record_with_its_id() -> None:
    session = session_of(node(0, "a", None), node(1, "b", "a"), node(2, "a", "zz", sidechain=True))
    assert active(session) == ("b", ("a", "b"), (0, 1), ())


def test_the_leaf_id_resolves_to_its_last_record_too() -> None:
    # "b" is the last candidate, but a later non-candidate repeats its id with another parent.
    session = session_of(
        node(0, "a", None),
        node(1, "x", None),
        node(2, "b", "a"),
        node(3, "b", "x", leaf_candidate=False),
    )
    assert active(session) == ("b", ("x", "b"), (1, 3), ())


def test_selected_is_in_file_order_even_when_links_point_forward() -> None:
    session = session_of(node(0, "b", "a"), node(1, "a", None), node(2, "c", "b"))
    assert active(session) == ("c", ("a", "b", "c"), (0, 1, 2), ())


@pytest.mark.slow
def test_a_very_deep_session_walks_without_recursion() -> None:
    depth = 200_000
    records = [node(0, "n0", None)] + [node(i, f"n{i}", f"n{i - 1}") for i in range(1, depth)]
    leaf, path, selected, reasons = active(session_of(*records))
    assert leaf == f"n{depth - 1}"
    assert len(path) == depth
    assert selected == tuple(range(depth))
    assert reasons == ()


# --- property: the documented rules against a plain reference walk ---------------------------


def reference_walk(records: list[SourceRecord]) -> tuple[str | None, list[str], set[str]]:
    """The rules, spelled out as slowly and plainly as possible."""
    nodes = [r for r in records if r.id is not None and not r.sidechain]
    leaves = [r for r in nodes if r.leaf_candidate]
    if not leaves:
        return None, [], set()

    def last_with(id: str) -> SourceRecord | None:
        matches = [r for r in nodes if r.id == id]
        return matches[-1] if matches else None

    leaf_id = leaves[-1].id
    assert leaf_id is not None
    start = last_with(leaf_id)
    assert start is not None
    walked = [start]
    reasons: set[str] = set()
    while True:
        here = walked[-1]
        if here.parent_id is None or here.parent_id == here.id:
            break
        parent = last_with(here.parent_id)
        if parent is None:
            earlier = [
                r
                for r in nodes
                if r.leaf_candidate and r is last_with(r.id or "") and r.position < here.position
            ]
            if not earlier:
                reasons.add("dangling_parent")
                break
            parent = earlier[-1]
            reasons.add("bridged_parent")
        if any(w.id == parent.id for w in walked):
            reasons.add("invalid_parent_graph")
            break
        walked.append(parent)
    return leaf_id, [w.id for w in reversed(walked) if w.id is not None], reasons


_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
_RECORDS = st.lists(
    st.tuples(
        st.none() | _IDS,
        st.none() | _IDS | st.just("missing"),
        st.booleans(),
        st.integers(0, 5),
    ),
    max_size=14,
)


@given(_RECORDS)
def test_random_parent_graphs_follow_the_reference_walk(
    specs: list[tuple[str | None, str | None, bool, int]],
) -> None:
    records = [
        node(i, id, parent, leaf_candidate=candidate, sidechain=side == 0)
        for i, (id, parent, candidate, side) in enumerate(specs)
    ]
    session = session_of(*records)
    result = lineage(session, "active")
    leaf, path, reasons = reference_walk(records)
    assert result.leaf_id == leaf
    assert list(result.path_ids) == path
    assert set(result.reasons) == reasons
    assert len(result.reasons) == len(reasons)
    # Each selected position is the last main record holding its path id, plus every
    # subagent leaf candidate (the last record holding an id no main record holds).
    last = {r.id: r.position for r in records if r.id is not None and not r.sidechain}
    side = {r.id: r for r in records if r.id is not None and r.sidechain}
    side_kept = sorted(
        (r.position, i) for i, r in side.items() if r.leaf_candidate and i not in last
    )
    assert result.selected == tuple(sorted([*(last[i] for i in path), *(p for p, _ in side_kept)]))
    assert len(set(path)) == len(path)
    assert result.fingerprint == fingerprint("active", leaf, [*path, *(i for _, i in side_kept)])
    assert lineage(session, "all").selected == tuple(range(len(records)))


# --- real files ------------------------------------------------------------------------------

REAL_ACTIVE = {
    # name: (leaf id, active path length, first path id, reasons)
    "castai__kimchi-dev__session.jsonl": ("6bb1d673", 147, "9f59d35c", ()),
    "jazzyalex__agent-sessions__Resources__Fixtures__stage0__agents__pi__small.jsonl": (
        "2c19d326",
        8,
        "f7c7091e",
        (),
    ),
    # Line 44 holds an invalid escape (``\\*``): repaired, so the whole file is the path (it
    # was lines 45-160 alone before the repair).
    "pinion05__agent-complex-task__sessions__04-awesome-agent-ide__session.jsonl": (
        "308c4680",
        159,
        "1ab51a1c",
        (),
    ),
}

REAL_V1 = {
    # v1 files are one chain: the whole file is the active path.
    "badlogic__pi-mono__packages__coding-agent__test__fixtures__large-session.jsonl": 1018,
    "badlogic__pi-mono__session.jsonl": 463,
}


def real(name: str) -> SourceSession:
    if not REAL.is_dir():
        pytest.skip(f"real Pi fixtures not found at {REAL} (../shared is absent)")
    path = REAL / name
    return read_pi(parse(path.read_bytes()), str(path))


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_ACTIVE))
def test_real_v3_active_paths(name: str) -> None:
    leaf, length, first, reasons = REAL_ACTIVE[name]
    result = lineage(real(name), "active")
    assert result.leaf_id == leaf
    assert len(result.path_ids) == len(result.selected) == length
    assert result.path_ids[0] == first
    assert result.reasons == reasons


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_V1))
def test_real_v1_active_path_is_the_whole_file(name: str) -> None:
    session = real(name)
    result = lineage(session, "active")
    assert len(result.path_ids) == REAL_V1[name]
    assert result.selected == tuple(range(REAL_V1[name]))
    assert result.reasons == ()


@pytest.mark.real
def test_real_header_only_file_has_no_path() -> None:
    session = real(
        "kir-gadjello__pi-session-manager__.pi__messenger__crew__artifacts__873fc059_crew-planner_0.jsonl"
    )
    assert lineage(session, "active").path_ids == ()


PINION = "pinion05__agent-complex-task__sessions__04-awesome-agent-ide__session.jsonl"


@pytest.mark.real
def test_real_pi_file_with_its_bad_line_lost_keeps_the_conversation_above_it() -> None:
    # Reproduce the cut: line 44 damaged beyond repair (cut mid-object). Before bridging, the
    # active path was lines 45-160 alone (116 records); bridged, it is every other record.
    if not REAL.is_dir():
        pytest.skip(f"real Pi fixtures not found at {REAL} (../shared is absent)")
    lines = (REAL / PINION).read_bytes().split(b"\n")
    lines[43] = lines[43][:200]
    session = read_pi(parse(b"\n".join(lines)), PINION)
    assert session.reasons == ("malformed_line",)
    result = lineage(session, "active")
    assert result.reasons == ("bridged_parent",)
    assert len(result.selected) == len(session.records) == 158
    assert result.path_ids[0] == "1ab51a1c"
