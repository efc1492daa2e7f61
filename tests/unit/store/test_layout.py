"""Index layout: names sort by generation, record names cannot escape records/."""

from __future__ import annotations

from pathlib import Path

import blake3
import pytest

from store.layout import (
    IndexLayout,
    is_record_name,
    manifest_name,
    parse_manifest_name,
    record_name,
)


def test_manifest_names_are_zero_padded_and_parse_back() -> None:
    assert manifest_name(42) == "manifest-000000000042.msgpack"
    names = [manifest_name(g) for g in (9, 10, 100, 1)]
    assert sorted(names) == [manifest_name(g) for g in (1, 9, 10, 100)]
    for g in (1, 42, 10**12 - 1):
        assert parse_manifest_name(manifest_name(g)) == g


@pytest.mark.parametrize("generation", [0, -1, 10**12])
def test_manifest_name_range(generation: int) -> None:
    with pytest.raises(ValueError):
        manifest_name(generation)


@pytest.mark.parametrize(
    "name",
    [
        "manifest-000000000000.msgpack",
        "manifest-42.msgpack",
        "manifest-00000000004x.msgpack",
        "manifest-000000000042.msgpack.tmp",
        ".manifest-000000000042.msgpack.abc.tmp",
        "manifest-٠٠٠٠٠٠٠٠٠٠٤٢.msgpack",
        "CURRENT",
    ],
)
def test_non_manifest_names(name: str) -> None:
    assert parse_manifest_name(name) is None


def test_record_names_are_content_addresses() -> None:
    name = record_name(b"bytes", "shard")
    assert name == blake3.blake3(b"bytes").hexdigest() + ".shard"
    assert is_record_name(name)
    with pytest.raises(ValueError):
        record_name(b"bytes", "manifest")


@pytest.mark.parametrize(
    "name",
    [
        "../" + "a" * 61 + ".shard",
        "a" * 64 + ".shard/../../x",
        "A" * 64 + ".shard",
        "a" * 63 + ".shard",
        "a" * 64 + ".event",
        "a" * 64,
        "",
    ],
)
def test_malformed_record_names(name: str) -> None:
    assert not is_record_name(name)
    with pytest.raises(ValueError):
        IndexLayout(Path("/idx")).record_path(name)


def test_paths() -> None:
    layout = IndexLayout(Path("/idx"))
    name = "ab" + "0" * 62 + ".entries"
    assert layout.record_path(name) == Path("/idx/records/ab") / name
    assert layout.manifest_path(3) == Path("/idx/manifests/manifest-000000000003.msgpack")
    assert layout.current == Path("/idx/CURRENT")
    assert layout.lock == Path("/idx/lock")
    assert layout.journal == Path("/idx/journal")
    assert layout.derived()[0] == layout.current
