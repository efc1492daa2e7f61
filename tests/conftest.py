"""What every test shares: it leaves no thread and no child process behind, and the tests of
``tests/integration`` and ``tests/reliability`` (real processes, real timeouts) are ``slow``:
the default run leaves them out and ``ops/test`` runs them in a step of its own.

A thread or process a test starts and does not stop keeps working (and holding files, ports
and CPU) while the tests after it run: their failures then depend on what ran before and on
how loaded the machine is. So each test's threads and child processes are compared with those
alive when it started (after wider-scoped fixtures are set up, so a module's server is not
counted) once its own fixtures are torn down; anything new still running fails it, by name.

A thread or process that was told to stop may need a moment to finish: the check waits for
the stragglers up to ``GRACE`` seconds, and only when there are any.

No test may depend on how loaded the machine is, so hypothesis's per-example deadline and its
"too slow" health check (both wall-clock) are off for every property test.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, settings

GRACE = 15.0
# Every test in these folders is slow, so a new one there is slow without saying so; so is
# every test marked integration (it starts real processes).
SLOW_FOLDERS = ("integration", "reliability")

settings.register_profile("sessiondex", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sessiondex")
# Helpers multiprocessing starts once per interpreter and keeps until exit, by design.
_KEPT_HELPERS = ("resource_tracker", "forkserver")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        parts = item.path.relative_to(here).parts if item.path.is_relative_to(here) else ()
        if (parts and parts[0] in SLOW_FOLDERS) or item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.slow)


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def _children() -> dict[int, psutil.Process]:
    out = {}
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                continue  # exited: nothing runs, its parent reaps it
            cmdline = " ".join(child.cmdline())
        except psutil.Error:
            continue  # gone meanwhile
        if not any(helper in cmdline for helper in _KEPT_HELPERS):
            out[child.pid] = child
    return out


def _describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid}: {' '.join(process.cmdline())[:160]}"
    except psutil.Error:
        return f"pid {process.pid}"


@pytest.fixture(autouse=True)
def no_leaked_threads_or_processes() -> Iterator[None]:
    threads = _threads()
    children = set(_children())
    yield
    deadline = time.monotonic() + GRACE
    while True:
        new_threads = _threads() - threads
        new_children = {p: c for p, c in _children().items() if p not in children}
        if not (new_threads or new_children) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not (new_threads or new_children):
        return
    names = [f"thread {t.name!r} ({t.__class__.__name__})" for t in new_threads]
    names += [f"process {_describe(c)}" for c in new_children.values()]
    # Stop the leaked processes so the tests after this one do not pay for it.
    for child in new_children.values():
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(list(new_children.values()), timeout=GRACE)
    pytest.fail("left running after the test: " + "; ".join(sorted(names)), pytrace=False)
