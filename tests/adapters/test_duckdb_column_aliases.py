"""``t AS x(a, b)``: a conjunct the index cannot use is checked by DuckDB under the names the query
sees (the renamed ones), so a valid query is not refused and an invalid one fails as DuckDB fails."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import execute, register, sql
from index_store import open_table


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(3):
        rows = pa.table({"k": list(range(i * 10, i * 10 + 10)), "v": [f"s{i}"] * 10})
        pq.write_table(rows, root / f"part-{i}.parquet")
    open_table(root).build(progress=False)
    connection = duckdb.connect()
    register(connection, "t", str(root))
    return connection


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a FROM t AS x(a, b) WHERE a % 3 = 1 ORDER BY a",  # not used by the index: checked
        "SELECT a FROM t AS x(a) WHERE a % 3 = 1 AND v = 's1' ORDER BY a",  # one column renamed
        "SELECT x.a FROM t AS x(a, b) WHERE x.b || '' = 's2' ORDER BY a",
    ],
)
def test_renamed_columns_in_a_conjunct_the_index_cannot_use(
    con: duckdb.DuckDBPyConnection, query: str
) -> None:
    expected = con.sql(query).fetchall()
    assert expected
    assert sql(con, query).fetchall() == expected
    assert execute(con, query).fetchall() == expected


def test_an_invalid_conjunct_on_a_renamed_column_fails_as_duckdb_fails(
    con: duckdb.DuckDBPyConnection,
) -> None:
    query = "SELECT a FROM t AS x(a, b) WHERE b % 3 = 1"  # b is a string
    with pytest.raises(duckdb.Error) as direct:
        con.sql(query).fetchall()
    with pytest.raises(duckdb.Error) as ours:
        sql(con, query).fetchall()
    assert "Binder Error" in str(direct.value) and "Binder Error" in str(ours.value)
