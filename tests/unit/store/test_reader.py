"""The read API: pinned, consistent generations that never write."""

from __future__ import annotations

import ast
import os
import threading
from pathlib import Path

import pytest

import store
from store.codec import encode
from store.errors import CorruptRecord, SnapshotMissing
from store.integrity import FIRST_LOADS
from store.reader import open_snapshot, read_current
from store.records import ColdDigest, HotShard, Manifest, SessionEntries
from store.writer import StoreWriter
from tests.unit.store.factories import cold_digest, hot_shard, manifest, session_entries, state


def _publish(w: StoreWriter, generation: int, text: str) -> tuple[str, str]:
    shard, _ = w.put(hot_shard(text=text))
    entries, _ = w.put(session_entries(text=text))
    cold, _ = w.put(cold_digest())
    w.publish(
        manifest(
            generation,
            (state("/s/a.jsonl", shard, entries), state("/s/b.jsonl", cold, entries, "cold")),
        )
    )
    return shard, entries


def _snapshot_of_tree(root: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_nothing_published(tmp_path: Path) -> None:
    assert read_current(tmp_path) is None
    assert read_current(tmp_path / "missing") is None
    with pytest.raises(SnapshotMissing, match="pipeline run --once") as info:
        open_snapshot(tmp_path)
    assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize(
    "content",
    [b"", b"manifest-000000000001.msgpack", b"manifest-1.msgpack\n", b"\xff\n", b"../x\n"],
)
def test_unreadable_current_is_corrupt(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "CURRENT").write_bytes(content)
    with pytest.raises(CorruptRecord, match="CURRENT"):
        read_current(tmp_path)


def test_current_naming_a_missing_manifest_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "CURRENT").write_bytes(b"manifest-000000000004.msgpack\n")
    with pytest.raises(CorruptRecord, match="missing manifest"):
        open_snapshot(tmp_path)


