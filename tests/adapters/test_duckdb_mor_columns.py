"""DuckDB queries on merge-on-read tables read only the columns they use (``adapters.duckdb.columns``,
``MergedView.kept_read``), and still return what hudi-rs's snapshot gives the same query.

The oracle runs each query's text on a connection where ``t`` (and ``u``) is hudi-rs's snapshot of
the table as an Arrow table. The plans are checked too: which columns each reference reads, and the
schema of the stream registered for it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hudi_data import MOR_TABLES
from mor_tables import WRITTEN, assert_same_rows, condition_for, hudi_rs_rows

from adapters import duckdb as duck
from adapters.duckdb.columns import used_columns
from adapters.duckdb.scope import find_references
from index_store import open_table

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_STREAM = re.compile(r'"(__hudi_index_mor_[^"]+)"')


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two written tables of the same columns (``rows``), indexed."""
    base = tmp_path_factory.mktemp("mor-columns")
    roots = {
        "t": WRITTEN["updates_deletes_v9"](base / "t").root,
        "u": WRITTEN["log_only_v8"](base / "u").root,
    }
    for root in roots.values():
        open_table(root).build(progress=False)
    return roots


def _connections(roots: dict[str, Path]) -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    """Ours (each table registered) and the oracle's (each table hudi-rs's snapshot)."""
    ours, oracle = duckdb.connect(), duckdb.connect()
    for name, root in roots.items():
        duck.register(ours, name, root)
        oracle.register(name, hudi_rs_rows(root))
    return ours, oracle


def _streams(con: duckdb.DuckDBPyConnection, plan: duck.QueryPlan) -> list[list[str]]:
    """The columns of each merged stream the planned query reads."""
    names = _STREAM.findall(plan.sql)
    return [[str(r[0]) for r in con.sql(f'DESCRIBE SELECT * FROM "{n}"').fetchall()] for n in names]


SAME_AS_HUDI_RS = [
    "SELECT id, qty FROM t",  # no predicate: every slice, two columns
    "SELECT id, name FROM t WHERE id >= 450",  # pruned
    "SELECT * FROM t WHERE qty < 100",
    "SELECT x.* FROM t AS x WHERE x.id < 100",
    "SELECT count(*) AS n FROM t",
    "SELECT count(*) AS n FROM t WHERE id < 300",
    "SELECT name FROM t WHERE price > 100",  # price only in WHERE
    "SELECT count(*) AS n, max(qty) AS q FROM t GROUP BY region",  # region only in GROUP BY
    "WITH c AS (SELECT id, qty FROM t WHERE id < 200) SELECT sum(qty) AS s FROM c",
    "SELECT s.id FROM (SELECT id, amount FROM t WHERE amount > 10) AS s",
    "SELECT id FROM t WHERE qty > (SELECT avg(qty) FROM t WHERE id < 100)",
    "SELECT a.id, a.qty, b.name FROM t AS a JOIN u AS b ON a.id = b.id",  # two merge-on-read tables
    "SELECT a.id AS a_id, b.* FROM t AS a JOIN u AS b ON a.id = b.id WHERE b.id < 40",
    "SELECT id, a.qty, b.day FROM t AS a JOIN u AS b USING (id)",
    "SELECT x, r FROM t AS v(a, b, c, d, e, x, r)",  # renamed by position
    'SELECT id, "at", day FROM t WHERE id IN (SELECT id FROM u WHERE qty > 5)',
]


@pytest.mark.parametrize("query", SAME_AS_HUDI_RS)
def test_results_are_hudi_rs_snapshot_results(query: str, written: dict[str, Path]) -> None:
    ours, oracle = _connections(written)
    assert_same_rows(duck.sql(ours, query).to_arrow_table(), oracle.sql(query).to_arrow_table())


def test_a_column_only_in_order_by(written: dict[str, Path]) -> None:
    ours, oracle = _connections(written)
    query = "SELECT id FROM t ORDER BY price DESC NULLS LAST, id LIMIT 7"
    plan = duck.plan(ours, query)
    assert plan.tables[0].columns == ("id", "price")
    assert plan.relation().fetchall() == oracle.sql(query).fetchall()


