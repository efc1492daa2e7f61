"""The service units in ops/: systemd's ordering rules and `systemd-analyze verify`."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

OPS = Path(__file__).resolve().parents[3] / "ops"
UNITS = ("sessiondex-pipeline.service", "sessiondex-query.service")


def _unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def ordering_cycles(text: str) -> list[str]:
    """Targets a unit is both installed into (WantedBy/RequiredBy) and ordered after: when it
    is enabled the target waits for the unit, which waits for the target."""
    unit = _unit(text)
    installed = set()
    for key in ("WantedBy", "RequiredBy"):
        installed.update(unit.get("Install", key, fallback="").split())
    after = set(unit.get("Unit", "After", fallback="").split())
    return sorted(installed & after)


def test_the_rule_catches_the_cycle_the_pipeline_unit_had() -> None:
    bad = "[Unit]\nAfter=default.target\n[Service]\nExecStart=/bin/true\n"
    assert ordering_cycles(bad + "[Install]\nWantedBy=default.target\n") == ["default.target"]
    assert ordering_cycles(bad + "[Install]\nWantedBy=multi-user.target\n") == []


@pytest.mark.parametrize("name", UNITS)
def test_no_unit_is_ordered_after_the_target_it_is_installed_into(name: str) -> None:
    assert ordering_cycles((OPS / name).read_text()) == []


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze absent")
def test_systemd_analyze_verifies_both_units(tmp_path: Path) -> None:
    # verify checks that ExecStart is executable; the installed commands live in a venv here
    for name in UNITS:
        lines = (OPS / name).read_text().splitlines()
        fixed = ["ExecStart=/bin/true" if ln.startswith("ExecStart=") else ln for ln in lines]
        (tmp_path / name).write_text("\n".join(fixed) + "\n")
    result = subprocess.run(
        ["systemd-analyze", "verify", *(str(tmp_path / n) for n in UNITS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "sessiondex" not in result.stderr, result.stderr


def test_exits_a_restart_cannot_fix_are_not_retried() -> None:
    from store.exits import EXIT_BOOT_FAILED, EXIT_NOT_AN_INDEX, EXIT_USAGE

    service = _unit((OPS / "sessiondex-pipeline.service").read_text())["Service"]
    prevent = service["RestartPreventExitStatus"].split()
    assert {str(EXIT_USAGE), str(EXIT_BOOT_FAILED), str(EXIT_NOT_AN_INDEX)} <= set(prevent)
