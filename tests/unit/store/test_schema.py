"""The record schema: every record type round-trips, reads its older forms, keeps its layout.

The strategies below cover every field of every record type (``store.schema.RECORD_TYPES``);
a record type without one fails ``test_every_record_type_has_a_strategy``, so a new type
cannot skip the round trip.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import store
from store import codec
from store.archive import Chain, Segment
from store.checkpoints import Checkpoint
from store.codec import decode, encode, pack, unpack
from store.dblayout import DbLayout, DbTable, DbTree
from store.records import (
    ColdDigest,
    ColdView,
    EntriesView,
    HotShard,
    Manifest,
    NormalizedEntry,
    SessionChunk,
    SessionEntries,
    SessionState,
    ShardView,
    SkippedFile,
    SourceEvent,
    ViewSummary,
)
from store.schema import RECORD_TYPES, SCHEMA_VERSION, TUPLE, Wired, layout, wire, wired
from store.sources import (
    ABSOLUTE,
    HOME,
    TMPDIR,
    WHOLE_PATH,
    ProjectFolder,
    SessionFiles,
    SourceSpec,
)
from tests.unit.store.factories import entry

# No deadline: a loaded machine must not fail a property test by being slow.
UNTIMED = settings(deadline=None, max_examples=40)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
COUNT = st.integers(0, 2**40)
TEXT = st.text(max_size=12)  # astral planes, NUL and combining marks included
OPT_TEXT = st.none() | TEXT
OPT_INT = st.none() | INT64
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def strs(max_size: int = 3) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(TEXT, max_size=max_size).map(tuple)


def few(of: st.SearchStrategy[Any], min_size: int = 0) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(of, min_size=min_size, max_size=2).map(tuple)


PATTERN = st.text(alphabet="abc*?.[]", min_size=1, max_size=6)
FILES = st.lists(PATTERN, min_size=1, max_size=3).flatmap(
    lambda ps: st.builds(
        SessionFiles,
        st.just(tuple(ps)),
        st.lists(st.sampled_from(ps), max_size=2).map(tuple),
        st.lists(st.sampled_from(["chats", "logs"]), max_size=2).map(tuple),
    )
)
FOLDERS = st.builds(
    ProjectFolder,
    base=st.sampled_from([HOME, TMPDIR, ABSOLUTE, WHOLE_PATH]),
    prefix=TEXT,
    suffix=TEXT,
    unsafe=st.sampled_from([r"[/\\:]", "[^a-z]", "x"]),
    bare=OPT_TEXT,
)
NAMES = st.sampled_from(["session", "message", "id", "session_id", "data", "time_updated"])
DB_TABLES = st.builds(
    DbTable,
    NAMES,
    NAMES,
    st.lists(NAMES, max_size=2).map(tuple),
    st.lists(NAMES, max_size=2).map(tuple),
    st.just("") | NAMES,
    st.integers(1, 10**9),
)
DB_TREES = st.builds(
    lambda folder, session, group, levels: DbTree(folder, session, group, levels, levels),
    st.sampled_from(["storage", "sessions"]),
    NAMES,
    NAMES,
    st.lists(NAMES, max_size=2).map(tuple),
)
DB_LAYOUTS = st.builds(
    DbLayout,
    st.sampled_from(["opencode*.db", "sessions.db"]),
    few(DB_TABLES, 1),
    few(DB_TREES),
    st.sampled_from(["", "*.jsonl"]),
)
SPECS = st.builds(SourceSpec, FILES, few(FOLDERS), few(DB_LAYOUTS))
ENTRIES = st.builds(
    NormalizedEntry,
    index=st.integers(0, 2**31),
    entry_id=OPT_TEXT,
    parent_id=OPT_TEXT,
    type=TEXT,
    role=OPT_TEXT,
    tool=OPT_TEXT,
    text=st.text(max_size=60),
    timestamp=OPT_INT,
    is_error=st.booleans(),
    truncated=st.booleans(),
    line=INT64,
    offset=INT64,
    agent=TEXT,
    parent_entry_id=OPT_TEXT,
    operation_address=OPT_TEXT,
    ref=OPT_TEXT,
    provider=OPT_TEXT,
    action=OPT_TEXT,
    outcome=OPT_TEXT,
    files_touched=strs(),
    operation=st.none() | st.dictionaries(TEXT, JSON, max_size=2),
    branch_fact=st.none() | st.dictionaries(TEXT, JSON, max_size=2),
    fact_address=OPT_TEXT,
    carrier_entry_id=OPT_TEXT,
    carrier_parent_id=OPT_TEXT,
    carrier_from_id=OPT_TEXT,
    sidechain=st.booleans(),
    agent_id=OPT_TEXT,
    parent_call_id=OPT_TEXT,
    family=OPT_TEXT,
    context_edited=OPT_TEXT,
    redactions=few(st.tuples(TEXT, TEXT)),
)
SUMMARIES = st.builds(ViewSummary, TEXT, TEXT, OPT_TEXT, COUNT, strs(), OPT_INT, OPT_INT)
ENTRIES_VIEWS = st.builds(EntriesView, TEXT, TEXT, few(ENTRIES), strs(), st.integers(0, 2**31))
SESSION_ENTRIES = st.builds(
    SessionEntries, TEXT, TEXT, TEXT, TEXT, TEXT, few(ENTRIES_VIEWS, min_size=1)
)
# The wire writes ``dropped`` sorted (equal sets, equal bytes), so a canonical value is sorted.
SHARD_VIEWS = st.builds(
    ShardView,
    TEXT,
    TEXT,
    few(ENTRIES),
    st.lists(st.integers(0, 2**32 - 1), max_size=3).map(tuple),
    st.dictionaries(TEXT, st.binary(max_size=16), max_size=3),
    strs(),
    st.integers(0, 2**31),
    st.lists(TEXT, max_size=3).map(lambda t: tuple(sorted(t))),
)
HOT_SHARDS = st.builds(HotShard, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, few(SHARD_VIEWS, 1))
ADDRESSES = st.tuples(
    st.integers(0, 2**31), OPT_TEXT, OPT_TEXT, OPT_TEXT, OPT_TEXT, OPT_INT, OPT_TEXT,
    OPT_TEXT, OPT_TEXT, OPT_TEXT, st.booleans(), OPT_TEXT, OPT_TEXT,
)  # fmt: skip
COLD_VIEWS = st.builds(
    ColdView,
    TEXT,
    TEXT,
    COUNT,
    OPT_INT,
    OPT_INT,
    strs(),
    few(st.tuples(TEXT, COUNT)),
    COUNT,
    st.binary(max_size=32),
    COUNT,
    few(ADDRESSES),
    strs(),
    st.binary(max_size=8),
)
COLD_DIGESTS = st.builds(ColdDigest, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, few(COLD_VIEWS, 1))
STATES = st.builds(
    SessionState,
    path=TEXT,
    agent=TEXT,
    session_id=TEXT,
    cwd=TEXT,
    parent_session=OPT_TEXT,
    dev=st.integers(0, 2**63 - 1),
    inode=st.integers(0, 2**63 - 1),
    size=st.integers(0, 2**63 - 1),
    mtime_ns=INT64,
    ctime_ns=INT64,
    source_hash=TEXT,
    tier=TEXT,
    index_record=TEXT,
    index_bytes=COUNT,
    entries_record=TEXT,
    entries_bytes=COUNT,
    views=few(SUMMARIES, 1),
    sidechain=st.booleans(),
    index_deltas=strs(2),
    entries_deltas=strs(2),
    unknown_records=few(st.tuples(TEXT, TEXT, COUNT)),
    archive=TEXT,
    title=OPT_TEXT,
)
SKIPPED = st.builds(SkippedFile, TEXT, TEXT, TEXT)
MANIFESTS = st.builds(
    Manifest,
    generation=st.integers(1, 10**12 - 1),
    created_ns=INT64,
    policy=TEXT,
    roots=st.dictionaries(TEXT, TEXT, max_size=2),
    hot_sessions=COUNT,
    sessions=few(STATES),
    skipped=few(SKIPPED),
    reasons=strs(2),
    chunks=strs(2),
    lexicon=strs(2),
    sources=st.dictionaries(TEXT, SPECS, max_size=2),
)
EVENTS = st.builds(
    SourceEvent, TEXT, TEXT, TEXT, COUNT, COUNT, COUNT, INT64, COUNT, COUNT, INT64, INT64,
    st.dictionaries(TEXT, JSON, max_size=2),
)  # fmt: skip
SEGMENTS = st.builds(Segment, TEXT, COUNT, st.integers(-7, 22))
CHAINS = st.builds(
    Chain,
    key=TEXT,
    source=TEXT,
    agent=TEXT,
    length=COUNT,
    hash=TEXT,
    stamp=st.tuples(COUNT, COUNT, COUNT, INT64, INT64),
    segments=few(SEGMENTS),
    meta=st.none() | st.dictionaries(TEXT, JSON, max_size=2),
    truncated=st.booleans(),
    updated_ns=INT64,
    retired=strs(2),
)

STRATEGIES: dict[type[Wired], st.SearchStrategy[Any]] = {
    DbTable: DB_TABLES,
    DbTree: DB_TREES,
    DbLayout: DB_LAYOUTS,
    SessionFiles: FILES,
    ProjectFolder: FOLDERS,
    SourceSpec: SPECS,
    NormalizedEntry: ENTRIES,
    ViewSummary: SUMMARIES,
    EntriesView: ENTRIES_VIEWS,
    SessionEntries: SESSION_ENTRIES,
    ShardView: SHARD_VIEWS,
    HotShard: HOT_SHARDS,
    ColdView: COLD_VIEWS,
    ColdDigest: COLD_DIGESTS,
    SessionState: STATES,
    SessionChunk: st.builds(SessionChunk, few(STATES)),
    SkippedFile: SKIPPED,
    Manifest: MANIFESTS,
    SourceEvent: EVENTS,
    Segment: SEGMENTS,
    Chain: CHAINS,
    Checkpoint: st.builds(Checkpoint, TEXT, INT64, INT64, INT64),
}

# The on-disk contract of SCHEMA_VERSION: (field, form, since, omitted when default) per type.
# Appending a field with a new ``since`` appends here. Removing, reordering or changing a
# field means records of this version would be misread: bump SCHEMA_VERSION (for a Chain or a
# Checkpoint, the version its own file carries) and start a new table instead.
LAYOUTS: dict[int, dict[str, list[tuple[str, str, int, bool]]]] = {
    1: {
        "SessionFiles": [
            ("patterns", "tuple", 1, False),
            ("whole", "tuple", 1, False),
            ("folders", "tuple", 2, True),
        ],
        "ProjectFolder": [
            ("base", "value", 1, False),
            ("prefix", "value", 1, False),
            ("suffix", "value", 1, False),
            ("unsafe", "value", 1, False),
            ("bare", "value", 1, False),
        ],
        "SourceSpec": [
            ("files", "record:SessionFiles", 1, False),
            ("folders", "records:ProjectFolder", 1, False),
            ("databases", "records:DbLayout", 2, True),
        ],
        "DbTable": [
            ("name", "value", 1, False),
            ("key", "value", 1, False),
            ("order", "tuple", 1, False),
            ("json", "tuple", 1, False),
            ("updated", "value", 1, False),
            ("scale", "value", 1, False),
        ],
        "DbTree": [
            ("folder", "value", 1, False),
            ("session", "value", 1, False),
            ("group", "value", 1, False),
            ("levels", "tuple", 1, False),
            ("keys", "tuple", 1, False),
        ],
        "DbLayout": [
            ("file", "value", 1, False),
            ("tables", "records:DbTable", 1, False),
            ("trees", "records:DbTree", 2, True),
            ("singles", "value", 2, True),
        ],
        "NormalizedEntry": [
            ("index", "value", 1, False),
            ("entry_id", "value", 1, False),
            ("parent_id", "value", 1, False),
            ("type", "value", 1, False),
            ("role", "value", 1, False),
            ("tool", "value", 1, False),
            ("text", "value", 1, False),
            ("timestamp", "value", 1, False),
            ("is_error", "value", 1, False),
            ("truncated", "value", 1, False),
            ("line", "value", 1, False),
            ("offset", "value", 1, False),
            ("agent", "value", 1, False),
            ("parent_entry_id", "value", 1, False),
            ("operation_address", "value", 1, False),
            ("ref", "value", 1, False),
            ("provider", "value", 1, False),
            ("action", "value", 1, False),
            ("outcome", "value", 1, False),
            ("files_touched", "tuple", 1, False),
            ("operation", "value", 1, False),
            ("branch_fact", "value", 1, False),
            ("fact_address", "value", 1, False),
            ("carrier_entry_id", "value", 1, False),
            ("carrier_parent_id", "value", 1, False),
            ("carrier_from_id", "value", 1, False),
            ("sidechain", "value", 1, False),
            ("agent_id", "value", 2, True),
            ("parent_call_id", "value", 2, True),
            ("family", "value", 2, True),
            ("context_edited", "value", 2, True),
            ("redactions", "rows", 3, True),
        ],
        "ViewSummary": [
            ("branches", "value", 1, False),
            ("lineage_fingerprint", "value", 1, False),
            ("leaf_id", "value", 1, False),
            ("entry_count", "value", 1, False),
            ("reasons", "tuple", 1, False),
            ("first_ts", "value", 1, False),
            ("last_ts", "value", 1, False),
        ],
        "EntriesView": [
            ("branches", "value", 1, False),
            ("lineage_fingerprint", "value", 1, False),
            ("entries", "records:NormalizedEntry", 1, False),
            ("reasons", "tuple", 1, False),
            ("replaces", "value", 2, True),
        ],
        "SessionEntries": [
            ("path", "value", 1, False),
            ("session_id", "value", 1, False),
            ("agent", "value", 1, False),
            ("source_hash", "value", 1, False),
            ("policy", "value", 1, False),
            ("views", "records:EntriesView", 1, False),
        ],
        "ShardView": [
            ("branches", "value", 1, False),
            ("lineage_fingerprint", "value", 1, False),
            ("entries", "records:NormalizedEntry", 1, False),
            ("token_counts", "tuple", 1, False),
            ("postings", "sorted_map", 1, False),
            ("reasons", "tuple", 1, False),
            ("replaces", "value", 2, True),
            ("dropped", "sorted", 2, True),
        ],
        "HotShard": [
            ("path", "value", 1, False),
            ("session_id", "value", 1, False),
            ("agent", "value", 1, False),
            ("cwd", "value", 1, False),
            ("source_hash", "value", 1, False),
            ("policy", "value", 1, False),
            ("views", "records:ShardView", 1, False),
        ],
        "ColdView": [
            ("branches", "value", 1, False),
            ("lineage_fingerprint", "value", 1, False),
            ("entry_count", "value", 1, False),
            ("first_ts", "value", 1, False),
            ("last_ts", "value", 1, False),
            ("files_touched", "tuple", 1, False),
            ("tool_histogram", "rows", 1, False),
            ("error_count", "value", 1, False),
            ("vocabulary", "value", 1, False),
            ("vocabulary_bytes", "value", 1, False),
            ("addresses", "rows", 1, False),
            ("reasons", "tuple", 1, False),
            ("term_stats", "value", 2, False),
        ],
        "ColdDigest": [
            ("path", "value", 1, False),
            ("session_id", "value", 1, False),
            ("agent", "value", 1, False),
            ("cwd", "value", 1, False),
            ("source_hash", "value", 1, False),
            ("policy", "value", 1, False),
            ("views", "records:ColdView", 1, False),
        ],
        "SessionState": [
            ("path", "value", 1, False),
            ("agent", "value", 1, False),
            ("session_id", "value", 1, False),
            ("cwd", "value", 1, False),
            ("parent_session", "value", 1, False),
            ("dev", "value", 1, False),
            ("inode", "value", 1, False),
            ("size", "value", 1, False),
            ("mtime_ns", "value", 1, False),
            ("ctime_ns", "value", 1, False),
            ("source_hash", "value", 1, False),
            ("tier", "value", 1, False),
            ("index_record", "value", 1, False),
            ("index_bytes", "value", 1, False),
            ("entries_record", "value", 1, False),
            ("entries_bytes", "value", 1, False),
            ("views", "records:ViewSummary", 1, False),
            ("sidechain", "value", 1, False),
            ("index_deltas", "tuple", 1, False),
            ("entries_deltas", "tuple", 1, False),
            ("unknown_records", "rows", 2, True),
            ("archive", "value", 3, True),
            ("title", "value", 4, True),
        ],
        "SessionChunk": [
            ("sessions", "records:SessionState", 1, False),
        ],
        "SkippedFile": [
            ("path", "value", 1, False),
            ("agent", "value", 1, False),
            ("reason", "value", 1, False),
        ],
        "Manifest": [
            ("generation", "value", 1, False),
            ("created_ns", "value", 1, False),
            ("policy", "value", 1, False),
            ("roots", "sorted_map", 1, False),
            ("hot_sessions", "value", 1, False),
            ("sessions", "records:SessionState", 1, False),
            ("skipped", "records:SkippedFile", 1, False),
            ("reasons", "tuple", 1, False),
            ("chunks", "tuple", 2, False),
            ("lexicon", "tuple", 2, False),
            ("sources", "record_map:SourceSpec", 3, True),
        ],
        "SourceEvent": [
            ("kind", "value", 1, False),
            ("path", "value", 1, False),
            ("agent", "value", 1, False),
            ("dev", "value", 1, False),
            ("inode", "value", 1, False),
            ("size", "value", 1, False),
            ("mtime_ns", "value", 1, False),
            ("start", "value", 1, False),
            ("end", "value", 1, False),
            ("observed_ns", "value", 1, False),
            ("position", "value", 1, False),
            ("extra", "value", 1, False),
        ],
        "Segment": [
            ("name", "value", 1, False),
            ("length", "value", 1, False),
            ("level", "value", 1, False),
        ],
        "Chain": [
            ("key", "value", 1, False),
            ("source", "value", 1, False),
            ("agent", "value", 1, False),
            ("length", "value", 1, False),
            ("hash", "value", 1, False),
            ("stamp", "tuple", 1, False),
            ("segments", "records:Segment", 1, False),
            ("meta", "value", 1, False),
            ("truncated", "bool", 1, False),
            ("updated_ns", "value", 1, False),
            ("retired", "tuple", 2, False),
        ],
        "Checkpoint": [
            ("stage", "value", 1, False),
            ("version", "value", 1, False),
            ("position", "value", 1, False),
            ("updated_ns", "value", 1, False),
        ],
    }
}


def test_every_record_type_has_a_strategy() -> None:
    assert set(STRATEGIES) == set(RECORD_TYPES)
    # every kind the codec writes is a registered record type
    assert set(codec.KINDS.values()) <= set(RECORD_TYPES)


def test_layouts_are_the_pinned_on_disk_contract() -> None:
    pinned = LAYOUTS[SCHEMA_VERSION]
    assert {cls.__name__: layout(cls) for cls in RECORD_TYPES} == pinned


def test_no_record_is_encoded_by_hand() -> None:
    # The schema generates every wire form: a hand-written to_wire/from_wire would bypass it.
    root = Path(store.__file__).parent
    written = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ("to_wire", "from_wire"):
                written.append(f"{path.name}:{node.lineno}")
    assert written == ["schema.py:" + str(n) for n in _schema_lines()]


def _schema_lines() -> list[int]:
    source = (Path(store.__file__).parent / "schema.py").read_text()
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name in ("to_wire", "from_wire")
    ]


@pytest.mark.parametrize("cls", RECORD_TYPES, ids=lambda c: c.__name__)
@UNTIMED
@given(data=st.data())
def test_every_record_type_round_trips_and_encodes_stably(cls: type[Wired], data: Any) -> None:
    record = data.draw(STRATEGIES[cls])
    raw = pack(record.to_wire())
    back = cls.from_wire(unpack(raw))
    assert back == record
    # Equal records, equal bytes: records are named by their content.
    assert pack(back.to_wire()) == raw
    if cls in codec.KINDS.values():
        assert decode(encode(record)) == record  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", RECORD_TYPES, ids=lambda c: c.__name__)
@UNTIMED
@given(data=st.data())
def test_records_older_builds_wrote_read_with_defaults(cls: type[Wired], data: Any) -> None:
    # A record written before a field existed ends before it: cut the wire at each revision
    # and the fields added later read as their defaults.
    record = data.draw(STRATEGIES[cls])
    fields = dataclasses.fields(record)  # type: ignore[arg-type]
    revisions = [since for _, _, since, _ in layout(cls)]
    full = unpack(pack(record.to_wire()))
    for revision in sorted(set(revisions))[:-1]:
        kept = sum(1 for since in revisions if since <= revision)
        later = {
            f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            for f, since in zip(fields, revisions, strict=True)
            if since > revision
        }
        assert cls.from_wire(full[:kept]) == dataclasses.replace(record, **later)  # type: ignore[type-var]


@pytest.mark.parametrize("cls", RECORD_TYPES, ids=lambda c: c.__name__)
@UNTIMED
@given(data=st.data())
def test_a_record_cut_before_its_first_revision_ends_is_refused(
    cls: type[Wired], data: Any
) -> None:
    required = sum(1 for _, _, since, _ in layout(cls) if since == 1)
    full = unpack(pack(data.draw(STRATEGIES[cls]).to_wire()))
    with pytest.raises(IndexError):
        cls.from_wire(full[: required - 1])


def test_unset_later_fields_keep_the_older_wire() -> None:
    # An entry without marks or redactions keeps its 27 fields; a set redaction writes the
    # marks' positions too, so every field stays at its place.
    plain = entry()
    assert len(plain.to_wire()) == 27
    redacted = dataclasses.replace(plain, redactions=(("aws", "fp"),))
    assert redacted.to_wire()[27:] == [None, None, None, None, [["aws", "fp"]]]
    assert NormalizedEntry.from_wire(redacted.to_wire()) == redacted


def test_the_schema_refuses_a_layout_that_would_misread_old_records() -> None:
    with pytest.raises(TypeError, match="needs a default"):

        @wired
        @dataclasses.dataclass(frozen=True)
        class Late(Wired):
            a: int
            b: int = dataclasses.field(metadata=wire(since=2))

    with pytest.raises(TypeError, match="revision order"):

        @wired
        @dataclasses.dataclass(frozen=True)
        class Backwards(Wired):
            a: int = dataclasses.field(default=0, metadata=wire(since=2))
            b: int = dataclasses.field(default=0, metadata=wire(TUPLE))

    with pytest.raises(TypeError, match="end the record"):

        @wired
        @dataclasses.dataclass(frozen=True)
        class Gap(Wired):
            a: int = dataclasses.field(default=0, metadata=wire(since=2, omit=True))
            b: int = dataclasses.field(default=0, metadata=wire(since=3))