# (query, the columns each reference reads, in the order of plan.tables; None: every column)
READS = [
    ("SELECT sum(qty) FROM t WHERE id < 100", [("id", "qty")]),
    ("SELECT sum(qty) FROM t", [("qty",)]),
    ("SELECT count(*) FROM t", [()]),
    ("SELECT count(*) FROM t WHERE id < 100", [("id",)]),
    ("SELECT * FROM t WHERE id < 100", [None]),
    ("FROM t WHERE id < 100", [None]),
    ("SELECT t FROM t WHERE id < 100", [None]),  # the row as a struct
    ("SELECT #1 FROM t WHERE id < 100", [None]),
    ("SELECT COLUMNS('q.*') FROM t WHERE id < 100", [None]),
    ("SELECT * FROM (SELECT id FROM t WHERE id < 100) AS s", [("id",)]),
    ("SELECT a.id AS a_id, b.* FROM t a JOIN u b ON a.id = b.id WHERE a.id < 100", [("id",), None]),
    ("SELECT a.id FROM t a JOIN u b ON a.id = b.id WHERE b.qty > 3", [("id", "qty"), ("id", "qty")]),
    ("SELECT a.qty FROM t a JOIN u b USING (id) WHERE b.id < 40", [("id", "qty"), ("id", "qty")]),
    ("SELECT qty FROM t NATURAL JOIN u WHERE id < 40", [None, None]),
    ("SELECT name FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.id = t.id)", [("id", "name"), ("id", "name")]),
]


@pytest.mark.parametrize(("query", "reads"), READS)
def test_each_reference_reads_the_columns_it_uses(
    query: str, reads: list[tuple[str, ...] | None], written: dict[str, Path]
) -> None:
    ours, oracle = _connections(written)
    plan = duck.plan(ours, query)
    assert [t.columns for t in plan.tables] == reads, str(plan)
    # Each stream the query reads has exactly those columns (one when none is used: DuckDB needs one).
    every = [str(r[0]) for r in ours.sql("DESCRIBE t").fetchall()]
    streams = _streams(ours, plan)
    for read in reads:
        if read is not None:
            assert (list(read) in streams) if read else any(len(s) == 1 for s in streams)
    assert all(s in [list(r) for r in reads if r] or len(s) <= 1 or s == every for s in streams)
    assert_same_rows(plan.relation().to_arrow_table(), oracle.sql(query).to_arrow_table())


def test_every_slice_kept_and_no_index_read_only_the_columns_used(
    tmp_path: Path, written: dict[str, Path]
) -> None:
    """A predicate that prunes nothing, no predicate, and a table with no index: the reference
    reads a projected stream of the live slices (not the view, which reads every column)."""
    unindexed = WRITTEN["failed_commits_v9"](tmp_path / "n").root
    ours, oracle = _connections({"t": written["t"], "n": unindexed})
    for query in (
        "SELECT sum(qty) AS s FROM t WHERE price > 3",
        "SELECT sum(qty) AS s FROM t",
        "SELECT name FROM n WHERE qty > 20",
    ):
        plan = duck.plan(ours, query)
        (table,) = plan.tables
        assert table.kept == table.total and table.direct and table.columns is not None, str(plan)
        (stream,) = _STREAM.findall(plan.sql)
        assert "_live_" in stream
        assert _streams(ours, plan) == [list(table.columns)]
        assert_same_rows(plan.relation().to_arrow_table(), oracle.sql(query).to_arrow_table())
    # Every column used and every slice kept: the view, as DuckDB alone reads it.
    plan = duck.plan(ours, "SELECT * FROM t")
    assert plan.sql == "SELECT * FROM t" and plan.tables[0].columns is None


def test_a_relation_planned_earlier_reads_what_it_was_planned_with(written: dict[str, Path]) -> None:
    """Two plans of the same slices and other columns register two streams: the first relation,
    run after the second was planned, still has its columns."""
    ours, oracle = _connections(written)
    first = "SELECT id, qty FROM t WHERE id < 100"
    second = "SELECT id, price FROM t WHERE id < 100"
    before = duck.sql(ours, first)
    after = duck.sql(ours, second)
    assert _STREAM.findall(duck.plan(ours, first).sql) != _STREAM.findall(duck.plan(ours, second).sql)
    assert_same_rows(before.to_arrow_table(), oracle.sql(first).to_arrow_table())
    assert_same_rows(after.to_arrow_table(), oracle.sql(second).to_arrow_table())


