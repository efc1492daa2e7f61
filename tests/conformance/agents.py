"""Drivers for the real CLIs: a scratch home per run, the fake model wired in, one prompt per call.

Each driver writes the agent's own configuration into a scratch ``HOME`` (``CODEX_HOME`` for
Codex) so that nothing reads or touches a real home, points the agent at the fake model, plants
a unique *system marker* in the project's ``AGENTS.md`` / ``CLAUDE.md`` (and Pi's appended
system prompt) so the assertions can prove that system prompts never become conversation text,
and runs the CLI non-interactively with a bounded timeout. A CLI that exits non-zero or runs
out of time raises ``AgentFailed`` with its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.toolchain import Toolchain

__all__ = ["DRIVERS", "MCP_SERVER", "AgentFailed", "Driver", "Home", "base_env"]

RUN_TIMEOUT_S = 180
MCP_STUB = Path(__file__).with_name("mcp_stub.py")
MCP_SERVER = "needle"


class AgentFailed(RuntimeError):
    """A CLI run exited non-zero or timed out."""


@dataclass(frozen=True)
class Home:
    """A scratch home for one scenario of one agent."""

    root: Path
    agent: str

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def marker(self) -> str:
        """A word planted only in system-prompt sources (AGENTS.md, CLAUDE.md, Pi's prompt)."""
        return f"SYSMARK{self.agent.upper()}Q7"

    @property
    def sessions(self) -> Path:
        return {
            "pi": self.root / ".pi" / "agent" / "sessions",
            "claude": self.root / ".claude" / "projects",
            "codex": self.root / ".codex" / "sessions",
            "omp": self.root / ".omp" / "agent" / "sessions",
            "gemini": self.root / ".gemini" / "tmp",
            "qwen": self.root / ".qwen" / "projects",
            "copilot": self.root / ".copilot" / "session-state",
            # Aider keeps its history in the project folder it runs in
            "aider": self.root / "work",
            # OpenCode keeps every session in one SQLite file there (XDG_DATA_HOME)
            "opencode": self.root / ".local" / "share" / "opencode",
        }[self.agent]

    def session_files(self) -> list[Path]:
        if not self.sessions.is_dir():
            return []
        pattern = {"aider": ".aider.chat.history.md", "opencode": "opencode*.db"}.get(
            self.agent, "*.jsonl"
        )
        return sorted(p for p in self.sessions.rglob(pattern) if p.is_file())


def base_env(home: Home, extra_path: Path | None = None) -> dict[str, str]:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    if extra_path is not None:
        path = f"{extra_path}{os.pathsep}{path}"
    return {
        "PATH": path,
        "HOME": str(home.root),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    try:
        done = subprocess.run(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AgentFailed(f"{argv[0]} timed out after {RUN_TIMEOUT_S} s: {argv[1:]}") from exc
    if done.returncode != 0:
        raise AgentFailed(
            f"{' '.join(argv)} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-3000:]}"
        )
    return done.stdout


class Driver:
    """One agent CLI. Subclasses say how to configure, prompt, resume and register MCP."""

    agent: str

    def __init__(self, chain: Toolchain, model_url: str) -> None:
        self.chain = chain
        self.model_url = model_url

    def prepare(self, home: Home) -> None:
        home.work.mkdir(parents=True, exist_ok=True)
        text = f"Project rules. Always be terse. {home.marker}\n"
        (home.work / "AGENTS.md").write_text(text)
        (home.work / "CLAUDE.md").write_text(text)
        (home.work / "GEMINI.md").write_text(text)
        (home.work / "QWEN.md").write_text(text)
        (home.work / "notes.txt").write_text("notes for the conformance read call\n")

    def env(self, home: Home) -> dict[str, str]:
        return base_env(home)

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        raise NotImplementedError

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        raise NotImplementedError

    def mcp_list(self, home: Home) -> str:
        raise NotImplementedError

    def stub_command(self) -> list[str]:
        # -I -S: no site packages to import, so the stub answers before Claude Code's first
        # model request leaves even on a loaded machine (it abandons a server still starting)
        return [sys.executable, "-I", "-S", str(MCP_STUB)]


class PiDriver(Driver):
    agent = "pi"

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        agent_dir = home.root / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        models = {
            "providers": {
                "fake": {
                    "baseUrl": f"{self.model_url}/v1",
                    "api": "openai-completions",
                    "apiKey": "x",
                    "models": [{"id": "fake-1", "cost": zero}],
                }
            }
        }
        (agent_dir / "models.json").write_text(json.dumps(models))

    def env(self, home: Home) -> dict[str, str]:
        return base_env(home, self.chain.node_bin)

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.pi), "-p"]
        if resume:
            argv.append("-c")
        argv += ["--provider", "fake", "--model", "fake-1"]
        argv += ["--append-system-prompt", f"Appended rule {home.marker}", *options, text]
        return _run(argv, self.env(home), home.work)

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        _run([str(self.chain.pi), "mcp", "add", name, *options, "--", *command],
             self.env(home), home.work)  # fmt: skip

    def mcp_list(self, home: Home) -> str:
        return _run([str(self.chain.pi), "mcp", "list"], self.env(home), home.work)


class ClaudeDriver(Driver):
    agent = "claude"

    def env(self, home: Home) -> dict[str, str]:
        return {
            **base_env(home),
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        # The prompt goes before --allowedTools, which would otherwise take it as a tool name.
        argv = [str(self.chain.claude), "-p"]
        if resume:
            argv.append("--continue")
        argv += [text, *options]
        return _run(argv, self.env(home), home.work)

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        _run([str(self.chain.claude), "mcp", "add", *options, name, "--", *command],
             self.env(home), home.work)  # fmt: skip

    def mcp_list(self, home: Home) -> str:
        return _run([str(self.chain.claude), "mcp", "list"], self.env(home), home.work)


class CodexDriver(Driver):
    agent = "codex"

    def codex_home(self, home: Home) -> Path:
        return home.root / ".codex"

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        codex_home = self.codex_home(home)
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "fake-1"\n'
            'model_provider = "fake"\n'
            "check_for_update_on_startup = false\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{self.model_url}/v1"\n'
            'env_key = "FAKE_API_KEY"\n'
            'wire_api = "responses"\n'
            "[analytics]\n"
            "enabled = false\n"
        )

    def env(self, home: Home) -> dict[str, str]:
        return {**base_env(home), "CODEX_HOME": str(self.codex_home(home)), "FAKE_API_KEY": "x"}

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.codex), "exec", "--skip-git-repo-check", *options]
        argv += ["resume", "--last", text] if resume else [text]
        return _run(argv, self.env(home), home.work)

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        _run([str(self.chain.codex), "mcp", "add", *options, name, "--", *command],
             self.env(home), home.work)  # fmt: skip

    def mcp_list(self, home: Home) -> str:
        return _run([str(self.chain.codex), "mcp", "list"], self.env(home), home.work)


