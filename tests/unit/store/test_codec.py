"""The codec: round trips, determinism, compression and every way a file can be wrong."""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

import blake3
import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import codec
from store.codec import COMPRESS_THRESHOLD, MAGIC, decode, encode, kind_of
from store.errors import CorruptRecord, SchemaVersionError
from store.records import (
    SCHEMA_VERSION,
    ColdDigest,
    EntriesView,
    HotShard,
    Manifest,
    NormalizedEntry,
    SessionEntries,
    SessionState,
    SkippedFile,
    SourceEvent,
    ViewSummary,
)
from tests.unit.store.factories import (
    HASH,
    cold_digest,
    event,
    hot_shard,
    manifest,
    session_entries,
    state,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(max_size=40)  # Hypothesis text covers astral planes, NUL and combining marks
OPT_TEXT = st.none() | TEXT
OPT_INT = st.none() | INT64
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)

ENTRIES = st.builds(
    NormalizedEntry,
    index=st.integers(0, 2**31),
    entry_id=OPT_TEXT,
    parent_id=OPT_TEXT,
    type=TEXT,
    role=OPT_TEXT,
    tool=OPT_TEXT,
    text=st.text(max_size=200),
    timestamp=OPT_INT,
    is_error=st.booleans(),
    truncated=st.booleans(),
    line=INT64,
    offset=INT64,
    agent=st.sampled_from(["pi", "claude", "codex"]),
    parent_entry_id=OPT_TEXT,
    operation_address=OPT_TEXT,
    ref=OPT_TEXT,
    provider=OPT_TEXT,
    action=OPT_TEXT,
    outcome=OPT_TEXT,
    files_touched=st.lists(TEXT, max_size=3).map(tuple),
    operation=st.none() | st.dictionaries(TEXT, JSON, max_size=3),
    branch_fact=st.none() | st.dictionaries(TEXT, JSON, max_size=3),
    fact_address=OPT_TEXT,
    carrier_entry_id=OPT_TEXT,
    carrier_parent_id=OPT_TEXT,
    carrier_from_id=OPT_TEXT,
    sidechain=st.booleans(),
)

SUMMARIES = st.builds(
    ViewSummary,
    branches=st.sampled_from(["active", "all"]),
    lineage_fingerprint=TEXT,
    leaf_id=OPT_TEXT,
    entry_count=st.integers(0, 2**40),
    reasons=st.lists(TEXT, max_size=3).map(tuple),
    first_ts=OPT_INT,
    last_ts=OPT_INT,
)

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
    tier=st.sampled_from(["hot", "cold"]),
    index_record=TEXT,
    index_bytes=st.integers(0, 2**40),
    entries_record=TEXT,
    entries_bytes=st.integers(0, 2**40),
    views=st.lists(SUMMARIES, min_size=1, max_size=2).map(tuple),
    sidechain=st.booleans(),
    index_deltas=st.lists(TEXT, max_size=2).map(tuple),
    entries_deltas=st.lists(TEXT, max_size=2).map(tuple),
)

MANIFESTS = st.builds(
    Manifest,
    generation=st.integers(1, 10**12 - 1),
    created_ns=INT64,
    policy=TEXT,
    roots=st.dictionaries(TEXT, TEXT, max_size=3),
    hot_sessions=st.integers(0, 10**6),
    sessions=st.lists(STATES, max_size=3).map(tuple),
    skipped=st.lists(st.builds(SkippedFile, TEXT, TEXT, TEXT), max_size=2).map(tuple),
    reasons=st.lists(TEXT, max_size=2).map(tuple),
)


def _envelope(data: bytes) -> list[Any]:
    out: list[Any] = msgpack.unpackb(data, raw=False, strict_map_key=False)
    return out


def _pack(obj: object) -> bytes:
    out: bytes = msgpack.packb(obj, use_bin_type=True)
    return out


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        (session_entries(), "entries"),
        (hot_shard(), "shard"),
        (cold_digest(), "digest"),
        (manifest(7, (state("/s/a.jsonl", "x.shard", "y.entries"),)), "manifest"),
        (event(), "event"),
    ],
)
def test_every_kind_round_trips(record: codec.Record, kind: str) -> None:
    data = encode(record)
    assert kind_of(record) == kind
    assert _envelope(data)[:3] == [MAGIC, SCHEMA_VERSION, kind]
    assert decode(data) == record
    assert decode(data, expect=type(record)) == record


@settings(max_examples=60)
@given(st.lists(ENTRIES, max_size=4))
def test_generated_entries_round_trip_and_encode_stably(entries: list[NormalizedEntry]) -> None:
    record = SessionEntries(
        "/s/ü.jsonl", "sid", "pi", HASH, "pol", (EntriesView("active", HASH, tuple(entries), ()),)
    )
    data = encode(record)
    back = decode(data, expect=SessionEntries)
    assert back == record
    # The decoded record encodes to the very same bytes: names by content stay stable.
    assert encode(back) == data


