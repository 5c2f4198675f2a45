"""Dynamic file pruning (``adapters.duckdb.dynamic``): a join's filtered side prunes a registered table.

Every query runs pruned through the adapter and by plain DuckDB over every file; the rows must be
the same. ``f`` is a fact table (20 files, ``ok`` clustered: file i holds 100*i .. 100*i+99, each
key twice), ``dim`` a dimension table of DuckDB's own (one row per key, a date per key), ``dimr``
the same dimension as a registered table. The tests that must not prune (an outer join's
preserved side, anti joins, NOT IN, mismatched types) have answers that would change if they did.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import QueryPlan, TablePlan, plan, register

N_FILES = 20
KEYS = 100  # per file
DIM = "SELECT range AS ok, DATE '2020-01-01' + CAST(range AS INTEGER) AS odate, 't' || (range % 3) AS tag"


def _write_fact(root: Path) -> None:
    root.mkdir()
    for i in range(N_FILES):
        ok = [k for k in range(KEYS * i, KEYS * i + KEYS) for _ in range(2)]
        table = pa.table(
            {
                "ok": pa.array(ok, pa.int64()),
                "ok32": pa.array(ok, pa.int32()),
                "sk": pa.array([str(k) for k in ok]),
                "rk": pa.array([k * 7919 % 100_003 for k in ok], pa.int64()),  # every file spans all
                "nk": pa.array([None if k % 10 == 0 else k for k in ok], pa.int64()),
                "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=k) for k in ok]),
                "v": pa.array([float(k % 13) for k in ok]),
            }
        )
        pq.write_table(table, root / f"f-{i:02d}.parquet")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from index_store import open_table

    base = tmp_path_factory.mktemp("dynamic")
    fact = base / "f"
    _write_fact(fact)
    open_table(fact).build(bloom_columns=["rk"])
    dim = base / "dimr"
    dim.mkdir()
    rows = duckdb.sql(f"{DIM} FROM range(0, 2000)").to_arrow_table()
    for i in range(4):
        pq.write_table(rows.slice(500 * i, 500), dim / f"d-{i}.parquet")
    open_table(dim).build()
    return fact, dim


def _plain_view(con: duckdb.DuckDBPyConnection, name: str, root: Path) -> None:
    files = ", ".join(f"'{p}'" for p in sorted(root.glob("*.parquet")))
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{files}], can_have_nan = true)")


def _connections(dirs: tuple[Path, Path], **options: object) -> tuple[duckdb.DuckDBPyConnection, ...]:
    fact, dim = dirs
    con, base = duckdb.connect(), duckdb.connect()
    register(con, "f", fact, **options)  # type: ignore[arg-type]
    register(con, "dimr", dim)
    _plain_view(base, "f", fact)
    _plain_view(base, "dimr", dim)
    for c in (con, base):
        c.execute(f"CREATE TABLE dim AS {DIM} FROM range(0, 2000)")
        # NULL keys pass its filter; 1,501 and 5 are keys of f, -1 is none.
        c.execute("CREATE TABLE nulls AS SELECT * FROM (VALUES (NULL), (5), (1501), (-1)) v(ok)")
        c.execute("CREATE TABLE skeys AS SELECT CAST(range AS VARCHAR) AS ok FROM range(0, 50)")
        c.execute("CREATE TABLE big AS SELECT range % 2000 AS ok FROM range(0, 10000)")
    return con, base


@pytest.fixture()
def cons(dirs: tuple[Path, Path]) -> tuple[duckdb.DuckDBPyConnection, ...]:
    return _connections(dirs)


def check(cons: tuple[duckdb.DuckDBPyConnection, ...], query: str) -> QueryPlan:
    con, base = cons
    p = plan(con, query)
    got, want = p.relation().to_arrow_table(), base.sql(query).to_arrow_table()
    assert got.schema == want.schema
    assert Counter(map(repr, got.to_pylist())) == Counter(map(repr, want.to_pylist())), str(p)
    return p


def table(p: QueryPlan, alias: str) -> TablePlan:
    [found] = [t for t in p.tables if t.alias == alias]
    return found


def dynamic(t: TablePlan) -> list[str]:
    return [u for u in t.used if u.startswith("dynamic:")]


FEB = "dim.odate BETWEEN DATE '2020-02-01' AND DATE '2020-02-10'"  # keys 31 .. 40: file 0


# ------------------------------------------------------------------------------------ inner joins


def test_star_join_prunes_the_fact_by_the_filtered_dimension(cons) -> None:
    p = check(cons, f"SELECT count(*), sum(f.v) FROM f JOIN dim ON f.ok = dim.ok WHERE {FEB}")
    f = table(p, "f")
    assert (f.kept, f.total) == (1, N_FILES)
    assert dynamic(f) == [f"dynamic: ok IN 10 keys from dim ({FEB})"]
    assert f"used:     dynamic: ok IN 10 keys from dim ({FEB})" in str(p)
    # The same as a comma join, the key qualified or not, with a date range over four files.
    p = check(
        cons,
        "SELECT f.ok, f.d, odate FROM f, dim WHERE ok32 = dim.ok AND odate >= DATE '2020-06-01'"
        " AND odate < DATE '2021-06-01'",
    )
    assert table(p, "f").kept == 5  # keys 152 .. 516: files 1 .. 5


def test_registered_dimension_is_read_pruned(cons) -> None:
    query = (
        "SELECT count(*) FROM f JOIN dimr d ON f.ok = d.ok "
        "WHERE d.odate BETWEEN DATE '2020-02-01' AND DATE '2020-02-10'"
    )
    p = check(cons, query)
    assert table(p, "f").kept == 1
    assert table(p, "d").kept < 4  # pruned by its own date filter (the files are ordered by date)
    assert dynamic(table(p, "f"))[0].startswith("dynamic: ok IN 10 keys from dimr AS d (d.odate")


def test_the_join_key_prunes_by_bloom_filter(cons) -> None:
    # rk spans most values in every file: only the bloom filters tell which hold keys 0 .. 9.
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.rk = dim.ok WHERE dim.ok < 10")
    assert table(p, "f").kept < N_FILES // 2


def test_no_filter_no_smaller_side_no_file_left(cons) -> None:
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok")
    assert table(p, "f").kept == N_FILES
    assert any("dim has no filter" in n for n in table(p, "f").not_used)
    p = check(cons, "SELECT count(*) FROM f JOIN big ON f.ok = big.ok WHERE big.ok < 300")
    assert table(p, "f").kept == N_FILES  # 10,000 rows against about 4,000
    assert any("big is not smaller" in n for n in table(p, "f").not_used)
    p = check(cons, f"SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE f.ok < 0 AND {FEB}")
    assert table(p, "f").kept == 0
    assert any("no file left to prune" in n for n in table(p, "f").not_used)


def test_a_filter_that_reads_the_clock_is_not_used(cons) -> None:
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE dim.odate < now()::DATE")
    assert table(p, "f").kept == N_FILES
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE dim.ok < 50 + random() * 0")
    assert table(p, "f").kept == N_FILES


# ---------------------------------------------------------------------------- subqueries and semi


def test_in_subquery(cons) -> None:
    p = check(cons, "SELECT * FROM f WHERE ok IN (SELECT ok FROM dim WHERE tag = 't1' AND ok < 250)")
    f = table(p, "f")
    assert f.kept == 3
    subquery = "(SELECT ok FROM dim WHERE ((tag = 't1') AND (ok < 250)))"  # DuckDB's text of it
    assert dynamic(f) == [f"dynamic: ok IN 83 keys from {subquery}"]
    assert not any("IN (SELECT" in n for n in f.not_used)  # shown as the filter it gave
    p = check(
        cons, "SELECT count(*) FROM f WHERE ok = ANY (SELECT ok FROM dimr WHERE ok BETWEEN 900 AND 949)"
    )
    assert table(p, "f").kept == 1


def test_subqueries_that_are_not_used(cons) -> None:
    # Correlated: the subquery does not run alone.
    p = check(cons, "SELECT count(*) FROM f WHERE ok IN (SELECT ok FROM dim WHERE dim.tag = f.sk)")
    assert table(p, "f").kept == N_FILES
    # No WHERE: its keys are the whole table's.
    p = check(cons, "SELECT count(*) FROM f WHERE ok IN (SELECT ok FROM dim)")
    assert any("has no WHERE" in n for n in table(p, "f").not_used)
    # A LIMIT may keep other rows when the query runs.
    p = check(cons, "SELECT count(*) FROM f WHERE ok IN (SELECT ok FROM dim WHERE ok < 500 LIMIT 3)")
    assert table(p, "f").kept == N_FILES
    assert any("a LIMIT" in n for n in table(p, "f").not_used)
    # A CTE of the query is not what the subquery would read alone.
    p = check(
        cons,
        "WITH dim AS (SELECT 1999 AS ok, 1 AS tag) SELECT count(*) FROM f WHERE ok IN "
        "(SELECT ok FROM dim WHERE tag = 1)",
    )
    assert table(p, "f").kept == N_FILES


def test_not_in_anti_join_and_not_exists_never_prune(cons) -> None:
    for query in (
        "SELECT count(*) FROM f WHERE ok NOT IN (SELECT ok FROM dim WHERE ok < 1900)",
        "SELECT count(*) FROM f ANTI JOIN dim ON f.ok = dim.ok AND dim.ok < 1900",
        "SELECT count(*) FROM f WHERE NOT EXISTS (SELECT 1 FROM dim WHERE dim.ok = f.ok AND dim.ok < 1900)",
        "SELECT count(*) FROM f WHERE EXISTS (SELECT 1 FROM dim WHERE dim.ok = f.ok AND dim.ok < 100)",
    ):
        p = check(cons, query)
        assert table(p, "f").kept == N_FILES, query
        assert not dynamic(table(p, "f")), query


def test_semi_join(cons) -> None:
    p = check(cons, f"SELECT f.ok, f.v FROM f SEMI JOIN dim ON f.ok = dim.ok AND {FEB}")
    assert table(p, "f").kept == 1
    p = check(cons, "SELECT count(*) FROM f SEMI JOIN dim ON f.ok = dim.ok WHERE f.d < DATE '2020-01-20'")
    assert table(p, "f").kept == 1  # by its own filter: dim has none


# ------------------------------------------------------------------------------------ outer joins


def test_left_join_prunes_the_null_filled_side_never_the_preserved_one(cons) -> None:
    # dimr is preserved: all its filtered rows are kept, matched or not; f only pairs with them.
    p = check(
        cons,
        "SELECT d.ok, count(f.ok) FROM dimr d LEFT JOIN f ON d.ok = f.ok "
        "WHERE d.odate < DATE '2020-01-20' GROUP BY d.ok",
    )
    assert table(p, "f").kept == 1
    # f preserved: every f row is in the answer, so pruning it by dim's keys would lose rows.
    p = check(cons, f"SELECT count(*), count(dim.ok) FROM f LEFT JOIN dim ON f.ok = dim.ok AND {FEB}")
    f = table(p, "f")
    assert f.kept == N_FILES and not dynamic(f)
    assert any("preserved side" in n for n in f.not_used)
    assert p.relation().fetchall() == [(N_FILES * KEYS * 2, 20)]


def test_right_join_in_both_directions(cons) -> None:
    p = check(cons, f"SELECT count(*), count(dim.ok) FROM dim RIGHT JOIN f ON f.ok = dim.ok AND {FEB}")
    assert table(p, "f").kept == N_FILES  # preserved
    assert p.relation().fetchall() == [(N_FILES * KEYS * 2, 20)]
    p = check(cons, f"SELECT count(*), count(f.ok) FROM f RIGHT JOIN dim ON f.ok = dim.ok WHERE {FEB}")
    assert table(p, "f").kept == 1  # NULL-filled: only its rows that pair with dim's show


def test_full_join_prunes_neither_side(cons) -> None:
    p = check(
        cons, f"SELECT count(*), count(f.ok), count(dim.ok) FROM f FULL JOIN dim ON f.ok = dim.ok AND {FEB}"
    )
    assert table(p, "f").kept == N_FILES
    assert any("FULL JOIN" in n for n in table(p, "f").not_used)


# ------------------------------------------------------------------------------------- the keys


def test_null_keys_are_dropped(cons) -> None:
    p = check(
        cons, "SELECT f.ok, f.nk FROM f JOIN nulls ON f.nk = nulls.ok WHERE nulls.ok IS NULL OR nulls.ok > -9"
    )
    f = table(p, "f")
    assert dynamic(f)[0].startswith("dynamic: nk IN 3 keys")  # 5, 1,501, -1: not NULL
    assert f.kept == 2
    p = check(cons, "SELECT count(*) FROM f WHERE nk IN (SELECT ok FROM nulls WHERE ok IS NULL)")
    assert table(p, "f").kept == 0  # no key: no row can match
    assert p.relation().fetchall() == [(0,)]


def test_key_types(cons) -> None:
    # VARCHAR keys against a BIGINT column: DuckDB casts, '05' = 5; not used.
    p = check(cons, "SELECT count(*) FROM f JOIN skeys ON f.ok = skeys.ok WHERE skeys.ok < '3'")
    f = table(p, "f")
    assert f.kept == N_FILES
    assert any("the keys are VARCHAR and ok is BIGINT" in n for n in f.not_used)
    # The same VARCHAR type: used.
    p = check(cons, "SELECT count(*) FROM f JOIN skeys ON f.sk = skeys.ok WHERE skeys.ok < '3'")
    assert dynamic(table(p, "f"))
    # A DATE against a TIMESTAMP: not used.
    p = check(
        cons,
        "SELECT count(*) FROM f WHERE d IN (SELECT TIMESTAMP '2020-01-05' + INTERVAL (range) HOUR "
        "FROM range(48) WHERE range % 24 = 0)",
    )
    assert table(p, "f").kept == N_FILES
    assert any("TIMESTAMP" in n and "casts" in n for n in table(p, "f").not_used)
    # INTEGER keys against BIGINT, BIGINT keys against INTEGER: integers widen exactly.
    p = check(cons, "SELECT count(*) FROM f WHERE ok IN (SELECT CAST(ok AS INTEGER) FROM dim WHERE ok < 5)")
    assert table(p, "f").kept == 1


def test_string_keys_under_a_collation_are_not_used(cons) -> None:
    for c in cons:
        c.execute("SET default_collation = 'nocase'")
    try:
        p = check(cons, "SELECT count(*) FROM f WHERE sk IN (SELECT ok FROM skeys WHERE ok < '3')")
        assert table(p, "f").kept == N_FILES
        assert any("collation" in n for n in table(p, "f").not_used)
    finally:
        for c in cons:
            c.execute("RESET default_collation")


def test_above_the_limit_only_min_and_max(dirs) -> None:
    cons = _connections(dirs, dynamic_keys=5)
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE dim.ok BETWEEN 250 AND 480")
    f = table(p, "f")
    assert dynamic(f) == [
        "dynamic: ok BETWEEN 250 AND 480 (min and max of 231 keys from dim "
        "(dim.ok BETWEEN 250 AND 480): above the limit of 5)"
    ]
    assert f.kept == 3
    # Keys at both ends: min and max span every file (an IN list would have kept two).
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE dim.ok < 3 OR dim.ok > 1996")
    assert table(p, "f").kept == N_FILES
    cons = _connections(dirs, dynamic_keys=None)
    p = check(cons, f"SELECT count(*) FROM f JOIN dim ON f.ok = dim.ok WHERE {FEB}")
    assert table(p, "f").kept == N_FILES
    assert any("off for this table" in n for n in table(p, "f").not_used)


def test_register_refuses_a_bad_limit(dirs) -> None:
    with pytest.raises(ValueError, match="dynamic_keys"):
        register(duckdb.connect(), "f", dirs[0], dynamic_keys=-1)


def test_a_registered_table_is_the_smaller_side_or_not(cons) -> None:
    # Both sides registered and filtered: the keys come from the one with fewer rows.
    p = check(
        cons,
        "SELECT count(*) FROM f JOIN dimr d ON f.ok = d.ok WHERE f.v < 5 AND d.ok BETWEEN 100 AND 120",
    )
    assert table(p, "f").kept == 1 and dynamic(table(p, "f"))
    assert not dynamic(table(p, "d"))


def test_keys_are_not_read_where_no_key_could_skip_a_file(cons) -> None:
    # v takes the same 13 values in every file and has no bloom filter: no keys could skip one.
    p = check(cons, "SELECT count(*) FROM f JOIN dim ON f.v = dim.ok WHERE dim.ok < 3")
    assert table(p, "f").kept == N_FILES
    assert any("v ranges overlap and it has no bloom filter" in n for n in table(p, "f").not_used)


def test_which_statistics_could_use_keys() -> None:
    from adapters.duckdb.dynamic import SMALL_SIDE, _hopeless
    from hudi_expr import BloomFilter, ColumnStats
    from hudi_expr.bloom import BloomFilterSet

    def stats(lo: list[int], hi: list[int], bloom: bool) -> ColumnStats:
        n = len(lo)
        zeros = pa.array([0] * n, pa.int64())
        filters = BloomFilterSet.from_filters([BloomFilter.for_entries(10, 0.01)] * n) if bloom else None
        return ColumnStats(pa.array(lo, pa.int64()), pa.array(hi, pa.int64()), zeros, zeros, filters)

    clustered = stats([0, 10, 20, 30], [9, 19, 29, 39], bloom=False)
    spread = stats([0, 1, 2, 3], [99, 98, 97, 99], bloom=False)
    spread_bloom = stats([0, 1, 2, 3], [99, 98, 97, 99], bloom=True)
    assert _hopeless(clustered, "k", 4, 1e9) == ""  # ranges: any number of keys may skip files
    assert "no bloom filter" in _hopeless(spread, "k", 4, 10)
    assert _hopeless(spread_bloom, "k", 4, SMALL_SIDE) == ""  # few keys: blooms may skip files
    assert "too many rows" in _hopeless(spread_bloom, "k", 4, SMALL_SIDE + 1)
    assert _hopeless(spread_bloom, "k", 4, None) == ""  # a subquery: its size is not known
    assert _hopeless(None, "k", 4, 1e9) == ""


def test_columns_of_duckdbs_tables_are_looked_up_as_duckdb_does(cons) -> None:
    # A temporary table hides main's of the same name: w is its column, and filters it.
    for c in cons:
        c.execute("CREATE TABLE sh AS SELECT range AS ok, 0 AS z FROM range(2000)")
        c.execute("CREATE TEMP TABLE sh AS SELECT range AS ok, range AS w FROM range(2000)")
    p = check(cons, "SELECT count(*) FROM f JOIN sh ON f.ok = sh.ok WHERE w < 30")
    assert dynamic(table(p, "f")) == ["dynamic: ok IN 30 keys from sh (w < 30)"]
    assert table(p, "f").kept == 1
    p = check(cons, "SELECT count(*) FROM f JOIN main.sh s ON f.ok = s.ok WHERE w < 30")  # temp's too
    assert table(p, "f").kept == 1
    p = check(cons, "SELECT count(*) FROM f JOIN memory.main.sh s ON f.ok = s.ok WHERE z < 1 AND s.ok < 30")
    assert dynamic(table(p, "f")) == ["dynamic: ok IN 30 keys from sh AS s (z < 1 AND s.ok < 30)"]