class OmpDriver(Driver):
    """Oh My Pi: ``~/.omp/agent/models.yml`` declares the fake model as an OpenAI Chat
    Completions provider, ``~/.omp/agent/mcp.json`` the MCP servers; ``--no-title`` keeps the
    session title from asking the model for one (a request the script does not plan)."""

    agent = "omp"

    def agent_dir(self, home: Home) -> Path:
        return home.root / ".omp" / "agent"

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        agent_dir = self.agent_dir(home)
        agent_dir.mkdir(parents=True, exist_ok=True)
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        models = {
            "providers": {
                "fake": {
                    "baseUrl": f"{self.model_url}/v1",
                    "api": "openai-completions",
                    "apiKey": "x",
                    "auth": "apiKey",
                    "models": [{"id": "fake-1", "cost": zero}],
                }
            }
        }
        # YAML is a superset of JSON: models.yml takes this document as it is
        (agent_dir / "models.yml").write_text(json.dumps(models))

    def env(self, home: Home) -> dict[str, str]:
        return base_env(home, self.chain.bun_bin)

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.omp), "-p"]
        if resume:
            argv.append("-c")
        argv += ["--model", "fake/fake-1", "--no-title"]
        argv += ["--append-system-prompt", f"Appended rule {home.marker}", *options, text]
        return _run(argv, self.env(home), home.work)

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        path = self.agent_dir(home) / "mcp.json"
        config = json.loads(path.read_text()) if path.exists() else {"mcpServers": {}}
        config["mcpServers"][name] = {"command": command[0], "args": command[1:]}
        path.write_text(json.dumps(config))


