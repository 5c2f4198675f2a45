"""Pruned Spark reads of TPC-H lineitem: ``spark.read.parquet``, ``adapters.spark.read``, the data source.

TPC-H lineitem (``tpchgen-cli``, scale factor 1 by default: 6M rows) written as 2,000 parquet files
clustered by ``l_shipdate`` (``index_store.datagen.tpch.write_files``) and indexed (footer statistics); two
queries, one month of ship dates and TPC-H Q6, each run three ways on one local Spark session:

(a) ``spark.read.parquet(dir).filter(cond)``: Spark alone (it lists and plans every file, then
    skips row groups by their statistics);
(b) ``adapters.spark.read(spark, table, where=cond)``: the index prunes, Spark reads the kept files
    natively (planning included in the time);
(c) ``spark.read.format("hudi_index").load(dir).filter(cond)``: the Python data source prunes in
    ``partitions()`` and streams the kept files as arrow batches through Python workers.

Each is timed as the best of ``--repeat`` runs after a warm-up, answers are checked equal (the
script exits non-zero otherwise), and the files each way reads are printed. Target: (b) at least 5x
faster than (a) on the one-month range. Run from the repository root::

    python -m benchmarks.spark_bench [--scale 1] [--files 2000] [--repeat 3] [--memory 4g]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import DataFrame, SparkSession

from adapters.spark import local_session, read, register_datasource
from benchmarks.common import best, machine
from index_store import IndexedTable, open_table
from index_store.datagen.tpch import generate, write_files

QUERIES = [
    ("March 1995", "l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-31'"),
    (
        "Q6",
        "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
        "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    ),
]
AGGREGATE = ["count(*) AS n", "sum(l_extendedprice * l_discount) AS revenue"]


def files_read(df: DataFrame) -> int:
    """The files of the DataFrame's file relation (``inputFiles``: what Spark lists and plans)."""
    return len(df.inputFiles())


def prepare(workdir: Path, scale: float, n_files: int) -> IndexedTable:
    t0 = time.perf_counter()
    source = generate(scale, workdir / "tpch")["lineitem"]
    folder = workdir / f"lineitem-sf{scale:g}-{n_files}"
    if not (folder / ".hoodie").exists():
        if folder.exists():
            shutil.rmtree(folder)
        write_files(source, folder, n_files)
        table = open_table(folder)
        table.build(bloom_columns=["l_orderkey"])
    print(f"TPC-H SF{scale:g} lineitem in {n_files} files, indexed: {time.perf_counter() - t0:.1f} s")
    return open_table(folder)


def run(spark: SparkSession, table: IndexedTable, repeat: int) -> bool:
    root = table.root
    ok = True
    rows = []
    for title, cond in QUERIES:
        plain_df = spark.read.parquet(root).filter(cond)
        plain_s, plain = best(lambda df=plain_df: df.selectExpr(*AGGREGATE).collect(), repeat)

        def pruned(c: str = cond) -> Any:
            return read(spark, table, where=c).selectExpr(*AGGREGATE).collect()

        pruned_s, got = best(pruned, repeat)
        pruned_files = files_read(read(spark, table, where=cond))

        def source(c: str = cond) -> Any:
            # A fresh load() per query, as singleScan promises (see adapters.spark.datasource).
            source = spark.read.format("hudi_index").option("singleScan", "true").load(root)
            return source.filter(c).selectExpr(*AGGREGATE).collect()

        source_s, via_source = best(source, repeat)
        same = plain == got == via_source
        ok = ok and same
        rows.append(
            (
                title,
                files_read(plain_df),
                pruned_files,
                plain_s * 1e3,
                pruned_s * 1e3,
                source_s * 1e3,
                plain_s / pruned_s,
                plain_s / source_s,
                "" if same else "  WRONG ANSWER",
            )
        )
    print(
        "\n| query | files (a) | files (b, c) | (a) spark.read.parquet ms | (b) adapters.spark.read ms "
        "| (c) data source ms | (a)/(b) | (a)/(c) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for title, fa, fb, a, b, c, ab, ac, flag in rows:
        print(f"| {title} | {fa:,} | {fb:,} | {a:.0f} | {b:.0f} | {c:.0f} | {ab:.1f}x | {ac:.1f}x |{flag}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", default="4g", help="Spark driver memory")
    parser.add_argument("--workdir", type=Path, default=Path("bench_data/spark_bench"))
    args = parser.parse_args(argv)

    print(f"machine: {machine()}, pyspark {pyspark.__version__}, local[2], driver memory {args.memory}")
    table = prepare(args.workdir, args.scale, args.files)
    spark = local_session(app_name="spark-bench", memory=args.memory)
    spark.sparkContext.setLogLevel("ERROR")
    register_datasource(spark)
    try:
        ok = run(spark, table, args.repeat)
    finally:
        spark.stop()
    print("\nall answers equal" if ok else "\nWRONG ANSWERS (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
