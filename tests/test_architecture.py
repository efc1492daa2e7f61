"""The layout and import rules of docs/design.md §7, read from the source (nothing is imported,
nothing is written into the source tree).

    pipeline ──▶ stages ──▶ store        query ──▶ store (read API only)
    devtools ──▶ anything                 no product package ──▶ devtools, tests

* **Direction.** Each product package imports only what its row of ``FORBIDDEN`` allows.
* **Dynamic imports count.** ``importlib.import_module("x")``, ``__import__("x")`` and the like
  are imports of ``x``; and since a module name can reach such a call through a table
  (``{"claude": ("stages.claude.source", "read_claude")}``), every string constant of a module
  that spells a dotted name under one of our packages (or an f-string starting with one) counts
  as an import of that module. Docstrings do not.
* **Stages do no I/O.** A module of ``stages/`` imports no standard module that reaches files,
  processes or the network (``IO_STDLIB``), the clock, chance or threads, no ``pathlib.Path``
  (the pure paths are fine), no store module that does I/O itself (one that imports an
  ``IO_STDLIB`` module: ``store.writer``, ``store.atomic``, ``store.journal``, …; computed, so a new
  one is covered), and calls no builtin ``open`` / ``print`` / ``input``. Direct imports only:
  a pure store module may still use ``store.errors``' exception types.
* **One write path.** Only ``pipeline/publisher.py`` publishes a generation (calls
  ``.publish(``) or schedules the cold lexicon (makes a ``LexiconKeeper``, besides
  ``pipeline/lexicon.py`` where it lives): `run --once`, `rebuild`, `forget` and `pipeline run`
  all reach the index through the journal, the index workers and that publisher.
* **The product is the product.** ``setup.cfg`` ships exactly the four product packages; every
  other top-level package of the checkout is a known development one.
"""

from __future__ import annotations

import ast
import configparser
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("pipeline", "stages", "store", "query")
DEVELOPMENT = ("devtools", "tests")
PACKAGES = PRODUCT + ("devtools",)

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "store": ("pipeline", "stages", "query", *DEVELOPMENT),
    "stages": ("pipeline", "query", *DEVELOPMENT),
    "pipeline": ("query", *DEVELOPMENT),
    "query": (
        "pipeline",
        "stages",
        "store.atomic",
        "store.writer",
        "store.journal",
        "store.checkpoints",
        *DEVELOPMENT,
    ),
    "devtools": (),
}

# Standard modules that reach files, processes or the network: a module importing one does I/O.
IO_STDLIB = (
    "os",
    "io",
    "shutil",
    "tempfile",
    "glob",
    "fcntl",
    "mmap",
    "socket",
    "subprocess",
    "signal",
    "sqlite3",
    "multiprocessing",
    "multiprocess",
    "urllib",
    "http",
    "pathlib.Path",
)
# A stage is a function of its input: no I/O, and no clock, chance or threads either.
STAGE_FORBIDDEN_STDLIB = (*IO_STDLIB, "time", "random", "secrets", "threading", "asyncio")
STAGE_FORBIDDEN_CALLS = ("open", "print", "input")
# Calls whose first argument names a module to import.
_DYNAMIC = {"import_module", "__import__", "find_spec", "run_module", "import_string"}
_OURS = re.compile(r"(?:pipeline|stages|store|query|devtools|tests)(?:\.[A-Za-z_]\w*)+")
_OURS_PREFIX = re.compile(r"((?:pipeline|stages|store|query|devtools|tests)(?:\.[A-Za-z_]\w*)*)\.")