@settings(max_examples=60)
@given(MANIFESTS)
def test_generated_manifests_round_trip_and_encode_stably(m: Manifest) -> None:
    data = encode(m)
    back = decode(data, expect=Manifest)
    assert back == m
    assert encode(back) == data


def test_encoding_is_pinned() -> None:
    # A change here changes every record name: bump SCHEMA_VERSION deliberately, then update.
    data = encode(hot_shard())
    assert blake3.blake3(data).hexdigest() == (
        "0c7a39abfc87d5cf0409d7b126bac66b84a052e532f548b5531721010309dec8"
    )
    assert _envelope(data)[3] == hot_shard().to_wire()


def test_map_order_does_not_change_the_bytes() -> None:
    # to_wire sorts postings and roots, so equal records built in another order are equal bytes.
    a = hot_shard()
    view = a.views[0]
    reordered = dict(reversed(list(view.postings.items())))
    b = HotShard(
        a.path, a.session_id, a.agent, a.cwd, a.source_hash, a.policy,
        (type(view)(view.branches, view.lineage_fingerprint, view.entries, view.token_counts,
                    reordered, view.reasons),),
    )  # fmt: skip
    assert list(reordered) != list(view.postings)
    assert encode(a) == encode(b)
    m1 = manifest(1)
    m2 = Manifest(1, m1.created_ns, m1.policy, dict(reversed(list(m1.roots.items()))),
                  m1.hot_sessions, m1.sessions, m1.skipped, m1.reasons)  # fmt: skip
    assert encode(m1) == encode(m2)


def test_kind_of_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        kind_of(SkippedFile("/x", "pi", "r"))  # type: ignore[arg-type]
    assert kind_of(ColdDigest) == "digest"


# -- compression ------------------------------------------------------------------------------


def test_large_entries_and_shards_are_compressed_and_round_trip() -> None:
    big = session_entries(n=400, text="the quick brown fox jumps over the lazy dog " * 10)
    assert len(_pack(big.to_wire())) > COMPRESS_THRESHOLD
    data = encode(big)
    env = _envelope(data)
    assert len(env) == 5 and env[4] == "zstd" and isinstance(env[3], bytes)
    assert len(data) < len(_pack(big.to_wire())) / 3
    assert decode(data, expect=SessionEntries) == big
    assert encode(decode(data)) == data


def test_zlib_envelopes_older_builds_wrote_still_decode() -> None:
    big = session_entries(n=400, text="the quick brown fox jumps over the lazy dog " * 10)
    packed = _pack(big.to_wire())
    for level in (1, 6):
        old = _pack([MAGIC, SCHEMA_VERSION, "entries", zlib.compress(packed, level), "zlib"])
        assert decode(old, expect=SessionEntries) == big
    digest = cold_digest()
    old = _pack([MAGIC, SCHEMA_VERSION, "digest", zlib.compress(_pack(digest.to_wire())), "zlib"])
    assert decode(old, expect=ColdDigest) == digest


def test_encoding_an_equal_record_again_gives_the_same_bytes() -> None:
    # encode() keeps the last digest's bytes; an equal but distinct record must not depend on it.
    def digest(word: bytes) -> ColdDigest:
        base = cold_digest()
        view = base.views[0]
        vocab = b"\n".join(word + b"%06d" % i for i in range(5_000))
        return ColdDigest(
            base.path, "sid", "pi", "/", HASH, "pol",
            (type(view)(view.branches, view.lineage_fingerprint, 1, None, None, (), (), 0, vocab,
                        len(vocab), (), ()),),
        )  # fmt: skip

    a, b, c = digest(b"alpha"), digest(b"alpha"), digest(b"gamma")
    first = encode(a)
    assert len(_envelope(first)) == 5
    assert encode(a) is first
    assert encode(b) == first and encode(c) != first
    assert decode(encode(c)) == c
    assert encode(a) == first
    big = session_entries(n=400, text="alpha beta gamma " * 30)
    assert encode(big) == encode(big)


def test_small_payloads_stay_plain_and_big_digests_compress() -> None:
    assert len(_envelope(encode(session_entries()))) == 4
    assert len(_envelope(encode(cold_digest()))) == 4
    huge_digest = cold_digest()
    view = huge_digest.views[0]
    vocab = b"\n".join(b"term%06d" % i for i in range(20_000))
    big = ColdDigest(
        huge_digest.path, "sid", "pi", "/", HASH, "pol",
        (type(view)(view.branches, view.lineage_fingerprint, 1, None, None, (), (), 0, vocab,
                    len(vocab), (), ()),),
    )  # fmt: skip
    assert len(_envelope(encode(big))) == 5
    assert decode(encode(big)) == big


