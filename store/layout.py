"""Where things live inside an index folder (pure path functions; no I/O).

::

    <index>/CURRENT                                   "manifest-000000000042.msgpack\\n"
    <index>/manifests/manifest-000000000042.msgpack   one generation
    <index>/records/ab/ab12…ef.shard                  immutable, named by blake3 of its bytes
    <index>/journal/                                  source events (store.journal)
    <index>/checkpoints/                              per-stage journal positions
    <index>/run/                                      the running pipeline's state (pid, workers)
    <index>/lock                                      the writer lock (flock)

Names are zero-padded so that sorting gives generation order; record names carry their
content hash, so a name that exists always holds the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import blake3

__all__ = [
    "HASH_HEX_LEN",
    "RECORD_KINDS",
    "IndexLayout",
    "is_record_name",
    "manifest_name",
    "parse_manifest_name",
    "record_name",
]

HASH_HEX_LEN: Final = 64
# Kinds that live under records/ (manifests and events have their own folders).
RECORD_KINDS: Final = frozenset({"entries", "shard", "digest", "chunk", "lexicon"})
_MANIFEST_PREFIX: Final = "manifest-"
_MANIFEST_SUFFIX: Final = ".msgpack"
_GEN_DIGITS: Final = 12
_HEX: Final = frozenset("0123456789abcdef")


def manifest_name(generation: int) -> str:
    if not 0 < generation < 10**_GEN_DIGITS:
        raise ValueError(f"generation out of range: {generation}")
    return f"{_MANIFEST_PREFIX}{generation:0{_GEN_DIGITS}d}{_MANIFEST_SUFFIX}"


def parse_manifest_name(name: str) -> int | None:
    """The generation a manifest file name encodes, or None if it is not one."""
    if not (name.startswith(_MANIFEST_PREFIX) and name.endswith(_MANIFEST_SUFFIX)):
        return None
    digits = name[len(_MANIFEST_PREFIX) : -len(_MANIFEST_SUFFIX)]
    if len(digits) != _GEN_DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    generation = int(digits)
    return generation if generation > 0 else None


def record_name(data: bytes, kind: str) -> str:
    """The content address of record file bytes: ``<blake3 hex>.<kind>``."""
    if kind not in RECORD_KINDS:
        raise ValueError(f"not a record kind: {kind!r}")
    return f"{blake3.blake3(data).hexdigest()}.{kind}"


def is_record_name(name: str) -> bool:
    """True for a well-formed record name (also keeps manifest-supplied names inside records/)."""
    digest, dot, kind = name.partition(".")
    return (
        dot == "."
        and kind in RECORD_KINDS
        and len(digest) == HASH_HEX_LEN
        and _HEX.issuperset(digest)
    )


@dataclass(frozen=True, slots=True)
class IndexLayout:
    """The paths of one index folder."""

    root: Path

    @property
    def current(self) -> Path:
        return self.root / "CURRENT"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def journal(self) -> Path:
        return self.root / "journal"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def lock(self) -> Path:
        return self.root / "lock"

    def manifest_path(self, generation: int) -> Path:
        return self.manifests / manifest_name(generation)

    def record_dir(self, name: str) -> Path:
        """The fan-out folder of a record (first two hex digits keep folders small)."""
        if not is_record_name(name):
            raise ValueError(f"not a record name: {name!r}")
        return self.records / name[:2]

    def record_path(self, name: str) -> Path:
        return self.record_dir(name) / name

    def derived(self) -> tuple[Path, ...]:
        """Everything `pipeline rebuild` deletes, CURRENT first so readers stop at once."""
        return (
            self.current,
            self.manifests,
            self.records,
            self.journal,
            self.checkpoints,
            self.run,
        )


# How many chunks a manifest's sessions are spread over (see store.writer._chunked).
CHUNKS = 64


def chunk_of(path: str) -> int:
    """The chunk a session's row lives in: fixed by its path, stable across generations."""
    return blake3.blake3(path.encode("utf-8", "surrogatepass")).digest()[0] % CHUNKS
