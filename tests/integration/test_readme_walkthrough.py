"""The README, followed literally by a newcomer in a clean home folder (issue 20).

Every ``sh`` block of README.md runs, line by line as written, with ``HOME`` a temporary
folder that holds a generated Pi + Claude Code + Codex corpus at the agents' default roots,
and the README's Python client example runs against it. What must be substituted is, and each
substitution says why:

* the venv + ``pip install -e .`` lines: the test links the environment it runs in instead of
  installing again from the package registry (``ops/test`` already does that install; the
  check of what counts as installed is ``tests/unit/ops``);
* commands that act on the machine (``systemctl``, ``journalctl``, ``launchctl``, ``claude``,
  ``pi``)
  are stubs on ``PATH`` that record their arguments: the test checks what they were given;
* servers that run until stopped (``query ui``, ``query serve --http``) are started, must
  print their URL, and are stopped with SIGTERM, which must end them cleanly; a command that
  uses the UI's ``$TOKEN`` runs against a ``query ui`` started for it;
* blocks that run the project's own long scripts (``ops/demo``, ``ops/test``, ``ops/bench``,
  ``tox``) are not run here: ``ops/test`` *is* the suite (``.ci/run``), the bench is measured
  apart, and ``ops/demo`` writes ``demo-out/`` into the checkout, which the suite must not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.corpus import main as corpus_main

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NOT_RUN = ("ops/demo", "ops/test", "ops/bench", "tox ", "export PYENV_VERSION")
# Servers that run until stopped: each is started, must print its URL, and is stopped again.
SERVERS = ("query ui", "query serve --http")
_SERVED = """out=$(mktemp); {command} >"$out" 2>&1 & pid=$!; ok=1
for _ in $(seq 600); do
  if grep -q 'sessiondex UI: http://' "$out"; then ok=0; break; fi
  kill -0 "$pid" 2>/dev/null || break; sleep 0.1
done
kill -TERM "$pid" 2>/dev/null; wait "$pid"; stopped=$?; cat "$out"
[ "$ok" -eq 0 ] && [ "$stopped" -eq 0 ]"""
_CLIENT = """out=$(mktemp); query ui --port 8765 >"$out" 2>&1 & pid=$!
for _ in $(seq 600); do grep -q 'token=' "$out" && break; sleep 0.1; done
TOKEN=$(sed -n 's/.*token=//p' "$out"); status=0
{command} || status=$?
kill -TERM "$pid"; wait "$pid"; exit "$status"
"""
STUBS = ("systemctl", "journalctl", "launchctl", "claude", "pi")


def sh_blocks(text: str) -> list[list[str]]:
    """The README's ``sh`` blocks as logical commands (a ``for … done`` loop is one)."""
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        commands: list[str] = []
        loop: list[str] = []
        held = ""
        for raw in body.splitlines():
            if raw.rstrip().endswith("\\"):  # continued on the next line: one command
                held += raw.rstrip()[:-1] + " "
                continue
            line, held = held + raw, ""
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if loop or line.startswith("for "):
                loop.append(line)
                if line.strip() == "done":
                    commands.append("\n".join(loop))
                    loop = []
                continue
            commands.append(line)
        blocks.append(commands)
    return blocks


def substitute(command: str, venv: Path) -> str | None:
    """The command to run for a README command (None: not run here, see the module doc)."""
    if command.startswith(NOT_RUN):
        return None
    if command.startswith(SERVERS):
        return _SERVED.format(command=command.split("#", 1)[0].strip())
    if "$TOKEN" in command:  # a client of the web UI's API: run against a UI started for it
        return _CLIENT.format(command=command)
    if command.startswith("python3 -m venv ~/.local/share/sessiondex-venv"):
        return f"mkdir -p ~/.local/share && ln -s {venv} ~/.local/share/sessiondex-venv"
    if command.startswith("~/.local/share/sessiondex-venv/bin/pip install -e ."):
        return "test -x ~/.local/share/sessiondex-venv/bin/pipeline"
    return command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    corpus = tmp_path / "corpus"
    assert (
        corpus_main(
            ["--out", str(corpus), "--sessions", "40", "--mean-kb", "12", "--seed", "11"]
            + ["--agents", "pi,claude,codex"]
        )
        == 0
    )
    for agent, root in (
        ("pi", ".pi/agent/sessions"),
        ("claude", ".claude/projects"),
        ("codex", ".codex/sessions"),
    ):
        (home / root).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(corpus / agent, home / root)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in STUBS:
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "$0 $*" >> "{tmp_path}/stub-calls"\n')
        stub.chmod(0o755)
    return home


def env_for(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR", "TERM")}
    stubs = home.parent / "stubs"
    # ~/.local/bin first: the README's own links must be what answers `pipeline` and `query`
    path = f"{home}/.local/bin:{stubs}:/usr/local/bin:/usr/bin:/bin"
    return {**keep, "HOME": str(home), "PATH": path}


def test_every_readme_command_succeeds_as_written(home: Path) -> None:
    venv = Path(sys.prefix)
    ran: list[str] = []
    for commands in sh_blocks(README.read_text()):
        for command in commands:
            script = substitute(command, venv)
            if script is None:
                continue
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=ROOT,
                env=env_for(home),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
            ran.append(command)
    # the walk-through reached the commands that matter
    assert any(c.startswith("pipeline run --once") for c in ran)
    assert any(c.startswith("pipeline doctor") for c in ran)
    assert any(c.startswith('query recall "flaky test"') for c in ran)
    # the launchd plists were written with the home folder in, and given to launchctl
    for name in ("pipeline", "query"):
        plist = (home / f"Library/LaunchAgents/com.sessiondex.{name}.plist").read_text()
        assert "__HOME__" not in plist and f"{home}/.local/bin/{name}" in plist
    calls = (home.parent / "stub-calls").read_text()
    assert "launchctl bootstrap gui/" in calls and "systemctl --user enable --now" in calls
    assert "pi mcp add sessiondex -- query mcp" in calls
    assert (home / ".config/systemd/user/sessiondex-pipeline.service").exists()
    assert (home / ".local/share/bash-completion/completions/query").stat().st_size > 1000


def test_the_readme_walk_example_collects_something(home: Path) -> None:
    # Given the index the README's commands build
    env = env_for(home)
    env["PATH"] = f"{sys.prefix}/bin:{env['PATH']}"
    subprocess.run(["pipeline", "run", "--once", "-q"], env=env, check=True, timeout=600)
    # When the README's Python example runs as written
    example = re.search(
        r"```python\n(from query.client import Memory\n.*?)```", README.read_text(), re.S
    )
    assert example is not None
    done = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # Then the failed calls' files were found: a list that is not empty
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("[") and last != "[]", done.stdout[-2000:]
