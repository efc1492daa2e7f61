"""Coverage reasons are defined once (store/reasons.py) and used by name everywhere else.

ops/runbook.md's side is tests/unit/ops/test_runbook.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import store.reasons
from store.reasons import REASONS

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("pipeline", "stages", "store", "query")
HOME = ROOT / "store" / "reasons.py"
# store/config.py names the [memory] keys in snake case, which is what a size-limit reason
# is called after (max_entry_chars is the key maxEntryChars): the same word, not a reason.
KEY_NAMES = ROOT / "store" / "config.py"


def _constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(store.reasons).items()
        if re.fullmatch(r"[A-Z][A-Z_]+", name) and isinstance(value, str) and value in REASONS
    }


def test_each_reason_has_one_constant_named_after_it() -> None:
    constants = _constants()
    assert sorted(constants.values()) == sorted(REASONS)
    assert all(name == value.upper() for name, value in constants.items())


def test_no_product_module_spells_a_reason_as_a_literal() -> None:
    spelled: list[str] = []
    for path in sorted(p for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py")):
        if path in (HOME, KEY_NAMES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in REASONS:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert spelled == []


def test_every_reason_is_used_by_some_product_module() -> None:
    # a name no code can produce is a row of the runbook that never happens
    used: set[str] = set()
    for path in sorted(p for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py")):
        if path == HOME:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "store.reasons":
                used.update(alias.name for alias in node.names)
    assert set(_constants()) - used == set()
