"""The journal contract (file and memory), then what only the file journal must survive."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import store.codec
import store.journal
from store.checkpoints import Checkpoint, CheckpointStore
from store.errors import CorruptRecord, SchemaVersionError, StoreLocked
from store.journal import FileJournal, Journal, parse_segment_name, segment_name
from store.records import SourceEvent
from tests.doubles import MemoryJournal


def event(n: int, kind: str = "append") -> SourceEvent:
    return SourceEvent(
        kind, f"/s/{n % 3}.jsonl", "pi", 1, 100 + n, n * 10, 10**18 + n, 0, n * 10, 10**18,
        extra={"hash": f"{n:064x}", "ctime_ns": n},
    )  # fmt: skip


@pytest.fixture(params=["memory", "file"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    j: Journal
    if request.param == "memory":
        j = MemoryJournal()
    else:
        j = FileJournal(tmp_path / "journal", writable=True, segment_bytes=600)
    yield j
    j.close()


def test_positions_are_dense_and_ordered(journal: Journal) -> None:
    # Given three batches appended
    placed = journal.append([event(0)]) + journal.append([event(1), event(2)])
    journal.append([event(3)])
    # Then positions are 0, 1, 2, 3 and reading returns the events as appended
    assert [e.position for e in placed] == [0, 1, 2]
    read = journal.read(after=-1)
    assert [e.position for e in read] == [0, 1, 2, 3]
    assert read[2] == placed[2]
    assert journal.head() == 3


def test_read_resumes_after_a_position_and_honours_the_limit(journal: Journal) -> None:
    journal.append([event(n) for n in range(10)])
    assert [e.position for e in journal.read(after=3, limit=4)] == [4, 5, 6, 7]
    assert [e.position for e in journal.read(after=7)] == [8, 9]
    assert journal.read(after=9) == []
    # And a reader may go back to an earlier position
    assert [e.position for e in journal.read(after=0, limit=2)] == [1, 2]


def test_a_reader_sees_events_appended_after_it_caught_up(journal: Journal) -> None:
    journal.append([event(0)])
    assert len(journal.read(after=-1)) == 1
    assert journal.read(after=0) == []
    journal.append([event(n) for n in range(1, 30)])
    assert [e.position for e in journal.read(after=0)] == list(range(1, 30))


def fill(journal: Journal, n: int) -> None:
    # One event per batch: a batch never straddles two file segments.
    for i in range(n):
        journal.append([event(i)])


def test_trim_keeps_what_later_stages_still_need(journal: Journal) -> None:
    fill(journal, 40)
    journal.trim(through=25)
    # Everything after the trimmed position is still there, and positions continue
    assert [e.position for e in journal.read(after=25)] == list(range(26, 40))
    assert journal.head() == 39
    assert journal.append([event(40)])[0].position == 40


def test_trim_never_forgets_the_head(journal: Journal) -> None:
    fill(journal, 40)
    journal.trim(through=39)
    assert journal.head() == 39
    assert journal.append([event(40)])[0].position == 40


def test_reading_a_trimmed_position_is_an_error(journal: Journal) -> None:
    fill(journal, 40)
    assert journal.trim(through=30) > 0
    with pytest.raises(CorruptRecord):
        journal.read(after=-1)


# -- the file journal only -------------------------------------------------------------


def test_positions_continue_after_reopening(tmp_path: Path) -> None:
    j = FileJournal(tmp_path, writable=True)
    j.append([event(0), event(1)])
    j.close()
    j = FileJournal(tmp_path, writable=True)
    assert j.append([event(2)])[0].position == 2
    j.close()
    assert [e.position for e in FileJournal(tmp_path).read(after=-1)] == [0, 1, 2]


def test_an_empty_folder_starts_where_it_is_told(tmp_path: Path) -> None:
    # Given checkpoints that survived a lost journal folder, positions must not repeat
    j = FileJournal(tmp_path, writable=True, start_at=17)
    assert j.append([event(0)])[0].position == 17
    j.close()


def test_a_torn_frame_is_invisible_then_cut_off(tmp_path: Path) -> None:
    # Given a crash in the middle of writing a frame
    j = FileJournal(tmp_path, writable=True)
    j.append([event(0), event(1)])
    j.close()
    [segment] = [p for p in tmp_path.iterdir() if parse_segment_name(p.name) is not None]
    whole = segment.read_bytes()
    with segment.open("ab") as f:
        f.write(whole[: len(whole) // 2 - 3])  # half of two more frames
    # Then readers see only the whole frames
    assert [e.position for e in FileJournal(tmp_path).read(after=-1)] == [0, 1]
    # And the next appender cuts the torn bytes off and continues densely
    j = FileJournal(tmp_path, writable=True)
    assert j.append([event(2)])[0].position == 2
    j.close()
    assert segment.read_bytes().startswith(whole)
    assert [e.position for e in FileJournal(tmp_path).read(after=-1)] == [0, 1, 2]


def test_segments_rotate_and_are_named_by_their_first_position(tmp_path: Path) -> None:
    j = FileJournal(tmp_path, writable=True, segment_bytes=300)
    for n in range(12):
        j.append([event(n)])
    bases = sorted(b for b in map(parse_segment_name, os.listdir(tmp_path)) if b is not None)
    assert len(bases) > 2 and bases[0] == 0
    stats = j.statistics()
    assert (stats.first, stats.head, stats.segments) == (0, 11, len(bases))
    # A reader crossing segment boundaries still sees every position once
    assert [e.position for e in FileJournal(tmp_path).read(after=-1)] == list(range(12))
    j.close()


def test_a_reader_follows_rotation_while_tailing(tmp_path: Path) -> None:
    j = FileJournal(tmp_path, writable=True, segment_bytes=300)
    reader = FileJournal(tmp_path)
    seen: list[int] = []
    for n in range(20):
        j.append([event(n)])
        seen += [e.position for e in reader.read(after=seen[-1] if seen else -1)]
    assert seen == list(range(20))
    reader.close()
    j.close()


def test_one_appender_at_a_time(tmp_path: Path) -> None:
    j = FileJournal(tmp_path, writable=True)
    with pytest.raises(StoreLocked):
        FileJournal(tmp_path, writable=True)
    j.close()
    FileJournal(tmp_path, writable=True).close()


def test_a_read_only_journal_refuses_to_append(tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        FileJournal(tmp_path).append([event(0)])


def test_a_missing_segment_in_the_middle_is_reported(tmp_path: Path) -> None:
    j = FileJournal(tmp_path, writable=True, segment_bytes=300)
    for n in range(12):
        j.append([event(n)])
    j.close()
    bases = sorted(b for b in map(parse_segment_name, os.listdir(tmp_path)) if b is not None)
    (tmp_path / segment_name(bases[1])).unlink()
    with pytest.raises(CorruptRecord):
        FileJournal(tmp_path).read(after=-1)


def test_segment_names_round_trip() -> None:
    assert parse_segment_name(segment_name(42)) == 42
    assert parse_segment_name("segment-42.log") is None
    assert parse_segment_name("appender.lock") is None


# -- checkpoints -----------------------------------------------------------------------


def test_checkpoints_round_trip_and_list(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoints")
    assert store.read("publish") is None
    store.write(Checkpoint("publish", 1, 41, 123))
    store.write(Checkpoint("index-0", 2, 50, 124))
    store.write(Checkpoint("publish", 1, 42, 125))
    assert store.read("publish") == Checkpoint("publish", 1, 42, 125)
    assert set(store.all()) == {"publish", "index-0"}
    assert oct((tmp_path / "checkpoints" / "publish.ckpt").stat().st_mode & 0o777) == "0o600"


def test_a_damaged_checkpoint_is_reported(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.write(Checkpoint("publish", 1, 1, 1))
    store.path("publish").write_bytes(b"\x93garbage")
    with pytest.raises(CorruptRecord):
        store.read("publish")


def test_stage_names_are_plain(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CheckpointStore(tmp_path).path("../x")


def _written(folder: Path, n: int) -> None:
    """A journal in *folder* holding events 0 .. n - 1."""
    j = FileJournal(folder, writable=True)
    j.append([event(k) for k in range(n)])
    j.close()


def test_a_reader_passes_over_the_frames_before_its_position_without_decoding_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A segment holds up to a few MB: each process starting decoded it whole to find its
    # place (issue 22 item 11). Positions are dense, so headers are enough to count frames.
    _written(tmp_path, 200)
    decoded: list[int] = []
    real = store.journal.decode

    def counting(data: bytes, **kw: Any) -> Any:
        value = real(data, **kw)
        decoded.append(value.position)
        return value

    monkeypatch.setattr(store.journal, "decode", counting)
    assert [e.position for e in FileJournal(tmp_path).read(after=196, limit=2)] == [197, 198]
    assert decoded == [0, 197, 198]  # the segment's first frame (its format), then the two read
    decoded.clear()
    assert FileJournal(tmp_path).read(after=199) == []
    assert decoded == [0]
    decoded.clear()
    assert FileJournal(tmp_path).statistics().head == 199
    assert decoded == [0, 199]  # the first and the last frame: format and head
    decoded.clear()
    appender = FileJournal(tmp_path, writable=True)  # resumes after the last whole frame
    assert decoded == [0, 199]
    assert appender.append([event(200)])[0].position == 200
    appender.close()


def test_a_journal_another_format_wrote_is_told_apart_even_with_nothing_left_to_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _written(tmp_path, 5)
    monkeypatch.setattr(store.codec, "SCHEMA_VERSION", store.codec.SCHEMA_VERSION + 1)
    with pytest.raises(SchemaVersionError):
        FileJournal(tmp_path).read(after=4)
    with pytest.raises(SchemaVersionError):
        FileJournal(tmp_path, writable=True)


def test_a_gap_in_positions_past_the_frames_passed_over_is_reported(tmp_path: Path) -> None:
    _written(tmp_path, 4)
    [segment] = [p for p in tmp_path.iterdir() if parse_segment_name(p.name) is not None]
    data = segment.read_bytes()
    size = len(data) // 4  # the frames are the same size: drop the third one
    segment.write_bytes(data[: 2 * size] + data[3 * size :])
    with pytest.raises(CorruptRecord, match="position 3, expected 2"):
        FileJournal(tmp_path).read(after=1)
