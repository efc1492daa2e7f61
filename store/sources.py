"""Which files under a root are session files: the one rule discovery, the watcher and the
query side's folder listings share (formats §1-§3).

Every agent writes ``*.jsonl``. Codex's TypeScript CLI (era A, Apr-Aug 2025) wrote one JSON
object per session instead, ``rollout-YYYY-MM-DD-<uuid>.json``; only those ``.json`` files
count, and only under the Codex root. Hidden files (a writer's temp files) never count.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LINES_SUFFIX",
    "OBJECT_PREFIX",
    "OBJECT_SUFFIX",
    "could_be_session_name",
    "is_object_rollout",
    "is_session_name",
    "session_stem",
    "subagent_meta_path",
]

LINES_SUFFIX: Final = ".jsonl"
OBJECT_PREFIX: Final = "rollout-"
OBJECT_SUFFIX: Final = ".json"


def is_session_name(agent: str, name: str) -> bool:
    """True when a file called *name* under *agent*'s root is one of its sessions."""
    if name.startswith("."):
        return False
    if name.endswith(LINES_SUFFIX):
        return True
    return agent == "codex" and name.startswith(OBJECT_PREFIX) and name.endswith(OBJECT_SUFFIX)


def is_object_rollout(agent: str, path: str) -> bool:
    """True for a session file holding one JSON object (Codex era A): it is read whole and
    rewritten whole, never appended to by lines."""
    return agent == "codex" and path.endswith(OBJECT_SUFFIX)


def could_be_session_name(name: str) -> bool:
    """True when *name* is a session file under some agent's root (a folder listing that
    does not know the agent keeps these, and filters by agent later)."""
    return is_session_name("codex", name)


def session_stem(name: str) -> str:
    """A session file's name without its suffix (how a session can be named in a scope)."""
    for suffix in (LINES_SUFFIX, OBJECT_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


META_SUFFIX: Final = ".meta.json"


def subagent_meta_path(agent: str, path: str) -> str | None:
    """Where a Claude Code subagent transcript's sidecar would be (``agent-<id>.meta.json``
    beside ``agent-<id>.jsonl``, real-writers: 2.1.x), or None for any other file."""
    name = path.rsplit("/", 1)[-1]
    if agent != "claude" or not name.startswith("agent-") or not name.endswith(LINES_SUFFIX):
        return None
    return path[: -len(LINES_SUFFIX)] + META_SUFFIX
