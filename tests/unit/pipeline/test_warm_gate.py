"""An index worker that just started warms its sessions only once the changes the start found
are published (or a while passed): those changes, the first appends a user waits on, get the
CPUs first (issue 22 item 11)."""

from __future__ import annotations

from types import SimpleNamespace

from pipeline.children import _WARM_WAIT_S, Flag, WarmGate


def _gate(head: list[int], published: list[int]) -> tuple[WarmGate, Flag]:
    watching = Flag(SimpleNamespace(value=0))
    return WarmGate(watching, lambda: head[0], lambda: published[0]), watching


def test_warming_waits_for_the_watcher_then_for_what_it_found_to_be_published() -> None:
    head, published = [7], [4]
    gate, watching = _gate(head, published)
    assert not gate.open(0.0)  # the watcher has not journaled what changed before the start
    watching.set()
    assert not gate.open(0.1)  # positions 5 to 7 are not published yet
    head[0] = 9  # appended after the start's scan: not waited for
    published[0] = 7
    assert gate.open(0.2)


def test_a_start_that_found_nothing_warms_at_once() -> None:
    gate, watching = _gate([4], [4])
    watching.set()
    assert gate.open(0.0)


def test_warming_begins_anyway_when_the_publish_takes_too_long() -> None:
    gate, watching = _gate([7], [4])
    watching.set()
    assert not gate.open(10.0)
    assert not gate.open(10.0 + _WARM_WAIT_S - 0.01)
    assert gate.open(10.0 + _WARM_WAIT_S)


def test_without_a_watcher_flag_only_the_publish_is_waited_for() -> None:
    published = [4]
    gate = WarmGate(None, lambda: 5, lambda: published[0])
    assert not gate.open(0.0)
    published[0] = 5
    assert gate.open(0.1)
