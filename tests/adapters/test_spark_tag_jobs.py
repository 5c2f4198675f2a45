"""The Spark work one ``adapters.spark.tag`` call runs (jobs, stages, tasks: a structural check, not
a timing), and the record index lookups co-partitioned with the index's shards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.spark import tag
from adapters.spark.jobs import counted_work
from adapters.spark.tag_record import ROUTE, _Route, route_count, spark_int_hash, spark_routes
from hudi_expr import hash_keys
from index_store import IndexedTable, open_table
from index_store.partitions.record_index import shard_of

FILES, ROWS = 8, 500


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> IndexedTable:
    """``FILES`` files of random unique ids, indexed with a record index of 4 shards."""
    root = tmp_path_factory.mktemp("jobs") / "t"
    root.mkdir()
    ids = np.random.default_rng(5).permutation(FILES * ROWS * 3)[: FILES * ROWS]
    for i in range(FILES):
        chunk = ids[i * ROWS : (i + 1) * ROWS]
        pq.write_table(pa.table({"id": [f"{v:08d}" for v in chunk]}), root / f"part-{i}.parquet")
    t = open_table(root)
    t.build(record_key="id", record_index=True, record_index_shards=4, progress=False)
    return t


@contextmanager
def _broadcasts(spark: SparkSession, threshold: str) -> Iterator[None]:
    """``spark.sql.autoBroadcastJoinThreshold`` set for the block (-1: tag's distributed path)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    previous = spark.conf.get(key) or "10MB"
    spark.conf.set(key, threshold)
    try:
        yield
    finally:
        spark.conf.set(key, previous)


def _batch(spark: SparkSession, n: int) -> DataFrame:
    keys = [f"{v:08d}" for v in range(0, 3 * n, 3)]  # about a third present
    return spark.createDataFrame(pa.table({"id": keys})).cache()


@pytest.mark.parametrize("using", ["bloom", "record"])
def test_a_small_batch_is_one_job_and_its_result_one_more(
    spark: SparkSession, table: IndexedTable, using: str
) -> None:
    """A small batch: one job of one stage collects its keys (encoded and checked on the
    executors), the driver tags them; the result is the batch joined with the broadcast answers:
    no shuffle (a job broadcasting the answers, one for the result, one stage each)."""
    df = _batch(spark, 1000)
    df.count()
    with counted_work(spark) as call:
        result = tag(spark, table, df, using=using)  # type: ignore[arg-type]
    with counted_work(spark) as action:
        rows = result.select("id", "_file").collect()
    assert (call.jobs, call.stages) == (1, 1), call
    assert action.jobs <= 2 and action.stages == action.jobs, action
    local = table.tag([r["id"] for r in rows], using=using)  # type: ignore[arg-type]
    assert [r["_file"] for r in rows] == local["file"].to_pylist()
    df.unpersist()


def test_a_large_batch_looks_up_each_shard_in_one_task(spark: SparkSession, table: IndexedTable) -> None:
    """Past the broadcast threshold the record index lookups run on the executors: the inputs
    shuffled once by shard range (as many tasks as routes, no join against the index), checkpointed
    once; the result joins them back (shuffles of the batch and the answers, the files broadcast).
    Answers as locally."""
    df = _batch(spark, 1000)
    df.count()
    with _broadcasts(spark, "-1"):
        with counted_work(spark) as call:
            result = tag(spark, table, df, using="record")
        with counted_work(spark) as action:
            rows = result.select("id", "_file").collect()
    routes = route_count(table.index_root, tuple(table.snapshot().live["record_index"]), 2)
    assert routes == 4
    # The input scan, then the lookups: one task per shard range (adaptive execution runs each
    # stage as a job of its own).
    assert call.jobs <= 2 and call.stages == 2, call
    assert call.tasks <= df.rdd.getNumPartitions() + routes, call
    assert action.jobs <= 4, action
    local = table.tag([r["id"] for r in rows], using="record")
    assert sorted((r["id"], r["_file"] or "") for r in rows) == sorted(
        zip(local["key"].to_pylist(), [f or "" for f in local["file"].to_pylist()], strict=True)
    )
    df.unpersist()


def test_spark_hash_partitioning_sends_each_route_to_its_partition(spark: SparkSession) -> None:
    """``spark_int_hash`` is Spark's ``hash()`` of an int, so ``spark_routes`` lands route ``s`` in
    partition ``s``; and a key's route is its shard of the record index."""
    values = np.array([0, 1, -1, 42, 2**31 - 1, -(2**31), 123456], dtype=np.int64)
    df = spark.createDataFrame(pa.table({"v": pa.array(values, pa.int32())}))
    assert [r[0] for r in df.select(F.hash("v")).collect()] == spark_int_hash(values).tolist()
    for n in (1, 2, 8, 64):
        routes = spark.createDataFrame(pa.table({ROUTE: pa.array(spark_routes(n), pa.int32())}))
        placed = routes.repartition(n, ROUTE).select(ROUTE, F.spark_partition_id().alias("p")).collect()
        assert sorted((r["p"], r[ROUTE]) for r in placed) == list(enumerate(spark_routes(n).tolist()))
    keys = pa.array([f"k{i}" for i in range(1000)])
    route = _Route(8, spark_routes(8))(keys).to_numpy()
    assert (route == spark_routes(8)[shard_of(hash_keys(keys)[0], 8)]).all()
