"""The bytecode of a checkout's packages, compiled before anything is timed.

An installed sessiondex has it (pip compiles a wheel's modules as it installs them), and so
does a checkout that ran once, unless ``PYTHONDONTWRITEBYTECODE`` is set (some CI images and
sandboxes set it): then every ``pipeline`` or ``query`` process compiles each of the ~400
modules it imports again, ~80 ms of every start on a 2-core machine, which no user pays. The
venv's own packages are compiled already (pip did it). ``compileall`` writes the files
whatever that variable says.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["PACKAGES", "compile_bytecode"]

PACKAGES = ("pipeline", "query", "stages", "store", "devtools")


def compile_bytecode(python: Path | str, root: Path) -> str:
    """Compile *root*'s packages with *python* (the interpreter that will import them); a
    note for the report."""
    folders = [str(root / name) for name in PACKAGES if (root / name).is_dir()]
    subprocess.run(
        [str(python), "-m", "compileall", "-q", "-j", "0", *folders],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    unset = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "not set"
    return f"bytecode of {root} compiled before timing (PYTHONDONTWRITEBYTECODE {unset})"
