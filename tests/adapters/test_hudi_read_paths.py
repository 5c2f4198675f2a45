"""Every read path returns a Hudi table's snapshot, as hudi-rs (the Hudi project's own reader)
reads it: the latest committed file slice of each live file group, never an older version of a
file, with and without a filter, on every real copy-on-write table of tests/data/hudi.

Rows are compared on the columns both sides return, values normalized to text (timestamps as UTC
microseconds), as multisets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi_data import COW_TABLES
from mor_tables import normalized_values

from adapters import duckdb as duck
from hudi_expr import AlwaysTrue
from index_store import open_table

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NON_EMPTY = [t for t in COW_TABLES if "empty" not in t]
EMPTY = [t for t in COW_TABLES if "empty" in t]


def _snapshot(root: Path) -> pa.Table:
    """hudi-rs's snapshot read of the table at ``root``."""
    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    batches = table.read()
    if not batches:
        return pa.schema(table.get_schema()).empty_table()
    return pa.Table.from_batches(batches)


def _rows(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    values = [normalized_values(table.column(c)) for c in columns]
    return Counter(zip(*values, strict=True)) if values else Counter()


def _assert_same(ours: pa.Table, expected: pa.Table) -> None:
    columns = [c for c in expected.column_names if c in ours.column_names]
    assert "_hoodie_record_key" in columns or len(columns) >= 3, (ours.column_names, expected.column_names)
    assert ours.num_rows == expected.num_rows
    assert _rows(ours, columns) == _rows(expected, columns)


def _filter_for(snapshot: pa.Table) -> tuple[str, Callable[[pa.Table], pa.Table]]:
    """A SQL filter ``column >= median`` on a numeric (else string) data column, and the same filter
    on the expected rows."""
    numeric = [f for f in snapshot.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    strings = [f for f in snapshot.schema if pa.types.is_string(f.type)]
    for field in numeric + strings:
        values = sorted(v for v in snapshot.column(field.name).to_pylist() if v is not None)
        if field.name.startswith("_hoodie") or not values:
            continue
        name, pivot = field.name, values[len(values) // 2]
        literal = str(pivot) if field in numeric else "'" + pivot.replace("'", "''") + "'"

        def keep(t: pa.Table, name: str = name, pivot: Any = pivot) -> pa.Table:
            return t.filter(pc.greater_equal(t.column(name), pivot))

        return f"{_quote(name)} >= {literal}", keep
    raise AssertionError("no column to filter on")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _spark_sql(condition: str) -> str:
    """The DuckDB-quoted condition in Spark's quoting (backticks)."""
    return condition.replace('"', "`")


@pytest.fixture(scope="module")
def built(hudi_tables: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each real copy-on-write table copied once and indexed."""
    import shutil

    base = tmp_path_factory.mktemp("hudi-read")
    roots = {}
    for name in COW_TABLES:
        root = Path(shutil.copytree(hudi_tables[name], base / name))
        open_table(root).build(progress=False)
        roots[name] = root
    return roots


@pytest.mark.parametrize("name", NON_EMPTY)
def test_duckdb_reads_the_snapshot(name: str, built: dict[str, Path]) -> None:
    root = built[name]
    expected = _snapshot(root)
    condition, keep = _filter_for(expected)
    con = duckdb.connect()
    duck.register(con, "t", root)
    _assert_same(duck.sql(con, "SELECT * FROM t").to_arrow_table(), expected)
    _assert_same(duck.execute(con, f"SELECT * FROM t WHERE {condition}").to_arrow_table(), keep(expected))


@pytest.mark.parametrize("name", NON_EMPTY)
def test_pyarrow_read_returns_the_snapshot(name: str, built: dict[str, Path]) -> None:
    from adapters.duckdb import parse_predicate
    from adapters.pyarrow import parse_pyarrow, to_pyarrow

    root = built[name]
    expected = _snapshot(root)
    condition, keep = _filter_for(expected)
    t = open_table(root)
    expr = parse_predicate(condition, schema=t.snapshot().schema)
    _assert_same(t.read(AlwaysTrue()), expected)
    _assert_same(t.read(expr), keep(expected))
    # the same predicate written as a pyarrow expression
    arrow_expr = parse_pyarrow(to_pyarrow(expr.bind(t.snapshot().schema)), t.snapshot().schema)
    _assert_same(t.read(arrow_expr), keep(expected))


@pytest.mark.parametrize("name", NON_EMPTY)
def test_spark_reads_the_snapshot(name: str, built: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    from adapters import spark as sp

    root = built[name]
    expected = _snapshot(root)
    condition, keep = _filter_for(expected)
    _assert_same(sp.read(spark, root).toArrow(), expected)
    _assert_same(sp.read(spark, root, where=_spark_sql(condition)).toArrow(), keep(expected))
    sp.register_datasource(spark)
    source = spark.read.format("hudi_index").load(str(root))
    _assert_same(source.toArrow(), expected)
    _assert_same(source.filter(_spark_sql(condition)).toArrow(), keep(expected))


@pytest.mark.parametrize("name", NON_EMPTY)
def test_spark_prune_of_a_root_read_is_the_snapshot(name: str, built: dict[str, Path], spark) -> None:  # type: ignore[no-untyped-def]
    """``prune(spark.read.parquet(root).filter(...))``: Spark's own read of the root folder reads
    every file version; the pruned one reads the snapshot."""
    from adapters import spark as sp

    root = built[name]
    expected = _snapshot(root)
    condition, keep = _filter_for(expected)
    try:
        df = spark.read.parquet(str(root)).filter(_spark_sql(condition))
    except Exception:  # non-hive nested folders: Spark cannot read the root by itself
        pytest.skip("Spark cannot infer this table's schema from its root folder")
    _assert_same(sp.prune(df, root).toArrow(), keep(expected))


@pytest.mark.parametrize("name", EMPTY)
def test_empty_tables_read_empty(name: str, built: dict[str, Path]) -> None:
    t = open_table(built[name])
    assert t.reader.list_files() == []
