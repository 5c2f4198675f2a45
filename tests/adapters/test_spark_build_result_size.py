"""Spark builds whose index is larger than ``spark.driver.maxResultSize``: the executors write the
index files, so the driver receives only their names and counts, and the index is the local one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from index_content import partition_tables
from pyspark.sql import SparkSession

from adapters.spark import build_index, build_secondary_index
from index_store import IndexedTable, open_table
from index_store.partitions.secondary import MANIFEST, read_manifest
from index_store.secondary.format import IndexFile

FILES, ROWS = 8, 25_000
LIMIT = 1 << 20


@contextmanager
def max_result_size(spark: SparkSession, size: str) -> Iterator[None]:
    """``spark.driver.maxResultSize`` for the jobs started inside (each job reads the live
    SparkContext's configuration when it starts; there is no public setter, hence the JVM's)."""
    conf = spark.sparkContext._jsc.sc().conf()
    before = conf.getOption("spark.driver.maxResultSize")
    conf.set("spark.driver.maxResultSize", size)
    try:
        yield
    finally:
        if before.isDefined():
            conf.set("spark.driver.maxResultSize", before.get())
        else:
            conf.remove("spark.driver.maxResultSize")


def _table(root: Path) -> Path:
    root.mkdir()
    rng = np.random.default_rng(7)
    for i in range(FILES):
        keys = pa.array(rng.integers(0, 1 << 62, ROWS)).cast(pa.string())  # random: no key ranges
        values = pa.array(rng.integers(0, 50_000, ROWS))
        pq.write_table(pa.table({"k": keys, "v": values}), root / f"part-{i}.parquet")
    return root


def _secondary_files(t: IndexedTable) -> dict[str, bytes]:
    manifest = read_manifest(t.index_root, t.snapshot().live.get(MANIFEST, ()))
    return {
        IndexFile(t.index_root / rel).info.path: (t.index_root / rel).read_bytes()
        for rel in set(manifest["index_file"].to_pylist())
    }


def _size(t: IndexedTable) -> int:
    return sum(p.stat().st_size for p in t.index_root.rglob("*") if p.is_file())


def test_a_build_larger_than_max_result_size_is_the_local_build(spark: SparkSession, tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    local = open_table(root, index_path=tmp_path / "index" / "local")
    local.build(record_key="k", record_index=True, bloom_columns=["v"], progress=False)
    local.create_index(["v"])
    local.build_index(progress=False)
    on_spark = open_table(root, index_path=tmp_path / "index" / "spark")
    with max_result_size(spark, "1m"):
        # The limit holds: results of 1.5 MiB in all fail.
        with pytest.raises(Exception, match="maxResultSize"):
            spark.sparkContext.parallelize(range(3), 3).map(lambda _: b"x" * (LIMIT // 2)).collect()
        assert build_index(spark, on_spark, record_key="k", record_index=True, bloom_columns=["v"]) == 1
        on_spark.create_index(["v"])
        assert build_secondary_index(spark, on_spark) == 3
    assert _size(on_spark) > 4 * LIMIT  # record index, blooms, secondary index files
    assert local.snapshot().config == on_spark.snapshot().config
    tables_l = partition_tables(root, tmp_path / "index", "local")
    tables_s = partition_tables(root, tmp_path / "index", "spark")
    assert tables_l.keys() == tables_s.keys() and "record_index" in tables_l
    for name, table in tables_l.items():
        if name != MANIFEST:  # its rows name each build's own index files
            assert table.equals(tables_s[name], check_metadata=True), name
    assert _secondary_files(local) == _secondary_files(on_spark)
    keys = pa.array(["no such key", *pq.read_table(root / "part-3.parquet")["k"].to_pylist()[:1000:7]])
    assert local.tag(keys).equals(on_spark.tag(keys))
