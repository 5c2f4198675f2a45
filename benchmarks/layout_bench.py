"""Data layout: files kept and DuckDB time on a table in random order, then re-clustered three ways.

What it measures, on TPC-H lineitem (``tpchgen-cli``, SF1 by default) written as 2,000 parquet files
in random row order and indexed:

1. ``adapters.duckdb.cluster.cluster`` into copies of about as many files: by ``l_shipdate``
   (linear), and by (``l_shipdate``, ``l_partkey``) on a z-order and on a Hilbert curve; each
   timed against a plain DuckDB ``COPY (SELECT * ... ORDER BY l_shipdate) TO ... (FILE_SIZE_BYTES)``.
2. For a query on each column alone and on both, on every layout: the files the index keeps, and
   DuckDB's time for ``count(*), sum(l_extendedprice)`` alone (its own row-group skipping) and
   pruned (``adapters.duckdb.execute``). Target (issue 15): the two-column query keeps at most 10%
   of the files after z-order or Hilbert where the random layout keeps 100%.
3. ``adapters.duckdb.advise`` on the random table for each single-query workload and for all three
   together, weighing the three layouts built: the layout it picks against the one that kept the
   fewest files. Target: it picks the best.

Checks (the script exits non-zero if one fails): each copy holds the source's rows (counts and sums
equal), every pruned answer equals DuckDB's, and the targets above. Times are the best of
``--repeat`` warm runs. The data is kept under ``--workdir`` (gitignored ``bench_data/``) and reused
(``--rebuild`` writes it again). Run from the repository root::

    python -m benchmarks.layout_bench [--scale 1] [--files 2000] [--repeat 3]
                                      [--workdir bench_data/layout_bench] [--rebuild] [--plot DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from adapters.duckdb import execute, parse_predicate, register
from adapters.duckdb.advise import advise
from adapters.duckdb.cluster import cluster
from benchmarks.common import machine_line, markdown_table
from index_store import open_table
from index_store.clustering import ClusterResult
from index_store.datagen.tpch import generate, write_files

SHIP = "l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-04-30'"  # about 2.4% of the dates
PART = "l_partkey BETWEEN 100000 AND 104000"  # 2% of the part keys
QUERIES = {
    "l_shipdate alone": SHIP,
    "l_partkey alone": PART,
    "both": f"{SHIP} AND {PART}",
}
LAYOUTS = {  # name -> (strategy, columns)
    "linear by l_shipdate": ("linear", ["l_shipdate"]),
    "z-order (l_shipdate, l_partkey)": ("zorder", ["l_shipdate", "l_partkey"]),
    "Hilbert (l_shipdate, l_partkey)": ("hilbert", ["l_shipdate", "l_partkey"]),
}


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    fn()
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default="bench_data/layout_bench")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--plot", metavar="DIR", help="draw the layout of each table into DIR/<name>.png")
    args = parser.parse_args()
    work = Path(args.workdir)
    failures: list[str] = []
    print(machine_line(duckdb))

    source = generate(args.scale, work / "tpch")["lineitem"]
    tables = work / f"sf{args.scale:g}-{args.files}"
    random_dir = tables / "random"
    if args.rebuild:
        shutil.rmtree(tables, ignore_errors=True)
    if not random_dir.exists():
        t0 = time.perf_counter()
        write_files(source, random_dir, args.files, order_by=None)
        open_table(random_dir).build(progress=False)
        print(f"random layout: {args.files:,} files written and indexed in {time.perf_counter() - t0:.1f} s")
    total_mb = sum(p.stat().st_size for p in random_dir.glob("*.parquet")) / 1024 / 1024
    target_mb = total_mb / args.files

    # 1. clustering time against DuckDB's own sort-and-write
    sorted_dir = tables / "duckdb-copy-order-by"
    shutil.rmtree(sorted_dir, ignore_errors=True)
    t0 = time.perf_counter()
    duckdb.connect().execute(
        f"COPY (SELECT * FROM read_parquet('{random_dir}/*.parquet') ORDER BY l_shipdate) TO '{sorted_dir}' "
        f"(FORMAT parquet, FILE_SIZE_BYTES {int(target_mb * 1024 * 1024)})"
    )
    copy_s = time.perf_counter() - t0
    dirs = {"random": random_dir}
    results: dict[str, ClusterResult] = {}
    cluster_rows = []
    for name, (strategy, by) in LAYOUTS.items():
        out = tables / strategy
        shutil.rmtree(out, ignore_errors=True)
        result = cluster(random_dir, out, by, strategy, target_file_mb=target_mb)
        results[name], dirs[name] = result, out
        cluster_rows.append(
            [
                name,
                f"{result.files:,}",
                f"{result.seconds:.1f}",
                f"{copy_s:.1f}",
                f"{result.seconds / copy_s:.1f}x",
            ]
        )
    print(
        f"\nre-clustering {args.files:,} random files (DuckDB COPY ... ORDER BY l_shipdate: {copy_s:.1f} s)\n"
    )
    print(markdown_table(["layout", "files", "cluster s", "DuckDB COPY ORDER BY s", "ratio"], cluster_rows))

    # 2. files kept and DuckDB time per layout and query
    rows = []
    kept: dict[tuple[str, str], int] = {}
    for layout, folder in dirs.items():
        con, full = duckdb.connect(), duckdb.connect()
        register(con, "lineitem", folder)
        full.execute(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{folder}/*.parquet')")
        table = open_table(folder)
        schema = table.snapshot().schema
        for title, where in QUERIES.items():
            query = f"SELECT count(*), sum(l_extendedprice) FROM lineitem WHERE {where}"
            result = table.prune(parse_predicate(where, schema=schema))
            kept[(layout, title)] = result.kept
            alone_s, expected = best(lambda q=query, c=full: c.execute(q).fetchall(), args.repeat)
            pruned_s, got = best(lambda q=query, c=con: execute(c, q).fetchall(), args.repeat)
            if got != expected:
                failures.append(f"{layout} / {title}: pruned {got} != DuckDB {expected}")
            rows.append(
                [
                    layout,
                    title,
                    f"{result.kept:,}/{result.total:,} ({result.kept / result.total:.1%})",
                    f"{alone_s * 1e3:.1f}",
                    f"{pruned_s * 1e3:.1f}",
                ]
            )
        if args.plot:
            Path(args.plot).mkdir(parents=True, exist_ok=True)
            table.plot_layout(["l_shipdate", "l_partkey"], Path(args.plot) / f"{folder.name}.png")
    print("\nfiles kept by the index; DuckDB ms (best of runs) alone (own row-group skipping) and pruned\n")
    print(markdown_table(["layout", "query", "files kept", "DuckDB alone ms", "pruned ms"], rows))
    for name in ("z-order (l_shipdate, l_partkey)", "Hilbert (l_shipdate, l_partkey)"):
        share = kept[(name, "both")] / results[name].files
        random_share = kept[("random", "both")] / args.files
        met = share <= 0.10 and random_share == 1.0
        print(
            f"target, {name}: both columns keep {share:.1%} (random layout {random_share:.0%}): "
            + ("met" if met else "NOT met")
        )
        if not met:
            failures.append(f"{name}: the two-column query keeps {share:.1%}")

    # 3. advise against what the layouts measured
    candidates = [LAYOUTS[name] for name in LAYOUTS]
    workloads = {title: [f"SELECT count(*) FROM lineitem WHERE {where}"] for title, where in QUERIES.items()}
    workloads["all three"] = [q for qs in workloads.values() for q in qs]
    advice_rows = []
    for title, workload in workloads.items():
        t0 = time.perf_counter()
        advice = advise(random_dir, workload, "lineitem", candidates=candidates)
        took = time.perf_counter() - t0
        picked = next(c for c in advice.candidates if c.strategy != "as is")
        measured = {
            name: sum(kept[(name, t)] for t in (QUERIES if title == "all three" else [title]))
            for name in LAYOUTS
        }
        best_name = min(measured, key=lambda n: measured[n])
        picked_name = next(
            n for n, (s, by) in LAYOUTS.items() if s == picked.strategy and tuple(by) == picked.columns
        )
        ok = measured[picked_name] == measured[best_name]
        if not ok:
            failures.append(f"advise for {title}: picked {picked_name}, best {best_name}")
        estimates = "; ".join(
            f"{c.strategy} {'+'.join(c.columns) or '(as is)'}: {c.files_read:,}" for c in advice.candidates
        )
        advice_rows.append([title, picked_name, best_name, "yes" if ok else "NO", estimates, f"{took:.1f}"])
    print("\nadvise on the random table: the layout it picks, and the one that kept the fewest files\n")
    print(
        markdown_table(
            ["workload", "advise picks", "fewest files kept", "same", "estimates (files read)", "s"],
            advice_rows,
        )
    )

    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
