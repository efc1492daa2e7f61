"""Our own MCP server, registered with the real clients the way the README says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.agents import DRIVERS, Home
from tests.conformance.runs import Runs

pytestmark = pytest.mark.conformance

QUERY = Path(sys.executable).parent / "query"


def _registered(runs: Runs, agent: str, tmp_path: Path, *options: str) -> tuple[Home, str]:
    indexed = runs.indexed(f"{agent}/shell")  # any real index will do
    driver = DRIVERS[agent](runs.chain, runs.model.url)
    home = Home(tmp_path / agent, agent)
    driver.prepare(home)
    command = [str(QUERY), "mcp", "--config", str(indexed.config_path)]
    driver.mcp_add(home, "sessiondex", command, *options)
    return home, driver.mcp_list(home)


@pytest.mark.parametrize("exposure", [(), ("--exposure", "direct")], ids=["codemode", "direct"])
def test_pi_mcp_list_reports_sessiondex_connected(
    runs: Runs, tmp_path: Path, exposure: tuple[str, ...]
) -> None:
    _, listing = _registered(runs, "pi", tmp_path, *exposure)
    mode = exposure[1] if exposure else "codemode"
    line = next((x for x in listing.splitlines() if x.startswith("sessiondex:")), "")
    assert line.startswith("sessiondex: connected,") and f"({mode}," in line, (
        f"pi mcp list does not report sessiondex connected with {mode} exposure:\n{listing}"
    )
    assert "memory_recall" in listing, f"pi mcp list shows no memory_recall tool:\n{listing}"


def test_claude_mcp_list_reports_sessiondex_connected(runs: Runs, tmp_path: Path) -> None:
    _, listing = _registered(runs, "claude", tmp_path)
    line = next((x for x in listing.splitlines() if "sessiondex" in x), "")
    assert line.endswith("✔ Connected"), (
        f"claude mcp list does not report sessiondex connected:\n{listing}"
    )
