"""Secondary indexes on Spark: executors build the same index files as a local build, and pruned
reads skip the files the index proves hold no matching row, with the answers of a full read."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, SparkSession

from adapters.spark import (
    build_secondary_index,
    prune,
    prune_plan,
    read,
    read_plan,
)
from adapters.spark.secondary import without_implied_not_null
from hudi_expr import Expression, col, contains_term
from index_store import IndexedTable, open_table
from index_store.errors import TableFormatError
from index_store.partitions.secondary import MANIFEST, read_manifest
from index_store.secondary import UseRules
from index_store.secondary.format import IndexFile

FILES = 5
ROWS = 20_000  # per file: 100,000 rows in all
ALWAYS = UseRules(by_cost=False)  # use the index whenever it can


def _file(k: int, rows: int = ROWS, seed: int = 0, shift: int = 0) -> pa.Table:
    """File ``k``: ``v`` = i * FILES + k and ``s`` = '<i % 100>-<k>', both shuffled, so each value
    is in one file while every file's min/max covers them all; ``n`` is NULL only in file 3.

    ``a`` = i % 100 and ``b`` = (a + k + shift) % 100: every file holds every value of each (no
    statistics or bloom filter can drop a file for ``a = 5 AND b = 7``), but only file 2 (with
    ``shift`` 0) holds a row with both."""
    rng = np.random.default_rng(seed * 100 + k)
    i = rng.permutation(rows)
    n = pa.array((i % 7).astype(np.int32), mask=(i % 50 == 0) if k == 3 else None)
    return pa.table(
        {
            "id": np.arange(k * rows, (k + 1) * rows, dtype=np.int64),
            "v": (i * FILES + k).astype(np.int64),
            "a": (i % 100).astype(np.int32),
            "b": ((i % 100 + k + shift) % 100).astype(np.int32),
            "s": [f"{j % 100:03d}-{k}" for j in i.tolist()],
            "n": n,
            "text": [f"word{j % 10} file{k}" for j in i.tolist()],
            "x": rng.random(rows),
        }
    )


def _write(root: Path, files: int = FILES, rows: int = ROWS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        pq.write_table(_file(k, rows), root / f"part-{k}.parquet", row_group_size=5_000)
    return root


def _define(table: IndexedTable) -> IndexedTable:
    table.build()  # statistics only, no bloom filter of the table's own
    table.create_index("v", "value")
    table.create_index(["a", "b"], "value")
    table.create_index(["s", "n"], "value")
    table.create_index("text", "term")
    return table


@pytest.fixture(scope="module")
def indexed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> IndexedTable:
    """The table with its statistics and secondary indexes built (the latter on Spark)."""
    table = _define(open_table(_write(tmp_path_factory.mktemp("sec") / "t")))
    assert build_secondary_index(spark, table) is not None
    return table


@pytest.fixture
def fresh(spark: SparkSession, tmp_path: Path) -> IndexedTable:
    """A table of its own (for tests that change files), indexed on Spark."""
    table = _define(open_table(_write(tmp_path / "t")))
    build_secondary_index(spark, table)
    return table


# ------------------------------------------------------------------------------------ building


def _index_files(table: IndexedTable) -> dict[tuple[str, str], Path]:
    """(index type, base file) -> the index file the live manifest names."""
    snap = table.snapshot()
    manifest = read_manifest(table.index_root, snap.live.get(MANIFEST, ()))
    out = {}
    for rel in set(manifest["index_file"].to_pylist()):
        handle = IndexFile(table.index_root / rel)
        out[(handle.kind, handle.info.path)] = table.index_root / rel
    return out


def _assert_same_index_files(a: IndexedTable, b: IndexedTable) -> int:
    files_a, files_b = _index_files(a), _index_files(b)
    assert files_a.keys() == files_b.keys()
    for key, path_a in files_a.items():
        path_b = files_b[key]
        assert path_a.name != path_b.name  # each build names its own files...
        assert IndexFile(path_a).info == IndexFile(path_b).info
        assert path_a.read_bytes() == path_b.read_bytes(), key  # ...with the same contents
    return len(files_a)


QUERIES: list[Expression] = [
    col("v") == 777,
    col("v").isin([3, 777, 1004]),
    col("v").between(500, 502),
    col("n").is_null(),
    (col("s") == "042-3") | (col("v") < 3),
    (col("s") == "042-3") & (col("n") == 2),
    (col("a") == 5) & (col("b") == 7),
    contains_term("text", "word4"),
]


def test_spark_build_writes_the_bytes_of_a_local_build(spark: SparkSession, tmp_path: Path) -> None:
    root = _write(tmp_path / "t")
    local = _define(open_table(root, tmp_path / "local"))
    on_spark = _define(open_table(root, tmp_path / "spark"))
    assert local.build_index() is not None
    assert build_secondary_index(spark, on_spark) is not None
    assert _assert_same_index_files(local, on_spark) == 2 * FILES  # value and term files per base file
    assert [s.complete for s in on_spark.indexes()] == [True, True, True, True]
    for expr in QUERIES:
        want, got = local.row_ids(expr), on_spark.row_ids(expr)
        assert want.keys() == got.keys()
        assert all(want[f].equals(got[f]) for f in want)
    assert len(on_spark.row_ids(col("v") == 777)) == 1

    # Nothing left to build; a full rebuild (by path) gives the same files again.
    assert build_secondary_index(spark, on_spark) is None
    assert build_secondary_index(spark, root, strategy="all", index_path=tmp_path / "spark") is not None
    assert _assert_same_index_files(local, open_table(root, tmp_path / "spark")) == 2 * FILES


def test_spark_build_of_one_index_and_of_new_files_only(spark: SparkSession, tmp_path: Path) -> None:
    root = _write(tmp_path / "t", files=3, rows=1_000)
    local = _define(open_table(root, tmp_path / "local"))
    on_spark = _define(open_table(root, tmp_path / "spark"))
    assert build_secondary_index(spark, on_spark, name="idx_value_v") is not None  # value files only
    assert [s.files_indexed for s in on_spark.indexes()] == [3, 3, 3, 0]  # (v), (s, n): one file each
    pq.write_table(_file(3, 1_000), root / "part-3.parquet")
    for t in (local, on_spark):
        t.sync()
    local.build_index()
    assert build_secondary_index(spark, on_spark) is not None  # the rest: new file, other indexes
    assert _assert_same_index_files(local, on_spark) == 2 * 4


def test_a_corrupt_base_file_fails_on_the_driver_as_locally(spark: SparkSession, tmp_path: Path) -> None:
    root = _write(tmp_path / "t", files=2, rows=500)
    table = _define(open_table(root))
    target = root / "part-1.parquet"
    stat = target.stat()
    target.write_bytes(b"x" * stat.st_size)  # same size and time: the index cannot tell
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(TableFormatError, match=r"part-1\.parquet"):
        table.build_index()
    before = table.snapshot().version
    with pytest.raises(TableFormatError, match=r"part-1\.parquet"):
        build_secondary_index(spark, table)
    assert table.snapshot().version == before
    assert [s.files_indexed for s in table.indexes()] == [0, 0, 0, 0]


def test_strategy_is_checked(spark: SparkSession, indexed: IndexedTable) -> None:
    with pytest.raises(ValueError, match="strategy"):
        build_secondary_index(spark, indexed, strategy="some")


# ------------------------------------------------------------------------------------- reading


def _names(df: DataFrame) -> list[str]:
    return sorted(os.path.basename(f) for f in df.inputFiles())


def _ids(df: DataFrame) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


def _full(spark: SparkSession, table: IndexedTable, where: str) -> list[int]:
    return _ids(spark.read.parquet(table.root).filter(where))


PREDICATES = [
    "v = 777",
    "v IN (3, 777, 1004)",
    "v BETWEEN 500 AND 502",
    "v > 99990 AND v < 99993",
    "v < 3",
    "v = -5",
    "v <> 777 AND v < 10",
    "n IS NULL",
    "n IS NULL AND v < 1000",
    "v = 777 OR s = '042-3'",
    "v = 777 AND s = '042-3'",
    "s = '042-3' AND n = 2",
    "(v = 777 OR v = 778) AND x > 0.5",
    "s = '042-3' OR id < 10",
    "v = 777 OR x > 0.99",
    "s LIKE '042%'",
    "s IN ('001-0', '099-4') AND NOT (v = 0)",
    "a = 5 AND b = 7",
    "a = 5 AND b IN (7, 8) AND v < 50000",
    "(a = 5 AND b = 7) OR (a = 6 AND b = 10)",
]
# For the tests that change files (each predicate costs a few Spark jobs).
SOME = [
    "v = 777",
    "v IN (3, 777, 1004)",
    "v BETWEEN 500 AND 502",
    "n IS NULL AND v < 1000",
    "v = 777 OR s = '042-3'",
    "s = '042-3' AND n = 2",
    "a = 5 AND b = 7",
    "a = 5 AND b = 8",
]


def test_read_skips_files_the_index_proves_empty(spark: SparkSession, indexed: IndexedTable) -> None:
    both = "a = 5 AND b = 7"
    assert indexed.prune((col("a") == 5) & (col("b") == 7)).kept == FILES  # every file has each value
    df = read(spark, indexed, both)  # default rules: 100,000 candidate rows, 1,000 estimated
    assert _names(df) == ["part-2.parquet"]
    assert _ids(df) == _full(spark, indexed, both) and len(_ids(df)) == ROWS // 100
    assert _names(read(spark, indexed, "a = 5 AND b = 6")) == ["part-1.parquet"]
    assert _names(read(spark, indexed, "a = 5 AND b = 50")) == []  # no file has both
    # A range: statistics keep all five files, the index the three holding 500, 501 or 502.
    assert indexed.prune(col("v").between(500, 502)).kept == FILES
    assert _names(read(spark, indexed, "v BETWEEN 500 AND 502", rules=ALWAYS)) == [
        "part-0.parquet",
        "part-1.parquet",
        "part-2.parquet",
    ]
    # = on a value-indexed column: the index's per-file blooms already prune by statistics.
    assert _names(read(spark, indexed, "v = 777")) == ["part-2.parquet"]  # 777 = 155 * 5 + 2


@pytest.mark.parametrize("rules", [None, ALWAYS], ids=["default-rules", "always"])
def test_read_and_prune_answer_as_a_full_read(
    spark: SparkSession, indexed: IndexedTable, rules: UseRules | None
) -> None:
    for where in PREDICATES:
        want = _full(spark, indexed, where)
        got = read(spark, indexed, where, rules=rules)
        assert _ids(got) == want, where
        original = spark.read.parquet(indexed.root).filter(where).select("id", "v")
        pruned = prune(original, indexed, rules=rules)
        assert _ids(pruned) == want, where
        plan = read_plan(spark, indexed, where, rules=rules)
        assert len(plan.files) == len(got.inputFiles()), where
        same = prune_plan(original, indexed, rules=rules)
        assert same is not None and same.files == plan.files, where
        if plan.files:  # (with no file kept, prune leaves the frame as it is: no scan to rebuild)
            assert len(pruned.inputFiles()) == len(plan.files), where


def test_prune_reads_only_the_file_holding_the_rows(spark: SparkSession, indexed: IndexedTable) -> None:
    df = spark.read.parquet(indexed.root).filter("a = 5").filter("b = 7").select("id", "s")
    pruned = prune(df, indexed)
    assert _names(pruned) == ["part-2.parquet"]
    assert sorted(pruned.collect()) == sorted(df.collect())
    plan = prune_plan(df, indexed)
    assert plan is not None and plan.secondary_used and plan.pruned.kept == FILES
    assert len(plan.secondary.dropped) == FILES - 1


def test_explain_says_whether_the_index_was_used_and_why(spark: SparkSession, indexed: IndexedTable) -> None:
    used = read_plan(spark, indexed, "a = 5 AND b = 7")
    assert used.secondary_used
    text = used.explain()
    assert "secondary index used: at most" in text and "estimated cost: index" in text
    assert "(2 indexed predicate(s))" in text  # Spark's a IS NOT NULL, b IS NOT NULL: not looked up
    assert f"secondary index dropped {FILES - 1} files holding no matching row" in text
    assert f"Spark reads 1 of {FILES} files" in text
    assert any(n.startswith("secondary index used") for n in used.notes())

    def reason(where: str, rules: UseRules | None = None) -> str:
        plan = read_plan(spark, indexed, where, rules)
        assert not plan.secondary_used and len(plan.files) == plan.pruned.kept
        return plan.secondary.use.explain()

    assert reason("x > 0.5") == "secondary index not used: no predicate on an indexed column"
    assert "is cheaper" in reason("v > 10")  # most rows match: the lookups save no file
    assert "too many lookups" in reason("v = 1 OR s = '001-1' OR n = 3", UseRules(max_predicates=2))
    assert reason("id < 0") == "secondary index not used: no file left after statistics"


def test_a_table_without_secondary_index_reads_as_before(spark: SparkSession, tmp_path: Path) -> None:
    table = open_table(_write(tmp_path / "t", files=2, rows=100))
    table.build()
    plan = read_plan(spark, table, "v = 7")
    assert plan.secondary.use.explain() == "secondary index not used: the table has no secondary index"
    assert len(plan.files) == 2
    assert _ids(read(spark, table, "v = 7")) == _full(spark, table, "v = 7")


def test_files_without_an_index_file_are_kept(spark: SparkSession, fresh: IndexedTable) -> None:
    root = Path(fresh.root)
    pq.write_table(_file(2, 1_000, seed=1), root / "part-9.parquet")  # rows of a = 5 AND b = 7 too
    assert _names(read(spark, fresh, "a = 5 AND b = 8")) == ["part-3.parquet", "part-9.parquet"]
    for where in SOME:  # part-9 is not in the index at all
        assert _ids(read(spark, fresh, where, rules=ALWAYS)) == _full(spark, fresh, where), where

    fresh.sync()  # now its statistics are known, but it has no index file
    assert _names(read(spark, fresh, "a = 5 AND b = 8")) == ["part-3.parquet", "part-9.parquet"]
    assert _names(read(spark, fresh, "v = 778")) == ["part-3.parquet", "part-9.parquet"]
    for where in SOME:
        assert _ids(read(spark, fresh, where, rules=ALWAYS)) == _full(spark, fresh, where), where

    assert build_secondary_index(spark, fresh) is not None  # indexes part-9 only
    # (Forced: on these small files the default, by cost, may read rather than look up.)
    assert _names(read(spark, fresh, "a = 5 AND b = 8", rules=ALWAYS)) == ["part-3.parquet"]
    assert _names(read(spark, fresh, "a = 5 AND b = 7", rules=ALWAYS)) == ["part-2.parquet", "part-9.parquet"]
    assert _names(read(spark, fresh, "v = 778", rules=ALWAYS)) == ["part-3.parquet"]


def test_a_file_rewritten_after_indexing_is_kept(spark: SparkSession, fresh: IndexedTable) -> None:
    """Its index file says it has no row of a = 5 AND b = 7; it has 200 now."""
    root = Path(fresh.root)
    pq.write_table(_file(1, ROWS, seed=2, shift=1), root / "part-1.parquet")
    both = "a = 5 AND b = 7"
    expected = _full(spark, fresh, both)
    assert len(expected) == 2 * ROWS // 100
    df = read(spark, fresh, both)
    assert _names(df) == ["part-1.parquet", "part-2.parquet"]
    assert _ids(df) == expected
    for where in SOME:
        assert _ids(read(spark, fresh, where, rules=ALWAYS)) == _full(spark, fresh, where), where
        original = spark.read.parquet(fresh.root).filter(where)
        assert _ids(prune(original, fresh, rules=ALWAYS)) == _full(spark, fresh, where), where

    fresh.sync()  # statistics current again; its index file is for the old content: unused
    # (The default rules count all 20,000 rows of part-1 as possibly selected: its file is read.)
    choice = read_plan(spark, fresh, both).secondary.use.choice
    assert choice is not None and choice.selected_upper >= ROWS
    assert _names(read(spark, fresh, both, rules=ALWAYS)) == ["part-1.parquet", "part-2.parquet"]
    assert _names(read(spark, fresh, "a = 5 AND b = 6", rules=ALWAYS)) == ["part-1.parquet"]
    for where in SOME:
        assert _ids(read(spark, fresh, where, rules=ALWAYS)) == _full(spark, fresh, where), where
    assert build_secondary_index(spark, fresh) is not None  # re-indexes part-1
    assert _names(read(spark, fresh, "a = 5 AND b = 6")) == []
    assert _names(read(spark, fresh, both)) == ["part-1.parquet", "part-2.parquet"]


def test_implied_not_null_conjuncts_are_not_looked_up() -> None:
    a, b = col("a"), col("b")
    assert (
        without_implied_not_null(a.is_not_null() & (a == 5) & b.is_not_null()) == (a == 5) & b.is_not_null()
    )
    spark_like = (a.is_not_null() & (a == 5)) | (b.is_not_null() & b.isin([1, 2]) & a.is_null())
    assert without_implied_not_null(spark_like) == (a == 5) | (b.isin([1, 2]) & a.is_null())
    kept = a.is_not_null() & a.is_null() | b.is_not_null()  # nothing implies these
    assert without_implied_not_null(kept) == kept
