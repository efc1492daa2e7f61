from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.query.kit import Kit


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    k = Kit(tmp_path / "k")
    yield k
    k.close()
