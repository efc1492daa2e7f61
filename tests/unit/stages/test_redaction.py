"""redact_entries: what a memo that keeps texts saves, never what it changes."""

from __future__ import annotations

from pytest import MonkeyPatch

from stages.normalized import EntryMemo
from stages.policy import Policy
from stages.redaction import redact_entries
from store.records import NormalizedEntry
from store.redact import Redactor
from tests.secret_samples import PLANTED
from tests.unit.store.factories import entry

POLICY = Policy()


def _entry(i: int, text: str) -> NormalizedEntry:
    return entry(i, text, role="toolResult", tool="bash")


def test_a_text_two_views_hold_is_scanned_once_with_the_same_entries(
    monkeypatch: MonkeyPatch,
) -> None:
    # Given the entries of two views made apart (as Pi's normalizer does), holding equal
    # but distinct texts, one with a credential in it and long enough for no other memo
    planted, secret = next(iter(PLANTED.values()))
    texts = ["x" * 400 + " " + planted, "y" * 500, "z" * 300]
    active = tuple(_entry(i, "".join(list(t))) for i, t in enumerate(texts[:2]))
    every = tuple(_entry(i, "".join(list(t))) for i, t in enumerate(texts))
    assert active[0].text is not every[0].text
    plain = (redact_entries(active, POLICY, None), redact_entries(every, POLICY, None))
    scanned: list[str] = []
    real = Redactor.redact

    def redact(self: Redactor, text: str) -> tuple[str, tuple[object, ...]]:
        scanned.append(text)
        return real(self, text)  # type: ignore[return-value]

    monkeypatch.setattr(Redactor, "redact", redact)
    # When both views are redacted through one memo that keeps texts
    memo = EntryMemo(texts=True)
    both = (redact_entries(active, POLICY, memo), redact_entries(every, POLICY, memo))
    # Then each text was scanned once, and the entries are those made without it
    assert sorted(t for t in scanned if len(t) >= 300) == sorted(every_.text for every_ in every)
    assert both == plain
    assert secret not in both[1][0].text and both[1][0].redactions
    # A memo that keeps no texts (the append path's, long-lived) scans them again
    scanned.clear()
    memo = EntryMemo()
    redact_entries(active, POLICY, memo)
    redact_entries(every, POLICY, memo)
    assert len([t for t in scanned if len(t) >= 300]) == 5
