"""`pipeline run --once` writes the same index as before, byte for byte.

Refactors of the write side (and of the record algebra both sides share) must not move a
byte of the index. Records are named by the blake3 of their bytes, so the sorted record names
of a build are its bytes; the manifest is compared with what differs between machines zeroed
(its creation time, each file's device, inode and ctime: the ``chunk`` records hold those, so
they are left out of the names).

Records hold the session's absolute path, and the cold lexicon buckets sessions by a hash of
it, so the corpus is generated at one fixed place (per user, under a lock: concurrent runs
take turns). An intended change of the index writes the new golden file with
``SESSIONDEX_UPDATE_GOLDEN=1 pytest tests/unit/pipeline/test_run_once_golden.py`` — say why
in the commit.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import blake3
import pytest

from pipeline.catchup import catch_up
from store.codec import encode
from store.reader import open_snapshot
from tests.helpers import generated

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden" / "run_once.json"
COMPARED_KINDS = ("entries", "shard", "digest", "lexicon")


@pytest.fixture
def fixed_base() -> Iterator[Path]:
    """A folder at the same absolute path on every run, held under an exclusive lock."""
    base = Path(tempfile.gettempdir()) / f"sessiondex-golden-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    with open(base / "lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        corpus = base / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        try:
            yield base
        finally:
            shutil.rmtree(corpus, ignore_errors=True)


def _observed(index: Path) -> dict[str, Any]:
    names = sorted(
        p.name
        for p in (index / "records").rglob("*")
        if p.is_file() and p.suffix.lstrip(".") in COMPARED_KINDS
    )
    manifest = open_snapshot(index).manifest
    portable = replace(
        manifest,
        created_ns=0,
        chunks=(),
        sessions=tuple(replace(s, dev=0, inode=0, ctime_ns=0) for s in manifest.sessions),
    )
    kinds = sorted({n.rsplit(".", 1)[1] for n in names})
    return {
        "kinds": kinds,
        "records": names,
        "manifest": blake3.blake3(encode(portable)).hexdigest(),
    }


def test_run_once_writes_the_golden_index(fixed_base: Path, tmp_path: Path) -> None:
    # Given a generated corpus of the three agents, malformed lines included, at a fixed place
    _, config = generated(
        fixed_base, sessions=30, mean_kb=10, seed=21, hot_sessions=6, malformed_lines=True
    )
    config = replace(config, memory=replace(config.memory, index_dir=tmp_path / "index"))
    # When `run --once` indexes it
    report = catch_up(config, processes=1)
    assert report.failed == 0
    observed = _observed(tmp_path / "index")
    # Then hot and cold records and the lexicon are all there, each byte as before
    assert observed["kinds"] == sorted(COMPARED_KINDS)
    if os.environ.get("SESSIONDEX_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(observed, indent=1) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert observed["manifest"] == golden["manifest"]
    assert observed["records"] == golden["records"]
