"""Where a (re)started pipeline picks up: the usable manifest and the journal position.

Every process of `pipeline run` boots from the same two facts, read from disk: CURRENT's
manifest (ignored when it was built under another policy: then everything is rebuilt) and
the publish checkpoint (every journal event up to it is reflected in a published generation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from store.checkpoints import CheckpointStore
from store.errors import SchemaVersionError, SnapshotMissing
from store.journal import Journal
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.records import Manifest

__all__ = ["PUBLISH_STAGE", "journal_start", "resume_after", "usable_manifest"]

PUBLISH_STAGE: Final = "publish"


def usable_manifest(index_dir: Path, policy: str) -> Manifest | None:
    """CURRENT's manifest if it was built under *policy* (and in this record format), else
    None: then everything is built again (pipeline.upgrade)."""
    try:
        manifest = open_snapshot(index_dir).manifest
    except (SnapshotMissing, SchemaVersionError):
        return None
    return manifest if manifest.policy == policy else None


def resume_after(index_dir: Path, journal: Journal) -> int:
    """The last journal position already published (replay starts after it)."""
    checkpoint = CheckpointStore(IndexLayout(Path(index_dir)).checkpoints).read(PUBLISH_STAGE)
    if checkpoint is not None:
        return checkpoint.position
    return journal.statistics().first - 1


def journal_start(index_dir: Path) -> int:
    """Where positions begin if the journal folder is empty: after every checkpoint, so a
    lost journal never reuses a position a stage has already passed. Checkpoints another
    format wrote count for nothing: the upgrade that finds them drops them with the journal."""
    try:
        checkpoints = CheckpointStore(IndexLayout(Path(index_dir)).checkpoints).all()
    except SchemaVersionError:
        return 0
    return max((c.position for c in checkpoints.values()), default=-1) + 1
