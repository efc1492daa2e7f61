"""Checkpoints: how far each pipeline stage got through the journal.

::

    checkpoints/publish.ckpt     msgpack [b"SDXC", 1, stage, stage version, position, updated_ns]

A stage writes its checkpoint (atomically) only after the output of every event up to
``position`` is durable, so after a crash it resumes at ``position + 1`` and re-runs at most
work whose result is already stored, which the pipeline treats as a no-op. ``position`` is -1
before the first event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from store.atomic import atomic_write, ensure_dir
from store.codec import pack, unpack
from store.errors import CorruptRecord, SchemaVersionError
from store.files import names_quietly, read_quietly
from store.schema import Wired, wired

__all__ = ["Checkpoint", "CheckpointStore"]

_MAGIC: Final = b"SDXC"
_VERSION: Final = 1
_SUFFIX: Final = ".ckpt"
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


@wired
@dataclass(frozen=True, slots=True)
class Checkpoint(Wired):
    """``position`` is the last journal position whose output is durable."""

    stage: str
    version: int
    position: int
    updated_ns: int


class CheckpointStore:
    """The checkpoint folder of one index."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.bytes_written = 0
        self._made = False

    def path(self, stage: str) -> Path:
        if not stage or not _NAME_CHARS.issuperset(stage):
            raise ValueError(f"not a stage name: {stage!r}")
        return self.folder / f"{stage}{_SUFFIX}"

    def read(self, stage: str) -> Checkpoint | None:
        """The stage's checkpoint, or None when it never wrote one."""
        path = self.path(stage)
        try:
            data = read_quietly(path)
        except FileNotFoundError:
            return None
        return _decode(data, path)

    def write(self, checkpoint: Checkpoint) -> None:
        path = self.path(checkpoint.stage)
        if not self._made:
            ensure_dir(self.folder)
            self._made = True
        data = pack([_MAGIC, _VERSION, *checkpoint.to_wire()])
        atomic_write(path, data)
        self.bytes_written += len(data)

    def all(self) -> dict[str, Checkpoint]:
        """Every stage's checkpoint, by stage name."""
        try:
            names = sorted(names_quietly(self.folder))
        except FileNotFoundError:
            return {}
        found: dict[str, Checkpoint] = {}
        for name in names:
            if name.endswith(_SUFFIX) and not name.startswith("."):
                checkpoint = self.read(name[: -len(_SUFFIX)])
                if checkpoint is not None:
                    found[checkpoint.stage] = checkpoint
        return found


def _decode(data: bytes, path: Path) -> Checkpoint:
    try:
        w = unpack(data)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise CorruptRecord(path, f"not a checkpoint: {exc}") from exc
    if isinstance(w, list) and len(w) >= 2 and w[0] == _MAGIC and w[1] != _VERSION:
        # another build's checkpoint: its positions mean nothing here (pipeline.upgrade)
        raise SchemaVersionError(path, w[1], _VERSION, "checkpoint version")
    if not (isinstance(w, list) and len(w) == 6 and w[0] == _MAGIC and w[1] == _VERSION):
        raise CorruptRecord(path, "not a checkpoint")
    if not (
        isinstance(w[2], str) and all(isinstance(n, int) and not isinstance(n, bool) for n in w[3:])
    ):
        raise CorruptRecord(path, "checkpoint fields have the wrong types")
    return Checkpoint.from_wire(w[2:])