def test_manifest_whose_generation_disagrees_with_its_name(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    w.publish(manifest(1))
    w.layout.manifest_path(1).write_bytes(encode(manifest(9)))
    with pytest.raises(CorruptRecord, match="generation 9"):
        open_snapshot(tmp_path)


def test_snapshot_loads_records_and_sessions(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, entries = _publish(w, 1, "one")
    snap = open_snapshot(tmp_path)
    assert snap.generation == 1 and isinstance(snap.manifest, Manifest)
    a = snap.session("/s/a.jsonl")
    b = snap.session("/s/b.jsonl")
    assert a is not None and b is not None and snap.session("/s/zzz.jsonl") is None
    assert snap.load(a.index_record, HotShard) == hot_shard(text="one")
    assert snap.load(a.entries_record, SessionEntries, verify=True) == session_entries(text="one")
    assert snap.load(b.index_record, ColdDigest) == cold_digest()
    with pytest.raises(CorruptRecord, match="expected a digest record, found shard"):
        snap.load(shard, ColdDigest)


def test_reader_sees_its_generation_while_the_next_is_published(tmp_path: Path) -> None:
    # Given a reader holding generation 1
    w = StoreWriter(tmp_path)
    old_shard, old_entries = _publish(w, 1, "one")
    snap = open_snapshot(tmp_path)
    assert snap.up_to_date()

    # When the writer publishes generation 2 with new records and collects garbage
    new_shard, _ = _publish(w, 2, "two")
    w.collect_garbage(keep_generations=1)  # everything of generation 1 is inside the grace

    # Then the reader still reads generation 1 completely, and knows it is behind
    assert snap.generation == 1 and not snap.up_to_date()
    assert snap.load(old_shard, HotShard) == hot_shard(text="one")
    assert snap.load(old_entries, SessionEntries) == session_entries(text="one")
    fresh = open_snapshot(tmp_path)
    assert fresh.generation == 2
    assert fresh.load(new_shard, HotShard) == hot_shard(text="two")


def test_missing_record_is_corrupt_with_a_reason(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, _ = _publish(w, 1, "one")
    snap = open_snapshot(tmp_path)
    w.wipe()
    with pytest.raises(CorruptRecord, match="generation 1 is missing") as info:
        snap.load(shard, HotShard)
    assert info.value.path.endswith(shard)


def test_bad_names_and_tampered_records(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, _ = _publish(w, 1, "one")
    snap = open_snapshot(tmp_path)
    with pytest.raises(CorruptRecord, match="not a record name"):
        snap.load("../../CURRENT", HotShard)
    # Another valid shard's bytes under this name would decode: the first load of a record in
    # a process checks its content address and refuses them (issue 22, item 9)
    FIRST_LOADS.forget()
    good = w.layout.record_path(shard).read_bytes()
    w.layout.record_path(shard).write_bytes(encode(hot_shard(text="forged")))
    with pytest.raises(CorruptRecord, match="does not match its hash"):
        snap.load(shard, HotShard)
    # once a load found the record intact, later loads trust it; verify checks every time
    w.layout.record_path(shard).write_bytes(good)
    assert snap.load(shard, HotShard) == hot_shard(text="one")
    w.layout.record_path(shard).write_bytes(encode(hot_shard(text="forged")))
    assert snap.load(shard, HotShard) == hot_shard(text="forged")
    with pytest.raises(CorruptRecord, match="does not match its hash"):
        snap.load(shard, HotShard, verify=True)


def test_reading_writes_nothing(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    _publish(w, 1, "one")
    before = _snapshot_of_tree(tmp_path)
    snap = open_snapshot(tmp_path)
    for s in snap.manifest.sessions:
        if s.tier == "hot":
            snap.load(s.index_record, HotShard, verify=True)
        else:
            snap.load(s.index_record, ColdDigest, verify=True)
        snap.load(s.entries_record, SessionEntries)
    snap.up_to_date()
    read_current(tmp_path)
    assert _snapshot_of_tree(tmp_path) == before


READ_SIDE = ("__init__", "reader", "codec", "layout", "errors", "records", "tokens")
WRITE_SIDE = {"store.writer", "store.atomic", "store.journal", "store.checkpoints"}


@pytest.mark.parametrize("module", READ_SIDE)
def test_read_side_never_imports_the_write_side(module: str) -> None:
    source = Path(store.__file__).with_name(f"{module}.py")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported |= {f"{node.module}.{a.name}" for a in node.names}
    assert not imported & WRITE_SIDE
    assert not any(n.split(".")[0] in {"pipeline", "stages", "query"} for n in imported)


def test_public_surface() -> None:
    assert sorted(store.__all__) == sorted(set(store.__all__))
    for name in store.__all__:
        assert hasattr(store, name), name
    assert "StoreWriter" not in store.__all__
    assert os.path.dirname(store.__file__).endswith("store")


def test_readers_racing_a_writer_only_see_complete_generations(tmp_path: Path) -> None:
    # Given a writer publishing generations 2..40 in a thread
    w = StoreWriter(tmp_path)
    _publish(w, 1, "gen 1")
    errors: list[BaseException] = []

    def publish_all() -> None:
        try:
            for g in range(2, 41):
                _publish(w, g, f"gen {g}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    t = threading.Thread(target=publish_all)
    t.start()
    # When a reader keeps opening the current generation until the writer is done
    seen: list[int] = []

    def read_one() -> None:
        snap = open_snapshot(tmp_path)
        a = snap.session("/s/a.jsonl")
        assert a is not None
        shard = snap.load(a.index_record, HotShard, verify=True)
        # Then each snapshot is whole: its records are the ones of its own generation
        assert shard.views[0].entries[0].text == f"gen {snap.generation}"
        seen.append(snap.generation)

    try:
        while t.is_alive():
            read_one()
    finally:
        t.join()
    read_one()
    assert not errors
    assert seen == sorted(seen) and seen[-1] == 40
