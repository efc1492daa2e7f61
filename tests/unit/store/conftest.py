from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(params=[0o000, 0o077, 0o277], ids=["umask000", "umask077", "umask277"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run the test under each umask; file and folder modes must not depend on it."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)
