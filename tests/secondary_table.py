"""A small parquet table for the secondary index statement and CLI tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CITIES = ("paris", "oslo", "lima")


def write_file(root: Path, i: int) -> Path:
    """File ``f<i>.parquet`` of 10 rows: ``id`` int64, ``city`` string (one city per file), ``note``
    text, ``price`` float64."""
    start = i * 10
    data = pa.table(
        {
            "id": pa.array(range(start, start + 10), pa.int64()),
            "City": [CITIES[i % len(CITIES)]] * 10,
            "note": [
                f"order {n} shipped {'late' if n % 3 == 0 else 'on time'}" for n in range(start, start + 10)
            ],
            "price": [n * 1.5 for n in range(start, start + 10)],
        }
    )
    path = root / f"f{i}.parquet"
    pq.write_table(data, path)
    return path


def write_table(root: Path, files: int = 3) -> Path:
    """A plain parquet table of ``files`` files under ``root`` (no index built)."""
    root.mkdir(parents=True)
    for i in range(files):
        write_file(root, i)
    return root
