"""StoreWriter: content-addressed puts, ordered publishing, the lock, GC and wipe."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from store.atomic import atomic_write
from store.errors import GenerationConflict, NotAnIndex, StoreLocked
from store.layout import IndexLayout
from store.reader import open_snapshot, read_current
from store.records import HotShard, Manifest, SessionChunk, SessionEntries, SessionState
from store.writer import GcReport, StoreWriter
from tests.unit.store.factories import (
    cold_digest,
    hot_shard,
    manifest,
    session_entries,
    state,
)

NOW = 2_000_000_000.0  # a fixed "now" for GC; files are aged relative to it
OLD = NOW - 3600


def _age(path: Path, when: float = OLD) -> None:
    os.utime(path, (when, when))


def _publish_session(w: StoreWriter, generation: int, text: str) -> tuple[str, str]:
    """Publish a generation holding one session whose records depend on *text*."""
    shard, _ = w.put(hot_shard(text=text))
    entries, _ = w.put(session_entries(text=text))
    w.publish(manifest(generation, (state("/s/a.jsonl", shard, entries),)))
    return shard, entries


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


# -- put --------------------------------------------------------------------------------------


def test_put_names_by_content_and_writes_once(tmp_path: Path, umask: int) -> None:
    w = StoreWriter(tmp_path / "idx")
    name, size = w.put(hot_shard())
    path = w.layout.record_path(name)
    assert name.endswith(".shard") and path.stat().st_size == size
    assert w.bytes_written == size
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (tmp_path / "idx", w.layout.records, path.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700

    # Putting an equal record again (even from another writer) writes nothing
    again = StoreWriter(tmp_path / "idx")
    assert again.put(hot_shard()) == (name, size)
    assert again.bytes_written == 0
    assert w.put(cold_digest())[0].endswith(".digest")
    assert w.put(session_entries())[0].endswith(".entries")


def test_put_refreshes_mtime_of_an_existing_record(tmp_path: Path) -> None:
    # A record about to be republished must not look old to a grace-period GC.
    w = StoreWriter(tmp_path)
    name, _ = w.put(hot_shard())
    path = w.layout.record_path(name)
    an_hour_ago = time.time() - 3600
    _age(path, an_hour_ago)
    w.put(hot_shard())
    assert path.stat().st_mtime > an_hour_ago + 60


def test_put_repairs_a_damaged_record(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    name, size = w.put(hot_shard())
    w.layout.record_path(name).write_bytes(b"torn")
    assert w.put(hot_shard()) == (name, size)
    assert w.layout.record_path(name).stat().st_size == size


def test_put_refuses_manifests(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        StoreWriter(tmp_path).put(manifest(1))  # type: ignore[arg-type]


# -- publish ----------------------------------------------------------------------------------


def test_publish_writes_manifest_then_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = StoreWriter(tmp_path)
    shard, entries = w.put(hot_shard()), w.put(session_entries())
    order: list[str] = []
    real = atomic_write

    def spy(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        order.append(path.name)
        real(path, data, sync_dir=sync_dir)

    monkeypatch.setattr("store.writer.atomic_write", spy)
    before = w.bytes_written
    w.publish(manifest(1, (state("/s/a.jsonl", shard[0], entries[0]),)))
    # the session rows go to a chunk record first, then the manifest, then CURRENT
    assert [n.rsplit(".", 1)[-1] for n in order[:-2]] == ["chunk"]
    assert order[-2:] == ["manifest-000000000001.msgpack", "CURRENT"]
    assert (tmp_path / "CURRENT").read_bytes() == b"manifest-000000000001.msgpack\n"
    chunk = w.layout.record_path(order[0])
    written = sum(
        p.stat().st_size for p in (tmp_path / "CURRENT", w.layout.manifest_path(1), chunk)
    )
    assert w.bytes_written - before == written
    assert w.current_generation() == 1 and read_current(tmp_path) == 1


def test_a_crash_before_current_moves_keeps_the_old_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = StoreWriter(tmp_path)
    _publish_session(w, 1, "one")
    real = atomic_write

    def crash_on_current(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        if path.name == "CURRENT":
            raise OSError(5, "EIO")
        real(path, data, sync_dir=sync_dir)

    monkeypatch.setattr("store.writer.atomic_write", crash_on_current)
    with pytest.raises(OSError):
        _publish_session(w, 2, "two")
    monkeypatch.undo()
    assert open_snapshot(tmp_path).generation == 1
    # the half-published generation 2 is simply published again
    _publish_session(StoreWriter(tmp_path), 2, "two")
    assert open_snapshot(tmp_path).generation == 2


@pytest.mark.parametrize(("current", "generation"), [(0, 2), (0, 0), (1, 1), (1, 3)])
def test_publish_requires_the_next_generation(
    tmp_path: Path, current: int, generation: int
) -> None:
    w = StoreWriter(tmp_path)
    for g in range(1, current + 1):
        w.publish(manifest(g))
    with pytest.raises(GenerationConflict, match=f"current is {current}"):
        w.publish(manifest(generation) if generation else Manifest(0, 0, "p", {}, 0, ()))
    assert w.current_generation() == current


def test_publish_refuses_missing_records(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, _ = w.put(hot_shard())
    ghost = "f" * 64 + ".entries"
    with pytest.raises(GenerationConflict, match="1 named record"):
        w.publish(manifest(1, (state("/s/a.jsonl", shard, ghost),)))
    with pytest.raises(GenerationConflict, match="missing"):
        w.publish(manifest(1, (state("/s/a.jsonl", shard, "../../etc/passwd"),)))
    assert read_current(tmp_path) is None
    assert not w.layout.manifests.exists() or not any(w.layout.manifests.iterdir())


def test_publish_notices_records_deleted_behind_its_back(tmp_path: Path) -> None:
    # Names are only trusted when the current generation references them (GC keeps those).
    w = StoreWriter(tmp_path)
    shard, entries = _publish_session(w, 1, "one")
    w.publish(manifest(2))
    w.layout.record_path(shard).unlink()
    with pytest.raises(GenerationConflict, match="missing"):
        w.publish(manifest(3, (state("/s/a.jsonl", shard, entries),)))


def test_publish_after_another_writer_published(tmp_path: Path) -> None:
    a, b = StoreWriter(tmp_path), StoreWriter(tmp_path)
    shard, entries = _publish_session(a, 1, "one")
    b.publish(manifest(2, (state("/s/a.jsonl", shard, entries),)))
    with pytest.raises(GenerationConflict):
        a.publish(manifest(2))
    a.publish(manifest(3, (state("/s/a.jsonl", shard, entries),)))
    assert open_snapshot(tmp_path).generation == 3


def test_a_no_op_run_writes_nothing(tmp_path: Path) -> None:
    # Given a published index
    first = StoreWriter(tmp_path)
    _publish_session(first, 1, "same")
    # When a later run puts the same records and does not need a new generation
    second = StoreWriter(tmp_path)
    second.put(hot_shard(text="same"))
    second.put(session_entries(text="same"))
    # Then it wrote no bytes
    assert second.bytes_written == 0


# -- lock -------------------------------------------------------------------------------------


def test_second_writer_gets_store_locked(tmp_path: Path) -> None:
    a, b = StoreWriter(tmp_path), StoreWriter(tmp_path)
    with a.lock():
        with pytest.raises(StoreLocked, match="locked by another writer"), b.lock():
            pass
        with pytest.raises(StoreLocked):
            b.publish(manifest(1))
        with pytest.raises(StoreLocked):
            b.collect_garbage()
        a.publish(manifest(1))  # the holder may publish; the lock is re-entrant
    with b.lock():
        b.publish(manifest(2))
    assert stat.S_IMODE(w_lock(tmp_path).stat().st_mode) == 0o600


def w_lock(root: Path) -> Path:
    return IndexLayout(root).lock


def test_lock_held_by_another_open_file_description(tmp_path: Path) -> None:
    # flock belongs to the open file description: this is what another process holds.
    StoreWriter(tmp_path).publish(manifest(1))
    fd = os.open(w_lock(tmp_path), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreLocked):
            StoreWriter(tmp_path).publish(manifest(2))
    finally:
        os.close(fd)
    StoreWriter(tmp_path).publish(manifest(2))


def test_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    a = StoreWriter(tmp_path)
    with pytest.raises(RuntimeError), a.lock():
        raise RuntimeError("stage failed")
    with StoreWriter(tmp_path).lock():
        pass


# -- garbage collection -----------------------------------------------------------------------


def _five_generations(w: StoreWriter) -> list[tuple[str, str]]:
    names = [_publish_session(w, g, f"text {g}") for g in range(1, 6)]
    for path in w.layout.root.rglob("*"):
        if path.is_file():
            _age(path)
    return names


def test_gc_keeps_newest_generations_and_their_records(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    names = _five_generations(w)
    report = w.collect_garbage(keep_generations=3, grace_seconds=600, now=NOW)
    assert report.kept_generations == (3, 4, 5)
    # generations 1 and 2 each leave a shard, an entries record and a session chunk
    assert (report.manifests_deleted, report.records_deleted) == (2, 6)
    assert report.bytes_freed == report.manifest_bytes + report.record_bytes > 0
    for g, (shard, entries) in enumerate(names, start=1):
        assert w.layout.manifest_path(g).exists() == (g >= 3)
        assert w.layout.record_path(shard).exists() == (g >= 3)
        assert w.layout.record_path(entries).exists() == (g >= 3)
    # running again finds nothing more
    again = w.collect_garbage(keep_generations=3, grace_seconds=600, now=NOW)
    assert again == GcReport((3, 4, 5), 0, 0, 0, 0, 0, 0)


def test_gc_never_deletes_current_or_shared_records(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    names = _five_generations(w)
    # generation 6 reuses generation 1's records
    w.publish(manifest(6, (state("/s/a.jsonl", *names[0]),)))
    for path in w.layout.manifests.iterdir():
        _age(path)
    report = w.collect_garbage(keep_generations=1, grace_seconds=0, now=NOW)
    assert report.kept_generations == (6,)
    assert sorted(p.name for p in w.layout.manifests.iterdir()) == ["manifest-000000000006.msgpack"]
    assert all(w.layout.record_path(n).exists() for n in names[0])
    assert not any(w.layout.record_path(n).exists() for pair in names[1:] for n in pair)
    snap = open_snapshot(tmp_path)
    shard = snap.manifest.sessions[0].index_record
    assert snap.load(shard, HotShard) == hot_shard(text="text 1")


def test_gc_keeps_delta_records_of_kept_generations(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, entries = w.put(hot_shard()), w.put(session_entries())
    d_shard, d_entries = w.put(hot_shard(text="appended")), w.put(session_entries(text="app"))
    base = state("/s/a.jsonl", shard[0], entries[0])
    with_deltas = dataclasses.replace(
        base, index_deltas=(d_shard[0],), entries_deltas=(d_entries[0],)
    )
    w.publish(manifest(1, (with_deltas,)))
    for path in w.layout.records.rglob("*"):
        _age(path)
    assert w.collect_garbage(keep_generations=1, grace_seconds=0, now=NOW).records_deleted == 0
    w.publish(manifest(2))
    w.collect_garbage(keep_generations=1, grace_seconds=0, now=NOW)
    assert _records(w) == set()


def test_gc_spares_everything_inside_the_grace_period(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    _five_generations(w)
    young = w.put(hot_shard(text="not yet published"))[0]
    _age(w.layout.record_path(young), NOW - 10)
    for g in (1, 2):  # generations a reader may still have just opened
        _age(w.layout.manifest_path(g), NOW - 10)
    report = w.collect_garbage(keep_generations=1, grace_seconds=600, now=NOW)
    assert report.kept_generations == (5,)
    assert report.manifests_deleted == 2  # 3 and 4 are old; 1 and 2 are young
    assert w.layout.manifest_path(1).exists() and w.layout.manifest_path(2).exists()
    # generation 1 and 2's records survive because their manifests do; 3 and 4's go
    # (a shard, an entries record and a session chunk each)
    assert report.records_deleted == 6
    snap1_records = {n for n in _records(w) if n != young}
    assert len(snap1_records) == 9  # generations 1, 2 and 5: three records each
    assert young in _records(w)


def test_gc_reads_each_chunk_once_however_many_young_generations_list_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import store.writer as writer_module

    w = StoreWriter(tmp_path)
    first = _publish_session(w, 1, "text 1")
    for g in range(2, 12):  # young generations all listing the same session chunk
        w.publish(manifest(g, (state("/s/a.jsonl", *first),)))
    chunks: list[str] = []
    real = writer_module.decode

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("expect") is SessionChunk:
            chunks.append(kwargs.get("path", "?"))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(writer_module, "decode", counting)
    w.collect_garbage(keep_generations=1, grace_seconds=600, now=NOW)
    assert chunks == []  # the writer that published them knows their rows already
    w = StoreWriter(tmp_path)  # as a new process would
    report = w.collect_garbage(keep_generations=1, grace_seconds=600, now=NOW)
    assert report.records_deleted == 0 and len(chunks) == len(set(chunks)) == 1
    w.collect_garbage(keep_generations=1, grace_seconds=600, now=NOW)
    assert len(chunks) == 1  # and not again at the next collection
    # once no kept generation lists it, it is forgotten (and its records may go)
    w.publish(manifest(12))
    for path in w.layout.root.rglob("*"):
        if path.is_file():
            _age(path)
    w.collect_garbage(keep_generations=1, grace_seconds=600, now=NOW)
    assert _records(w) == set() and w._records_by_chunk == {}


def _records(w: StoreWriter) -> set[str]:
    return {p.name for p in w.layout.records.rglob("*") if p.is_file()}


def test_gc_with_real_clock_keeps_fresh_files(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    for g in range(1, 6):
        _publish_session(w, g, f"text {g}")
    report = w.collect_garbage(keep_generations=1)
    assert report.manifests_deleted == report.records_deleted == 0
    assert len(list(w.layout.manifests.iterdir())) == 5


def test_gc_removes_stale_temps_and_orphan_manifests(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    shard, _ = _publish_session(w, 1, "one")
    fan_out = w.layout.record_path(shard).parent
    stale = fan_out / f".{shard}.abc.tmp"
    stale.write_bytes(b"half")
    _age(stale)
    fresh = w.layout.manifests / ".manifest-000000000002.msgpack.xyz.tmp"
    fresh.write_bytes(b"being written")
    _age(fresh, NOW - 5)
    orphan = w.layout.manifest_path(2)  # a publish that crashed before CURRENT moved
    orphan.write_bytes(b"partial")
    _age(orphan)
    stranger = w.layout.records / "README"  # not ours: never touched
    stranger.write_bytes(b"x")
    _age(stranger)

    report = w.collect_garbage(keep_generations=3, grace_seconds=60, now=NOW)

    assert (report.temps_deleted, report.temp_bytes) == (1, 4)
    assert report.manifests_deleted == 1 and report.kept_generations == (1,)
    assert not stale.exists() and not orphan.exists()
    assert fresh.exists() and stranger.exists()
    assert open_snapshot(tmp_path).generation == 1


def test_gc_refuses_bad_arguments_and_handles_an_empty_index(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path / "idx")
    with pytest.raises(ValueError):
        w.collect_garbage(keep_generations=0)
    assert w.collect_garbage(now=NOW) == GcReport((), 0, 0, 0, 0, 0, 0)


# -- wipe -------------------------------------------------------------------------------------


def test_wipe_deletes_derived_files_only(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    _publish_session(w, 1, "one")
    (w.layout.journal).mkdir()
    (w.layout.journal / "segment-000000000001.msgpack").write_bytes(b"e")
    (tmp_path / "query.sock").write_bytes(b"")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"k")
    w.layout.records.rename(tmp_path / "records-real")
    (tmp_path / "records").symlink_to(outside)

    w.wipe()

    assert sorted(os.listdir(tmp_path)) == ["lock", "query.sock", "records-real"]
    assert (outside / "keep").exists()  # a symlinked folder is unlinked, never followed
    assert read_current(tmp_path) is None
    # and the index is usable again from generation 1
    _publish_session(w, 1, "one")
    assert open_snapshot(tmp_path).generation == 1


def test_wipe_refuses_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_bytes(b"precious")
    with pytest.raises(NotAnIndex, match="refusing"):
        StoreWriter(tmp_path).wipe()
    assert os.listdir(tmp_path) == ["thesis.tex"]


def test_wipe_of_missing_empty_or_lock_only_folders(tmp_path: Path) -> None:
    StoreWriter(tmp_path / "missing").wipe()
    assert not (tmp_path / "missing").exists()
    StoreWriter(tmp_path).wipe()
    assert os.listdir(tmp_path) == ["lock"]
    StoreWriter(tmp_path).wipe()


def test_wipe_accepts_a_folder_holding_only_the_query_servers_socket(tmp_path: Path) -> None:
    # Given `query serve` started before anything was indexed
    (tmp_path / "serve").mkdir()
    (tmp_path / "serve" / "query.sock").write_bytes(b"")
    # Then a rebuild may still wipe (and keeps the server's folder)
    StoreWriter(tmp_path).wipe()
    assert sorted(os.listdir(tmp_path)) == ["lock", "serve"]


def test_wipe_waits_for_no_one(tmp_path: Path) -> None:
    a = StoreWriter(tmp_path)
    _publish_session(a, 1, "one")
    with a.lock(), pytest.raises(StoreLocked):
        StoreWriter(tmp_path).wipe()
    assert read_current(tmp_path) == 1


def test_records_of_kept_generations_decode(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path)
    _publish_session(w, 1, "one")
    snap = open_snapshot(tmp_path)
    s = snap.manifest.sessions[0]
    assert snap.load(s.entries_record, SessionEntries) == session_entries(text="one")


def test_publish_makes_the_renames_of_new_records_durable_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a writer whose puts leave folder fsyncs to publish
    events: list[str] = []
    import store.writer as writer_module

    real_fsync_dir = writer_module.fsync_dir
    real_write = writer_module.atomic_write

    def spy_fsync_dir(path: Path) -> None:
        events.append(f"fsync:{path.name}")
        real_fsync_dir(path)

    def spy_write(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        events.append(f"write:{path.name}")
        real_write(path, data, sync_dir=sync_dir)

    monkeypatch.setattr(writer_module, "fsync_dir", spy_fsync_dir)
    monkeypatch.setattr(writer_module, "atomic_write", spy_write)
    w = StoreWriter(tmp_path)
    _publish_session(w, 1, "one")
    # Then every record folder is fsynced before the manifest and CURRENT are written
    manifest_at = next(i for i, e in enumerate(events) if e.startswith("write:manifest-"))
    record_writes = [e for e in events[:manifest_at] if e.startswith("write:")]
    folder_syncs = [e for e in events[:manifest_at] if e.startswith("fsync:")]
    assert record_writes and folder_syncs
    assert "fsync:records" in folder_syncs
    assert events[-1] == "write:CURRENT"


def test_sessions_live_in_chunks_and_an_append_rewrites_one(tmp_path: Path) -> None:
    from store.reader import open_snapshot

    w = StoreWriter(tmp_path)
    shard, _ = w.put(hot_shard())
    entries, _ = w.put(session_entries())
    states = tuple(state(f"/s/{n:03d}.jsonl", shard, entries) for n in range(200))
    w.publish(manifest(1, states))
    snap = open_snapshot(tmp_path)
    assert snap.manifest.sessions == states  # read back whole, sorted by path
    first = set(snap.manifest.chunks)
    assert len(first) > 1
    # When one session changes
    changed = states[:7] + (replace(states[7], size=states[7].size + 1),) + states[8:]
    before = w.bytes_written
    w.publish(manifest(2, changed))
    snap2 = open_snapshot(tmp_path)
    assert snap2.manifest.sessions == changed
    # Then exactly one chunk is new, and far less than every row is written
    assert len(set(snap2.manifest.chunks) - first) == 1
    chunk_bytes = sum(w.layout.record_path(n).stat().st_size for n in first)
    assert w.bytes_written - before < chunk_bytes / 4


def _published_200(w: StoreWriter) -> tuple[SessionState, ...]:
    """Generation 1 of 200 sessions, published by *w*; their rows."""
    shard, _ = w.put(hot_shard())
    entries, _ = w.put(session_entries())
    states = tuple(state(f"/s/{n:03d}.jsonl", shard, entries) for n in range(200))
    w.publish(manifest(1, states))
    return states


def _chunk_puts(w: StoreWriter, monkeypatch: pytest.MonkeyPatch) -> list[SessionChunk]:
    """Every chunk record *w* stores from now on."""
    encoded: list[SessionChunk] = []
    put = w.put

    def counting(record: object) -> tuple[str, int]:
        if isinstance(record, SessionChunk):
            encoded.append(record)
        return put(record)  # type: ignore[arg-type]

    monkeypatch.setattr(w, "put", counting)
    return encoded


def test_a_publish_encodes_only_the_chunks_whose_rows_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = StoreWriter(tmp_path)
    states = _published_200(w)
    encoded = _chunk_puts(w, monkeypatch)
    # When one session changes, only its chunk is stored again
    changed = states[:7] + (replace(states[7], size=states[7].size + 1),) + states[8:]
    w.publish(manifest(2, changed))
    assert [c.sessions for c in encoded] == [
        tuple(s for s in changed if any(s is r for r in encoded[0].sessions))
    ]
    assert changed[7] in encoded[0].sessions
    # When another writer published in between, or the index was wiped, nothing is trusted
    other = StoreWriter(tmp_path)
    other.publish(manifest(3, changed))
    encoded.clear()
    w.publish(manifest(4, changed))
    assert len(encoded) == len(open_snapshot(tmp_path).manifest.chunks)
    w.wipe()
    # the records the rows name are stored again under the same names
    assert {w.put(hot_shard())[0], w.put(session_entries())[0]} == {
        states[0].index_record,
        states[0].entries_record,
    }
    encoded.clear()
    w.publish(manifest(1, changed))
    assert len(encoded) == len(open_snapshot(tmp_path).manifest.chunks)
    assert open_snapshot(tmp_path).manifest.sessions == changed


def test_a_primed_writer_publishes_its_first_change_as_one_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer new to an index (a publisher that just started) stored every chunk again at
    its first publish, and read every chunk to learn their records; primed in idle time
    from the snapshot it booted from, its first publish stores the changed chunk alone."""
    states = _published_200(StoreWriter(tmp_path))
    booted = open_snapshot(tmp_path).manifest.sessions  # as a publisher boots
    w = StoreWriter(tmp_path)
    w.prime()
    encoded = _chunk_puts(w, monkeypatch)
    monkeypatch.setattr(w, "_records_of", None)  # it must not need to read them again
    changed = booted[:7] + (replace(booted[7], size=booted[7].size + 1),) + booted[8:]
    w.publish(manifest(2, changed))
    assert len(encoded) == 1 and changed[7] in encoded[0].sessions
    again = open_snapshot(tmp_path).manifest
    assert again.sessions == changed
    # the very chunks an unprimed writer names (it encodes every one to find out)
    control = tmp_path / "control"
    assert _published_200(StoreWriter(control)) == states
    StoreWriter(control).publish(manifest(2, changed))
    assert open_snapshot(control).manifest.chunks == again.chunks
    # and a writer primed twice, or after its own publish, changes nothing
    w.prime()
    w.publish(manifest(3, changed))
    assert len(encoded) == 1


