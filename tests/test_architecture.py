"""The import direction of DESIGN §5, and that our four packages are the ones imported.

pipeline ──▶ stages ──▶ store        query ──▶ store (read API only)
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "stages", "store", "query")

FORBIDDEN = {
    "store": ("pipeline", "stages", "query"),
    "stages": ("pipeline", "query"),
    "pipeline": ("query",),
    "query": (
        "pipeline",
        "stages",
        "store.atomic",
        "store.writer",
        "store.journal",
        "store.checkpoints",
    ),
}


def _imports(path: Path, package: str, root: Path = ROOT) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_parts = [package, *path.relative_to(root / package).with_suffix("").parts]
    if module_parts[-1] == "__init__":
        module_parts.pop()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module_parts[: len(module_parts) - node.level + (path.name == "__init__.py")]
                prefix = ".".join(base)
                name = ".".join(p for p in (prefix, node.module) if p)
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def _violations(package: str, root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for path in sorted((root / package).rglob("*.py")):
        for name in _imports(path, package, root):
            for forbidden in FORBIDDEN[package]:
                if name == forbidden or name.startswith(forbidden + "."):
                    bad.append(f"{path.relative_to(root)} imports {name}")
    return bad


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_allowed_direction(package: str) -> None:
    assert _violations(package) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_package_resolves_inside_this_project(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(ROOT), module.__file__


def test_checker_catches_a_crossing(tmp_path: Path) -> None:
    # Given a module of query that imports the write side, in a tree of its own (the test
    # writes nothing into the source tree: a concurrent run or a crash could leave it there)
    probe = tmp_path / "query" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("from stages import digest\nimport store.writer\nfrom ..pipeline import cli\n")
    found = _violations("query", tmp_path)
    # Then every crossing is reported
    assert any("imports stages" in v for v in found)
    assert any("store.writer" in v for v in found)
    assert any("imports pipeline" in v for v in found)


def test_the_suite_writes_nothing_into_the_source_tree() -> None:
    # The probe above used to live in query/; nothing of the kind may be left there.
    leftovers = list(ROOT.glob("*/_architecture_probe.py"))
    assert leftovers == []
