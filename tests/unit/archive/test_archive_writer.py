"""The archive's chains: appends as segments, folding by levels, the cap, rewrites, damage."""

from __future__ import annotations

from pathlib import Path

import blake3
import pytest

from pipeline.archiving import hashes
from store.archive import FANOUT, KEPT, NOT_KEPT, Archive, ArchiveDamaged, key_name
from store.archive_writer import ArchiveWriter

STAMP = (1, 2, 3, 4, 5)


def _keep_growing(writer: ArchiveWriter, key: str, chunks: list[bytes]) -> bytes:
    data = b""
    for chunk in chunks:
        if not data:
            full, prefix = hashes(chunk, 0)
            assert (
                writer.keep_whole(key, "pi", chunk, STAMP, None, full_hash=full, prefix_hash=prefix)
                == KEPT
            )
        else:
            old = blake3.blake3(data).hexdigest()
            new = blake3.blake3(data + chunk).hexdigest()
            kept = writer.keep_append(
                key, chunk, old_length=len(data), old_hash=old, full_hash=new, stamp=STAMP
            )
            assert kept == KEPT
        data += chunk
    return data


def test_appends_are_segments_folded_so_a_chain_stays_short(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    chunks = [f'{{"line": {n}}}\n'.encode() for n in range(200)]
    data = _keep_growing(writer, "/s/x.jsonl", chunks)
    chain = Archive(tmp_path / "a").head("/s/x.jsonl")
    assert chain is not None
    assert chain.length == len(data) and chain.hash == blake3.blake3(data).hexdigest()
    # 199 appends: at most FANOUT - 1 segments per level, three levels
    assert len(chain.segments) <= 1 + (FANOUT - 1) * 3
    assert Archive(tmp_path / "a").read(chain) == data
    name = key_name("/s/x.jsonl")
    on_disk = {p.name for p in (tmp_path / "a" / "chains").iterdir()}
    assert on_disk == {name, *(f"{name}.{s.name}.zst" for s in chain.segments)}  # nothing more


def test_an_append_writes_only_the_new_bytes(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    big = b"".join(f'{{"n": {n}, "pad": "{"x" * 200}"}}\n'.encode() for n in range(2000))
    _keep_growing(writer, "/s/big.jsonl", [big])
    before = writer.bytes_written
    _keep_growing_more = blake3.blake3(big).hexdigest()
    line = b'{"n": "one more"}\n'
    writer.keep_append(
        "/s/big.jsonl", line, old_length=len(big), old_hash=_keep_growing_more,
        full_hash=blake3.blake3(big + line).hexdigest(), stamp=STAMP,
    )  # fmt: skip
    assert writer.bytes_written - before < 1_000  # a segment and a HEAD, not the history


def test_a_rewrite_starts_a_new_chain(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    _keep_growing(writer, "/s/x.jsonl", [b"one\n", b"two\n"])
    other = b"something else entirely\n"
    full, prefix = hashes(other, 8)
    assert (
        writer.keep_whole(
            "/s/x.jsonl", "pi", other, STAMP, None, full_hash=full, prefix_hash=prefix
        )
        == KEPT
    )
    chain = Archive(tmp_path / "a").head("/s/x.jsonl")
    assert chain is not None and Archive(tmp_path / "a").read(chain) == other
    # a chain written whole is one file, its HEAD carrying the segment; the old one is gone
    assert [p.name for p in (tmp_path / "a" / "chains").iterdir()] == [key_name("/s/x.jsonl")]


def test_the_cap_stops_the_archive_and_says_so(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=2_000)
    import os

    noise = os.urandom(3_000)  # incompressible
    full, prefix = hashes(noise, 0)
    assert (
        writer.keep_whole("/s/big", "pi", noise, STAMP, None, full_hash=full, prefix_hash=prefix)
        == NOT_KEPT
    )
    assert Archive(tmp_path / "a").head("/s/big") is None
    small = b"small\n"
    full, prefix = hashes(small, 0)
    assert (
        writer.keep_whole("/s/small", "pi", small, STAMP, None, full_hash=full, prefix_hash=prefix)
        == KEPT
    )
    more = os.urandom(3_000)
    kept = writer.keep_append(
        "/s/small", more, old_length=len(small), old_hash=full,
        full_hash=blake3.blake3(small + more).hexdigest(), stamp=STAMP,
    )  # fmt: skip
    assert kept == NOT_KEPT
    chain = Archive(tmp_path / "a").head("/s/small")
    assert chain is not None and chain.truncated and chain.length == len(small)


def test_a_damaged_segment_is_refused(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    _keep_growing(writer, "/s/x.jsonl", [b"one\n"])
    archive = Archive(tmp_path / "a")
    chain = archive.head("/s/x.jsonl")
    assert chain is not None
    import zstandard

    # the segment inline in the HEAD: other bytes in its place are refused
    head = archive.head_path("/s/x.jsonl")
    data = head.read_bytes()
    frame = zstandard.ZstdCompressor().compress(b"one\n")
    assert data.endswith(frame)
    head.write_bytes(data[: -len(frame)] + zstandard.ZstdCompressor().compress(b"two\n"))
    with pytest.raises(ArchiveDamaged):
        archive.read(chain)
    # and in a file of its own (after an append linked it out)
    _keep_growing(writer, "/s/y.jsonl", [b"one\n", b"more\n"])
    chain = archive.head("/s/y.jsonl")
    assert chain is not None and archive.read(chain) == b"one\nmore\n"
    for segment in archive.chains_dir.glob(f"{key_name('/s/y.jsonl')}.*.zst"):
        segment.unlink()
        segment.write_bytes(zstandard.ZstdCompressor().compress(b"two\n"))
    with pytest.raises(ArchiveDamaged):
        archive.read(chain)


def test_tombstones_hold_hashes_not_paths(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    assert writer.forget(["/home/me/secret-project/s.jsonl"]) == 1
    assert writer.forget(["/home/me/secret-project/s.jsonl"]) == 0
    assert b"secret-project" not in (tmp_path / "a" / "tombstones").read_bytes()
    assert Archive(tmp_path / "a").forgotten("/home/me/secret-project/s.jsonl")


def test_an_archive_an_older_build_wrote_is_read_and_kept_growing(tmp_path: Path) -> None:
    """Version 1: a bare msgpack HEAD and every segment in a file of its own."""
    import zstandard

    from store.archive import Chain, Segment
    from store.codec import pack

    data = b'{"line": 1}\n'
    name = blake3.blake3(data).hexdigest()
    folder = Archive(tmp_path / "a").folder("/s/old.jsonl")
    folder.mkdir(parents=True)
    (folder / f"{name}.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    chain = Chain(
        "/s/old.jsonl", "/s/old.jsonl", "pi", len(data), name, STAMP,
        (Segment(name, len(data), 1 << 16),),
    )  # fmt: skip
    (folder / "HEAD").write_bytes(pack([b"SDXA", 1, *chain.to_wire()]))
    archive = Archive(tmp_path / "a")
    assert archive.head("/s/old.jsonl") == chain and archive.read(chain) == data
    assert archive.names() == {key_name("/s/old.jsonl")}
    # a file and a link among the older layout's fans are passed over, not listed or followed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ("f" * 64)).write_bytes(b"")
    (archive.sessions / "zz").write_bytes(b"")
    (archive.sessions / "yy").symlink_to(elsewhere)
    assert archive.names() == {key_name("/s/old.jsonl")}
    (archive.sessions / "zz").unlink()
    (archive.sessions / "yy").unlink()
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    more = b'{"line": 2}\n'
    kept = writer.keep_append(
        "/s/old.jsonl", more, old_length=len(data), old_hash=name,
        full_hash=blake3.blake3(data + more).hexdigest(), stamp=STAMP,
    )  # fmt: skip
    assert kept == KEPT
    grown = Archive(tmp_path / "a").head("/s/old.jsonl")
    assert grown is not None and Archive(tmp_path / "a").read(grown) == data + more
    # moved into this build's layout at its first write: the old folder is gone
    assert archive.head_path("/s/old.jsonl").read_bytes().startswith(b"SDXH")
    assert not folder.exists() and archive.names() == {key_name("/s/old.jsonl")}


def test_a_whole_chain_is_one_file_until_an_append_links_its_segment_out(
    tmp_path: Path,
) -> None:
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)
    first = b"".join(f'{{"n": {n}}}\n'.encode() for n in range(500))
    _keep_growing(writer, "/s/x.jsonl", [first])
    archive = Archive(tmp_path / "a")
    name = key_name("/s/x.jsonl")
    assert [p.name for p in archive.chains_dir.iterdir()] == [name]
    seen = archive.head("/s/x.jsonl")  # a reader holding the chain as it was
    assert seen is not None
    head_inode = archive.head_path("/s/x.jsonl").stat().st_ino
    _keep_growing_tail = blake3.blake3(first).hexdigest()
    more = b'{"n": "more"}\n'
    writer.keep_append(
        "/s/x.jsonl", more, old_length=len(first), old_hash=_keep_growing_tail,
        full_hash=blake3.blake3(first + more).hexdigest(), stamp=STAMP,
    )  # fmt: skip
    # the old HEAD became the first segment's file (a link, nothing copied)
    assert archive.segment_file(name, seen.segments[0].name).stat().st_ino == head_inode
    assert Archive(tmp_path / "a").read(seen) == first  # what the reader held still reads
    grown = Archive(tmp_path / "a").head("/s/x.jsonl")
    assert grown is not None and Archive(tmp_path / "a").read(grown) == first + more
    # a stamp-only rewrite of an inline HEAD keeps the segment (linked out, not lost)
    _keep_growing(writer, "/s/t.jsonl", [b"one\n"])
    writer.restamp("/s/t.jsonl", (9, 9, 9, 9, 9))
    moved = Archive(tmp_path / "a").head("/s/t.jsonl")
    assert moved is not None and moved.stamp == (9, 9, 9, 9, 9)
    assert Archive(tmp_path / "a").read(moved) == b"one\n"


def test_the_archive_is_measured_ahead_in_idle_time_not_on_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``usage`` walks the whole archive; the first append after a start paid for it. A
    worker measures ahead while idle, once: a measured archive is not walked again."""
    _keep_growing(ArchiveWriter(tmp_path / "a", max_bytes=1 << 30), "/s/x.jsonl", [b"{}\n"])
    writer = ArchiveWriter(tmp_path / "a", max_bytes=1 << 30)  # as a worker that just started
    walks: list[int] = []
    walk = writer.reader.usage

    def counted() -> int:
        walks.append(1)
        return walk()

    monkeypatch.setattr(writer.reader, "usage", counted)
    writer.measure_ahead()
    writer.measure_ahead()
    assert len(walks) == 1
    data = b"{}\n"
    _keep_growing_more = blake3.blake3(data).hexdigest()
    line = b'{"n": 1}\n'
    kept = writer.keep_append(
        "/s/x.jsonl", line, old_length=len(data), old_hash=_keep_growing_more,
        full_hash=blake3.blake3(data + line).hexdigest(), stamp=STAMP,
    )  # fmt: skip
    assert kept == KEPT and len(walks) == 1  # the append found it measured
    assert writer.usage() == Archive(tmp_path / "a").usage()