def test_records_put_in_a_batch_appear_when_it_ends_and_not_when_it_fails(
    tmp_path: Path,
) -> None:
    w = StoreWriter(tmp_path)
    with w.batch():
        name, _ = w.put(hot_shard())
        assert not w.layout.record_path(name).exists()
    assert w.layout.record_path(name).is_file()
    with pytest.raises(RuntimeError, match="boom"), w.batch():
        other, _ = w.put(session_entries())
        raise RuntimeError("boom")
    assert not w.layout.record_path(other).exists()
    assert not [p for p in w.layout.records.rglob("*") if p.name.startswith(".")]


def test_staged_chunks_are_what_the_publish_names_and_are_not_written_again(
    tmp_path: Path,
) -> None:
    shard, _ = StoreWriter(tmp_path).put(hot_shard(text="t"))
    entries, _ = StoreWriter(tmp_path).put(session_entries(text="t"))
    sessions = tuple(state(f"/s/{i}.jsonl", shard, entries) for i in range(40))
    plain = StoreWriter(tmp_path / "plain")
    plain.put(hot_shard(text="t")), plain.put(session_entries(text="t"))
    plain.publish(manifest(1, sessions))
    w = StoreWriter(tmp_path)
    w.stage_chunks(reversed(sessions))  # in any order: a chunk's rows are sorted by path
    staged = w.bytes_written
    assert staged > 0
    put = w.put
    encoded: list[str] = []

    def counting(record: Any) -> tuple[str, int]:
        encoded.append(type(record).__name__)
        return put(record)

    w.put = counting  # type: ignore[method-assign]
    w.publish(manifest(1, sessions))
    assert encoded == []  # no chunk encoded again
    chunks = open_snapshot(tmp_path).manifest.chunks
    assert chunks == open_snapshot(tmp_path / "plain").manifest.chunks
    # the publish wrote the manifest and CURRENT only
    manifest_bytes = w.layout.manifest_path(1).stat().st_size
    assert w.bytes_written - staged == manifest_bytes + w.layout.current.stat().st_size
