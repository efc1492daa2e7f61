"""How fast the store decodes a generation's records: the query's load path, per record kind.

    python -m devtools.bench.record_decode --index DIR [--rounds N]

Reads every record file of the index into memory once, then decodes all of them ``--rounds``
times with ``store.codec.decode`` and prints, per kind, the files, bytes and the best round's
CPU seconds (process time, the minimum: the least disturbed by other work on a shared
machine), for the whole decode and for the record part alone (``from_wire`` on payloads
already unpacked and decompressed). Point ``PYTHONPATH`` at another checkout to time its codec
on the same bytes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from store.codec import KINDS, Record, decode, pack, unpack


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
    totals = [0.0, 0.0]
    print(f"{'kind':9} {'files':>6} {'MB':>8}  {'decode s':>9} {'records s':>9}")
    for kind, blobs in sorted(files.items()):
        records = [decode(data) for data in blobs]
        wires = [unpack(codec_pack(r)) for r in records]
        cls = KINDS[kind]
        best = [float("inf"), float("inf")]
        for _ in range(args.rounds):
            started = time.process_time()
            for data in blobs:
                decode(data)
            middle = time.process_time()
            for w in wires:
                cls.from_wire(w)
            best = [min(best[0], middle - started), min(best[1], time.process_time() - middle)]
        totals = [totals[0] + best[0], totals[1] + best[1]]
        size = sum(len(b) for b in blobs)
        print(f"{kind:9} {len(blobs):6} {size / 1e6:8.2f}  {best[0]:9.4f} {best[1]:9.4f}")
    print(f"{'all':9} {sum(map(len, files.values())):6} {'':8}  {totals[0]:9.4f} {totals[1]:9.4f}")


def codec_pack(record: Record) -> bytes:
    """The packed payload of *record* (uncompressed), as ``decode`` sees it inside."""
    return pack(record.to_wire())


if __name__ == "__main__":
    main()
