"""DuckDB's reader of selected rows (``adapters.duckdb.rowreader``): its file lists go to DuckDB
as query parameters, so paths with quotes, ``$`` or ``?`` read as they are, and ``t.read`` by it
equals DuckDB reading the files, with the index used, not used, and stale."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import adapters.duckdb  # noqa: F401 - registers DuckDB's row reader
from adapters.duckdb.rowreader import DuckDBRows
from adapters.duckdb.rows import plan_reads
from hudi_expr import Expression, col
from index_store import IndexedTable, UseRules, open_table
from index_store.secondary.api import read_jobs
from index_store.secondary.read import row_reader

ROWS = 6_000


def _write(folder: Path, i: int, ids: np.ndarray) -> None:
    n = len(ids)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array(np.arange(n) % 7, pa.int64()),
            "s": pa.array([f"v{j % 50}" for j in range(n)]),
        }
    )
    pq.write_table(table, folder / f"part '{i}' $x?.parquet", row_group_size=1_000)


@pytest.fixture
def table(tmp_path: Path) -> IndexedTable:
    root = tmp_path / "it's $1 table?"
    root.mkdir()
    rng = np.random.default_rng(7)
    ids = rng.permutation(3 * ROWS)
    for i in range(3):
        _write(root, i, ids[i * ROWS : (i + 1) * ROWS])
    t = open_table(root)
    t.build()
    t.create_index("id")
    t.build_index(progress=False)
    return t


def _oracle(t: IndexedTable, where: str) -> pa.Table:
    files = sorted(str(p) for p in Path(t.root).glob("*.parquet"))
    con = duckdb.connect()
    text = f"SELECT * FROM read_parquet($files) WHERE {where}"
    return con.sql(text, params={"files": files}).to_arrow_table()


def _same(got: pa.Table, expected: pa.Table) -> None:
    assert got.sort_by("id").equals(expected.select(got.column_names).cast(got.schema).sort_by("id"))


CASES: list[tuple[Expression, str]] = [
    (col("id") == 17, "id = 17"),
    (col("id").isin([3, 4_000, 7_001, 12_345]), "id IN (3, 4000, 7001, 12345)"),
    ((col("id") < 900) & (col("grp") == 2), "id < 900 AND grp = 2"),
    (col("s") == "v7", "s = 'v7'"),
]


@pytest.mark.parametrize(("expr", "where"), CASES)
@pytest.mark.parametrize("rules", [UseRules(by_cost=False), UseRules(max_predicates=0), None])
def test_read_equals_duckdb(
    table: IndexedTable, expr: Expression, where: str, rules: UseRules | None
) -> None:
    """With the index forced, refused (every candidate file read whole) and by cost."""
    assert row_reader().name == "duckdb"
    _same(table.read(expr, rules=rules), _oracle(table, where))


def test_query_reads_listed_paths_as_parameters(table: IndexedTable) -> None:
    """The reader's own query (no fallback to pyarrow's reader: an error would raise here) reads
    paths holding quotes, ``$`` and ``?``, whole and by row number in one statement."""
    schema = table.snapshot().schema
    for rules in (UseRules(by_cost=False), UseRules(max_predicates=0)):
        expr = col("id").isin([3, 4_000, 7_001]) | (col("grp") == 6)
        selection = table.select(expr, rules)
        jobs = read_jobs(selection)
        reads = plan_reads(selection)
        assert any("'" in f and "$" in f for r in reads.reads for f in r.files)
        got = DuckDBRows()._query(reads, schema.names, str(expr.bind(schema)))
        _same(got, _oracle(table, "id IN (3, 4000, 7001) OR grp = 6"))
        assert DuckDBRows().decoded(jobs) > 0


def test_stale_index_reads_files_as_they_are(table: IndexedTable) -> None:
    """A file rewritten after indexing (other ids, same path) and one the index does not know are
    read whole: the answers are those of the files on disk, never the stale index's."""
    root = Path(table.root)
    _write(root, 1, np.arange(100_000, 100_000 + 2_000))
    _write(root, 9, np.arange(200_000, 200_000 + 1_500))
    t = open_table(root)
    for expr, where in [
        (col("id") == 100_017, "id = 100017"),
        (col("id").isin([200_003, 17, 5]), "id IN (200003, 17, 5)"),
        (col("id") < 900, "id < 900"),
    ]:
        for rules in (UseRules(by_cost=False), UseRules(max_predicates=0), None):
            _same(t.read(expr, rules=rules), _oracle(t, where))
