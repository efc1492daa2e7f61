"""Find a word anywhere under a folder: in raw bytes and inside every zstd frame (records,
lexicon blocks and archive segments are compressed, so a plain grep would miss them)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import zstandard

_MAGIC = b"\x28\xb5\x2f\xfd"


def _frames(data: bytes) -> list[bytes]:
    out: list[bytes] = []
    at = data.find(_MAGIC)
    while at >= 0:
        with contextlib.suppress(zstandard.ZstdError):
            out.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[at:]))
        at = data.find(_MAGIC, at + 1)
    return out


def files_holding(folder: Path, word: str) -> list[str]:
    """The files under *folder* whose bytes, or a zstd frame in them, contain *word*."""
    needle = word.encode()
    found: list[str] = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if needle in data or any(needle in f for f in _frames(data)):
                found.append(str(path.relative_to(folder)))
    return sorted(found)
