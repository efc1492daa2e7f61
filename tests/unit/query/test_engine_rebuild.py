"""An engine follows an index that was wiped and built again from generation 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit


@pytest.mark.parametrize("changes", [False, True])
def test_a_rebuilt_index_with_the_same_generation_number_is_loaded(
    tmp_path: Path, changes: bool
) -> None:
    kit = Kit(tmp_path / "k")
    kit.session("a", [header("sa", CWD, T0), user("u1", None, "first alphaword", T0)])
    kit.build()
    from query.engine import Engine

    engine = Engine(kit.config, changes=changes)
    try:
        assert engine.recall({"query": "alphaword"}, cwd=CWD)["total"] == 1
        shutil.rmtree(kit.config.index_dir)
        kit.session("a", [header("sa", CWD, T0), user("u1", None, "second betaword", T0)])
        kit.build()  # generation 1 again, other content
        assert engine.refresh().generation == 1
        assert engine.recall({"query": "betaword"}, cwd=CWD)["total"] == 1
        assert engine.recall({"query": "alphaword"}, cwd=CWD)["total"] == 0
    finally:
        engine.close()
        kit.close()
