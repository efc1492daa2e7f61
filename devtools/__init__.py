"""Development tools of sessiondex: never part of the product.

* ``devtools.corpus`` — the deterministic synthetic corpus generator (``python -m
  devtools.corpus``; ``ops/demo``, the bench and the tests use it);
* ``devtools.bench`` — ``ops/bench``: sessiondex next to what a user would pick instead;
* ``devtools.conformance`` — ``ops/conformance``: the real agent CLIs' suite, pinned and latest.

``setup.cfg`` does not list this package, so neither the wheel nor an install of the project
holds it, and no product package (``pipeline``, ``stages``, ``store``, ``query``) may import it
(``tests/test_architecture.py``). It is importable from a checkout only: pytest puts the
checkout first on ``sys.path``, and ``python -m devtools.…`` run from the checkout's root
(``ops/*`` change there first) finds it in the current folder. A tool that starts one of these
modules in a child process starts it in ``ROOT`` for the same reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["ROOT"]

ROOT: Final = Path(__file__).resolve().parent.parent
