"""Upgrades: an index another format or derivation wrote is derived again, by itself.

The index is derived data: the session files, and the archive for sessions whose source is
gone, are the truth. So a build that cannot use what an older (or newer) one wrote does not
refuse it; `pipeline run` (both modes) derives it again at start::

    detect(config, policy)
        CURRENT's manifest (or a lexicon it names) another record format wrote  ─► "format"
        CURRENT built under another policy fingerprint (DERIVATION, ranking,
            tokenizer, redaction rules, the config's indexing settings)          ─► "derivation"
        the journal or a checkpoint another format wrote                          ─► "journal"
    begin(config, upgrade)       (under the writer lock)
        run/upgrade.json (store.upgrading) ─► readers name ``index_upgrading``
        the journal and checkpoints go when they cannot be read (their positions and events
        mean nothing to this build); CURRENT, manifests and records stay: readers keep
        the old generation (when they can read it) until the new one replaces it
    catch-up (pipeline.catchup): every live file is built again (the old manifest is not
        usable: the watcher's view starts empty), every archived session from its chain
        (``Watcher._unknown_chains``), forgotten ones stay out (the archive's tombstones);
        one generation, published when all of it is built ─► CURRENT moves once
    finish(config) ─► the mark goes

Nothing in the archive changes, so forgotten sessions stay forgotten and archived sessions
survive. `pipeline rebuild` stays for when the user wants the index wiped first.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from pipeline.resume import PUBLISH_STAGE
from store.checkpoints import CheckpointStore
from store.errors import CorruptRecord, SchemaVersionError, SnapshotMissing
from store.journal import FileJournal
from store.layout import IndexLayout
from store.lexicon import LexiconSegment
from store.reader import open_snapshot
from store.upgrading import clear_mark, read_mark, write_mark

__all__ = [
    "DERIVATION_CHANGED",
    "FORMAT_CHANGED",
    "JOURNAL_CHANGED",
    "Upgrade",
    "begin",
    "detect",
    "finish",
]

log = structlog.get_logger()

FORMAT_CHANGED: Final = "format"
DERIVATION_CHANGED: Final = "derivation"
JOURNAL_CHANGED: Final = "journal"


@dataclass(frozen=True, slots=True)
class Upgrade:
    """Why the published index is derived again; ``reset_journal`` when the journal and the
    checkpoints are another format too (then they are dropped, not read)."""

    reason: str
    detail: str
    reset_journal: bool


def detect(index_dir: Path, policy: str) -> Upgrade | None:
    """What makes the index at *index_dir* unusable as it is for a build under *policy*;
    None when it is this build's (or there is none yet). Never writes."""
    layout = IndexLayout(Path(index_dir))
    try:
        snapshot = open_snapshot(layout.root)
    except SnapshotMissing:
        snapshot = None
    except SchemaVersionError as exc:
        return Upgrade(FORMAT_CHANGED, _detail(exc), reset_journal=True)
    journal = _journal_unreadable(layout)
    if snapshot is not None:
        for name in snapshot.manifest.lexicon[:1]:
            try:
                LexiconSegment(snapshot.layout.record_path(name)).close()
            except SchemaVersionError as exc:
                return Upgrade(FORMAT_CHANGED, _detail(exc), reset_journal=journal is not None)
            except (CorruptRecord, OSError):
                pass  # damage, not a version: the scrub and the next publish deal with it
        if snapshot.manifest.policy != policy:
            detail = f"built under {snapshot.manifest.policy!r}"
            return Upgrade(DERIVATION_CHANGED, detail, reset_journal=journal is not None)
    if journal is not None:
        return Upgrade(JOURNAL_CHANGED, journal, reset_journal=True)
    return None


def _detail(exc: SchemaVersionError) -> str:
    return f"{Path(exc.path).name}: {exc.found!r}, this build reads {exc.expected}"


def _journal_unreadable(layout: IndexLayout) -> str | None:
    """Why the journal or a checkpoint cannot be read by this build, or None."""
    try:
        checkpoints = CheckpointStore(layout.checkpoints).all()
    except SchemaVersionError as exc:
        return _detail(exc)
    except CorruptRecord:
        checkpoints = {}  # damage is handled where it is read (it is not a version)
    published = checkpoints.get(PUBLISH_STAGE)
    journal = FileJournal(layout.journal)
    try:
        after = published.position if published is not None else journal.statistics().first - 1
        journal.read(after, limit=1)
    except SchemaVersionError as exc:
        return _detail(exc)
    except CorruptRecord:
        return None
    finally:
        journal.close()
    return None


def begin(index_dir: Path, upgrade: Upgrade) -> None:
    """Mark the index as being derived again and drop what this build cannot read. The
    caller holds the writer lock."""
    layout = IndexLayout(Path(index_dir))
    log.warning(
        "upgrade.started",
        index_dir=str(index_dir),
        reason=upgrade.reason,
        detail=upgrade.detail,
    )
    write_mark(layout.root, upgrade.reason, upgrade.detail)
    if upgrade.reset_journal:
        # Derived like the rest: the watcher journals every file again from the roots.
        for folder in (layout.journal, layout.checkpoints):
            shutil.rmtree(folder, ignore_errors=True)


def finish(index_dir: Path, generation: int | None) -> None:
    """The new generation is published (or there was nothing to publish): drop the mark."""
    if read_mark(Path(index_dir)) is not None:
        clear_mark(Path(index_dir))
        log.info("upgrade.done", index_dir=str(index_dir), generation=generation)
