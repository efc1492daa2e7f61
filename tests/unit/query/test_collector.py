"""Long-lived query processes raise the collector's thresholds before they serve."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from query import collector
from query.cli import main


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_raises_every_threshold_to_at_least_the_long_lived_ones() -> None:
    gc.set_threshold(700, 10, 10)
    collector.configure_for_long_life()
    assert gc.get_threshold() == collector.LONG_LIVED_THRESHOLDS


def test_never_lowers_a_threshold_already_raised() -> None:
    young, middle, full = collector.LONG_LIVED_THRESHOLDS
    gc.set_threshold(young * 2, 1, full * 3)
    collector.configure_for_long_life()
    assert gc.get_threshold() == (young * 2, middle, full * 3)


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_serve_and_mcp_configure_it_before_anything_else(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(collector, "configure_for_long_life", lambda: calls.append("gc"))
    missing = tmp_path / "absent.toml"
    # An unreadable configuration stops the command right after its start-up.
    assert main([command, "--config", str(missing)]) == 2
    assert calls == ["gc"]
