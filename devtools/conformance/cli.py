"""``ops/conformance [--latest] [pytest args...]``.

The pinned run is ``pytest -m conformance tests/conformance`` with a JSON report
(``$SESSIONDEX_CONFORMANCE_REPORT``, written by the suite's conftest). ``--latest`` asks npm for
the newest version of each CLI (``npm view <pkg> version``), runs the same suite with those
(``$SESSIONDEX_CONFORMANCE_VERSIONS``) and prints what changed: versions, the assertions whose
outcome differs, and record types the new writers write that the pinned ones did not (or no
longer write). The exit code is the pinned run's, or with --latest the latest run's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devtools import ROOT
from tests.conformance.toolchain import PINNED, RUNTIMES

__all__ = ["compare", "latest_versions", "main"]


class LookupFailed(RuntimeError):
    """npm could not say which version is the newest."""


def latest_versions() -> dict[str, str]:
    """The newest published version of each CLI; Node and Bun stay on their pins (runtimes)."""
    npm = shutil.which("npm")
    if npm is None:
        raise LookupFailed("npm is not on PATH")
    found = dict(PINNED)
    for package in PINNED:
        if package in RUNTIMES:
            continue
        done = subprocess.run(
            [npm, "view", package, "version"], capture_output=True, text=True, timeout=120
        )
        version = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
        if not version:
            raise LookupFailed(f"npm view {package} version failed: {done.stderr.strip()[-500:]}")
        found[package] = version[0]
    return found


def run_suite(versions: dict[str, str], report: Path, pytest_args: list[str]) -> tuple[int, float]:
    env = dict(os.environ)
    env["SESSIONDEX_CONFORMANCE_REPORT"] = str(report)
    env["SESSIONDEX_CONFORMANCE_VERSIONS"] = ",".join(f"{k}={v}" for k, v in versions.items())
    argv = [sys.executable, "-m", "pytest", "-m", "conformance", "tests/conformance", "-q",
            "-p", "no:cacheprovider", *pytest_args]  # fmt: skip
    started = time.monotonic()
    code = subprocess.run(argv, cwd=ROOT, env=env).returncode
    return code, time.monotonic() - started


def compare(pinned: dict[str, Any], latest: dict[str, Any]) -> list[str]:
    """Lines saying what differs between two suite reports."""
    lines: list[str] = []
    for package, version in sorted(latest["versions"].items()):
        old = pinned["versions"].get(package)
        if old != version:
            lines.append(f"version  {package}: {old} -> {version}")
    tests = sorted(set(pinned["tests"]) | set(latest["tests"]))
    for test in tests:
        was = pinned["tests"].get(test, {"outcome": "absent", "message": ""})
        now = latest["tests"].get(test, {"outcome": "absent", "message": ""})
        if was["outcome"] != now["outcome"]:
            lines.append(f"assert   {test}: {was['outcome']} -> {now['outcome']}")
            if now["message"]:
                lines.append(f"         {now['message']}")
    for scenario in sorted(set(pinned["recordTypes"]) | set(latest["recordTypes"])):
        old_types = set(pinned["recordTypes"].get(scenario, {}))
        new_types = set(latest["recordTypes"].get(scenario, {}))
        for name in sorted(new_types - old_types):
            lines.append(f"new type {scenario}: {name}")
        for name in sorted(old_types - new_types):
            lines.append(f"gone     {scenario}: {name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    latest = "--latest" in args
    pytest_args = [a for a in args if a != "--latest"]
    with tempfile.TemporaryDirectory(prefix="sessiondex-conformance-") as tmp:
        pinned_report = Path(tmp) / "pinned.json"
        code, seconds = run_suite(dict(PINNED), pinned_report, pytest_args)
        print(f"conformance (pinned {_describe(PINNED)}): exit {code}, {seconds:.1f} s")
        if not latest:
            return code
        try:
            newest = latest_versions()
        except LookupFailed as exc:
            print(f"conformance --latest: {exc}", file=sys.stderr)
            return 1
        if newest == PINNED:
            print("conformance --latest: the pinned versions are the newest; nothing changed")
            return code
        latest_report = Path(tmp) / "latest.json"
        code, seconds = run_suite(newest, latest_report, pytest_args)
        print(f"conformance (latest {_describe(newest)}): exit {code}, {seconds:.1f} s")
        if not (pinned_report.exists() and latest_report.exists()):
            print(
                "conformance --latest: a run wrote no report; nothing to compare", file=sys.stderr
            )
            return code or 1
        changes = compare(json.loads(pinned_report.read_text()),
                          json.loads(latest_report.read_text()))  # fmt: skip
        print("what changed from pinned to latest:")
        for line in changes or ["nothing but the versions"]:
            print(f"  {line}")
        return code


def _describe(versions: dict[str, str]) -> str:
    named = (f"{k.rsplit('/', 1)[-1]}@{v}" for k, v in versions.items() if k not in RUNTIMES)
    return ", ".join(named)