# Both Gemini-family CLIs read ``settings.json`` from their home folder: the auth type (an API
# key, so no login is attempted), folder trust off (else ``--yolo`` is overridden in a fresh
# folder), and no telemetry, usage statistics or update checks (loopback only).
_GEMINI_SETTINGS = {
    "security": {"folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}


def _settings(folder: Path, auth: str, **more: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    settings = json.loads(json.dumps(_GEMINI_SETTINGS))
    settings["security"]["auth"] = {"selectedType": auth}
    settings.update(more)
    (folder / "settings.json").write_text(json.dumps(settings))


class GeminiDriver(Driver):
    """Gemini CLI: the Gemini API at ``GOOGLE_GEMINI_BASE_URL`` (the fake model's
    ``streamGenerateContent``) with a dummy ``GEMINI_API_KEY``; ``-p`` runs one prompt,
    ``--resume latest`` continues the project's newest session in the same file."""

    agent = "gemini"

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        _settings(home.root / ".gemini", "gemini-api-key")

    def env(self, home: Home) -> dict[str, str]:
        return {**base_env(home), "GEMINI_API_KEY": "dummy",
                "GOOGLE_GEMINI_BASE_URL": self.model_url}  # fmt: skip

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.gemini), *(("--resume", "latest") if resume else ())]
        argv += ["-p", text, "--yolo", "-m", "fake-1", *options]
        return _run(argv, self.env(home), home.work)


class QwenDriver(Driver):
    """Qwen Code: an OpenAI-compatible provider (``OPENAI_BASE_URL``, the fake model's Chat
    Completions) on Node 22; ``--continue`` resumes the project's newest session in the same
    file."""

    agent = "qwen"

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        # Managed auto-memory asks the model to extract memories after a turn: a request the
        # script does not plan
        _settings(home.root / ".qwen", "openai", memory={"enableManagedAutoMemory": False})

    def env(self, home: Home) -> dict[str, str]:
        return {**base_env(home, self.chain.node_bin), "OPENAI_API_KEY": "dummy",
                "OPENAI_BASE_URL": f"{self.model_url}/v1", "OPENAI_MODEL": "fake-1",
                "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
                # else a session's first answer is followed by a request for a title, one the
                # script does not plan
                "QWEN_DISABLE_AUTO_TITLE": "1"}  # fmt: skip

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.qwen), *(("--continue",) if resume else ())]
        argv += ["-p", text, "--yolo", "-m", "fake-1", *options]
        return _run(argv, self.env(home), home.work)


class CopilotDriver(Driver):
    """GitHub Copilot CLI: its bring-your-own-model variables point it at the fake model as an
    OpenAI Chat Completions provider (``COPILOT_PROVIDER_*``), and ``COPILOT_OFFLINE=true``
    keeps it off GitHub's services, so no GitHub sign-in is needed. ``--allow-all-tools``
    runs tools without asking (``-p`` mode cannot ask); MCP servers go to
    ``~/.copilot/mcp-config.json`` through ``copilot mcp add``."""

    agent = "copilot"

    def env(self, home: Home) -> dict[str, str]:
        return {
            **base_env(home),
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_BASE_URL": f"{self.model_url}/v1",
            "COPILOT_PROVIDER_API_KEY": "x",
            "COPILOT_PROVIDER_MODEL_ID": "fake-1",
        }

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.chain.copilot), "-p", text, "--allow-all-tools"]
        if resume:
            argv.append("--continue")
        return _run([*argv, *options], self.env(home), home.work)

    def mcp_add(self, home: Home, name: str, command: list[str], *options: str) -> None:
        _run([str(self.chain.copilot), "mcp", "add", *options, name, "--", *command],
             self.env(home), home.work)  # fmt: skip

    def mcp_list(self, home: Home) -> str:
        return _run([str(self.chain.copilot), "mcp", "list"], self.env(home), home.work)


