"""One write path: `run --once`, `rebuild` and the always-on pipeline's catch-up publish the
same index from the same corpus, byte for byte.

Records are named by the blake3 of their bytes, so equal names of the records a manifest
names are equal bytes; the manifests are compared whole, with only what a run cannot share
zeroed (the generation number, its creation time and the chunk records that hold them).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pipeline import catchup
from pipeline.catchup import catch_up
from pipeline.cli import main
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from stages.agents import default_roots
from store.agents import agent_names
from store.config import Config, load_config
from store.reader import open_snapshot
from store.records import Manifest
from tests.helpers import generated


def _portable(manifest: Manifest) -> Manifest:
    return replace(manifest, generation=0, created_ns=0, chunks=())


def _records(index: Path, manifest: Manifest) -> dict[str, bytes]:
    return {
        name: (index / "records" / name[:2] / name).read_bytes()
        for name in sorted(manifest.records())
    }


def _config_at(base: Path, config: Config, name: str) -> tuple[Path, Config]:
    """A config file indexing the same roots into ``base/name`` (its own archive beside it)."""
    index = base / name
    path = base / f"{name}.toml"
    # every registered agent named, so no default root outside the test is read
    roots = {agent: base / f"no-{agent}" for agent in agent_names()} | dict(config.roots)
    path.write_text(
        "[sources]\n"
        + "".join(f'{agent} = "{root}"\n' for agent, root in sorted(roots.items()))
        + f'[memory]\nindexDir = "{index}"\nhotSessions = {config.memory.hot_sessions}\n'
    )
    # as the command loads it: every registered agent's root, the file's or its default
    return path, load_config(path, defaults=default_roots())


def test_run_once_rebuild_and_always_on_catch_up_write_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a corpus of the three agents, malformed lines included, hot and cold sessions
    _, config = generated(
        tmp_path, sessions=24, mean_kb=6, seed=5, hot_sessions=5, malformed_lines=True
    )
    once_path, once = _config_at(tmp_path, config, "once")
    rebuilt_path, rebuilt = _config_at(tmp_path, config, "rebuilt")
    _, live = _config_at(tmp_path, config, "live")
    _, caught = _config_at(tmp_path, config, "caught")
    # When `run --once` builds one index, `rebuild` another (over an index it built first)
    assert main(["run", "--once", "--quiet", "--config", str(once_path)]) == 0
    assert main(["run", "--once", "--quiet", "--config", str(rebuilt_path)]) == 0
    assert main(["rebuild", "--quiet", "--config", str(rebuilt_path)]) == 0
    # ... and the always-on pipeline catches up from empty with a third
    with InlineRunner(live, RunSettings(workers=1)) as runner:
        runner.run_until_idle()
    # ... and a catch-up through the journal builds a fourth, in worker processes
    monkeypatch.setattr(catchup, "INLINE_BYTES", 0)
    assert catch_up(caught, processes=2).failed == 0
    indexes = (once, rebuilt, live, caught)
    manifests = {c.index_dir: open_snapshot(c.index_dir).manifest for c in indexes}
    # Then every index names the same sessions, skipped files and lexicon, in the same bytes
    reference = manifests[once.index_dir]
    assert reference.sessions and reference.lexicon
    assert any(s.tier == "hot" for s in reference.sessions)
    assert any(s.tier != "hot" for s in reference.sessions)
    for c in indexes[1:]:
        assert _portable(manifests[c.index_dir]) == _portable(reference), c.index_dir.name
        assert _records(c.index_dir, manifests[c.index_dir]) == _records(
            once.index_dir, reference
        ), c.index_dir.name
