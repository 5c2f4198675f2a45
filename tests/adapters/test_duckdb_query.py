"""``adapters.duckdb.sql``/``plan``: each pruning rule of the query planner against DuckDB over all files.

Every query runs twice: pruned through the adapter, and by plain DuckDB on a second connection where
the same names are plain views over every file. Rows (as a multiset), column names and types must
match. Each rule also has a query whose answer would change if the rule were wrong (an outer join's
NULL-filled side, a LEFT JOIN's preserved side, a CTE of the same name, a positional join, ...).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import warnings
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import (
    InvalidPredicateError,
    QueryPlan,
    execute,
    plan,
    register,
    registered,
    sql,
    unregister,
)
from index_store import open_table

N_FILES = 10
ROWS = 50


def _write_table(root: Path) -> None:
    """Ten files of 50 rows; k is clustered (file i holds 100*i .. 100*i+49), id is not, x has a NaN."""
    root.mkdir()
    for i in range(N_FILES):
        k = list(range(100 * i, 100 * i + ROWS))
        table = pa.table(
            {
                "k": pa.array(k, pa.int64()),
                "id": pa.array([v * 7919 % 100_003 for v in k], pa.int64()),  # spread over all files
                "x": pa.array([float("nan") if v == 305 else float(v % 7) for v in k]),
                "s": pa.array([f"v{i}" if v % 10 else None for v in k]),
                "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=v) for v in k]),
                "ts": pa.array(
                    [dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=v) for v in k],
                    pa.timestamp("us", tz="UTC"),
                ),
                "st": pa.array([{"f": v, "g": str(v)} for v in k]),
            }
        )
        required = pa.field("nn", pa.int64(), nullable=False)  # written as REQUIRED, as tpchgen does
        table = table.append_column(required, pa.array(k, pa.int64()))
        pq.write_table(table, root / f"part-{i:02d}.parquet")


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("query") / "t"
    _write_table(root)
    open_table(root).build(bloom_columns=["id"])
    return root


@pytest.fixture(scope="module")
def orders_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("query") / "o"
    root.mkdir()
    for i in range(4):
        keys = list(range(250 * i, 250 * i + 250, 5))
        pq.write_table(
            pa.table({"ok": pa.array(keys, pa.int64()), "tag": [f"t{v % 3}" for v in keys]}),
            root / f"o-{i}.parquet",
        )
    open_table(root).build()
    return root


def _all_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.parquet") if ".hoodie" not in p.parts)


def _plain_view(con: duckdb.DuckDBPyConnection, name: str, root: Path, options: str = "") -> None:
    """``name`` as DuckDB alone reads it: every file, no index."""
    files = ", ".join("'" + f + "'" for f in _all_files(root))
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{files}], can_have_nan = true{options})")


@pytest.fixture()
def cons(table_dir: Path, orders_dir: Path) -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    """(adapter connection with t and o registered, baseline connection with plain views)."""
    con = duckdb.connect()
    register(con, "t", table_dir)
    register(con, "o", orders_dir)
    base = duckdb.connect()
    for name, root in (("t", table_dir), ("o", orders_dir)):
        _plain_view(base, name, root)
    return con, base


def check(
    cons: tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection], query: str, params=None
) -> QueryPlan:
    con, base = cons
    p = plan(con, query, params)
    got, want = p.relation().to_arrow_table(), base.sql(query, params=params).to_arrow_table()
    assert got.schema == want.schema
    assert Counter(map(repr, got.to_pylist())) == Counter(map(repr, want.to_pylist()))
    with warnings.catch_warnings():  # DuckDB: arrow from a DB-API result copies the rows (true)
        warnings.simplefilter("ignore", UserWarning)
        executed = execute(con, query, params).to_arrow_table()  # planned again: the same answer
    assert executed.schema == want.schema
    assert Counter(map(repr, executed.to_pylist())) == Counter(map(repr, want.to_pylist()))
    return p


def kept(p: QueryPlan, alias: str) -> int:
    [table] = [t for t in p.tables if t.alias == alias]
    return table.kept


# ------------------------------------------------------------------------------ single table


def test_where_conjuncts_prune_and_are_reported(cons) -> None:
    p = check(cons, "SELECT * FROM t WHERE k >= 250 AND k < 420 AND lower(s) <> 'q'")
    [table] = p.tables
    assert (table.kept, table.total) == (2, N_FILES)
    assert table.used == ("k >= 250", "k < 420")
    assert any("lower(s)" in n and "not monotonic (lower)" in n for n in table.not_used)
    text = str(p)
    assert "t: kept 2 of 10 files" in text and "used:     k >= 250" in text


def test_bloom_filter_prunes_a_point_lookup(cons) -> None:
    # Every file's id range spans most of 0..100002, so only the bloom filters can tell.
    assert kept(check(cons, "SELECT * FROM t WHERE id = 3"), "t") == 0
    assert kept(check(cons, f"SELECT * FROM t WHERE id = {412 * 7919 % 100_003}"), "t") == 1


def test_empty_result_keeps_names_and_types(cons) -> None:
    p = check(cons, "SELECT * FROM t WHERE k < 0")
    assert kept(p, "t") == 0
    assert p.relation().fetchall() == []


def test_where_false_reads_nothing(cons) -> None:
    assert kept(check(cons, "SELECT count(*), sum(k) FROM t WHERE false"), "t") == 0


def test_nan_rows_are_read(cons) -> None:
    p = check(cons, "SELECT k FROM t WHERE x > 5 OR isnan(x)")
    assert (305,) in p.relation().fetchall()


def test_or_with_an_untranslatable_side_keeps_every_file(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t WHERE k < 10 OR lower(s) = 'v7'")
    assert kept(p, "t") == N_FILES


def test_struct_field_and_column_aliases(cons) -> None:
    assert kept(check(cons, "SELECT k FROM t WHERE st.f < 60"), "t") == 1
    p = check(cons, "SELECT a, b FROM t AS q(a, b) WHERE a BETWEEN 300 AND 320 AND q.b >= 0")
    assert kept(p, "q") == 1


def test_qualified_names(cons) -> None:
    assert kept(check(cons, "SELECT count(*) FROM main.t WHERE t.k < 100"), "t") == 1
    assert kept(check(cons, "SELECT count(*) FROM memory.main.t AS x WHERE x.k >= 900"), "x") == 1
    assert kept(check(cons, 'SELECT count(*) FROM t AS "we""ird" WHERE "we""ird".k < 100'), 'we"ird') == 1


def test_schema_qualified_columns_and_names_of_expressions(cons) -> None:
    # main.t.k cannot name a spliced "(...) AS t": such a reference is read as written.
    check(cons, "SELECT count(*) FROM main.t WHERE main.t.k < 100")
    check(cons, "SELECT count(*) FROM t WHERE memory.main.t.k < 100")
    assert kept(check(cons, "SELECT count(*) FROM main.t AS x WHERE x.k < 100"), "x") == 1
    # An unaliased expression is named by its text, which holds the spliced reference.
    p = check(cons, "SELECT (SELECT count(*) FROM t WHERE k < 100), 1 + 1, (SELECT max(ok) FROM o) AS m")
    assert kept(p, "t") == 1
    p = check(cons, "SELECT k, EXISTS (SELECT 1 FROM o WHERE ok = k) FROM t WHERE k < 100 ORDER BY k DESC")
    assert p.relation().fetchall()[0][0] == 49  # the order survives the renaming


def test_parameters_are_passed_and_not_used_for_pruning(cons) -> None:
    p = check(cons, "SELECT * FROM t WHERE k = ? AND k < 200", params=[120])
    assert kept(p, "t") == 2
    p = check(cons, "SELECT * FROM t WHERE k = $key", params={"key": 520})
    assert kept(p, "t") == N_FILES


def test_uncoercible_literal_is_duckdbs_error(cons) -> None:
    con, base = cons
    with pytest.raises(duckdb.Error) as pruned:
        sql(con, "SELECT * FROM t WHERE d = 'not a date'").fetchall()
    with pytest.raises(duckdb.Error) as plain:
        base.sql("SELECT * FROM t WHERE d = 'not a date'").fetchall()
    assert isinstance(pruned.value, type(plain.value))  # also an InvalidPredicateError, at plan()


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("SELECT count(*) FROM t WHERE k = 'abc'", "k = 'abc'"),  # a number column, a string
        ("SELECT * FROM t WHERE d = DATE '2024-13-45'", "DATE '2024-13-45'"),
        ("SELECT * FROM t WHERE k < 100 AND abs(d) = 3", "abs(d) = 3"),
        ("SELECT * FROM t AS a WHERE a.k > 100000 OR a.k IN (1, 'zz')", "a.k IN (1, 'zz')"),
        ("SELECT * FROM t WHERE month(d) = 1 AND d > 5", "d > 5"),
        ("SELECT * FROM o JOIN t ON ok = k WHERE tag = 't1' AND ts > 'yesterday'", "ts > 'yesterday'"),
    ],
)
def test_a_query_duckdb_refuses_is_refused_when_planned(cons, query: str, shown: str) -> None:
    # Planned silently before ("not used"), and then hidden where few or no files were read.
    con, base = cons
    with pytest.raises(duckdb.Error) as plain:
        base.execute(query).fetchall()
    for run in (plan, sql, execute):
        with pytest.raises(InvalidPredicateError, match=re.escape(shown)) as raised:
            run(con, query)
        assert isinstance(raised.value, type(plain.value))  # DuckDB's error, as DuckDB alone raises it


def test_only_conjuncts_duckdb_refuses_are_refused(cons) -> None:
    p = check(cons, "SELECT * FROM t WHERE k < 200 AND month(d) = 1 AND length(s) > 1")
    assert kept(p, "t") == 2
    assert any("month(d) = 1" in text for text in p.tables[0].not_used)
    con, _ = cons
    con.execute("CREATE SEQUENCE seq START 5")
    plan(con, "SELECT * FROM t WHERE k < nextval('seq')")
    with pytest.raises(InvalidPredicateError, match="k = 'abc'"):
        plan(con, "SELECT * FROM t WHERE k < nextval('seq') AND k = 'abc'")
    assert con.execute("SELECT nextval('seq')").fetchone() == (5,)  # planning called no nextval


def test_select_alias_does_not_hide_a_column(cons) -> None:
    # A table column wins over a SELECT alias of the same name in WHERE.
    p = check(cons, "SELECT x AS k FROM t WHERE k < 100")
    assert kept(p, "t") == 1


# -------------------------------------------------------------------------------------- joins


def test_self_join_prunes_each_alias_with_its_own_conjuncts(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t a JOIN t b ON a.k = b.k + 100 WHERE a.k < 200 AND b.k < 500")
    assert (kept(p, "a"), kept(p, "b")) == (2, 5)
    assert any("compares columns of two tables" in n for n in p.tables[0].not_used)


def test_inner_join_on_conjuncts_prune(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t JOIN o ON o.ok = t.k AND t.k < 300 AND o.tag = 't1'")
    assert kept(p, "t") == 3


def test_left_join_null_filled_side_is_not_pruned_by_is_null(cons) -> None:
    # The anti-join pattern: pruning b by "b.k IS NULL" would turn matched rows into NULL-filled ones.
    query = "SELECT count(*) FROM o a LEFT JOIN t b ON a.ok = b.k WHERE b.k IS NULL"
    p = check(cons, query)
    assert kept(p, "b") == N_FILES
    assert any("outer join" in n for n in p.tables[-1].not_used)


def test_not_null_column_is_null_on_the_null_filled_side(cons) -> None:
    # In the table "nn IS NULL" is FALSE (REQUIRED column); on the rows a LEFT JOIN fills it is TRUE.
    p = check(cons, "SELECT count(*) FROM o a LEFT JOIN t b ON a.ok = b.nn WHERE b.nn IS NULL")
    assert kept(p, "b") == N_FILES
    assert kept(check(cons, "SELECT count(*) FROM t WHERE nn IS NULL"), "t") == 0


def test_left_join_null_filled_side_is_pruned_by_null_rejecting_conjuncts(cons) -> None:
    p = check(cons, "SELECT count(*) FROM o a LEFT JOIN t b ON a.ok = b.k WHERE b.k >= 900")
    assert kept(p, "b") == 1


def test_left_join_on_conjunct_prunes_its_right_side_only(cons) -> None:
    p = check(cons, "SELECT count(*), count(b.k) FROM o a LEFT JOIN t b ON a.ok = b.k AND b.k < 100")
    assert kept(p, "b") == 1
    # About the preserved side, the ON conjunct keeps rows NULL-filled: it must not prune it.
    p = check(cons, "SELECT count(*), count(b.ok) FROM t a LEFT JOIN o b ON a.k = b.ok AND a.k < 100")
    assert kept(p, "a") == N_FILES
    p = check(cons, "SELECT count(*), count(a.k) FROM o b RIGHT JOIN t a ON a.k = b.ok AND a.k < 100")
    assert kept(p, "a") == N_FILES


def test_full_join(cons) -> None:
    p = check(
        cons, "SELECT count(*), count(a.k), count(b.k) FROM t a FULL JOIN t b ON a.k = b.k AND a.k < 100"
    )
    assert (kept(p, "a"), kept(p, "b")) == (N_FILES, N_FILES)
    p = check(cons, "SELECT count(*) FROM t a FULL JOIN t b ON a.k = b.k WHERE a.k < 100 AND b.k IS NULL")
    assert kept(p, "a") == 1 and kept(p, "b") == N_FILES


def test_using_columns_are_no_ones(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t a JOIN (SELECT ok AS k FROM o) b USING (k) WHERE k < 100")
    assert kept(p, "a") == N_FILES
    check(cons, "SELECT count(*) FROM t a NATURAL JOIN (SELECT ok AS k FROM o) b WHERE k < 100")


def test_positional_and_asof_joins_are_not_pruned(cons) -> None:
    p = check(cons, "SELECT count(*), sum(b.k) FROM t a POSITIONAL JOIN t b WHERE a.k < 100")
    assert kept(p, "a") == N_FILES
    p = check(cons, "SELECT count(*), sum(b.k) FROM t a ASOF JOIN t b ON a.k >= b.k + 1 WHERE b.k < 100")
    assert kept(p, "b") == N_FILES


def test_semi_and_anti_joins_prune_their_left_side(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t a SEMI JOIN o b ON a.k = b.ok WHERE a.k < 200")
    assert kept(p, "a") == 2
    p = check(cons, "SELECT count(*) FROM t a ANTI JOIN t b ON a.k = b.k + 1 WHERE a.k < 200")
    assert kept(p, "a") == 2 and kept(p, "b") == N_FILES


# ---------------------------------------------------------------------- subqueries and CTEs


def test_cte_and_subqueries_prune_their_own_where(cons) -> None:
    p = check(
        cons,
        "WITH c AS (SELECT * FROM t WHERE k < 200) "
        "SELECT count(*) FROM c WHERE c.k > 10 AND k IN (SELECT ok FROM o WHERE ok < 150) "
        "AND EXISTS (SELECT 1 FROM t i WHERE i.k = c.k AND i.k >= 100)",
    )
    assert kept(p, "t") == 2 and kept(p, "i") == 9


def test_correlated_reference_prunes_nothing(cons) -> None:
    p = check(
        cons, "SELECT count(*) FROM o WHERE EXISTS (SELECT 1 FROM t WHERE t.k = o.ok + 1 AND o.ok < 50)"
    )
    assert kept(p, "t") == N_FILES


def test_cte_with_the_tables_name_is_not_the_table(cons) -> None:
    p = check(cons, "WITH t AS (SELECT 7 AS k) SELECT * FROM t WHERE k = 7")
    assert p.tables == ()
    p = check(cons, "WITH t AS (SELECT * FROM main.t WHERE k < 100) SELECT count(*) FROM t WHERE k > 50")
    assert [x.kept for x in p.tables] == [1]


def test_set_operations_group_by_window_order_limit(cons) -> None:
    check(cons, "SELECT k FROM t WHERE k < 50 UNION ALL SELECT k FROM t WHERE k > 950 UNION SELECT 1")
    check(cons, "SELECT s, count(*) FROM t WHERE k BETWEEN 100 AND 400 GROUP BY s HAVING count(*) > 3")
    check(cons, "SELECT k, row_number() OVER (PARTITION BY s ORDER BY k) FROM t WHERE k >= 700")
    p = check(cons, "SELECT k FROM t WHERE k > 500 ORDER BY k DESC LIMIT 3")
    assert kept(p, "t") == 5


def test_sampled_reference_is_left_to_the_view(cons) -> None:
    p = check(cons, "SELECT count(*) FROM t TABLESAMPLE 100% WHERE k < 100")
    assert p.tables == ()


# ----------------------------------------------------------------------------- time zones


def test_zone_dependent_timestamp_tests_are_not_used_outside_utc(cons) -> None:
    for c in cons:
        c.execute("SET TimeZone = 'America/New_York'")
    try:
        # A zone-less literal against a TIMESTAMPTZ column is read in the session zone (UTC-5).
        p = check(cons, "SELECT count(*) FROM t WHERE ts < TIMESTAMP '2020-01-05 02:00'")
        assert kept(p, "t") == N_FILES
        assert any("time zones" in n for n in p.tables[0].not_used)
        p = check(cons, "SELECT count(*) FROM t WHERE ts < TIMESTAMPTZ '2020-01-05 02:00'")
        assert kept(p, "t") == 2  # the literal is read in the session zone: 07:00 UTC, k < 103
        p = check(cons, "SELECT count(*) FROM t WHERE ts < TIMESTAMPTZ '2020-01-05 02:00+00'")
        assert kept(p, "t") == 1
    finally:
        for c in cons:
            c.execute("SET TimeZone = 'UTC'")
    p = check(cons, "SELECT count(*) FROM t WHERE ts < TIMESTAMP '2020-01-05 02:00'")
    assert kept(p, "t") == 1


# ---------------------------------------------------------------------- registration, staleness


def test_non_select_statements_run_as_written(cons) -> None:
    con, _ = cons
    p = plan(con, "CREATE TABLE copied AS SELECT * FROM t WHERE k < 100")
    assert p.sql == p.query and "without pruning" in p.note
    p.relation()
    assert con.sql("SELECT count(*) FROM copied").fetchall() == [(ROWS,)]


def test_replaced_view_ends_the_registration(cons) -> None:
    con, _ = cons
    con.execute("CREATE OR REPLACE VIEW t AS SELECT 1 AS k")
    p = plan(con, "SELECT * FROM t WHERE k = 1")
    assert p.tables == () and p.relation().fetchall() == [(1,)]
    assert "t" not in registered(con) and "o" in registered(con)


def test_unregister_drops_the_view(cons) -> None:
    con, _ = cons
    unregister(con, "o")
    with pytest.raises(duckdb.CatalogException):
        con.sql("SELECT * FROM o").fetchall()


def test_unindexed_and_deleted_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _write_table(root)
    table = open_table(root)
    table.build()
    con = duckdb.connect()
    register(con, "t", table)
    extra = pa.table({"k": pa.array([5], pa.int64())})
    pq.write_table(pq.read_table(root / "part-00.parquet").slice(0, 1), root / "part-99.parquet")
    os.remove(root / "part-09.parquet")
    p = plan(con, "SELECT k FROM t WHERE k < 50")
    assert p.tables[0].kept == 2 and p.tables[0].total == N_FILES  # part-00 and the unindexed one
    want = duckdb.sql(
        "SELECT k FROM read_parquet(?, can_have_nan = true) WHERE k < 50", params=[_all_files(root)]
    ).fetchall()
    assert Counter(p.relation().fetchall()) == Counter(want)
    assert extra.num_rows == 1


def test_first_file_schema_does_not_leak(tmp_path: Path) -> None:
    # DuckDB takes the schema of the first file read: a pruned read starting elsewhere must not.
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int32())}), root / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([10, 20], pa.int64()), "extra": ["x", "y"]}), root / "b.parquet")
    open_table(root).build()
    con, base = duckdb.connect(), duckdb.connect()
    register(con, "t", root)
    _plain_view(base, "t", root)
    p = check((con, base), "SELECT * FROM t WHERE k >= 10")
    assert p.tables[0].kept == 1


def test_union_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int32())}), root / "a.parquet")
    pq.write_table(pa.table({"extra": ["x", "y"], "k": pa.array([10, 20], pa.int64())}), root / "b.parquet")
    open_table(root).build()
    con, base = duckdb.connect(), duckdb.connect()
    register(con, "t", root, union_by_name=True)
    _plain_view(base, "t", root, ", union_by_name = true")
    for query in (
        "SELECT * FROM t WHERE k < 5",
        "SELECT * FROM t WHERE k > 5",
        "SELECT * FROM t WHERE k = 7",
    ):
        check((con, base), query)


def test_hive_partition_types_are_those_of_all_files(tmp_path: Path) -> None:
    # Alone, the paths p=1 would type p as BIGINT; with p=x among all files it is VARCHAR.
    root = tmp_path / "h"
    for value in ("1", "2", "x"):
        (root / f"p={value}").mkdir(parents=True)
        pq.write_table(pa.table({"k": [1, 2, 3]}), root / f"p={value}" / "f.parquet")
    open_table(root).build()
    con, base = duckdb.connect(), duckdb.connect()
    register(con, "h", root)
    _plain_view(base, "h", root, ", hive_partitioning = true")
    p = check((con, base), "SELECT * FROM h WHERE p = '1'")
    assert p.tables[0].kept == 1
    check((con, base), "SELECT p || '!' AS q, k FROM h WHERE p <= '2'")


def test_register_refuses_bad_input(tmp_path: Path) -> None:
    con = duckdb.connect()
    with pytest.raises(TypeError):
        register("not a connection", "t", tmp_path)  # type: ignore[arg-type]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no data files"):
        register(con, "t", tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        register(con, "t", tmp_path / "missing")
    _write_table(tmp_path / "unindexed")  # no index: registered, every file read, with a warning
    with pytest.warns(UserWarning, match="no index: every file read"):
        register(con, "t", tmp_path / "unindexed")
    with pytest.raises(TypeError):
        plan(con, 42)  # type: ignore[arg-type]


def test_names_that_do_not_reach_mains_view_are_left_alone(cons) -> None:
    con, base = cons
    # A temporary view of the same name hides main's for unqualified names.
    for c in cons:
        c.execute("CREATE TEMP VIEW t AS SELECT 5 AS k")
    try:
        for query in ("SELECT * FROM t WHERE k = 5", "SELECT * FROM main.t WHERE k = 5"):
            p = check(cons, query)  # DuckDB looks in temp.main first, for main.t too
            assert p.tables == () and p.relation().fetchall() == [(5,)]
        assert kept(check(cons, "SELECT count(*) FROM memory.main.t WHERE k < 100"), "t") == 1
    finally:
        for c in cons:
            c.execute("DROP VIEW temp.t")
    # So does a schema searched before main.
    for c in cons:
        c.execute("CREATE SCHEMA other; CREATE TABLE other.t AS SELECT 6 AS k; SET schema = 'other'")
    try:
        p = check(cons, "SELECT * FROM t WHERE k = 6")
        assert p.tables == () and p.relation().fetchall() == [(6,)]
        assert kept(check(cons, "SELECT count(*) FROM main.t WHERE k < 100"), "t") == 1
    finally:
        for c in cons:
            c.execute("SET schema = 'main'")
    assert kept(check(cons, "SELECT count(*) FROM t WHERE k < 100"), "t") == 1
    assert con is not base


def test_the_splice_check_compares_trees_but_for_source_positions() -> None:
    from adapters.duckdb.scope import same_ignoring_locations as _same_ignoring_locations

    a = {"x": [1, {"query_location": 3, "y": "a"}]}
    assert _same_ignoring_locations(a, {"x": [1, {"query_location": 9, "y": "a"}]})
    assert not _same_ignoring_locations(a, {"x": [1, {"query_location": 3, "y": "b"}]})
    assert not _same_ignoring_locations(a, {"x": [1, {"query_location": 3, "y": "a", "z": 0}]})
    assert not _same_ignoring_locations({"a": 1}, {"a": True})  # JSON true is not 1
    assert not _same_ignoring_locations([1, 2], [1, 2, 3])
    deep: dict[str, object] = {"leaf": 0}
    other: dict[str, object] = {"leaf": 1}
    for _ in range(50_000):  # a 10,000-term filter's tree is this deep: no recursion
        deep, other = {"child": deep}, {"child": other}
    assert not _same_ignoring_locations(deep, other)


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("t", True),
        ("main.t AS a", True),
        ('memory.main."t" a(x, "y""z")', True),
        ("T", True),  # DuckDB's tree keeps the case as written: compared as written
        ("t /* a comment */ AS a", False),  # parsed back instead
        ("t AS a(x) ", False),
    ],
)
def test_a_reference_written_as_its_names_needs_no_parse_back(text: str, plain: bool) -> None:
    from adapters.duckdb.parse import serialize
    from adapters.duckdb.scope import TableRef
    from adapters.duckdb.splice import plainly_written as _plainly_written

    query = f"SELECT * FROM {text} WHERE 1 = 1"
    node = serialize(query)["statements"][0]["node"]["from_table"]
    start, length = node["query_location"], node["query_location_length"]
    ref = TableRef(node, str(node.get("alias") or node["table_name"]), None, None)
    if text.endswith(" "):  # a span that takes in more than the names (as if DuckDB had said so)
        node["query_location_length"] = length + 1
    assert _plainly_written(query, [ref]) == plain, (query, query.encode()[start : start + length])
    # A name other than the node's is never taken as plain.
    node["table_name"] = "other"
    assert not _plainly_written(query, [ref])


# ------------------------------------------------------------------ every conjunct, with its reason


def _listed(p: QueryPlan, alias: str) -> dict[str, str]:
    """The plan's lines for one reference: conjunct text -> "used" or the reason it was not."""
    [table] = [t for t in p.tables if t.alias == alias]
    lines = {text: "used" for text in table.used}
    for line in table.not_used:
        text, _, why = line.partition("  (")
        lines[text] = why.removesuffix(")")
    return lines


