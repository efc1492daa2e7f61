"""Resolve ``natural.src.json`` (hand-written queries, hand-judged entries by id prefix) into
``natural.json``: full entry ids, session labels and source lines (see README.md).

    .venv/bin/python -m devtools.bench.quality_sets.make_natural WORK   (in the checkout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devtools.bench.quality_corpus import assemble, entries

HERE = Path(__file__).resolve().parent


def main(work: Path) -> None:
    judged = [j for j in entries(assemble(work)) if "/real/" in j.file]
    src = json.loads((HERE / "natural.src.json").read_text())
    items = []
    for q in src["queries"]:
        relevant = []
        for prefix in q["relevant"]:
            found = [j for j in judged if q["file"] in j.file and j.entry.startswith(prefix)]
            # a whole id (Codex ``L6``) is itself, not a prefix of ``L69``
            found = [j for j in found if j.entry == prefix] or found
            if len(found) != 1:
                raise SystemExit(f"{q['query']!r}: {prefix} matches {len(found)} entries")
            j = found[0]
            relevant.append(
                {"file": j.file, "session": j.session, "entry": j.entry, "lines": list(j.lines)}
            )
        items.append({"query": q["query"], "relevant": relevant})
    out = {"made_by": "devtools/bench/quality_sets/make_natural.py (see README.md)", "items": items}
    (HERE / "natural.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(items)} natural queries")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
