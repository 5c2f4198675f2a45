"""Every read path returns a merge-on-read table's merged snapshot, as hudi-rs (the Hudi project's
own reader) reads it: DuckDB (``register``, ``sql``, ``execute``, ``hudi-index query``), pyarrow
(``IndexedTable.read``), Spark (``read``, ``prune``, the ``hudi_index`` data source), with and
without a filter, on every real merge-on-read table of tests/data/hudi and tables written by
``index_store.datagen.hudi_mor``. A filtered read is compared with DuckDB's filter over hudi-rs's
snapshot. ``query_type="read_optimized"`` reads base files only, as hudi-rs's read-optimized query. Every
table is indexed (log files included), so filtered reads are pruned reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from cli_run import run
from hudi_data import MOR_TABLES
from mor_tables import (
    WRITTEN,
    assert_same_rows,
    condition_for,
    filtered,
    hudi_rs_rows,
    rows,
)

from adapters import duckdb as duck
from adapters.duckdb import parse_predicate
from hudi_expr import AlwaysTrue
from index_store import TableFormatError, UnsupportedTableError, open_table
from index_store.datagen.hudi_mor import DeltaCommit
from index_store.merged import merged_schema, read_slices
from index_store.merged.schema import MergedLayout

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NON_EMPTY = [t for t in MOR_TABLES if "empty" not in t]
ALL = NON_EMPTY + list(WRITTEN)


@pytest.fixture(scope="module")
def tables(hudi_tables: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every real non-empty merge-on-read table and every written one, indexed."""
    base = tmp_path_factory.mktemp("mor-read")
    roots = {name: Path(shutil.copytree(hudi_tables[name], base / name)) for name in NON_EMPTY}
    for name, make in WRITTEN.items():
        roots[name] = make(base / name).root
    for root in roots.values():
        open_table(root).build(progress=False)
    return roots


def _spark_sql(condition: str) -> str:
    """The DuckDB-quoted condition in Spark's quoting (backticks)."""
    return condition.replace('"', "`")


# ------------------------------------------------------------------------------------ DuckDB


@pytest.mark.parametrize("name", ALL)
def test_duckdb_reads_the_merged_snapshot(name: str, tables: dict[str, Path]) -> None:
    root = tables[name]
    expected = hudi_rs_rows(root)
    condition = condition_for(expected)
    con = duckdb.connect()
    duck.register(con, "t", root)
    assert_same_rows(con.sql("SELECT * FROM t").to_arrow_table(), expected)  # the view, plain DuckDB
    assert_same_rows(duck.sql(con, "SELECT * FROM t").to_arrow_table(), expected)
    wanted = filtered(expected, condition)
    assert_same_rows(duck.execute(con, f"SELECT * FROM t WHERE {condition}").to_arrow_table(), wanted)
    assert_same_rows(duck.sql(con, f"SELECT * FROM t AS x WHERE {condition}").to_arrow_table(), wanted)
    con.close()


@pytest.mark.parametrize("name", ALL)
def test_duckdb_read_optimized_reads_base_files(name: str, tables: dict[str, Path]) -> None:
    root = tables[name]
    con = duckdb.connect()
    duck.register(con, "t", root, query_type="read_optimized")
    assert_same_rows(duck.sql(con, "SELECT * FROM t").to_arrow_table(), hudi_rs_rows(root, "read_optimized"))
    con.close()


@pytest.mark.parametrize("name", [n for n in WRITTEN if n.startswith("updates")])
def test_duckdb_pruned_references_read_kept_slices_merged(name: str, tables: dict[str, Path]) -> None:
    root = tables[name]
    expected = hudi_rs_rows(root)
    con = duckdb.connect()
    duck.register(con, "t", root)
    for condition in ("id BETWEEN 120 AND 170", "id >= 450", "id = 0", "id IN (3, 700, 5)"):
        query = f"SELECT * FROM t WHERE {condition}"
        plan = duck.plan(con, query)
        (table,) = plan.tables
        assert table.kept < table.total and not table.direct, str(plan)  # pruned, spliced
        assert_same_rows(plan.relation().to_arrow_table(), filtered(expected, condition))
    # a join of two pruned references of the table, each reading its own kept slices
    query = "SELECT a.id, b.qty FROM t a JOIN t b ON a.id = b.id WHERE a.id < 30 AND b.id < 20"
    got = duck.sql(con, query).to_arrow_table()
    wanted = filtered(expected, "id < 20").select(["id", "qty"])
    assert_same_rows(got, wanted)
    con.close()