REASONS = [
    # (query, alias, conjunct text, words of the reason)
    ("SELECT count(*) FROM t WHERE k < nn", "t", "k < nn", "compares columns of the table with each other"),
    ("SELECT count(*) FROM t WHERE length(s) > 2", "t", "length(s) > 2", "not monotonic (length)"),
    ("SELECT count(*) FROM t WHERE k % 3 = 1", "t", "k % 3 = 1", "not monotonic (%)"),
    ("SELECT count(*) FROM t WHERE x * 2 > 1", "t", "x * 2 > 1", "untranslatable type"),
    ("SELECT count(*) FROM t WHERE s LIKE '%a_b'", "t", "s LIKE '%a_b'", "LIKE pattern"),
    ("SELECT count(*) FROM t WHERE s ILIKE 'V1%'", "t", "s ILIKE 'V1%'", "ILIKE"),
    ("SELECT count(*) FROM t WHERE k = ?", "t", "k = ?", "query parameter"),
    ("SELECT count(*) FROM t WHERE k = random()", "t", "k = random()", "not a constant"),
    ("SELECT count(*) FROM t WHERE k IN (SELECT 5)", "t", "k IN (SELECT 5)", "a subquery"),
    (
        "SELECT count(*) FROM t a JOIN t b ON a.k < b.k WHERE a.k < 100",
        "b",
        "a.k < b.k",
        "compares columns of two tables",
    ),
    (
        "SELECT count(*) FROM t a JOIN t b ON a.k = b.k + 1 WHERE a.k < 100",
        "a",
        "a.k = b.k + 1",
        "compares columns of two tables",
    ),
    (
        "SELECT count(*) FROM o WHERE EXISTS (SELECT 1 FROM t WHERE t.k = o.ok + 1)",
        "t",
        "t.k = o.ok + 1",
        "correlated subquery",
    ),
    (
        "SELECT count(*) FROM o WHERE EXISTS (SELECT 1 FROM t WHERE t.k = o.ok + 1 AND o.ok < 50)",
        "o",
        "o.ok < 50",
        "correlated subquery",
    ),
    (
        "SELECT count(*) FROM t a JOIN (SELECT ok AS k FROM o) b USING (k) WHERE k < 100",
        "a",
        "k < 100",
        "merged by USING",
    ),
    (
        "SELECT count(*) FROM t a NATURAL JOIN (SELECT ok AS k FROM o) b WHERE k < 100",
        "a",
        "k < 100",
        "NATURAL JOIN",
    ),
    (
        "SELECT count(*) FROM o a LEFT JOIN t b ON a.ok = b.k WHERE b.k IS NULL",
        "b",
        "b.k IS NULL",
        "TRUE on the NULL rows of an outer join",
    ),
    (
        "SELECT count(*) FROM t a LEFT JOIN o b ON a.k = b.ok AND a.k < 100",
        "a",
        "a.k < 100",
        "a LEFT JOIN condition on its preserved side",
    ),
    (
        "SELECT count(*) FROM t a FULL JOIN t b ON a.k = b.k AND b.k < 100",
        "b",
        "b.k < 100",
        "a FULL JOIN condition",
    ),
    (
        "SELECT count(*) FROM t a ASOF JOIN t b ON a.k >= b.k AND b.k < 100",
        "b",
        "b.k < 100",
        "an ASOF JOIN condition",
    ),
    (
        "SELECT count(*) FROM t a ANTI JOIN o b ON a.k = b.ok AND a.k < 100",
        "a",
        "a.k < 100",
        "an ANTI JOIN condition on its preserved side",
    ),
    (
        "SELECT count(*) FROM t a POSITIONAL JOIN t b WHERE a.k < 100",
        "a",
        "a.k < 100",
        "rows pair up by position",
    ),
]


