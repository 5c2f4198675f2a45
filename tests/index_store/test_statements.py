"""The index statements of ``index_store.secondary.statements``: parsing (each statement,
quoting, case, errors) and running them on a real parquet table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
from secondary_table import write_file, write_table

from hudi_expr import col
from index_store import IndexDefinitionError, IndexedTable, IndexNotBuiltError, open_table
from index_store.secondary.statements import (
    CREATE_RESULT,
    DROP_RESULT,
    REFRESH_RESULT,
    SHOW_RESULT,
    CreateIndex,
    DropIndex,
    RefreshIndex,
    ShowIndexes,
    StatementError,
    parse_statement,
    run_statement,
)

# ------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CREATE INDEX idx_a ON t (a)", CreateIndex("idx_a", "t", ("a",), "value")),
        ("CREATE INDEX i ON t (a, b) USING term", CreateIndex("i", "t", ("a", "b"), "term")),
        ("create index i on t(a)using VALUE;", CreateIndex("i", "t", ("a",), "value")),
        ("CrEaTe InDeX i On t (a) UsInG TeRm", CreateIndex("i", "t", ("a",), "term")),
        # Hudi's order: USING before the columns; and its optional TABLE keyword
        ("CREATE INDEX i ON TABLE t USING term (a)", CreateIndex("i", "t", ("a",), "term")),
        # no name: the default one (idx_<type>_<columns>) is chosen when run
        ("CREATE INDEX ON t (a)", CreateIndex(None, "t", ("a",), "value")),
        ("DROP INDEX i ON t", DropIndex("i", "t")),
        ("drop index I on table t;", DropIndex("I", "t")),
        ("SHOW INDEXES ON t", ShowIndexes("t")),
        ("SHOW INDEX ON t", ShowIndexes("t")),
        ("show indexes from t", ShowIndexes("t")),
        ("SHOW INDEXES ON table", ShowIndexes("table")),  # a table named "table"
        ("REFRESH INDEX i ON t", RefreshIndex("i", "t", full=False)),
        ("REFRESH INDEX i ON t FULL;", RefreshIndex("i", "t", full=True)),
    ],
)
def test_each_statement_parses(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


def test_refresh_full_is_the_all_strategy() -> None:
    assert RefreshIndex("i", "t").strategy == "incremental"
    assert RefreshIndex("i", "t", full=True).strategy == "all"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # double-quoted names keep their case and may hold anything, "" standing for a quote
        (
            'CREATE INDEX "Idx" ON "My Table" ("a b", "say ""hi""", c)',
            CreateIndex("Idx", "My Table", ("a b", 'say "hi"', "c"), "value"),
        ),
        # a single-quoted table is a path, '' standing for a quote
        (
            "CREATE INDEX i ON '/data/o''brien tables/t' (a)",
            CreateIndex("i", "/data/o'brien tables/t", ("a",), "value"),
        ),
        # a bare path without spaces
        ("SHOW INDEXES ON /data/warehouse/orders;", ShowIndexes("/data/warehouse/orders")),
        ("REFRESH INDEX i ON ../t-1/x.y FULL", RefreshIndex("i", "../t-1/x.y", full=True)),
        ("CREATE INDEX i ON warehouse/orders(a)", CreateIndex("i", "warehouse/orders", ("a",), "value")),
        ("DROP INDEX i ON main.orders", DropIndex("i", "main.orders")),
        ("CREATE INDEX i ON t (s.f)", CreateIndex("i", "t", ("s.f",), "value")),
        ("CREATE INDEX i ON t (a) USING 'term'", CreateIndex("i", "t", ("a",), "term")),
    ],
)
def test_quoting(text: str, expected: object) -> None:
    assert parse_statement(text) == expected


