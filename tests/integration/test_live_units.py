"""The service definitions in ops/ that run `pipeline run` and `query serve` always on."""

from __future__ import annotations

import configparser
import plistlib
from pathlib import Path

import pytest

from pipeline.cli import EXIT_BOOT_FAILED, EXIT_USAGE
from pipeline.settings import RunSettings

OPS = Path(__file__).resolve().parents[2] / "ops"


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((OPS / name).read_text())
    return parser


@pytest.mark.parametrize(
    ("name", "command"),
    [("sessiondex-pipeline.service", "pipeline run"), ("sessiondex-query.service", "query serve")],
)
def test_systemd_units_run_the_commands_and_restart_only_on_failure(
    name: str, command: str
) -> None:
    service = unit(name)["Service"]
    assert service["ExecStart"].endswith(command)
    assert service["Restart"] == "on-failure"
    assert service["UMask"] == "0077"
    assert str(EXIT_USAGE) in service["RestartPreventExitStatus"].split()


def test_the_pipeline_unit_lets_the_supervisor_stop_its_processes_in_order() -> None:
    service = unit("sessiondex-pipeline.service")["Service"]
    # SIGTERM to the supervisor only; the rest is SIGKILLed only after the timeout
    assert service["KillMode"] == "mixed"
    # A process that cannot start is not retried in a loop
    assert str(EXIT_BOOT_FAILED) in service["RestartPreventExitStatus"].split()
    # The supervisor stops in two phases (workers, then the publisher), inside the timeout
    assert 2 * RunSettings().shutdown_s < int(service["TimeoutStopSec"])


@pytest.mark.parametrize(
    ("name", "argument"),
    [("com.sessiondex.pipeline.plist", "run"), ("com.sessiondex.query.plist", "serve")],
)
def test_launchd_agents_run_the_commands_and_restart_only_after_a_crash(
    name: str, argument: str
) -> None:
    agent = plistlib.loads((OPS / name).read_bytes())
    assert agent["Label"] == name.removesuffix(".plist")
    assert agent["ProgramArguments"][1:] == [argument]
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["Umask"] == 0o077
    if argument == "run":
        assert 2 * RunSettings().shutdown_s < agent["ExitTimeOut"]
