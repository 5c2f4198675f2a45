"""Demo on the embedded default (DuckDB): generate a table, index it, run pruned queries.

Writes ~200 parquet files of an orders table clustered by ship date, builds the table's metadata
index (``index_store``: footer statistics, NaN counts, bloom filters on ``order_id``), then for a
few predicates prints how many files were kept, why, how long planning took (``prune``, which also
lists the table to catch files added or deleted behind the index's back), and the DuckDB query time
over the kept files versus all files (the results must be equal; the script checks that they are).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr import Expression, col
from index_store import IndexedTable, open_table

ROOT = Path(__file__).resolve().parent.parent
START = (dt.date(1992, 1, 1) - dt.date(1970, 1, 1)).days
DAYS = 7 * 365


def generate(out: Path, files: int, rows_per_file: int, seed: int = 7) -> list[str]:
    """An orders table in ``files`` parquet files, each covering a slice of the ship dates."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    statuses = np.array(["F", "O", "P", "R"])
    paths = []
    total = files * rows_per_file
    order_ids = rng.permutation(total).astype(np.int64) * 4 + 1  # keys spread across all files
    for i in range(files):
        lo = START + i * DAYS // files
        hi = START + (i + 1) * DAYS // files
        n = rows_per_file
        days = np.sort(rng.integers(lo, max(hi, lo + 1), n)).astype(np.int32)
        price = np.round(rng.gamma(2.0, 150.0, n), 2)
        if i % 10 == 3:  # a few files hold NaN prices; NaN sorts above every number
            price[rng.random(n) < 0.001] = np.nan
        table = pa.table(
            {
                "order_id": order_ids[i * n : (i + 1) * n],
                "ship_date": pa.array(days, pa.int32()).cast(pa.date32()),
                "price": price,
                "status": statuses[rng.integers(0, 4, n)],
                "customer": np.char.add("cust-", rng.integers(0, 50_000, n).astype(str)),
            }
        )
        path = out / f"part-{i:05d}.parquet"
        pq.write_table(table, path, row_group_size=32_768)
        paths.append(str(path))
    return paths


def index(root: Path) -> IndexedTable:
    """The table's metadata index, built from footers plus NaN counts and order_id bloom filters."""
    table = open_table(root)
    table.build(bloom_columns=["order_id"])  # a progress bar on a terminal
    return table


def timed(fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def run_query(con: duckdb.DuckDBPyConnection, files: list[str], where: str) -> tuple[int, float]:
    if not files:
        return 0, 0.0
    listing = ", ".join(f"'{f}'" for f in files)
    # can_have_nan: DuckDB's own row-group pruning otherwise trusts NaN-blind parquet min/max and
    # drops NaN rows (duckdb/duckdb#25521), the very mistake this library is built not to make.
    sql = (
        f"SELECT count(*), sum(price) FILTER (WHERE NOT isnan(price)) "
        f"FROM read_parquet([{listing}], can_have_nan = true) WHERE {where}"
    )
    row = con.execute(sql).fetchone()
    return int(row[0]), float(row[1] or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows-per-file", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=ROOT / "demo_data" / "orders")
    args = parser.parse_args()

    if args.out.exists():
        shutil.rmtree(args.out)
    t0 = time.perf_counter()
    paths = generate(args.out, args.files, args.rows_per_file)
    rows = len(paths) * args.rows_per_file
    print(f"generated {len(paths)} files, {rows:,} rows in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    table = index(args.out)
    snap = table.snapshot()
    print(
        f"indexed: footer stats of {len(snap.schema)} columns, NaN counts, order_id bloom filters in "
        f"{time.perf_counter() - t0:.2f} s (index version {snap.version} at {table.index_root})\n"
    )  # fmt: skip

    probe_key = int(pq.read_table(paths[len(paths) // 3], columns=["order_id"])["order_id"][123].as_py())
    queries: list[tuple[str, Expression]] = [
        ("one month of shipments", col("ship_date").between(dt.date(1995, 3, 1), dt.date(1995, 3, 31))),
        ("point lookup by key (bloom filter)", col("order_id") == probe_key),
        ("late 1998, returned", (col("ship_date") >= "1998-10-01") & (col("status") == "R")),
        ("cheap or very early", (col("price") < 1.0) | (col("ship_date") < dt.date(1992, 1, 15))),
        ("NaN prices in 1993", col("price").is_nan() & col("ship_date").between("1993-01-01", "1993-12-31")),
        ("price above 4000 (NaN sorts above it)", col("price") > 4000),
    ]
    con = duckdb.connect()
    header = f"{'query':38} {'files kept':>12} {'plan ms':>8} {'pruned ms':>10} {'all files ms':>13}"
    print(f"{header} {'rows':>9}")
    for title, expr in queries:
        plan_s, result = timed(lambda expr=expr: table.prune(expr))
        kept = result.files
        where = str(expr)
        pruned_s, pruned = timed(lambda kept=kept, where=where: run_query(con, kept, where))
        full_s, full = timed(lambda where=where: run_query(con, paths, where))
        if pruned[0] != full[0] or not np.isclose(pruned[1], full[1]):
            raise SystemExit(f"pruning changed the answer for {where}: {pruned} vs {full}")
        print(f"{title:38} {len(kept):>5}/{len(paths):<6} {plan_s * 1e3:8.2f} {pruned_s * 1e3:10.1f} "
              f"{full_s * 1e3:13.1f} {pruned[0]:>9,}")  # fmt: skip

    for title, expr in (queries[2], queries[-1]):
        print(f"\nwhy, for {title!r}:")
        print(table.prune(expr).explain())


if __name__ == "__main__":
    main()
