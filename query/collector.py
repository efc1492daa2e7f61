"""The garbage collector's settings for long-lived query processes (``query serve``, ``query mcp``).

A recall over a large history allocates a few hundred thousand container objects that live
only as long as the request. With CPython's default young threshold (700 allocations) the
young collections run many times inside one request and promote those objects to the oldest
generation, which is then collected in full every few requests; a full collection walks
every object the process holds, 40-100 ms on the size-M bench, inside whichever request
tripped it (p95 of 80-110 ms where the median was 10-15 ms). With a young threshold far
above one request's survivors, a request's objects are freed by reference counting before a
collection ever sees them, and full collections become rare (none in 425 size-M requests).

Only cyclic garbage waits longer for it, and the query side makes little of that.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["LONG_LIVED_THRESHOLDS", "configure_for_long_life"]

# (young allocations, young collections per middle one, middle per full-collection check)
LONG_LIVED_THRESHOLDS: Final = (50_000, 20, 10)


def configure_for_long_life() -> None:
    """Raise the collector's thresholds (never lowers one a caller already raised)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(current, LONG_LIVED_THRESHOLDS, strict=True)))