def test_bad_compressed_payload_is_corrupt() -> None:
    bad = _pack([MAGIC, SCHEMA_VERSION, "entries", b"not zlib", "zlib"])
    with pytest.raises(CorruptRecord, match="compressed"):
        decode(bad)
    good = encode(session_entries(n=400, text="the quick brown fox " * 20))
    zbytes = _envelope(good)[3]
    for cut in (0, 4, len(zbytes) // 2, len(zbytes) - 1):
        bad = _pack([MAGIC, SCHEMA_VERSION, "entries", zbytes[:cut], "zstd"])
        with pytest.raises(CorruptRecord, match="compressed"):
            decode(bad)
    flipped = zbytes[:20] + bytes([zbytes[20] ^ 0xFF]) + zbytes[21:]
    with contextlib.suppress(CorruptRecord):  # zstd may or may not notice a flipped bit
        decode(_pack([MAGIC, SCHEMA_VERSION, "entries", flipped, "zstd"]))
    not_bytes = _pack([MAGIC, SCHEMA_VERSION, "entries", [1, 2], "zstd"])
    with pytest.raises(CorruptRecord, match="compression"):
        decode(not_bytes)
    unknown = _pack([MAGIC, SCHEMA_VERSION, "entries", zlib.compress(b"x"), "lz4"])
    with pytest.raises(CorruptRecord, match="compression"):
        decode(unknown)


# -- bad input --------------------------------------------------------------------------------


def test_truncated_records_are_corrupt_at_every_length() -> None:
    data = encode(hot_shard())
    for cut in range(len(data)):
        with pytest.raises(CorruptRecord):
            decode(data[:cut], path="/idx/x.shard")


def test_trailing_bytes_are_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="not msgpack"):
        decode(encode(event()) + b"\x00")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not msgpack"),
        (b"\xc1", "not msgpack"),
        (_pack({"a": 1}), "envelope"),
        (_pack([MAGIC, SCHEMA_VERSION, "event"]), "envelope"),
        (_pack([b"XDS", SCHEMA_VERSION, "event", event().to_wire()]), "magic"),
        (_pack(["SDX", SCHEMA_VERSION, "event", event().to_wire()]), "magic"),
        (_pack([MAGIC, SCHEMA_VERSION, "blob", []]), "unknown record kind"),
        (_pack([MAGIC, SCHEMA_VERSION, 3, []]), "unknown record kind"),
        (_pack([MAGIC, SCHEMA_VERSION, "event", {"kind": "append"}]), "not a list"),
        (_pack([MAGIC, SCHEMA_VERSION, "event", ["append"]]), "wrong shape"),
        (_pack([MAGIC, SCHEMA_VERSION, "manifest", [1, 2, "p", 5, 0, [], [], []]]), "wrong shape"),
    ],
)
def test_malformed_envelopes_are_corrupt(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptRecord, match=reason) as info:
        decode(data, path="/idx/rec")
    assert info.value.path == "/idx/rec"
    assert "pipeline rebuild" in str(info.value)


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION + 1, "1", None])
def test_other_schema_versions_are_refused(version: object) -> None:
    data = _pack([MAGIC, version, "event", event().to_wire()])
    with pytest.raises(SchemaVersionError, match="`pipeline run` derives the index again"):
        decode(data, path="/idx/e")


def test_expecting_another_kind_is_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="expected a shard record, found digest"):
        decode(encode(cold_digest()), expect=HotShard)


@settings(max_examples=200)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise_anything_but_store_errors(data: bytes) -> None:
    with contextlib.suppress(CorruptRecord, SchemaVersionError):
        decode(data)


@settings(max_examples=200)
@given(st.sampled_from(sorted(codec.KINDS)), st.lists(JSON, max_size=14))
def test_arbitrary_payloads_never_raise_anything_but_corrupt(kind: str, payload: list[Any]) -> None:
    with contextlib.suppress(CorruptRecord):
        decode(_pack([MAGIC, SCHEMA_VERSION, kind, payload]))


def test_state_round_trips_inside_a_manifest() -> None:
    s: SessionState = state("/s/a.jsonl", "a.shard", "b.entries")
    m = manifest(3, (s,))
    back = decode(encode(m), expect=Manifest)
    assert back.sessions == (s,)
    assert isinstance(back.sessions[0].views[0], ViewSummary)
    assert isinstance(decode(encode(event()), expect=SourceEvent).extra, dict)


@settings(max_examples=200)
@given(st.sampled_from(["zstd", "zlib"]), st.binary(max_size=64))
def test_arbitrary_compressed_bytes_are_corrupt(name: str, zbytes: bytes) -> None:
    # A frame header may claim any content size; a bad one must still end as CorruptRecord.
    zstd_magic = b"\x28\xb5\x2f\xfd"
    for payload in (zbytes, zstd_magic + zbytes):
        with contextlib.suppress(CorruptRecord):
            decode(_pack([MAGIC, SCHEMA_VERSION, "entries", payload, name]))
