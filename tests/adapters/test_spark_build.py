"""Index builds on Spark: the same index, part for part, as a local build of the same table."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from index_content import partition_tables
from pyspark.sql import SparkSession

from adapters.spark.build import build_index
from hudi_expr import Expression, col
from index_store import IndexedTable, open_table
from index_store.errors import TableFormatError


def _flat(i: int, n: int = 40) -> pa.Table:
    """One file of every stats-bearing type; ``x`` holds NaN and NULLs (all NaN in file 3, all
    NULL in file 5, neither in file 7)."""
    rng = np.random.default_rng(i)
    base = i * 1000
    x: list[float | None] = list(rng.normal(size=n))
    if i == 3:
        x = [float("nan")] * n
    elif i == 5:
        x = [None] * n
    elif i != 7:
        x[1], x[2] = float("nan"), None
    return pa.table(
        {
            "id": pa.array(np.arange(base, base + n), pa.int64()),
            "x": pa.array(x, pa.float64()),
            "s": pa.array([f"k{i:03d}-{j:03d}-é" for j in range(n)]),
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i * 10 + j % 10) for j in range(n)]),
            "ts": pa.array(np.arange(n, dtype=np.int64) * 10**6 + i * 10**12, pa.timestamp("us", tz="UTC")),
            "dec": pa.array([decimal.Decimal(f"{base + j}.25") for j in range(n)], pa.decimal128(12, 2)),
            "st": pa.array([{"a": base + j, "b": None if j % 7 == 0 else f"b{j}"} for j in range(n)]),
        }
    )


@pytest.fixture(scope="module")
def flat_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("flat")
    for i in range(20):
        pq.write_table(_flat(i), root / f"part-{i:02d}.parquet")
    return root


def _assert_same_stats(a: IndexedTable, b: IndexedTable) -> None:
    sa, sb = a.stats(), b.stats()
    assert sa.schema.equals(sb.schema, check_metadata=True)
    assert sa.files.equals(sb.files) and sa.row_count.equals(sb.row_count)
    assert sa.columns.keys() == sb.columns.keys()
    for name, ca in sa.columns.items():
        cb = sb.columns[name]
        for attr in ("min", "max", "null_count", "nan_count"):
            assert getattr(ca, attr).equals(getattr(cb, attr)), (name, attr)
        assert (ca.bloom is None) == (cb.bloom is None), name


def _build_both(
    spark: SparkSession,
    root: Path,
    index_root: Path,
    bloom_columns: Sequence[str] | None = None,
    files_per_task: int | None = 3,
    fpp: float = 0.01,
) -> tuple[IndexedTable, IndexedTable]:
    """The table indexed twice, locally and on Spark, into two index roots; checks they agree."""
    local = open_table(root, index_path=index_root / "local")
    on_spark = open_table(root, index_path=index_root / "spark")
    v_local = local.build(bloom_columns=bloom_columns, fpp=fpp, progress=False)
    v_spark = build_index(
        spark, on_spark, bloom_columns=bloom_columns, fpp=fpp, files_per_task=files_per_task
    )
    assert v_local == v_spark == 1
    snap_l, snap_s = local.snapshot(), on_spark.snapshot()
    assert snap_l.schema.equals(snap_s.schema, check_metadata=True)
    assert (snap_l.config, snap_l.table_instant, snap_l.next_file_idx, snap_l.checkpoint_version) == (
        snap_s.config,
        snap_s.table_instant,
        snap_s.next_file_idx,
        snap_s.checkpoint_version,
    )
    parts_l = partition_tables(root, index_root, "local")
    parts_s = partition_tables(root, index_root, "spark")
    assert parts_l.keys() == parts_s.keys()
    for p, t in parts_l.items():
        assert t.equals(parts_s[p], check_metadata=True), p
    _assert_same_stats(local, on_spark)
    return local, on_spark


def _assert_same_pruning(a: IndexedTable, b: IndexedTable, exprs: Sequence[Expression]) -> None:
    total = a.prune(exprs[0]).total
    some_pruned = False
    for expr in exprs:
        ra, rb = a.prune(expr), b.prune(expr)
        assert ra.files == rb.files, str(expr)
        some_pruned |= ra.kept < total
    assert some_pruned


def test_flat_table_has_the_same_index_as_a_local_build(
    spark: SparkSession, flat_table: Path, tmp_path: Path
) -> None:
    local, on_spark = _build_both(spark, flat_table, tmp_path, bloom_columns=["id", "s"])
    stats = on_spark.stats(["x"])
    nan = stats.column("x").nan_count.to_pylist()  # type: ignore[union-attr]
    assert nan[3] == 40 and nan[5] == 0 and nan[7] == 0 and nan[0] == 1
    assert on_spark.stats().num_files == 20
    _assert_same_pruning(
        local,
        on_spark,
        [
            col("id") == 7005,
            col("s").isin(["k012-001-é", "nope"]),
            col("x").is_nan(),
            col("x") > 1.5,
            col("d") < dt.date(2020, 2, 1),
            col("ts") >= dt.datetime(1970, 1, 1, 4, tzinfo=dt.UTC),
            col("dec") == decimal.Decimal("15003.25"),
            col("st.a").between(3000, 3010),
            col("st.b").is_null(),
        ],
    )


def test_every_task_size_gives_the_same_index(spark: SparkSession, flat_table: Path, tmp_path: Path) -> None:
    for size in (1, 20):  # one file per task, one task for all
        _build_both(spark, flat_table, tmp_path / str(size), bloom_columns=["s"], files_per_task=size)


def test_hive_partitioned_table(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "hive"
    for i in range(4):
        t = (
            _flat(i)
            .append_column("region", pa.array(["eu", "us"] * 20))
            .append_column("year", pa.array([2023 + i % 2] * 40, pa.int32()))
        )
        pq.write_to_dataset(
            t, root, partition_cols=["region", "year"], basename_template=f"f{i}-{{i}}.parquet"
        )
    local, on_spark = _build_both(spark, root, tmp_path / "idx", bloom_columns=["id"])
    assert local.reader.partition_schema().names == ["region", "year"]
    _assert_same_pruning(
        local,
        on_spark,
        [col("region") == "eu", (col("year") == 2024) & (col("id") < 1500), col("id") == 2005],
    )


def test_evolved_schema_is_computed_against_the_whole_table(spark: SparkSession, tmp_path: Path) -> None:
    """Early files lack a column and hold a narrower type: groups of them alone would differ."""
    root = tmp_path / "evolved"
    root.mkdir()
    for i in range(9):
        t = _flat(i).select(["id", "x", "s"])
        if i < 6:
            t = t.set_column(0, "id", t["id"].cast(pa.int32()))
        else:
            t = t.append_column("extra", pa.array([f"e{i}-{j}" for j in range(40)]))
        pq.write_table(t, root / f"part-{i}.parquet")
    local, on_spark = _build_both(spark, root, tmp_path / "idx", bloom_columns=["id", "extra"])
    assert local.snapshot().schema.field("id").type == pa.int64()
    _assert_same_pruning(local, on_spark, [col("extra") == "e7-3", col("id") == 4005, col("extra").is_null()])


def test_table_written_by_spark(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "by_spark"
    df = spark.range(0, 3000, numPartitions=4).selectExpr(
        "id",
        "CASE WHEN id % 17 = 0 THEN double('NaN') WHEN id % 19 = 0 THEN NULL ELSE id / 7.0 END AS x",
        "concat('k', lpad(cast(id AS string), 5, '0')) AS s",
        "date_add(DATE'2024-01-01', cast(id % 40 AS int)) AS d",
        "timestamp_seconds(id * 60) AS ts",
        "cast(id / 3 AS decimal(10, 2)) AS dec",
        "named_struct('a', id, 'b', cast(id % 5 AS string)) AS st",
        "cast(id % 3 AS int) AS p",
    )
    df.write.partitionBy("p").parquet(str(root))
    local, on_spark = _build_both(spark, root, tmp_path / "idx", bloom_columns=["s"])
    _assert_same_pruning(local, on_spark, [col("p") == 1, col("s") == "k01234", col("x").is_nan()])


@pytest.mark.parametrize("name", ["v9_txns_simple_meta", "v6_complexkeygen_hivestyle", "v8_empty"])
def test_real_hudi_table(
    spark: SparkSession, hudi_tables: dict[str, Path], tmp_path: Path, name: str
) -> None:
    """The record key's filters by default (Hudi's own footer filters for ``_hoodie_record_key``,
    a bloom filter for a key column without meta fields), partitions from the Hudi layout."""
    local, on_spark = _build_both(spark, hudi_tables[name], tmp_path, files_per_task=1)
    if "empty" in name:
        assert local.stats().num_files == 0
        return
    stats = local.stats()
    key = local.reader.record_key_field()
    config = local.snapshot().config
    assert key in config.bloom_columns or key == config.key_column
    assert on_spark.snapshot().config == config
    keys = pq.read_table(os.path.join(local.root, stats.files[0].as_py()), columns=[key])[key].to_pylist()
    _assert_same_pruning(local, on_spark, [col(key) == keys[0], col(key) == "no such key"])


def _index_files(index_root: Path) -> set[str]:
    return {str(p.relative_to(index_root)) for p in index_root.rglob("*") if p.is_file()}


def test_a_corrupt_file_fails_clearly_and_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(6):
        pq.write_table(_flat(i), root / f"part-{i}.parquet")
    table = open_table(root)
    assert build_index(spark, table, files_per_task=2) == 1
    before = _index_files(table.index_root)
    (root / "part-4b.parquet").write_bytes(b"not parquet at all, " * 10)
    with pytest.raises(TableFormatError) as local_error:
        open_table(root, index_path=tmp_path / "local").build(progress=False)
    with pytest.raises(TableFormatError, match=r"part-4b\.parquet is not readable parquet") as spark_error:
        build_index(spark, root, files_per_task=2)
    assert str(spark_error.value) == str(local_error.value)
    assert table.snapshot().version == 1
    assert _index_files(table.index_root) == before


def test_an_unknown_bloom_column_fails_as_locally(
    spark: SparkSession, flat_table: Path, tmp_path: Path
) -> None:
    with pytest.raises(TableFormatError) as local_error:
        open_table(flat_table, index_path=tmp_path / "local").build(bloom_columns=["nope"], progress=False)
    with pytest.raises(TableFormatError, match="nope") as spark_error:
        build_index(spark, flat_table, bloom_columns=["nope"], index_path=tmp_path / "spark")
    assert str(spark_error.value) == str(local_error.value)
    assert not (tmp_path / "spark").exists() or not _index_files(tmp_path / "spark")


def test_files_per_task_must_be_positive(spark: SparkSession, flat_table: Path) -> None:
    with pytest.raises(ValueError, match="files_per_task"):
        build_index(spark, flat_table, files_per_task=0)


def test_odd_column_names_and_a_kept_configuration(spark: SparkSession, tmp_path: Path) -> None:
    """Bloom columns named as the schema has them (``a.b`` is one top-level column, ``s.y`` a
    struct's field), and a second build on Spark keeps the configuration and builds the
    secondary index again, as a local build does."""
    root = tmp_path / "odd"
    root.mkdir()
    names = ["a.b", "my col", 'q"uote', "é", "select"]
    for i in range(6):
        values = pa.array(range(i * 100, i * 100 + 100, 2), pa.int64())
        columns: dict[str, pa.Array] = dict.fromkeys(names, values)
        columns["s"] = pa.StructArray.from_arrays([values], ["y"])
        pq.write_table(pa.table(columns), root / f"f{i}.parquet")
    blooms = [*names, "s.y"]
    local, on_spark = _build_both(spark, root, tmp_path / "index", bloom_columns=blooms)
    for name in blooms:
        assert on_spark.prune(col(name) == 101).kept == 0, name  # in range: the bloom filter prunes it
    for table in (local, on_spark):
        table.create_index(["a.b"])
    v_local = local.build(record_key="a.b", record_index=True, progress=False)
    v_spark = build_index(spark, on_spark, record_key="a.b", record_index=True)
    assert v_local == v_spark
    v_local, v_spark = local.build(progress=False), build_index(spark, on_spark, files_per_task=2)
    assert v_local == v_spark
    for table in (local, on_spark):
        config = table.snapshot().config
        assert (config.bloom_columns, config.key_fields, config.record_index) == (
            tuple(blooms),
            ("a.b",),
            True,
        )
        assert [(s.name, s.complete) for s in table.indexes()] == [("idx_value_a_b", True)]
    assert on_spark.count(col("a.b") == 302) == 1