def test_whitespace_newlines_and_comments_anywhere() -> None:
    text = """
        -- index the cities
        CREATE
          INDEX /* the name */ idx_city
        ON\tt
        (
          city ,   -- first
          zip
        )
        USING
          value
        ;
    """
    assert parse_statement(text) == CreateIndex("idx_city", "t", ("city", "zip"), "value")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "SELECT * FROM t WHERE a = 1",
        "select 'unterminated",
        "CREATE TABLE t (a INT)",
        "CREATE UNIQUE INDEX i ON t (a)",  # DuckDB's own statement
        "DROP TABLE t",
        "SHOW TABLES",
        "REFRESH TABLE t",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "-- CREATE INDEX i ON t (a)\nSELECT 1",
        '"CREATE" INDEX i ON t (a)',
        "CREATE_INDEX i ON t (a)",
    ],
)
def test_other_sql_is_not_an_index_statement(text: str) -> None:
    assert parse_statement(text) is None


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("CREATE INDEX", "CREATE INDEX: expected an index name", 13),
        ("CREATE INDEX i", "CREATE INDEX: expected ON, got the end of the statement", 15),
        ("CREATE INDEX i ON t", "expected '(' and the indexed columns, got the end of the statement", 20),
        ("CREATE INDEX i ON t a", "expected '(' and the indexed columns, got 'a'", 21),
        ("CREATE INDEX i ON t ()", "expected a column name", 22),
        ("CREATE INDEX i ON t (a", "expected ',' or ')' after a column, got the end", 23),
        ("CREATE INDEX i ON t (a,)", "expected a column name", 24),
        ("CREATE INDEX i ON t (a b)", "expected ',' or ')' after a column, got 'b'", 24),
        ("CREATE INDEX i ON t (a, a)", "another column than 'a', which is listed already", 25),
        ("CREATE INDEX i ON t ('a')", "expected a column name", 22),
        ("CREATE INDEX i ON t (a) USING", "an index type after USING (term or value)", 30),
        (
            "CREATE INDEX i ON t (a) USING bitmap",
            "an index type after USING (term or value), got 'bitmap'",
            31,
        ),
        ("CREATE INDEX i ON t USING term (a) USING value", "USING is given once", 36),
        ("CREATE INDEX i ON t (a) extra", "expected the end of the statement, got 'extra'", 25),
        ("CREATE INDEX i ON t (a);;", "expected the end of the statement, got ';'", 25),
        ("CREATE INDEX i ON t (a); SELECT 1", "expected the end of the statement, got 'SELECT'", 26),
        ("CREATE INDEX 1i ON t (a)", "expected an index name (letters, digits and _", 14),
        ("CREATE INDEX i-j ON t (a)", "expected an index name", 14),
        ("CREATE INDEX IF NOT EXISTS i ON t (a)", "IF NOT EXISTS and IF EXISTS are not supported", 14),
        ("CREATE INDEX i ON (a)", "expected the table after ON", 19),
        ('CREATE INDEX i ON "t (a)', "unterminated quoted name at column 19", 19),
        ("CREATE INDEX i ON 't (a)", "unterminated string at column 19", 19),
        ('CREATE INDEX "" ON t (a)', "empty quoted name", 14),
        ("CREATE INDEX i ON t (a) /* never closed", "unterminated /* comment", 25),
        ("DROP INDEX i", "DROP INDEX: expected ON, got the end of the statement", 13),
        ("DROP INDEX ON t", "DROP INDEX: expected an index name (letters, digits and _", 12),
        ("DROP INDEX IF EXISTS i ON t", "IF NOT EXISTS and IF EXISTS are not supported", 12),
        ("DROP INDEX i ON t (a)", "expected the end of the statement, got '('", 19),
        ("SHOW INDEXES", "SHOW INDEXES: expected ON or FROM", 13),
        ("SHOW INDEXES t", "SHOW INDEXES: expected ON or FROM, got 't'", 14),
        ("SHOW INDEXES ON", "expected the table after ON or FROM", 16),
        ("REFRESH INDEX ON t", "REFRESH INDEX: expected an index name (letters", 15),
        ("REFRESH INDEX i ON t PARTIAL", "expected the end of the statement, got 'PARTIAL'", 22),
    ],
)
def test_malformed_statements_say_what_and_where(text: str, message: str, column: int) -> None:
    with pytest.raises(StatementError) as info:
        parse_statement(text)
    error = info.value
    assert message in str(error)
    assert f"at column {column}" in str(error)
    assert error.position == column - 1
    head = " ".join(text.split()[:2]).upper()
    assert error.syntax is not None and error.syntax.startswith(head)
    assert str(error).endswith(f"; syntax: {error.syntax}")
    assert "\n" not in str(error)


def test_a_statement_error_is_a_value_error_with_the_syntax() -> None:
    with pytest.raises(ValueError, match=r"syntax: CREATE INDEX name ON table \(column, \.\.\.\)"):
        parse_statement("CREATE INDEX i ON t")
    with pytest.raises(ValueError, match=r"syntax: REFRESH INDEX name ON table \[FULL\]$"):
        parse_statement("REFRESH INDEX i")


def test_errors_on_later_lines_give_line_and_column() -> None:
    with pytest.raises(StatementError, match=r"got 'zip' at line 3, column 4;"):
        parse_statement("CREATE INDEX i\nON t\n(a zip)")


def test_statements_are_frozen() -> None:
    statement = parse_statement("DROP INDEX i ON t")
    assert isinstance(statement, DropIndex)
    with pytest.raises(dataclasses.FrozenInstanceError):
        statement.name = "j"  # type: ignore[misc]


# ------------------------------------------------------------------------------------- running


@pytest.fixture
def built(tmp_path: Path) -> IndexedTable:
    """A 3-file table (id int64, City string, note text, price float64) with its base index."""
    table = open_table(write_table(tmp_path / "orders"))
    table.build()
    return table


def _run(text: str, table: IndexedTable, names: list[str] | None = None) -> pa.Table:
    """Run ``text``, the table name resolved to ``table`` (as DuckDB resolves a view's name)."""
    statement = parse_statement(text)
    assert statement is not None

    def opener(name: str) -> IndexedTable:
        if names is not None:
            names.append(name)
        return table

    return run_statement(statement, opener, progress=False)