@pytest.mark.parametrize(("query", "alias", "text", "why"), REASONS, ids=[r[2] for r in REASONS])
def test_each_conjunct_not_used_is_listed_with_why(cons, query: str, alias: str, text: str, why: str) -> None:
    p = check(cons, query, [5] if "?" in query else None)
    listed = _listed(p, alias)
    assert text in listed, str(p)
    assert why in listed[text], str(p)
    assert f"not used: {text}  (" in str(p)


def test_every_conjunct_about_a_table_is_on_its_plan(cons) -> None:
    p = check(
        cons,
        "SELECT count(*) FROM t a JOIN o b ON a.k = b.ok AND b.tag <> 'x' AND a.k + b.ok > 3 "
        "LEFT JOIN t c ON c.k = a.k AND c.s LIKE 'v%' AND a.x > 1 "
        "WHERE a.k < 500 AND lower(b.tag) = 't1' AND c.k IS NULL AND coalesce(c.id, 0) >= 0",
    )
    wanted = {
        "a": [
            "dynamic: k IN 66 keys from o AS b (b.tag <> 'x' AND lower(b.tag) = 't1')",
            "a.k + b.ok > 3",
            "c.k = a.k",
            "a.x > 1",
        ],
        "b": ["a.k = b.ok", "b.tag <> 'x'", "a.k + b.ok > 3", "lower(b.tag) = 't1'"],
        "c": [
            "dynamic: k IN 250 keys from t AS a (a.k < 500)",
            "c.s LIKE 'v%'",
            "c.k IS NULL",
            "coalesce(c.id, 0) >= 0",
        ],
    }
    for alias, texts in wanted.items():
        listed = _listed(p, alias)
        for text in texts:
            assert text in listed, (alias, text, str(p))


