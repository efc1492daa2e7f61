"""Scrub: find a session whose stored records no longer hold the bytes their names address
(a flipped byte on disk), remove them, and let the caller build the session again.

A reused session is never loaded by the pipeline, so nothing else would notice: queries
refuse the damaged record (``store.integrity``) and call the session unavailable, but only a
new build heals it. Checking every record on every run costs about a read of the whole
index, so ``run --once`` checks the slice of the sessions whose turn it is (a new turn every
``TURN_S``: all of them within ``SLICES`` turns of runs) and the always-on workers one
session per idle moment, round-robin.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Final

import blake3
import structlog

from store.integrity import intact
from store.layout import IndexLayout
from store.records import SessionState

__all__ = ["SLICES", "TURN_S", "damaged", "due", "repair"]

log = structlog.get_logger()

SLICES = 8
TURN_S: Final = 600


def due(path: str, now: float | None = None) -> bool:
    """Whether a run at *now* checks the records of the session at *path*."""
    turn = int((time.time() if now is None else now) // TURN_S)
    slot = blake3.blake3(path.encode("utf-8", "surrogateescape")).digest()[0]
    return slot % SLICES == turn % SLICES


def damaged(layout: IndexLayout, state: SessionState) -> list[str]:
    """The record names of *state* whose files are missing or do not match their name."""
    names = (state.index_record, state.entries_record, *state.index_deltas, *state.entries_deltas)
    return [name for name in dict.fromkeys(names) if not intact(layout, name)]


def repair(layout: IndexLayout, state: SessionState) -> bool:
    """Remove *state*'s damaged record files, so that building the session again writes them
    afresh (a record whose name exists is only touched); True when there were any."""
    bad = damaged(layout, state)
    for name in bad:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(layout.record_path(name))
    if bad:
        log.warning("scrub.damaged", path=state.path, records=bad)
    return bool(bad)
