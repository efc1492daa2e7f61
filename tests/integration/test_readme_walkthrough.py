"""The README, followed literally by a newcomer in a clean home folder (issue 20).

Every ``sh`` block of README.md runs, line by line as written, with ``HOME`` a temporary
folder that holds sessions at the agents' default roots, and the README's Python client
example runs against it. The sessions are twice what a user could have: the project's own
generated Pi + Claude Code + Codex corpus (always there), and the public real sessions of
``../shared/fixtures/real`` laid out as agent roots (skipped, saying so, in a clone without
``../shared``). A newcomer who starts the always-on pipeline first, instead of
``pipeline run --once``, is walked too: until the first generation is published ``query``
exits 4 ("no index yet"), which the walk waits out, as a person would, before every query
command of the README must succeed. What must be substituted is, and each substitution says
why:

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

import configparser
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from devtools.corpus import main as corpus_main
from store.exits import EXIT_NO_INDEX
from store.reasons import MAX_ENTRY_CHARS, READ_NOTES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REAL = ROOT.parent / "shared" / "fixtures" / "real"
# the agents' default roots in a home folder (README's table)
ROOTS = {"pi": ".pi/agent/sessions", "claude": ".claude/projects", "codex": ".codex/sessions"}
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


def _generated(home: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    assert (
        corpus_main(
            ["--out", str(corpus), "--sessions", "40", "--mean-kb", "12", "--seed", "11"]
            + ["--agents", "pi,claude,codex"]
        )
        == 0
    )
    for agent, root in ROOTS.items():
        (home / root).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(corpus / agent, home / root)


def _real(home: Path) -> None:
    """The real sessions, one project folder per file, as the writers lay them out."""
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is absent (a user's clone has no ../shared): generated sessions only")
    for agent, root in ROOTS.items():
        for n, source in enumerate(sorted((REAL / agent).glob("*.jsonl"))):
            folder = home / root / ("2025/01/01" if agent == "codex" else f"-work-real-{n}")
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, folder / source.name)


@pytest.fixture(params=["generated", "real"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    if request.param == "real":
        _real(home)
    else:
        _generated(home, tmp_path)
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
    # and the answers do not cry wolf: no note (a display cut, how a session was read) is
    # reported as a gap, on the generated sessions or the real ones
    done = subprocess.run(
        ["query", "recall", "the", "--scope", "global", "--json"],
        env=env_for(home),
        capture_output=True,
        timeout=600,
        check=True,
    )
    coverage = orjson.loads(done.stdout)["coverage"]
    assert not set(coverage["reasons"]) & (READ_NOTES | {MAX_ENTRY_CHARS}), coverage


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


def _query_commands() -> list[str]:
    """The README's first block's `query` commands: what a newcomer asks first."""
    return [c for c in sh_blocks(README.read_text())[1] if c.startswith("query ")]


def test_a_newcomer_who_starts_the_always_on_pipeline_first(home: Path) -> None:
    # Given a clean HOME where the pipeline is started as its systemd unit starts it, with no
    # `pipeline run --once` before (the README's links in place, a default config)
    env = env_for(home)
    for command in (
        "mkdir -p ~/.local/bin ~/.local/share",
        f"ln -s {sys.prefix} ~/.local/share/sessiondex-venv",
    ):
        subprocess.run(["bash", "-euc", command], env=env, check=True)
    link = sh_blocks(README.read_text())[1][3]
    assert link.startswith("ln -sf ~/.local/share/sessiondex-venv/bin/pipeline"), link
    subprocess.run(["bash", "-euc", link], env=env, check=True)
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read_string((ROOT / "ops/sessiondex-pipeline.service").read_text())
    start = unit["Service"]["ExecStart"].replace("%h", str(home))
    log = (home.parent / "pipeline.log").open("wb")
    pipeline = subprocess.Popen(start.split(), env=env, stdout=log, stderr=log)
    try:
        # When the newcomer asks before the first generation is out, `query` says "no index
        # yet" (exit 4) and nothing else; they ask again until it answers
        first = _ask_until_indexed(env, pipeline)
        assert first.returncode == 0, first.stderr[-4000:]
        assert orjson.loads(first.stdout)["sessions"], first.stdout[-2000:]
        # Then every query command the README gives succeeds as written beside it
        for command in _query_commands():
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        # and doctor sees the pipeline running
        doctor = subprocess.run(
            ["pipeline", "doctor", "--json"], env=env, capture_output=True, timeout=600
        )
        checks = {c["name"]: c["level"] for c in orjson.loads(doctor.stdout)["checks"]}
        assert checks["pipeline"] == "ok", doctor.stdout[-2000:]
    finally:
        pipeline.send_signal(signal.SIGTERM)
        code = pipeline.wait(timeout=600)
        log.close()
    assert code == 0, (home.parent / "pipeline.log").read_text()[-4000:]


def _ask_until_indexed(
    env: dict[str, str], pipeline: subprocess.Popen[bytes]
) -> subprocess.CompletedProcess[str]:
    """`query sessions`, asked again while it exits 4 (no index yet); no clock: on a loaded
    machine the first generation takes as long as it takes, and a pipeline that stopped ends
    the wait instead."""
    while True:
        done = subprocess.run(
            ["query", "sessions", "--scope", "global", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != EXIT_NO_INDEX:
            return done
        assert pipeline.poll() is None, "the pipeline stopped before publishing an index"
        time.sleep(0.2)