# --------------------------------------------------------------------- read by DuckDB directly


def test_a_reference_the_index_cannot_narrow_reads_the_view(cons) -> None:
    for query in (
        "SELECT count(*) FROM t WHERE lower(s) = 'v1'",
        "SELECT k, s FROM t WHERE k >= 0",
        "SELECT count(*), sum(k) FROM t",
    ):
        p = check(cons, query)
        [table] = p.tables
        assert table.direct == "the index keeps every file"
        assert "note: run by DuckDB directly: the index keeps every file" in str(p)
        # Every file at one depth, none hidden: a glob reads them without the view's file-name filter.
        assert table.glob.endswith("/[!._]*.parquet") and f"read_parquet('{table.glob}'" in p.sql, query
    # The pruned reference reads its kept files; the other one every file, by the glob.
    p = check(cons, "SELECT count(*) FROM t, o WHERE t.k < 100 AND o.tag >= 't'")
    assert kept(p, "t") == 1 and kept(p, "o") == 4
    [o] = [t for t in p.tables if t.alias == "o"]
    assert o.direct and o.glob in p.sql and p.sql.endswith(" AS \"o\" WHERE t.k < 100 AND o.tag >= 't'")


def test_only_hive_partition_filters_pruned_reads_the_view(tmp_path: Path) -> None:
    root = tmp_path / "h"
    for n, value in enumerate(("1", "2", "3")):
        (root / f"p={value}").mkdir(parents=True)
        pq.write_table(
            pa.table({"k": [1, 2, 3], "j": [10 * n, 10 * n + 1, 10 * n + 2]}),
            root / f"p={value}" / "f.parquet",
        )
    open_table(root).build()
    con, base = duckdb.connect(), duckdb.connect()
    register(con, "h", root)
    _plain_view(base, "h", root, ", hive_partitioning = true")
    hive = "only hive partition filters pruned, and DuckDB prunes hive partitions itself"
    for query in ("SELECT * FROM h WHERE p = 1", "SELECT count(*) FROM h WHERE p <= 2 AND k < 3"):
        p = check((con, base), query)
        assert p.tables[0].kept < 3 and p.tables[0].direct == hive, query
        assert p.tables[0].glob == f"{root}/[!._]*/[!._]*.parquet" and p.tables[0].glob in p.sql
    # Statistics prune beyond the partitions: the kept files are read.
    p = check((con, base), "SELECT * FROM h WHERE p <= 2 AND j >= 10")
    assert p.tables[0].kept == 1 and not p.tables[0].direct and "read_parquet" in p.sql
    # Join keys prune partitions DuckDB would not skip alone: the kept files are read.
    for c in (con, base):
        c.execute("CREATE TABLE pk AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) v(p, w)")
    p = check((con, base), "SELECT count(*), sum(j) FROM h JOIN pk ON h.p = pk.p WHERE pk.w = 'b'")
    assert p.tables[0].kept == 1 and not p.tables[0].direct and "read_parquet" in p.sql


