"""The registered adapters (``store.agents``), loaded: the one way any stage or the pipeline
reaches an agent's code.

``adapter(name)`` imports ``stages.<name>.adapter`` for a registered *name* on first use and
checks that it holds an ``Adapter`` of that name; an unregistered name is ``BadInput``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from stages.adapter import Adapter
from stages.errors import BadInput
from store.agents import agent_names

__all__ = ["adapter", "adapters", "default_roots"]

_LOADED: dict[str, Adapter] = {}


def adapter(name: str) -> Adapter:
    """The adapter of agent *name*."""
    found = _LOADED.get(name)
    if found is not None:
        return found
    if name not in agent_names():
        expected = ", ".join(agent_names())
        raise BadInput(f"unknown agent {name!r}; expected one of {expected}")
    loaded = getattr(importlib.import_module(f"stages.{name}.adapter"), "ADAPTER", None)
    if not isinstance(loaded, Adapter) or loaded.name != name:
        raise BadInput(f"stages/{name}/adapter.py must define ADAPTER, an Adapter named {name!r}")
    _LOADED[name] = loaded
    return loaded


def adapters() -> tuple[Adapter, ...]:
    """Every registered adapter, in registry order."""
    return tuple(adapter(name) for name in agent_names())


def default_roots() -> Mapping[str, str]:
    """Each agent's default root as written (``store.config`` resolves it like a configured
    one): ``[sources]`` overrides them. An agent without one (``default_root`` empty: a
    writer with no central folder, as Aider) is read only from a configured root."""
    return {a.name: a.default_root for a in adapters() if a.default_root}
