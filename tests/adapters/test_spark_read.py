"""``read`` and ``prune`` give exactly the rows of a full Spark read, while reading fewer files."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

import pyspark.sql.functions as F
from pyspark.sql import DataFrame, SparkSession

from adapters.spark import catalyst
from adapters.spark.read import prune, read
from hudi_expr import GreaterThan, LessThan
from index_store import IndexedTable, open_table

FILES = 8
ROWS = 12  # per file


def _rows(k: int) -> dict[str, list]:  # type: ignore[type-arg]
    """File ``k``: ids and dates clustered by file; NaN, NULL and -0.0 in some files only."""
    ids = list(range(k * ROWS, (k + 1) * ROWS))
    x = [float(i) / 2 for i in ids]
    if k == 2:
        x[3] = math.nan
    if k == 5:
        x[0], x[1] = None, -0.0
    return {
        "id": ids,
        "x": x,
        "s": [f"k{k}-{i % 5}" for i in ids],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i) for i in ids],
        "amount": [decimal.Decimal(i) / 4 for i in ids],
        "flag": [i % 3 == 0 for i in ids],
        "opt": [None if i % 7 == 0 else i % 4 for i in ids],
    }


ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("x", pa.float64()),
        ("s", pa.string()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("amount", pa.decimal128(10, 2)),
        ("flag", pa.bool_()),
        ("opt", pa.int32()),
    ]
)


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> IndexedTable:
    """A plain directory written by pyarrow, one file per id range."""
    root = tmp_path_factory.mktemp("flat")
    for k in range(FILES):
        pq.write_table(pa.table(_rows(k), schema=ARROW_SCHEMA), root / f"part-{k}.parquet")
    table = open_table(root)
    table.build()
    return table


@pytest.fixture(scope="module")
def hive(spark: SparkSession, flat: IndexedTable, tmp_path_factory: pytest.TempPathFactory) -> IndexedTable:
    """The same rows written by Spark itself, hive-partitioned by ``p`` and range-clustered by id."""
    root = Path(tmp_path_factory.mktemp("hive")) / "t"
    df = spark.read.parquet(flat.root).withColumn("p", (F.col("id") % 3).cast("int"))
    df.repartitionByRange(4, "id").write.partitionBy("p").parquet(str(root))
    table = open_table(root)
    table.build()
    return table


HAND_PICKED = [
    "id = 17",
    "id < 10",
    "5 > id",
    "id BETWEEN 30 AND 40",
    "id IN (3, 50, 90)",
    "id NOT IN (3, 50)",
    "NOT (id >= 12)",
    "x > 40",
    "x >= 'NaN'",
    "x = 'NaN'",
    "isnan(x)",
    "NOT isnan(x)",
    "x < 0.5",
    "x = -0.0",
    "x <=> NULL",
    "x IS NULL",
    "NOT (x < 40)",
    "s = 'k3-1'",
    "s LIKE 'k6%'",
    "s > 'k5'",
    "day = '2024-01-05'",
    "day >= DATE '2024-03-20'",
    "ts < '2024-01-01 05:00:00'",
    "ts >= TIMESTAMP '2024-01-04 00:00:00+00:00'",
    "amount > 20.5",
    "amount = 3.25",
    "flag AND id < 20",
    "NOT flag AND id > 80",
    "opt IS NULL AND id < 30",
    "opt <=> 2 AND id > 70",
    "NOT (opt <=> 2) AND id < 15",
    "id + 1 = 18",
    "abs(id) < 5 OR id > 90",
    "NOT (abs(id) < 5 AND id > 2)",
    "id > 5 AND x < 2",
    "id < 2 OR s = 'k7-0'",
    "id > 1000",
    "id < 0",
]

COLUMNS = {
    "id": [0, 5, 11, 12, 47, 48, 95, 96],
    "x": [0.0, 5.5, 23.5, 24.0, 47.5, "'NaN'", "'Infinity'", "-0.0"],
    "s": ["'k0-0'", "'k4-3'", "'k7'", "'k9'"],
    "opt": [0, 1, 3],
    "day": ["DATE '2024-01-12'", "DATE '2024-02-10'"],
}
OPS = ["=", "<", "<=", ">", ">=", "<>", "<=>"]


def random_predicates(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)

    def leaf() -> str:
        column = rng.choice(list(COLUMNS))
        return f"{column} {rng.choice(OPS)} {rng.choice(COLUMNS[column])}"

    def tree(depth: int) -> str:
        if depth == 0 or rng.random() < 0.35:
            return leaf()
        op = rng.choice(["AND", "OR"])
        text = f"({tree(depth - 1)} {op} {tree(depth - 1)})"
        return f"NOT {text}" if rng.random() < 0.3 else text

    return [tree(2) for _ in range(n)]


PREDICATES = HAND_PICKED + random_predicates(20)


def _ids_per_predicate(frames: list[DataFrame]) -> list[list[int]]:
    """Sorted ids of each frame, computed in one Spark job (a union tagged by position)."""
    tagged = [f.select(F.lit(k).alias("k"), F.col("id")) for k, f in enumerate(frames)]
    rows = reduce(DataFrame.unionByName, tagged).collect()
    out: list[list[int]] = [[] for _ in frames]
    for r in rows:
        out[r.k].append(r.id)
    return [sorted(ids) for ids in out]


def _oracle(spark: SparkSession, root: str, predicates: list[str]) -> list[list[int]]:
    everything = spark.read.parquet(root)
    return _ids_per_predicate([everything.filter(p) for p in predicates])


def _check(spark: SparkSession, table: IndexedTable, predicates: list[str]) -> tuple[int, int]:
    """Assert read/prune match the full read; returns (predicates that pruned, files read)."""
    expected = _oracle(spark, table.root, predicates)
    read_frames = [read(spark, table, p) for p in predicates]
    pruned_frames = [prune(spark.read.parquet(table.root).filter(p), table) for p in predicates]
    got_read = _ids_per_predicate(read_frames)
    got_prune = _ids_per_predicate(pruned_frames)
    total = len(spark.read.parquet(table.root).inputFiles())
    pruned = 0
    for p, want, a, b, frame in zip(predicates, expected, got_read, got_prune, read_frames, strict=True):
        assert a == want, f"read: {p}"
        assert b == want, f"prune: {p}"
        pruned += len(frame.inputFiles()) < total
    return pruned, total


def test_read_and_prune_match_full_read_flat(spark: SparkSession, flat: IndexedTable) -> None:
    pruned, total = _check(spark, flat, PREDICATES)
    assert total == FILES
    assert pruned >= 20  # clustered ids, dates and timestamps: most predicates skip files


def test_read_and_prune_match_full_read_hive(spark: SparkSession, hive: IndexedTable) -> None:
    predicates = [*HAND_PICKED[::3], "p = 1", "p = 1 AND id < 30", "p IN (0, 2) AND x > 40", "NOT (p <> 2)"]
    pruned, _ = _check(spark, hive, predicates)
    assert pruned >= 5
    assert "p" in read(spark, hive, "p = 1").columns


def test_zero_kept_files_give_an_empty_frame_with_the_table_schema(
    spark: SparkSession, flat: IndexedTable
) -> None:
    df = read(spark, flat, "id > 1000")
    assert df.schema == spark.read.parquet(flat.root).schema
    assert df.inputFiles() == [] and df.count() == 0


def test_nan_rows_are_kept_for_greater_than(spark: SparkSession, flat: IndexedTable) -> None:
    """``x > 40`` is TRUE for NaN in Spark: the file holding the NaN (ids 24..35) must be read.

    Spark's own parquet filter pushdown skips that row group (its max ignores the NaN), so the row
    only comes back with pushdown off: the index must not be the reason it is lost.
    """
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        ids = [r.id for r in read(spark, flat, F.col("x") > 40).collect()]
        full = [r.id for r in spark.read.parquet(flat.root).filter("x > 40").collect()]
    finally:
        spark.conf.set("spark.sql.parquet.filterPushdown", "true")
    assert 27 in ids and sorted(ids) == sorted(full)
    assert len(read(spark, flat, "x > 40").inputFiles()) == 3  # files 6, 7 and the NaN file


def test_prune_leaves_other_plan_shapes_alone(spark: SparkSession, flat: IndexedTable) -> None:
    base = spark.read.parquet(flat.root)
    grouped = base.filter("id < 10").groupBy("flag").count()
    assert prune(grouped, flat) is grouped
    projected = base.filter("id < 10").select((F.col("id") * 2).alias("twice"), "s")
    rebuilt = prune(projected, flat)
    assert rebuilt is not projected and len(rebuilt.inputFiles()) == 1
    assert sorted(rebuilt.collect()) == sorted(projected.collect())


def test_a_wrong_negation_rule_is_caught(
    spark: SparkSession, flat: IndexedTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row comparison can fail: ``a >= v`` translated as ``a > v`` skips a file whose max is v."""
    monkeypatch.setitem(catalyst._COMPARISONS, "GreaterThanOrEqual", (GreaterThan, LessThan))
    with pytest.raises(AssertionError, match="id >= 23"):
        _check(spark, flat, ["id >= 23"])


def test_prune_of_a_temporary_view_query_prunes_without_logging_an_error(
    spark: SparkSession, flat: IndexedTable, capfd: pytest.CaptureFixture[str]
) -> None:
    """Spark prints a view's columns qualified (`v`.`id`): the rebuilt scan is named alike, so the
    filter parses back (it did not, and PySpark logged an UNRESOLVED_COLUMN error with a Java stack
    trace while ``prune`` quietly read every file)."""
    spark.read.parquet(flat.root).createOrReplaceTempView("pruned_view")
    df = spark.sql(f"SELECT id, s FROM pruned_view WHERE id >= {(FILES - 2) * ROWS}")
    capfd.readouterr()
    pruned = prune(df, flat)
    assert sorted(pruned.collect()) == sorted(df.collect())
    assert len(pruned.inputFiles()) == 2 < len(df.inputFiles())
    assert "UNRESOLVED_COLUMN" not in capfd.readouterr().err