@pytest.mark.parametrize("name", [n for n in MOR_TABLES if "empty" not in n])
def test_real_tables_projections(name: str, hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    """Hudi's own merge-on-read test tables: two columns, a count, a column only in WHERE."""
    root = Path(shutil.copytree(hudi_tables[name], tmp_path / name))
    open_table(root).build(progress=False)
    ours, oracle = _connections({"t": root})
    expected = hudi_rs_rows(root)
    data = [f.name for f in expected.schema if not f.name.startswith("_hoodie") and _plain(f.type)]
    condition = condition_for(expected)
    first, last = (f'"{c}"' for c in (data[0], data[-1]))
    for query in (
        f"SELECT {first}, {last} FROM t",
        "SELECT count(*) AS n FROM t",
        f"SELECT {first} FROM t WHERE {condition}",
    ):
        plan = duck.plan(ours, query)
        assert plan.tables[0].columns is not None, str(plan)
        assert_same_rows(plan.relation().to_arrow_table(), oracle.sql(query).to_arrow_table())


def _plain(t: pa.DataType) -> bool:
    return not pa.types.is_nested(t)


# (query, the columns of t = (id, s, q) each reference reads, in query order; None: every column)
PARSED = [
    ("SELECT s.* FROM t", [("s",)]),  # the fields of the struct column s
    ("SELECT x.* FROM t AS x", [None]),
    ("SELECT q FROM t x JOIN t y USING (id)", [("id", "q"), ("id", "q")]),
    ("SELECT count(*) FROM t", [()]),
    ("SELECT (SELECT max(q) FROM t AS i WHERE i.id = o.id) FROM t AS o", [("id", "q"), ("id", "q")]),
    ("SELECT list_transform([1], v -> v + q) FROM t", [("q",)]),  # inside a lambda
    ("SELECT * FROM (SELECT id FROM t) AS x JOIN (SELECT q FROM t) AS y ON true", [("id", "q"), ("id", "q")]),
    ("SELECT to_json(x) FROM t AS x", [None]),
    ("SELECT x.id, y.q FROM t AS x POSITIONAL JOIN t AS y", [None, None]),
]


@pytest.mark.parametrize(("query", "reads"), PARSED)
def test_used_columns_of_parsed_statements(query: str, reads: list[tuple[str, ...] | None]) -> None:
    """``used_columns`` over DuckDB's own syntax tree of the query, for shapes the written tables
    cannot have (a struct column)."""
    con = duckdb.connect()
    [(text,)] = con.execute("SELECT json_serialize_sql(?)", [query]).fetchall()
    statement = json.loads(text)["statements"][0]["node"]
    columns = {"id": "id", "s": "s", "q": "q"}
    found = find_references(statement, lambda node: ("t", columns) if node.get("table_name") == "t" else None)
    refs = sorted(found.references, key=lambda ref: ref.span[0])
    assert used_columns(statement, refs, [list(columns)] * len(refs)) == reads


def test_dynamic_pruning_reads_the_other_side_with_the_columns_used(written: dict[str, Path]) -> None:
    """The keys of ``u``'s filtered side, which prune ``t``, are read from a stream of the columns
    the query uses of ``u`` (the same stream the query then reads): no stream of every column."""
    ours, oracle = _connections(written)
    query = "SELECT a.name FROM t AS a JOIN u AS b ON a.id = b.id WHERE b.id < 12"
    plan = duck.plan(ours, query)
    assert "dynamic" in str(plan), str(plan)
    hidden = "__hudi_index_mor_u_"
    streams = [
        str(name)
        for (name,) in ours.sql(
            "SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, ?)", params=[hidden]
        ).fetchall()
        if "_kept_" in str(name) or "_live_" in str(name)
    ]
    assert streams
    for name in streams:
        assert [str(r[0]) for r in ours.sql(f'DESCRIBE "{name}"').fetchall()] == ["id", "name"]
    assert_same_rows(plan.relation().to_arrow_table(), oracle.sql(query).to_arrow_table())
