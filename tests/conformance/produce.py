"""Run one scenario with the real CLI and collect the session files it wrote.

``produce`` loads each step's turns into the fake model, runs the CLI (resuming when the step
says so) and checks that the model was asked exactly as many times as the script has turns: a
CLI that asked fewer times stopped early, one that asked more would have looped (the fake model
answers overruns with a final text, which ends any loop after one extra turn). With
``$SESSIONDEX_CONFORMANCE_CAPTURE`` set, the files are also copied to
``<capture>/<agent>/<scenario>/`` for people fixing the adapters.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conformance.agents import AgentFailed, Driver, Home, base_env
from tests.conformance.fake_model import FakeModel
from tests.conformance.scenarios import Scenario
from tests.conformance.toolchain import Toolchain

__all__ = ["PiBranch", "Produced", "capture", "produce", "produce_pi_branch", "record_types"]


class ScriptMismatch(AssertionError):
    """The CLI asked the fake model fewer or more times than the scenario's script has turns."""


@dataclass(frozen=True)
class Produced:
    scenario: Scenario
    home: Home
    files: tuple[Path, ...]
    outputs: tuple[str, ...]
    # the system-prompt marker reached the model (a writer that keeps no system prompt in its
    # files, such as omp, shows it read AGENTS.md this way)
    marker_sent: bool = False
    # files the writer leaves beside the conversation by design, holding none of it
    # (``gemini_resume_leftovers``); indexed, with ``no_entries``
    leftovers: tuple[Path, ...] = ()


def produce(scenario: Scenario, driver: Driver, model: FakeModel, base: Path) -> Produced:
    home = Home(base / scenario.agent / scenario.name, scenario.agent)
    if home.root.exists():
        shutil.rmtree(home.root)
    driver.prepare(home)
    if scenario.setup is not None:
        scenario.setup(driver, home)
    outputs = []
    marker_sent = False
    for number, step in enumerate(scenario.steps(home), 1):
        model.load(list(step.turns))
        outputs.append(driver.prompt(home, step.prompt, resume=step.resume, options=step.options))
        marker_sent = marker_sent or any(home.marker in json.dumps(r.body) for r in model.requests)
        if model.remaining or model.overruns:
            paths = [r.path for r in model.requests]
            raise ScriptMismatch(
                f"{scenario.key} step {number}: the CLI asked the model {len(paths)} times, "
                f"the script has {len(step.turns)} turns (requests: {paths}); CLI output:\n"
                f"{outputs[-1][-2000:]}"
            )
    files = tuple(home.session_files())
    leftovers = gemini_resume_leftovers(files) if scenario.agent == "gemini" else ()
    conversation = tuple(p for p in files if p not in leftovers)
    produced = Produced(scenario, home, conversation, tuple(outputs), marker_sent, leftovers)
    target = os.environ.get("SESSIONDEX_CONFORMANCE_CAPTURE")
    if target:
        capture(produced, Path(target))
    return produced


def gemini_resume_leftovers(files: Sequence[Path]) -> tuple[Path, ...]:
    """Gemini CLI (0.61.0) on ``--resume`` first opens a new recording named by the current
    minute and the resumed session's id, writes its header and the injected session context
    there, then goes on in the resumed file: a resume in a later minute than the one the
    session's file is named by leaves that new file behind, holding no conversation turn.
    These are the files of *files* holding no message record (only a header and ``$set``
    updates) whose session id another file of *files* holds with messages."""
    shapes: dict[Path, tuple[str | None, bool]] = {}
    for path in files:
        session_id, turns = None, False
        for line in path.read_bytes().splitlines():
            record = json.loads(line) if line.strip() else {}
            if "sessionId" in record and "type" not in record:
                session_id = session_id or record["sessionId"]
            turns = turns or record.get("type") in ("user", "gemini")
        shapes[path] = (session_id, turns)
    conversed = {sid for sid, turns in shapes.values() if turns and sid is not None}
    return tuple(p for p, (sid, turns) in shapes.items() if not turns and sid in conversed)


def capture(produced: Produced, target: Path) -> None:
    folder = target / produced.scenario.agent / produced.scenario.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for path in produced.files:
        relative = path.relative_to(produced.home.sessions)
        dest = folder / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        meta = path.with_suffix(".meta.json")
        if meta.exists():
            shutil.copy2(meta, dest.with_suffix(".meta.json"))


PI_BRANCH_SCRIPT = Path(__file__).with_name("pi_branch.mjs")


@dataclass(frozen=True)
class PiBranch:
    """A branched Pi session written by the SDK, and Pi's own view of its active path."""

    produced: Produced
    verdict: dict[str, Any]  # {file, leaf, branch: [{id, type, role}], context: [...], all: [...]}


def produce_pi_branch(scenario: Scenario, chain: Toolchain, base: Path) -> PiBranch:
    home = Home(base / scenario.agent / scenario.name, scenario.agent)
    if home.root.exists():
        shutil.rmtree(home.root)
    home.work.mkdir(parents=True)
    folder = home.sessions / "--branch--"
    folder.mkdir(parents=True)
    package = chain.pi.parent.parent / "@earendil-works" / "pi-coding-agent"
    argv = [str(chain.node_bin / "node"), str(PI_BRANCH_SCRIPT), str(package), str(home.work),
            str(folder)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=base_env(home))
    if done.returncode != 0:
        raise AgentFailed(f"pi_branch.mjs exited {done.returncode}:\n{done.stderr[-3000:]}")
    verdict = json.loads(done.stdout)
    produced = Produced(scenario, home, tuple(home.session_files()), (done.stdout,))
    target = os.environ.get("SESSIONDEX_CONFORMANCE_CAPTURE")
    if target:
        capture(produced, Path(target))
    return PiBranch(produced, verdict)


def record_types(files: tuple[Path, ...], agent: str) -> dict[str, int]:
    """How many records of each type the writer wrote, by its own typed fields only:
    Pi and omp ``type`` (+ ``message.role``), Claude ``type`` (+ ``attachment.type``), Codex
    ``type`` (+ ``payload.type``, + ``payload.item.type``), Gemini CLI ``type`` or the header /
    ``$set`` (+ its keys) / ``$rewindTo``, Qwen Code ``type`` (+ ``subtype``).
    ``ops/conformance --latest`` diffs these."""
    counts: dict[str, int] = {}
    for path in files:
        for line in path.read_bytes().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                name = "(not json)"
            else:
                name = _record_type(record, agent) if isinstance(record, dict) else "(not object)"
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def _record_type(record: dict[str, Any], agent: str) -> str:
    parts = [str(record.get("type"))]
    if agent in ("pi", "omp"):
        message = record.get("message")
        if isinstance(message, dict):
            parts.append(str(message.get("role")))
    elif agent == "claude":
        attachment = record.get("attachment")
        if isinstance(attachment, dict):
            parts.append(str(attachment.get("type")))
    elif agent == "gemini":
        # a header, a message (``type``), or an update: named by its ``$`` key
        shape = next((k for k in ("$set", "$rewindTo") if k in record), None)
        if shape is not None or "sessionId" in record:
            parts = [shape or "header"]
        if shape == "$set" and isinstance(record["$set"], dict):
            parts += sorted(record["$set"])
    elif agent == "qwen":
        if "subtype" in record:
            parts.append(str(record["subtype"]))
    else:
        payload = record.get("payload")
        if isinstance(payload, dict) and "type" in payload:
            parts.append(str(payload["type"]))
            item = payload.get("item")
            if isinstance(item, dict) and "type" in item:
                parts.append(str(item["type"]))
    return "/".join(parts)
