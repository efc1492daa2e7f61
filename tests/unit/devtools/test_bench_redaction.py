"""ops/bench's redaction false-positive measure: per shape, and it counts what is redacted."""

from __future__ import annotations

import pytest

from devtools.bench import redaction
from devtools.bench.report import redaction_line
from store.redact import Finding
from tests.secret_samples import lookalike_shapes


def test_every_shape_is_measured_and_none_is_redacted() -> None:
    got = redaction.false_positives({"redactions": {"generic_api_key": 2}}, per_kind=20)
    shapes = lookalike_shapes(20)
    assert set(got["lookalikes_by_shape"]) == set(shapes) == {
        "git_sha", "uuid", "base64_image", "lockfile_hash", "digest",
    }  # fmt: skip
    assert got["lookalikes"] == sum(len(t) for t in shapes.values())
    assert got["lookalikes_redacted"] == 0 and got["lookalike_fp_rate"] == 0.0
    assert got["corpus_redactions"] == 2


def test_a_redacted_look_alike_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    class Eager:
        def find(self, text: str) -> list[Finding]:
            return [Finding("x", 0, 1, "x…0")] if "sha512-" in text else []

    monkeypatch.setattr("store.redact.redactor", lambda: Eager())
    got = redaction.false_positives({}, per_kind=10)
    assert got["lookalikes_by_shape"]["lockfile_hash"]["redacted"] == 20
    assert got["lookalikes_redacted"] == 20 and got["lookalike_fp_rate"] > 0
    line = redaction_line(got)
    assert "20 of 160 look-alikes (12.50%" in line and "lockfile_hash 20/50" in line
