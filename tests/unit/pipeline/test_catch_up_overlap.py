"""A catch-up keeps both cores busy where it can (issue 14, build throughput): its watcher
does not hash files its worker builds whole anyway, and the manifest's chunk records are
written while worker processes build the last lexicon buckets. What it publishes is the same."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline import catchup
from pipeline.catchup import _segments, catch_up
from pipeline.engine import event_hash
from pipeline.session_job import Job, JobResult
from stages.policy import Policy
from store.config import Config
from store.journal import FileJournal
from store.layout import IndexLayout, chunk_of
from store.reader import open_snapshot
from store.records import Manifest, SessionChunk
from store.writer import StoreWriter
from tests.helpers import generated
from tests.unit.pipeline.test_early_lexicon import bucketed_twins


def _portable(manifest: Manifest) -> Manifest:
    return replace(manifest, generation=0, created_ns=0)


def _journaled(config: Config) -> list[Any]:
    journal = FileJournal(IndexLayout(config.index_dir).journal)
    try:
        return journal.read(-1, limit=10_000)
    finally:
        journal.close()


def test_a_catch_up_journals_new_files_unhashed_and_known_ones_hashed(tmp_path: Path) -> None:
    # Given an index built from a corpus
    _, config = generated(tmp_path, sessions=6, mean_kb=2, seed=5)
    built = catch_up(config, processes=1).indexed
    # Then the first run's events carry no hash: each new file was read by its build alone
    first = _journaled(config)
    assert len(first) == built >= 6
    assert all(e.kind == "rewrite" and event_hash(e) is None for e in first)
    # When one session is touched (same bytes) and the index caught up again
    state = next(s for s in open_snapshot(config.index_dir).manifest.sessions if s.agent == "pi")
    Path(state.path).touch()
    report = catch_up(config, processes=1)
    # Then the known file was hashed, found unchanged and restamped, not built again
    again = [e for e in _journaled(config) if e.position > first[-1].position]
    assert [(e.kind, e.path, event_hash(e)) for e in again] == [
        ("append", state.path, state.source_hash)
    ]
    assert report.indexed == 0 and report.reused == built - 1


def test_a_pooled_catch_up_stages_its_chunks_and_publishes_what_an_inline_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a corpus whose cold sessions fall in several buckets
    inline, pooled = bucketed_twins(tmp_path, monkeypatch)
    steps: list[str] = []
    put, segments = StoreWriter.put, catchup._segments

    def put_logged(self: StoreWriter, record: Any) -> tuple[str, int]:
        if isinstance(record, SessionChunk):
            steps.append("chunk")
        return put(self, record)

    def segments_logged(*args: Any) -> list[str]:
        steps.append("segments")
        return segments(*args)

    publish = StoreWriter.publish

    def publish_logged(self: StoreWriter, manifest: Manifest) -> None:
        steps.append("publish")
        publish(self, manifest)

    monkeypatch.setattr(StoreWriter, "put", put_logged)
    monkeypatch.setattr(StoreWriter, "publish", publish_logged)
    monkeypatch.setattr(catchup, "_segments", segments_logged)
    # When one catch-up runs inline and one in worker processes
    assert catch_up(inline, processes=1).failed == 0
    inline_steps, steps[:] = steps[:], []
    monkeypatch.setattr(catchup, "INLINE_BYTES", 0)
    assert catch_up(pooled, processes=2).failed == 0
    # Then both published the same manifest, chunk names included
    a = open_snapshot(inline.index_dir).manifest
    b = open_snapshot(pooled.index_dir).manifest
    assert len(a.lexicon) > 1
    assert _portable(a) == _portable(b)
    # and each chunk was written once, before the publish: inline while the lexicon was
    # about to be built, from empty in the pool as soon as its sessions were built
    chunks = ["chunk"] * len(a.chunks)
    assert inline_steps == ["segments", *chunks, "publish"]
    assert steps == [*chunks, "segments", "publish"]


def _result(path: str, name: str | None) -> JobResult:
    state = None if name is None else SimpleNamespace(path=path, index_record=name)
    return JobResult(path, "pi", state, 0, 0)  # type: ignore[arg-type]


def test_from_empty_a_chunk_is_staged_when_its_last_session_is_built() -> None:
    # Given a backlog whose sessions fall in two chunks, three and two of them
    paths: dict[int, list[str]] = {}
    for i in range(2000):
        path = f"/s/{i}.jsonl"
        paths.setdefault(chunk_of(path), []).append(path)
    first, second = [ps for ps in paths.values() if len(ps) >= 6][:2]
    backlog = [*first[:3], *second[:2]]
    staged: list[list[str]] = []
    writer = SimpleNamespace(stage_chunks=lambda rows: staged.append([r.path for r in rows]))
    chunks = catchup._Chunks(writer, [Job(p, "pi", "cold", Policy(), "/i") for p in backlog])  # type: ignore[arg-type]
    # When their builds come back, one of them failed, and one is of no job of the backlog
    chunks.built(_result(first[0], "a"))
    chunks.built(_result(second[0], "b"))
    chunks.built(_result(first[5], "x"))  # (not in the backlog: passed over)
    chunks.built(_result(first[1], None))  # failed: not a row
    assert staged == []
    chunks.built(_result(first[2], "c"))
    # Then a chunk is staged with its built rows once its last session is in, and not before
    assert staged == [[first[0], first[2]]]
    chunks.built(_result(second[1], "d"))
    assert staged == [[first[0], first[2]], [second[0], second[1]]]


class _Handle:
    def __init__(self, log: list[str], bucket: tuple[str, ...]) -> None:
        self.log, self.bucket = log, bucket

    def get(self) -> tuple[str, int]:
        self.log.append(f"get {self.bucket[0]}")
        return f"seg-{self.bucket[0]}", 1


class _Pool:
    """What _segments asks of the pool, each call logged."""

    def __init__(self, *, running: bool, inline: bool) -> None:
        self.running, self.inline = running, inline
        self.log: list[str] = []

    def submit_bucket(self, index_dir: Path, bucket: tuple[str, ...]) -> _Handle | None:
        if self.inline:
            return None
        self.log.append(f"submit {bucket[0]}")
        return _Handle(self.log, bucket)

    def build_buckets(
        self, index_dir: Path, buckets: list[tuple[str, ...]]
    ) -> list[tuple[str, int]]:
        self.log += [f"build {b[0]}" for b in buckets]
        return [(f"seg-{b[0]}", 1) for b in buckets]


@pytest.mark.parametrize(
    ("running", "inline", "todo", "expect"),
    [
        # workers up: every bucket is handed to them before the meanwhile work, one too
        (True, False, ["a", "b"], ["submit a", "submit b", "meanwhile", "get a", "get b"]),
        (True, False, ["a"], ["submit a", "meanwhile", "get a"]),
        # no workers yet and one bucket: built here (starting workers costs more), after
        (False, False, ["a"], ["meanwhile", "build a"]),
        (False, False, ["a", "b"], ["submit a", "submit b", "meanwhile", "get a", "get b"]),
        # inline: built here, after the meanwhile work
        (False, True, ["a", "b"], ["meanwhile", "build a", "build b"]),
    ],
)
def test_segments_run_the_meanwhile_work_while_workers_build_the_buckets(
    running: bool, inline: bool, todo: list[str], expect: list[str]
) -> None:
    pool = _Pool(running=running, inline=inline)
    report = catchup.RunReport()
    buckets = [(name, f"{name}2") for name in todo]
    names = _segments(
        pool,  # type: ignore[arg-type]
        Path("/nowhere"),
        buckets,
        report,
        None,
        lambda: pool.log.append("meanwhile"),
    )
    assert names == [f"seg-{name}" for name in todo]
    assert pool.log == expect
    assert report.bytes_written == len(todo)
