"""Identifiers and timestamps drawn from a seeded RNG (never from the clock or ``uuid4``)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

__all__ = ["iso", "iso_seconds", "uuid4", "uuid7"]


def _format(value: int) -> str:
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid4(rng: random.Random) -> str:
    """A random (version 4) UUID."""
    value = rng.getrandbits(128)
    value = (value & ~(0xF << 76)) | (4 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return _format(value)


def uuid7(rng: random.Random, ms: int) -> str:
    """A time-ordered (version 7) UUID for epoch milliseconds ``ms``, as Pi and Codex now mint."""
    value = (ms & (2**48 - 1)) << 80 | (7 << 76) | rng.getrandbits(12) << 64
    value |= (0x2 << 62) | rng.getrandbits(62)
    return _format(value)


def iso(ms: int) -> str:
    """``2026-04-27T08:10:29.847Z``: JavaScript's ``toISOString`` for epoch milliseconds."""
    secs, frac = divmod(ms, 1000)
    return datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:03d}Z"


def iso_seconds(ms: int) -> str:
    """``2026-04-27T08-10-29``: the second-resolution stamp Codex puts in file names."""
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H-%M-%S")