def test_a_direct_read_keeps_the_view_where_no_glob_reads_just_its_files(tmp_path: Path) -> None:
    """Files at two depths, or under an ``_k=v`` folder (data, though ``[!._]*`` would skip it): the
    view itself is read, with its filter; and the glob never reads a hidden file."""
    uneven, underscored, hidden = tmp_path / "uneven", tmp_path / "underscored", tmp_path / "hidden"
    (uneven / "sub").mkdir(parents=True)
    pq.write_table(pa.table({"k": [1, 2]}), uneven / "a.parquet")
    pq.write_table(pa.table({"k": [3]}), uneven / "sub" / "b.parquet")
    (underscored / "_p=1").mkdir(parents=True)
    pq.write_table(pa.table({"k": [1, 2]}), underscored / "_p=1" / "a.parquet")
    hidden.mkdir()
    pq.write_table(pa.table({"k": [1, 2]}), hidden / "a.parquet")
    for folder in (uneven, underscored, hidden):
        open_table(folder).build(progress=False)
    # Hidden files after the index was built: never data, for the view or the glob.
    pq.write_table(pa.table({"k": [99]}), hidden / "_tmp.parquet")
    pq.write_table(pa.table({"k": [98]}), hidden / ".x.parquet")
    for folder, globbed in ((uneven, False), (underscored, False), (hidden, True)):
        con = duckdb.connect()
        register(con, "t", folder)
        p = plan(con, "SELECT sum(k) FROM t WHERE k > 0")
        assert bool(p.tables[0].glob) == globbed and (p.sql == p.query) != globbed, folder
        expected = {uneven: 6, underscored: 3, hidden: 3}[folder]
        assert execute(con, "SELECT sum(k) FROM t WHERE k > 0").fetchall() == [(expected,)], folder


def test_join_keys_of_every_type_prune_in_any_time_zone(cons) -> None:
    for c in cons:
        c.execute("SET TimeZone = 'America/New_York'")
    try:
        for column in ("ts", "d", "s", "k", "id"):
            p = check(
                cons, f"SELECT count(*) FROM t WHERE {column} IN (SELECT {column} FROM t i WHERE i.k < 10)"
            )
            [outer] = [x for x in p.tables if x.alias == "t"]
            assert any(u.startswith(f"dynamic: {column} IN") for u in outer.used), str(p)
            assert outer.kept == 1, str(p)  # the rows of part-00 alone hold those keys
    finally:
        for c in cons:
            c.execute("SET TimeZone = 'UTC'")
