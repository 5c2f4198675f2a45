"""Lookup time of the record index: 1,000 and 1,000,000 random keys against N stored UUID keys.

.venv/bin/python benchmarks/record_index_probe.py [N=6000000] [DIR]
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from index_store.partitions.record_index import lookup_record_keys, write_record_index


def _uuids(rng: np.random.Generator, n: int) -> pa.Array:
    raw = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).view(np.uint8).reshape(n, 16)
    return pa.array([str(uuid.UUID(bytes=bytes(r))) for r in raw], pa.string())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6_000_000
    root = Path(sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    keys = _uuids(rng, n)
    file_idx = rng.integers(0, 10_000, size=n)
    t = time.perf_counter()
    rel = write_record_index(root, keys, file_idx)
    print(f"write {n:,} keys: {time.perf_counter() - t:.2f} s, {(root / rel).stat().st_size / 1e6:.0f} MB")
    for m in (1_000, 1_000_000):
        # Half present (random stored keys), half absent (fresh UUIDs).
        present = keys.take(pa.array(rng.integers(0, n, size=m // 2)))
        probe = pa.concat_arrays([present, _uuids(rng, m - m // 2)])
        times = []
        for _ in range(7 if m <= 1000 else 3):
            t = time.perf_counter()
            found = lookup_record_keys(root, [rel], probe)
            times.append(time.perf_counter() - t)
        assert len(found.key_pos) == m // 2, len(found.key_pos)
        print(
            f"lookup {m:>9,} keys: best {min(times) * 1e3:8.2f} ms, median {np.median(times) * 1e3:8.2f} ms,"
            f" first {times[0] * 1e3:8.2f} ms; {found.bytes_read / 1e6:.0f} MB of index pages touched"
        )


if __name__ == "__main__":
    main()
