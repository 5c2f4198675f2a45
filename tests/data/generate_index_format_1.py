"""How tests/data/index_format_1 was written (by the release of issue 10): a small hive table and its
index, kept as written so that later releases are tested to open it. Do not re-run it to "fix" the
fixture: the point is that the files stay as that release wrote them.

Usage: python tests/data/generate_index_format_1.py tests/data/index_format_1
"""

import datetime as dt
import decimal
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from index_store import open_table


def rows(ids: np.ndarray, x: np.ndarray, names: list[str | None], day: dt.date | None = None) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": names,
            "x": x,
            "d": pa.array([day or dt.date(2024, 1, 1) + dt.timedelta(days=int(v % 300)) for v in ids]),
            "price": pa.array([decimal.Decimal(int(v)) / 100 for v in ids], pa.decimal128(12, 2)),
        }
    )


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    table = out / "table"
    rng = np.random.default_rng(7)
    for part in ("a", "b"):
        for i in range(3):
            base = (0 if part == "a" else 1000) + i * 100
            ids = np.arange(base, base + 20)
            x = rng.normal(size=20)
            x[::7] = np.nan
            path = table / f"p={part}" / f"f{i}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(rows(ids, x, [f"n{v:05d}" if v % 5 else None for v in ids]), path)
    t = open_table(table)
    t.build(bloom_columns=["id", "name"], progress=False)
    late = rows(np.array([5000, 5001]), np.array([1.0, 2.0]), ["late", None], dt.date(2025, 1, 1))
    pq.write_table(late, table / "p=b" / "f9.parquet")
    t.update(added=["p=b/f9.parquet"], removed=["p=a/f1.parquet"], progress=False)
    (table / "p=a" / "f1.parquet").unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
