"""How fast the store decodes a generation's records: the query's load path, per record kind.

    python -m devtools.bench.record_decode --index DIR [--rounds N]

Reads every record file of the index into memory once, then decodes all of them ``--rounds``
times with ``store.codec.decode`` and prints, per kind, the files, bytes and the best round's
seconds (the minimum: the least disturbed by other work on a shared machine). Point
``PYTHONPATH`` at another checkout to time its codec on the same bytes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from store.codec import decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    files: dict[str, list[bytes]] = {}
    for path in sorted((args.index / "records").rglob("*")):
        kind = path.suffix.lstrip(".")
        if path.is_file() and kind in ("entries", "shard", "digest", "chunk"):
            files.setdefault(kind, []).append(path.read_bytes())
    for path in sorted((args.index / "manifests").glob("*")):
        files.setdefault("manifest", []).append(path.read_bytes())
    total = 0.0
    for kind, blobs in sorted(files.items()):
        best = float("inf")
        for _ in range(args.rounds):
            started = time.perf_counter()
            for data in blobs:
                decode(data)
            best = min(best, time.perf_counter() - started)
        total += best
        size = sum(len(b) for b in blobs)
        print(f"{kind:9} {len(blobs):6} files {size / 1e6:8.2f} MB  {best:8.4f} s")
    print(f"{'all':9} {sum(map(len, files.values())):6} files {'':11}  {total:8.4f} s")


if __name__ == "__main__":
    main()