class AiderDriver(Driver):
    """Aider (a Python program from PyPI, ``toolchain.pip_install``): ``OPENAI_API_BASE``
    points its OpenAI provider (``--model openai/fake-1``) at the fake model, which it calls
    through litellm's Chat Completions; ``--message`` runs one prompt (or one in-chat command)
    and exits. Every run appends to ``.aider.chat.history.md`` in the project folder, so a
    second run is a continuation by itself. ``--edit-format diff`` makes the replies' edit
    blocks SEARCH/REPLACE ones, as with the models aider knows; ``--no-git``, no lint, no
    update check, no analytics keep it to the loopback."""

    agent = "aider"

    def __init__(self, chain: Toolchain, model_url: str, aider: Path) -> None:
        super().__init__(chain, model_url)
        self.aider = aider

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        (home.work / "notes.py").write_text("VALUE = 1\n")

    def env(self, home: Home) -> dict[str, str]:
        return {**base_env(home), "OPENAI_API_BASE": f"{self.model_url}/v1",
                "OPENAI_API_KEY": "x"}  # fmt: skip

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.aider), "--model", "openai/fake-1", "--edit-format", "diff", "--no-git",
                "--yes-always", "--no-check-update", "--no-show-model-warnings",
                "--analytics-disable", "--no-pretty", "--no-auto-lint", "--no-auto-commits",
                "--no-show-release-notes", *options, "--message", text]  # fmt: skip
        return _run(argv, self.env(home), home.work)


class OpenCodeDriver(Driver):
    """OpenCode (``opencode-ai``, a native binary per platform through npm): ``opencode.json``
    in the project declares the fake model as an ``@ai-sdk/openai-compatible`` provider (which
    OpenCode installs from npm into its cache on first use) and the MCP stub as a local server;
    ``opencode run`` runs one prompt, ``--continue`` appends to the last session, ``--title``
    names the session so that OpenCode does not ask the model for a title (a request the script
    does not plan). Every ``XDG_*`` folder is inside the scratch home; autoupdate, sharing and
    the models.dev catalogue fetch are off."""

    agent = "opencode"

    def __init__(self, chain: Toolchain, model_url: str, opencode: Path) -> None:
        super().__init__(chain, model_url)
        self.opencode = opencode

    def prepare(self, home: Home) -> None:
        super().prepare(home)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": f"{self.model_url}/v1", "apiKey": "x"},
                    "models": {"fake-1": {"name": "fake-1", "tool_call": True}},
                }
            },
            "model": "fake/fake-1",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
            "mcp": {MCP_SERVER: {"type": "local", "command": self.stub_command()}},
        }
        (home.work / "opencode.json").write_text(json.dumps(config))

    def env(self, home: Home) -> dict[str, str]:
        root = home.root
        return {
            **base_env(home),
            "XDG_DATA_HOME": str(root / ".local" / "share"),
            "XDG_CONFIG_HOME": str(root / ".config"),
            "XDG_CACHE_HOME": str(root / ".cache"),
            "XDG_STATE_HOME": str(root / ".local" / "state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
        }

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.opencode), "run", "--model", "fake/fake-1"]
        argv += ["--continue"] if resume else ["--title", f"Conformance {home.agent}"]
        return _run([*argv, *options, text], self.env(home), home.work)


DRIVERS: dict[str, type[Driver]] = {
    "pi": PiDriver,
    "claude": ClaudeDriver,
    "codex": CodexDriver,
    "omp": OmpDriver,
    "gemini": GeminiDriver,
    "qwen": QwenDriver,
    "copilot": CopilotDriver,
}
