"""The redactor's false-positive rate, on a measured sample of look-alikes and on the corpus.

The look-alikes (``tests.secret_samples.lookalike_shapes``: git SHAs, UUIDs, base64 image
data, lockfile hashes, content digests, each a fresh random draw in the context a transcript
shows it in) must all come out unchanged: the rate is reported per shape and overall. The
generated corpus plants no credential, so every redaction `pipeline status` counts in it is
a false positive too.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["false_positives"]


def false_positives(status: dict[str, Any], per_kind: int = 250) -> dict[str, Any]:
    from store.redact import redactor
    from tests.secret_samples import lookalike_shapes

    shapes = lookalike_shapes(per_kind)
    sample = [t for texts in shapes.values() for t in texts]
    r = redactor()
    started = time.perf_counter()
    flagged = [t for t in sample if r.find(t)]
    seconds = time.perf_counter() - started
    hit = set(flagged)
    by_shape = {
        shape: {"texts": len(texts), "redacted": sum(1 for t in texts if t in hit)}
        for shape, texts in shapes.items()
    }
    corpus = status.get("redactions", {})
    return {
        "lookalikes": len(sample),
        "lookalikes_redacted": len(flagged),
        "lookalike_fp_rate": len(flagged) / len(sample),
        "lookalikes_by_shape": by_shape,
        "examples": [t[:80] for t in flagged[:3]],
        "corpus_redactions": sum(corpus.values()),
        "corpus_by_kind": corpus,
        "seconds": round(seconds, 3),
    }
