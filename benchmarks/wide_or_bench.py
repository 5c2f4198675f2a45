"""A 10,000-term ``col = v1 OR col = v2 ...`` through ``adapters.duckdb.sql`` against DuckDB alone.

What it measures, on TPC-H lineitem (``tpchgen-cli``, scale factor 0.1 by default: 600k rows)
written as 200 parquet files clustered by ``l_orderkey`` (``index_store.datagen.tpch.write_files``),
indexed with footer statistics and a bloom filter on ``l_orderkey``, for three WHERE clauses of
``--terms`` distinct keys:

- ``OR, 10% of keys``: ``l_orderkey = k1 OR l_orderkey = k2 ...`` with keys drawn from the orders of
  one tenth of the files (a contiguous key range): pruning keeps about that tenth;
- ``OR, all keys``: the same with keys drawn from every order: pruning keeps every file, so this row
  is pure planning overhead;
- ``IN, 10% of keys``: ``l_orderkey IN (k1, k2, ...)`` with the keys of the first row, for reference.

Columns: ``adapters.duckdb.sql(con, query).fetchall()`` (planning included) against DuckDB alone over
every file (``read_parquet('<dir>/*.parquet', can_have_nan = true)``); then where the planning goes:
``plan(con, query)`` in all, ``parse_predicate(where)`` (DuckDB's JSON syntax tree translated to
``hudi_expr``) and ``table.prune(expr)`` (bind, read the statistics, evaluate, list the folder).

DuckDB itself is slow on a wide OR (the same keys as an IN list run ten times faster or more; over
all files the OR of keys from everywhere took it over a minute at SF 0.5), hence the small default
scale and the single timed run of each execution.

Checks (the script exits non-zero if one fails): the pruned answer equals the full answer, and the
kept files contain every file that holds a matching row (found by DuckDB with ``filename = true``).

Planning times are the best of ``--repeat`` warm runs after one warm-up, executions the best of
``--exec-repeat``. The TPC-H output is cached in the work directory (gitignored ``bench_data/``);
the written table is removed at the end unless ``--keep``. Run from the repository root (about two
minutes on 2 vCPUs once the TPC-H output is cached, most of it DuckDB alone on the ORs)::

    python benchmarks/wide_or_bench.py [--scale 0.1] [--files 200] [--terms 10000] [--repeat 3]
                                       [--exec-repeat 1] [--workdir bench_data/wide_or_bench] [--keep]
    python -m benchmarks.wide_or_bench
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from adapters.duckdb import parse_predicate, plan, register, sql
from benchmarks.common import best, machine_line, matching_files
from index_store import open_table
from index_store.datagen.tpch import generate, write_files

SELECT = "count(*), sum(l_quantity), sum(l_extendedprice)"


def or_clause(keys: Sequence[int]) -> str:
    return " OR ".join(f"l_orderkey = {k}" for k in keys)


def in_clause(keys: Sequence[int]) -> str:
    return f"l_orderkey IN ({', '.join(str(k) for k in keys)})"


def draw_keys(files: Sequence[Path], terms: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """``terms`` distinct order keys from one tenth of the files (contiguous), and from all of them."""
    tenth = max(1, len(files) // 10)
    start = len(files) // 3
    local = _distinct_keys(files[start : start + tenth])
    every = _distinct_keys(files)
    pick = min(terms, len(local), len(every))
    return (
        sorted(rng.choice(local, pick, replace=False).tolist()),
        sorted(rng.choice(every, pick, replace=False).tolist()),
    )


def _distinct_keys(files: Sequence[Path]) -> np.ndarray:
    keys = [pc.unique(pq.read_table(f, columns=["l_orderkey"])["l_orderkey"]) for f in files]
    return np.unique(np.concatenate([k.to_numpy() for k in keys]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor")
    parser.add_argument("--files", type=int, default=200, help="lineitem data files")
    parser.add_argument("--terms", type=int, default=10_000, help="equalities in the OR")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per planning measurement")
    parser.add_argument("--exec-repeat", type=int, default=1, help="timed runs per query execution")
    parser.add_argument("--workdir", default="bench_data/wide_or_bench", help="TPC-H cache and the table")
    parser.add_argument("--keep", action="store_true", help="keep the written table (the cache is kept)")
    args = parser.parse_args(argv)
    work = Path(args.workdir).resolve()
    tables = work / f"sf{args.scale:g}-{args.files}"
    try:
        return run(args, work, tables)
    finally:
        if not args.keep:
            shutil.rmtree(tables, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, tables: Path) -> int:
    """Write and index the table, run the queries, print the table; 1 if a check failed."""
    print(machine_line(duckdb))
    source = generate(args.scale, work / "tpch", tables=("lineitem",))["lineitem"]
    folder = tables / "lineitem"
    if not folder.is_dir():
        write_files(source, folder, args.files, order_by="l_orderkey")
    files = sorted(folder.glob("*.parquet"))
    rows = pq.ParquetFile(source).metadata.num_rows
    t0 = time.perf_counter()
    table = open_table(folder)
    table.build(bloom_columns=["l_orderkey"], progress=False)
    build_s = time.perf_counter() - t0
    print(f"TPC-H SF{args.scale:g}: {rows:,} lineitem rows in {len(files):,} files clustered by l_orderkey, "
          f"indexed (footers, NaN counts, l_orderkey bloom) in {build_s:.2f} s")  # fmt: skip

    con, full = duckdb.connect(), duckdb.connect()
    register(con, "lineitem", table)
    glob = f"{folder}/*.parquet"
    full.execute(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{glob}', can_have_nan = true)")
    local, every = draw_keys(files, args.terms, np.random.default_rng(0))
    # A folder changed less than 2 s ago is listed again at every plan (its modification time may
    # not move within one clock tick: index_store/tables/plain.py); wait for the steady state.
    quiet = 2.1 - (time.time() - os.stat(folder).st_mtime)
    if quiet > 0:
        time.sleep(quiet)

    cases = [  # (name, WHERE clause, the keys)
        (f"OR of {len(local):,}, 10% of keys", or_clause(local), local),
        (f"OR of {len(every):,}, all keys", or_clause(every), every),
        (f"IN of {len(local):,}, 10% of keys", in_clause(local), local),
    ]
    header = ["WHERE", "kept/total", "sql() ms", "DuckDB alone ms", "speedup", "plan() ms",
              "parse_predicate ms", "prune ms"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    failures: list[str] = []
    for name, where, keys in cases:
        query = f"SELECT {SELECT} FROM lineitem WHERE {where}"
        pruned_s, got = best(lambda q=query: sql(con, q).fetchall(), args.exec_repeat)
        full_s, expected = best(lambda q=query: full.execute(q).fetchall(), args.exec_repeat)
        plan_s, p = best(lambda q=query: plan(con, q), args.repeat)
        parse_s, expr = best(lambda w=where: parse_predicate(w), args.repeat)
        prune_s, result = best(lambda e=expr: table.prune(e), args.repeat)

        (ours,) = p.tables
        needed = matching_files(full, glob, in_clause(keys))
        kept = {Path(f).name for f in result.files}
        if got != expected:
            failures.append(f"{name}: pruned answer {got} differs from the full answer {expected}")
        if not needed <= kept:
            failures.append(f"{name}: pruning skipped {len(needed - kept)} files with matching rows")
        if ours.kept != result.kept:
            failures.append(f"{name}: plan() kept {ours.kept} files, prune() {result.kept}")
        lines.append(
            f"| {name} | {ours.kept:,}/{ours.total:,} | {pruned_s * 1e3:.0f} | {full_s * 1e3:.0f} "
            f"| {full_s / pruned_s:.2f}x | {plan_s * 1e3:.0f} | {parse_s * 1e3:.0f} | {prune_s * 1e3:.0f} |"
        )
    print(f"\nbest of {args.repeat} warm runs (planning), of {args.exec_repeat} (execution, planning "
          "included in 'sql()')\n")  # fmt: skip
    print("\n".join(lines))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print("\nall answers equal, no needed file skipped" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