def _module_name(path: Path, package: str, root: Path) -> list[str]:
    parts = [package, *path.relative_to(root / package).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (of a module, class or function)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _imports(path: Path, package: str, root: Path = ROOT) -> set[str]:
    """Every module *path* imports: statically, through a dynamic-import call, or named by a
    string constant (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_parts = _module_name(path, package, root)
    docstrings = _docstrings(tree)
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
        elif isinstance(node, ast.Call) and _call_name(node) in _DYNAMIC and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if (
                id(node) not in docstrings
                and _OURS.fullmatch(node.value)
                and _is_module(node.value)
            ):
                found.add(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                m = _OURS_PREFIX.match(head.value)
                if m:
                    found.add(m.group(1))
    return found


def _is_module(name: str) -> bool:
    """Whether dotted *name* is a module of this checkout (``"query.sock"``, a file name, is
    not): module names are global, so this asks the checkout even for a probe tree."""
    where = ROOT.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _sources(package: str, root: Path) -> Iterator[Path]:
    yield from sorted((root / package).rglob("*.py"))


def _crosses(name: str, forbidden: str) -> bool:
    return name == forbidden or name.startswith(forbidden + ".")


def _violations(package: str, root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for path in _sources(package, root):
        for name in _imports(path, package, root):
            for forbidden in FORBIDDEN[package]:
                if _crosses(name, forbidden):
                    bad.append(f"{path.relative_to(root)} imports {name}")
    return sorted(bad)


def _io_store_modules(root: Path = ROOT) -> set[str]:
    """The store modules that do I/O themselves: those importing a forbidden standard module."""
    out: set[str] = set()
    for path in _sources("store", root):
        names = _imports(path, "store", root)
        if any(_crosses(n, f) for n in names for f in IO_STDLIB):
            out.add(".".join(_module_name(path, "store", root)))
    return out


def _stage_io(root: Path = ROOT) -> list[str]:
    io_store = _io_store_modules(root)
    bad: list[str] = []
    for path in _sources("stages", root):
        where = path.relative_to(root)
        for name in _imports(path, "stages", root):
            for forbidden in (*STAGE_FORBIDDEN_STDLIB, *io_store):
                if _crosses(name, forbidden):
                    bad.append(f"{where} imports {name}")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in STAGE_FORBIDDEN_CALLS
            ):
                bad.append(f"{where}:{node.lineno} calls {node.func.id}()")
    return sorted(bad)


# The one publisher, and the calls only it (and the lexicon's own module) may make.
WRITE_PATH_CALLS = {
    "publish": ("pipeline/publisher.py",),
    "LexiconKeeper": ("pipeline/publisher.py", "pipeline/lexicon.py"),
}


def _second_write_paths(root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for package in PRODUCT:
        for path in _sources(package, root):
            where = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = _call_name(node)
                if name in WRITE_PATH_CALLS and where not in WRITE_PATH_CALLS[name]:
                    bad.append(f"{where}:{node.lineno} calls {name}")
    return sorted(bad)


def test_one_publisher_writes_the_index() -> None:
    assert _second_write_paths() == []


def test_checker_catches_a_second_write_path(tmp_path: Path) -> None:
    for package in PRODUCT:
        (tmp_path / package).mkdir()
    (tmp_path / "pipeline" / "indexer.py").write_text(
        "def build(writer, manifest):\n"
        "    keeper = LexiconKeeper(writer)\n"
        "    writer.publish(manifest)\n"
    )
    assert _second_write_paths(tmp_path) == [
        "pipeline/indexer.py:2 calls LexiconKeeper",
        "pipeline/indexer.py:3 calls publish",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_allowed_direction(package: str) -> None:
    assert _violations(package) == []


def test_stages_do_no_io() -> None:
    assert _stage_io() == []


def test_the_store_modules_doing_io_are_found() -> None:
    # The stage rule rests on this set: it must hold the write side and every file reader.
    found = _io_store_modules()
    assert {"store.writer", "store.atomic", "store.journal", "store.checkpoints"} <= found
    assert {"store.files", "store.reader", "store.lexicon", "store.config"} <= found
    # and not the pure record algebra the stages use
    assert not found & {"store.records", "store.codec", "store.deltas", "store.postings"}


@pytest.mark.parametrize("package", PACKAGES)
def test_package_resolves_inside_this_project(package: str) -> None:
    # find_spec locates without importing (an import would write __pycache__ into the tree)
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin).resolve().is_relative_to(ROOT), spec.origin


def test_the_wheel_holds_the_product_only() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    shipped = cfg["options.packages.find"]["include"].split()
    assert sorted(shipped) == sorted(p for name in PRODUCT for p in (name, f"{name}.*"))
    data = list(cfg["options.package_data"])
    assert all(d.split(".")[0] in PRODUCT for d in data), data
    # every top-level package of the checkout is either shipped or a known development one
    tops = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert tops == set(PRODUCT) | set(DEVELOPMENT), tops


def test_checker_catches_a_crossing(tmp_path: Path) -> None:
    # Given a module of query that imports the write side, in a tree of its own (the test
    # writes nothing into the source tree: a concurrent run or a crash could leave it there)
    probe = tmp_path / "query" / "probe.py"
    probe.parent.mkdir()
    probe.write_text(
        '"""Docstrings may name stages.lineage freely."""\n'
        "from stages import digest\nimport store.writer\nfrom ..pipeline import cli\n"
        "import importlib\n"
        "importlib.import_module('pipeline.catchup')\n"
        "__import__('devtools.corpus')\n"
        "_LAZY = {'x': ('stages.read', 'read_session')}\n"
        "agent = 'pi'\n"
        "importlib.import_module(f'tests.{agent}')\n"
    )
    found = _violations("query", tmp_path)
    # Then every crossing is reported, the dynamic ones too, and the docstring is not
    assert any(v.endswith("imports stages.digest") for v in found)
    assert any("store.writer" in v for v in found)
    assert any(v.endswith("imports pipeline.cli") for v in found)
    assert any(v.endswith("imports pipeline.catchup") for v in found)
    assert any(v.endswith("imports devtools.corpus") for v in found)
    assert any(v.endswith("imports stages.read") for v in found)
    assert any(v.endswith("imports tests") for v in found)
    assert not any(v.endswith("imports stages.lineage") for v in found)


def test_checker_catches_a_stage_doing_io(tmp_path: Path) -> None:
    # Given a stage that writes a file, reads the clock and stores through the writer, beside
    # a store with one I/O module (the writer) and one pure one
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "writer.py").write_text("import os\n")
    (tmp_path / "store" / "records.py").write_text("from dataclasses import dataclass\n")
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "pure.py").write_text(
        "from pathlib import PurePath\nfrom store.records import dataclass\n"
    )
    (tmp_path / "stages" / "leaky.py").write_text(
        "import time\nfrom pathlib import Path\nfrom store.writer import os\n"
        "def f(p):\n    with open(p, 'w') as fh:\n        fh.write('x')\n"
    )
    found = _stage_io(tmp_path)
    # Then each is named, and nothing of the pure module
    assert found == [
        "stages/leaky.py imports pathlib.Path",
        "stages/leaky.py imports store.writer",
        "stages/leaky.py imports store.writer.os",
        "stages/leaky.py imports time",
        "stages/leaky.py:5 calls open()",
    ]