def test_pruned_reads_with_an_index_of_every_file(tmp_path: Path) -> None:
    """The index built as users build it (log files included): pruned DuckDB and pyarrow reads
    still return the merged snapshot's matching rows."""
    table = WRITTEN["updates_deletes_v9"](tmp_path / "t")
    t = open_table(table.root)
    t.build(progress=False)
    expected = hudi_rs_rows(table.root)
    con = duckdb.connect()
    duck.register(con, "t", t)
    for condition in ("id BETWEEN 120 AND 170", "id >= 450", "id = 0"):
        plan = duck.plan(con, f"SELECT * FROM t WHERE {condition}")
        assert plan.tables[0].kept < plan.tables[0].total, str(plan)
        assert_same_rows(plan.relation().to_arrow_table(), filtered(expected, condition))
        expr = parse_predicate(condition, schema=merged_schema(t.reader))
        assert_same_rows(t.read(expr), filtered(expected, condition))
    con.close()


def test_duckdb_view_is_live(tmp_path: Path) -> None:
    """A delta commit written after ``register`` is seen by the next query of the same view, plain
    or pruned, and a relation planned before it still reads what it was planned with."""
    table = WRITTEN["updates_deletes_v9"](tmp_path / "t")
    open_table(table.root).build(progress=False)
    con = duckdb.connect()
    duck.register(con, "t", table.root)
    before = duck.sql(con, "SELECT * FROM t WHERE id >= 450")
    assert 470 in before.to_arrow_table().column("id").to_pylist()
    table.append(DeltaCommit(updates=rows([1, 460], 9), inserts=rows([800], 9), deletes=[470, 2]))
    expected = hudi_rs_rows(table.root)
    assert_same_rows(con.sql("SELECT * FROM t").to_arrow_table(), expected)
    assert_same_rows(duck.sql(con, "SELECT * FROM t").to_arrow_table(), expected)
    assert_same_rows(
        duck.sql(con, "SELECT * FROM t WHERE id >= 450").to_arrow_table(), filtered(expected, "id >= 450")
    )
    assert con.sql("SELECT ts FROM t WHERE id = 460").fetchall() == [(9,)]
    assert 470 in before.to_arrow_table().column("id").to_pylist()  # planned before: its slices
    duck.unregister(con, "t")
    hidden = [r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
    assert hidden == []  # the hidden streams went with the view
    con.close()


def test_hudi_index_query_reads_the_merged_snapshot(
    tables: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = tables["log_only_v8"]
    expected = filtered(hudi_rs_rows(root), "id >= 10")
    code, out, _ = run(
        capsys, "query", str(root), "SELECT count(*) AS n FROM log_only_v8 WHERE id >= 10", "--csv"
    )
    assert code == 0 and out.splitlines() == ['"n"', str(expected.num_rows)]


# ----------------------------------------------------------------------------------- pyarrow


@pytest.mark.parametrize("name", ALL)
def test_pyarrow_read_returns_the_merged_snapshot(name: str, tables: dict[str, Path]) -> None:
    from adapters.pyarrow import parse_pyarrow, to_pyarrow

    root = tables[name]
    expected = hudi_rs_rows(root)
    condition = condition_for(expected)
    t = open_table(root)
    schema = merged_schema(t.reader)
    expr = parse_predicate(condition, schema=schema)
    assert_same_rows(t.read(AlwaysTrue()), expected)
    wanted = filtered(expected, condition)
    assert_same_rows(t.read(expr), wanted)
    assert t.count(expr) == wanted.num_rows
    arrow_expr = parse_pyarrow(to_pyarrow(expr.bind(schema)), schema)  # the same, from pyarrow
    assert_same_rows(t.read(arrow_expr), wanted)
    assert_same_rows(t.read(AlwaysTrue(), query_type="read_optimized"), hudi_rs_rows(root, "read_optimized"))


# ------------------------------------------------------------------------------------- Spark


@pytest.mark.parametrize("name", ALL)
def test_spark_reads_the_merged_snapshot(name: str, tables: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    from adapters import spark as sp

    root = tables[name]
    expected = hudi_rs_rows(root)
    condition = condition_for(expected)
    wanted = filtered(expected, condition)
    assert_same_rows(sp.read(spark, root).toArrow(), expected)
    assert_same_rows(sp.read(spark, root, where=_spark_sql(condition)).toArrow(), wanted)
    sp.register_datasource(spark)
    source = spark.read.format("hudi_index").load(str(root))
    assert_same_rows(source.toArrow(), expected)
    assert_same_rows(source.filter(_spark_sql(condition)).toArrow(), wanted)
    pruned = spark.read.format("hudi_index").option("singleScan", "true").load(str(root))
    assert_same_rows(pruned.filter(_spark_sql(condition)).toArrow(), wanted)


@pytest.mark.parametrize("name", ["updates_deletes_v9", "log_only_v6", NON_EMPTY[0]])
def test_spark_read_optimized_reads_base_files(name: str, tables: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    from adapters import spark as sp

    root = tables[name]
    expected = hudi_rs_rows(root, "read_optimized")
    assert_same_rows(sp.read(spark, root, query_type="read_optimized").toArrow(), expected)
    sp.register_datasource(spark)
    source = spark.read.format("hudi_index").option("queryType", "read_optimized").load(str(root))
    assert_same_rows(source.toArrow(), expected)


@pytest.mark.parametrize("name", [n for n in WRITTEN if n.startswith("updates")])
def test_spark_prune_of_a_root_read_is_the_merged_snapshot(name: str, tables: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    """``prune(spark.read.parquet(root).filter(...))``: Spark's own read of the root folder reads
    base files without their log files (and every older version); the pruned one reads the kept
    slices merged."""
    from adapters import spark as sp

    root = tables[name]
    expected = hudi_rs_rows(root)
    for condition in ("id BETWEEN 120 AND 170", "id >= 450"):
        df = spark.read.parquet(str(root)).filter(condition)
        plan = sp.prune_plan(df, root)
        assert plan is not None and plan.pruned.kept < plan.pruned.total
        assert_same_rows(sp.prune(df, root).toArrow(), filtered(expected, condition))
    projected = spark.read.parquet(str(root)).select("id", "qty").filter("id >= 450")
    got = sp.prune(projected, root)
    assert got.columns == ["id", "qty"]
    assert_same_rows(got.toArrow(), filtered(expected, "id >= 450").select(["id", "qty"]))


def test_spark_prune_refuses_what_it_cannot_rebuild(tables: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    """A read of a merge-on-read table's root whose plan ``prune`` cannot rebuild would return base
    files' rows without their log files: refused, not returned."""
    from pyspark.sql import functions as F

    from adapters import spark as sp

    root = tables["updates_deletes_v9"]
    df = spark.read.parquet(str(root)).groupBy("region").agg(F.count("*"))
    with pytest.raises(UnsupportedTableError, match="merge-on-read"):
        sp.prune(df, root)


# ------------------------------------------------------------------------------ the one error


def test_a_slice_hudi_rs_cannot_merge_is_named(tmp_path: Path) -> None:
    """A log file gone between listing and reading (a clean after a compaction): hudi-rs's error,
    with the slice it was merging."""
    table = WRITTEN["updates_deletes_v9"](tmp_path / "t")
    reader = open_table(table.root).reader
    slices = reader.file_slices()
    broken = next(s for s in slices if s.logs and s.base is not None)
    (table.root / broken.logs[0].path).unlink()
    with pytest.raises(TableFormatError, match=f"hudi-rs could not merge file slice {broken.file_id}"):
        read_slices(MergedLayout.of(reader, slices), slices)
