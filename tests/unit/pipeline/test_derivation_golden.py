"""Stage output over every agent's fixtures is pinned to the derivation key it was built under.

An index keeps a session's records for as long as its file is unchanged and the manifest's
policy fingerprint (``stages.policy.DERIVATION``, ranking, tokenizer and redaction versions,
the indexing settings) and record format (``SCHEMA_VERSION``) are this build's. A change to
what the stages make of the same bytes that bumps none of them leaves every existing index
with stale records, silently (`pipeline run` derives an index again only when the key moves:
``pipeline.upgrade``). So the golden file pairs the hash of each fixture's records with the
key: changed output under the same key fails here, saying to bump ``DERIVATION``.

Records hold the session's absolute path, so the fixtures are copied to one fixed place (per
user, under a lock), as ``test_run_once_golden`` does. After an intended change, bump
``DERIVATION`` (with a line saying why), then write the new golden file with
``SESSIONDEX_UPDATE_GOLDEN=1 pytest tests/unit/pipeline/test_derivation_golden.py``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import blake3
import pytest

from pipeline.discovery import discover
from pipeline.session_job import Job, build_session
from stages.policy import Policy
from store.agents import agent_names
from store.codec import pack
from store.schema import SCHEMA_VERSION
from store.writer import StoreWriter

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = DATA / "golden" / "derivation.json"
# Adapters whose session files sit in a chats/ folder: their fixtures are kept flat.
_CHATS = ("gemini", "qwen")


def derivation_key() -> str:
    """What an index's records are reused under: the policy fingerprint and record format."""
    return f"{Policy().fingerprint()};schema:{SCHEMA_VERSION}"


@pytest.fixture
def fixed_base() -> Iterator[Path]:
    base = Path(tempfile.gettempdir()) / f"sessiondex-derivation-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    with open(base / "lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in ("data", "index"):
            shutil.rmtree(base / name, ignore_errors=True)
        try:
            yield base
        finally:
            for name in ("data", "index"):
                shutil.rmtree(base / name, ignore_errors=True)


def _roots(base: Path) -> dict[str, Path]:
    roots: dict[str, Path] = {}
    for agent in agent_names():
        source = DATA / agent
        if not source.is_dir():
            continue
        root = roots[agent] = base / "data" / agent
        if agent in _CHATS:
            (root / "proj" / "chats").mkdir(parents=True)
            for f in sorted(source.iterdir()):
                shutil.copyfile(f, root / "proj" / "chats" / f.name)
        else:
            shutil.copytree(source, root)
    return roots


def observed_hashes(base: Path) -> dict[str, str]:
    """blake3 of every fixture session's records, built hot and cold, by path under base."""
    roots = _roots(base)
    found, _ = discover(roots)
    writer = StoreWriter(base / "index")
    out: dict[str, str] = {}
    for c in sorted(found, key=lambda c: c.path):
        data = Path(c.path).read_bytes()
        h = blake3.blake3()
        for tier in ("hot", "cold"):
            job = Job(c.path, c.agent, tier, Policy(), str(base / "index"))
            built = build_session(job, data, (0, 0, len(data), 0, 0), writer)
            # the row names its records by the blake3 of their bytes: the row covers them
            h.update(pack(built.state.to_wire()))
        out[str(Path(c.path).relative_to(base / "data"))] = h.hexdigest()
    return out


def test_stage_output_changes_only_with_the_derivation_key(fixed_base: Path) -> None:
    # Given every agent's fixture sessions built by the stages, hot and cold
    observed = observed_hashes(fixed_base)
    assert len(observed) >= 30 and {p.split("/")[0] for p in observed} >= {"pi", "gemini", "qwen"}
    key = derivation_key()
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else None
    pinned = (golden or {}).get("sessions", {})
    # a fixture added or removed is no change of what the stages make of the same bytes
    changed = sorted(p for p in observed.keys() & pinned.keys() if pinned[p] != observed[p])
    moved = sorted(observed.keys() ^ pinned.keys())
    if os.environ.get("SESSIONDEX_UPDATE_GOLDEN") == "1":
        # Then a new golden is written only under a new key when the output moved
        assert golden is None or not changed or golden["key"] != key, (
            f"stage output changed for {changed[:5]} but the derivation key did not: bump "
            "stages.policy.DERIVATION first (existing indexes would keep stale records)"
        )
        GOLDEN.write_text(json.dumps({"key": key, "sessions": observed}, indent=1) + "\n")
        golden = json.loads(GOLDEN.read_text())
        changed, moved = [], []
    assert golden is not None, "no golden file: write it with SESSIONDEX_UPDATE_GOLDEN=1"
    # Then the output is the golden one under the very same key
    assert not changed or golden["key"] != key, (
        f"stage output changed for {changed[:5]} under the same derivation key: bump "
        "stages.policy.DERIVATION (why in a comment), then SESSIONDEX_UPDATE_GOLDEN=1"
    )
    assert golden["key"] == key and not changed, (
        "the derivation key moved: write the new golden with SESSIONDEX_UPDATE_GOLDEN=1"
    )
    assert not moved, (
        f"fixtures added or removed since the golden ({moved[:5]}): write it again with "
        "SESSIONDEX_UPDATE_GOLDEN=1"
    )
