"""The redactor's false-positive rate, on a measured sample of look-alikes and on the corpus.

The look-alikes (``tests.secret_samples.lookalikes``: git SHAs, UUIDs, base64 image data,
lockfile hashes, npm integrity strings) must all come out unchanged; the generated corpus
plants no credential, so every redaction `pipeline status` counts in it is a false positive.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["false_positives"]


def false_positives(status: dict[str, Any], per_kind: int = 250) -> dict[str, Any]:
    from store.redact import redactor
    from tests.secret_samples import lookalikes

    sample = lookalikes(per_kind)
    r = redactor()
    started = time.perf_counter()
    flagged = [t for t in sample if r.find(t)]
    seconds = time.perf_counter() - started
    corpus = status.get("redactions", {})
    return {
        "lookalikes": len(sample),
        "lookalikes_redacted": len(flagged),
        "lookalike_fp_rate": len(flagged) / len(sample),
        "examples": [t[:80] for t in flagged[:3]],
        "corpus_redactions": sum(corpus.values()),
        "corpus_by_kind": corpus,
        "seconds": round(seconds, 3),
    }