def test_create_refresh_show_drop(built: IndexedTable) -> None:
    asked: list[str] = []
    created = _run("CREATE INDEX idx_id ON orders (id)", built, asked)
    assert asked == ["orders"]
    assert created.schema == CREATE_RESULT
    version = created["version"][0].as_py()
    assert created.to_pylist() == [
        {"name": "idx_id", "index_type": "value", "columns": "id", "version": version}
    ]
    # the table names its columns City: an unquoted SQL name matches it case-insensitively
    created = _run('CREATE INDEX words ON orders ("note", city) USING term', built).to_pylist()
    assert created == [
        {"name": "words", "index_type": "term", "columns": "note,City", "version": version + 1}
    ]

    shown = _run("SHOW INDEXES ON orders", built)
    assert shown.schema == SHOW_RESULT
    assert shown.to_pylist() == [
        {
            "name": "idx_id",
            "index_type": "value",
            "columns": "id",
            "files_indexed": 0,
            "live_files": 3,
            "complete": False,
        },
        {
            "name": "words",
            "index_type": "term",
            "columns": "note,City",
            "files_indexed": 0,
            "live_files": 3,
            "complete": False,
        },
    ]

    refreshed = _run("REFRESH INDEX IDX_ID ON orders", built)
    assert refreshed.schema == REFRESH_RESULT
    assert refreshed.to_pylist() == [
        {"name": "idx_id", "version": version + 2, "files_indexed": 3, "live_files": 3}
    ]
    assert [r["complete"] for r in _run("SHOW INDEXES ON orders", built).to_pylist()] == [True, False]
    # the index answers: exactly the rows of id = 12
    assert built.count(col("id") == 12) == 1
    assert built.select(col("id") == 12).use.used

    # a new file, synced: 3 of 4 files indexed until the next refresh
    write_file(Path(built.root), 3)
    built.sync()
    shown = {r["name"]: r for r in _run("SHOW INDEX FROM orders", built).to_pylist()}
    assert (shown["idx_id"]["files_indexed"], shown["idx_id"]["live_files"]) == (3, 4)
    refreshed = _run("REFRESH INDEX idx_id ON orders", built).to_pylist()
    assert refreshed[0]["files_indexed"] == 4 and refreshed[0]["version"] is not None
    # nothing left to build: a null version
    assert _run("REFRESH INDEX idx_id ON orders", built).to_pylist() == [
        {"name": "idx_id", "version": None, "files_indexed": 4, "live_files": 4}
    ]
    # FULL rebuilds every file's index file anyway
    full = _run("REFRESH INDEX idx_id ON orders FULL", built).to_pylist()
    assert full[0]["version"] is not None and full[0]["files_indexed"] == 4

    dropped = _run("DROP INDEX Words ON orders", built)
    assert dropped.schema == DROP_RESULT
    assert dropped["name"].to_pylist() == ["words"]
    assert _run("SHOW INDEXES ON orders", built)["name"].to_pylist() == ["idx_id"]


def test_create_without_a_name_takes_the_default(built: IndexedTable) -> None:
    created = _run("CREATE INDEX ON orders USING term (note)", built).to_pylist()
    assert created[0]["name"] == "idx_term_note"
    assert [s.name for s in built.indexes()] == ["idx_term_note"]


def test_show_of_a_table_without_indexes_is_empty(built: IndexedTable) -> None:
    shown = _run("SHOW INDEXES ON orders", built)
    assert shown.num_rows == 0 and shown.schema == SHOW_RESULT


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE INDEX i ON t (nope)", "cannot index column 'nope': the table has no such column"),
        (
            "CREATE INDEX i ON t (price)",
            "column 'price' is double: a value index does not index floating point",
        ),
        ("CREATE INDEX i ON t (id) USING term", "column 'id' is int64: a term index needs a string column"),
        ('CREATE INDEX "bad name" ON t (id)', "index name 'bad name' must be a SQL identifier"),
        ("DROP INDEX nope ON t", "no secondary index named 'nope' (indexes: idx_id)"),
        ("REFRESH INDEX nope ON t", "no secondary index named 'nope' (indexes: idx_id)"),
        ("CREATE INDEX IDX_ID ON t (City)", "an index named 'IDX_ID' exists already"),
    ],
)
def test_bad_definitions_raise_index_definition_errors(built: IndexedTable, text: str, message: str) -> None:
    _run("CREATE INDEX idx_id ON t (id)", built)
    before = built.snapshot().version
    with pytest.raises(IndexDefinitionError) as info:
        _run(text, built)
    assert message in str(info.value)
    assert built.snapshot().version == before  # nothing committed


def test_a_table_without_its_base_index(tmp_path: Path) -> None:
    table = open_table(write_table(tmp_path / "orders"))
    with pytest.raises(IndexNotBuiltError, match="has no index yet"):
        _run("CREATE INDEX i ON orders (id)", table)
