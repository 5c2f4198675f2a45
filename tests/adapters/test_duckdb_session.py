"""What a plan reads of the user's connection, kept between plans (``registration.read_session``)
and the checks it skips: nothing kept may outlive a change to the catalog or the settings, made
on the connection, on a cursor of it, or on another connection to the same database."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import InvalidPredicateError, plan, register, registered
from index_store import open_table

QUERY = "SELECT count(*) FROM t WHERE k < 10"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Three files, k clustered (file i holds 100*i .. 100*i+9); a and b dates, b after a."""
    folder = tmp_path / "t"
    folder.mkdir()
    for i in range(3):
        k = list(range(100 * i, 100 * i + 10))
        a = pa.array([v for v in k], pa.int32()).cast(pa.date32())
        b = pa.array([v + 1 for v in k], pa.int32()).cast(pa.date32())
        pq.write_table(pa.table({"k": pa.array(k, pa.int64()), "a": a, "b": b, "s": [str(v) for v in k]}),
                       folder / f"part-{i}.parquet")  # fmt: skip
    open_table(folder).build()
    return folder


def _planned_twice(con: duckdb.DuckDBPyConnection) -> None:
    """The same text planned twice, so that what is kept of the session and the text is used."""
    for _ in range(2):
        p = plan(con, QUERY)
        assert [t.kept for t in p.tables] == [1]


def test_a_view_replaced_on_a_cursor_ends_the_registration(root: Path) -> None:
    con = duckdb.connect()
    register(con, "t", root)
    _planned_twice(con)
    con.cursor().execute("CREATE OR REPLACE VIEW t AS SELECT 1 AS k")
    p = plan(con, QUERY)
    assert p.tables == () and p.relation().fetchall() == [(1,)]
    assert "t" not in registered(con)


def test_a_view_replaced_on_another_connection_ends_the_registration(root: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "db.duckdb")
    con = duckdb.connect(path)
    register(con, "t", root)
    _planned_twice(con)
    other = duckdb.connect(path)  # the same database: one catalog
    other.execute("CREATE OR REPLACE VIEW t AS SELECT 2 AS k")
    p = plan(con, QUERY)
    assert p.tables == () and p.relation().fetchall() == [(1,)]
    other.close()
    con.close()


def test_a_temporary_view_made_after_a_plan_hides_the_table(root: Path) -> None:
    con = duckdb.connect()
    register(con, "t", root)
    _planned_twice(con)
    con.execute("CREATE TEMP VIEW t AS SELECT 3 AS k")
    p = plan(con, QUERY)
    assert p.tables == () and p.relation().fetchall() == [(1,)]
    con.execute("DROP VIEW temp.t")
    _planned_twice(con)


def test_a_schema_searched_first_after_a_plan_hides_the_table(root: Path) -> None:
    con = duckdb.connect()
    register(con, "t", root)
    _planned_twice(con)
    con.execute("CREATE SCHEMA other; CREATE TABLE other.t AS SELECT 4 AS k; SET schema = 'other'")
    p = plan(con, QUERY)
    assert p.tables == () and p.relation().fetchall() == [(1,)]


def test_a_comparison_of_two_columns_of_one_type_prunes_without_a_check(root: Path) -> None:
    con = duckdb.connect()
    register(con, "t", root)
    p = plan(con, "SELECT count(*) FROM t WHERE a < b AND k > 1000")
    assert [t.kept for t in p.tables] == [0]
    assert any("a < b" in text for text in p.tables[0].not_used)
    assert p.execute().fetchall() == [(0,)]


def test_a_comparison_of_two_columns_duckdb_refuses_is_still_refused(root: Path) -> None:
    # Every file pruned: only the check can raise DuckDB's error (no data is read to raise it).
    con = duckdb.connect()
    register(con, "t", root)
    with pytest.raises(duckdb.Error) as alone:
        con.execute("SELECT count(*) FROM t WHERE k > 1000 AND a < k").fetchall()
    with pytest.raises(InvalidPredicateError, match="a < k") as raised:
        plan(con, "SELECT count(*) FROM t WHERE k > 1000 AND a < k")
    assert isinstance(raised.value, type(alone.value))
