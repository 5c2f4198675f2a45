"""``hudi-index index create|build|drop|list`` and ``hudi-index sql`` on a real parquet table, and
their one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_run import run
from secondary_table import write_file, write_table

from adapters.cli import main
from hudi_expr import col
from index_store import open_table


@pytest.fixture
def orders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A 3-file table (id int64, City string, note text, price float64) with its base index."""
    root = write_table(tmp_path / "orders")
    code, _, _ = run(capsys, "build", str(root))
    assert code == 0
    return root


def _listed(capsys: pytest.CaptureFixture[str], table: Path) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "index", "list", str(table), "--json")
    assert code == 0
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def test_create_build_list_drop(orders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = str(orders)
    code, out, err = run(capsys, "index", "create", t, "--columns", "id")
    assert code == 0
    assert out.startswith("created index idx_value_id (value on id): index version 2\n")
    assert f"build them with hudi-index index build {t} --name idx_value_id" in err
    # --columns matches the table's City case-insensitively, as SQL names do
    code, out, _ = run(
        capsys, "index", "create", t, "--columns", "note,city", "--type", "term", "--name", "words"
    )
    assert code == 0 and "created index words (term on note, City): index version 3" in out

    code, out, _ = run(capsys, "index", "list", t)
    assert code == 0
    header, *lines = out.splitlines()
    assert header.split() == ["name", "index_type", "columns", "files_indexed", "live_files", "complete"]
    assert [line.split() for line in lines] == [
        ["idx_value_id", "value", "id", "0", "3", "false"],
        ["words", "term", "note,City", "0", "3", "false"],
    ]

    code, out, _ = run(capsys, "index", "build", t, "--name", "idx_value_id", "--no-progress")
    assert code == 0
    assert out.startswith("built index version 4 in ")
    assert "  idx_value_id (value on id): 3 of 3 files indexed" in out and "words" not in out
    code, out, _ = run(capsys, "index", "build", t)  # every index: only words is left to build
    assert code == 0 and "built index version 5" in out
    assert "idx_value_id (value on id): 3 of 3 files indexed" in out
    assert "words (term on note, City): 3 of 3 files indexed" in out
    code, out, _ = run(capsys, "index", "build", t)
    assert code == 0 and out.startswith("nothing to build: every live file has its index files")
    code, out, _ = run(capsys, "index", "build", t, "--all", "--name", "WORDS")
    assert code == 0 and "built index version 6" in out and "words (term on note, City): 3 of 3" in out

    assert _listed(capsys, orders) == [
        {
            "name": "idx_value_id",
            "index_type": "value",
            "columns": "id",
            "files_indexed": 3,
            "live_files": 3,
            "complete": True,
        },
        {
            "name": "words",
            "index_type": "term",
            "columns": "note,City",
            "files_indexed": 3,
            "live_files": 3,
            "complete": True,
        },
    ]
    table = open_table(orders)
    assert table.count(col("note").contains_term("late")) == 10
    assert table.select(col("id") == 7).use.used

    code, out, _ = run(capsys, "index", "drop", t, "--name", "Words")
    assert code == 0 and out == "dropped index words: index version 7\n"
    assert [r["name"] for r in _listed(capsys, orders)] == ["idx_value_id"]


def test_list_without_indexes_says_how_to_create_one(
    orders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "index", "list", str(orders))
    assert code == 0
    assert out == f"no secondary indexes: create one with hudi-index index create {orders} --columns COLUMN\n"
    assert _listed(capsys, orders) == []


def test_build_counts_new_files_and_notes_changed_ones(
    orders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = str(orders)
    run(capsys, "index", "create", t, "--columns", "id")
    run(capsys, "index", "build", t)
    write_file(orders, 3)
    run(capsys, "sync", t)
    assert _listed(capsys, orders)[0]["files_indexed"] == 3
    # a file rewritten since the last sync is left unindexed, and the note says what to do
    os.utime(orders / "f3.parquet", ns=(1, 1))
    code, out, err = run(capsys, "index", "build", t)
    assert code == 0
    assert out == "nothing to build\n  idx_value_id (value on id): 3 of 4 files indexed\n"
    assert "1 file of idx_value_id not indexed: changed on disk since the index was synced" in err
    assert f"run hudi-index sync {t}, then build again" in err
    code, out, err = run(capsys, "sql", f"REFRESH INDEX idx_value_id ON {t}", "--json")
    assert code == 0
    assert json.loads(out) == [{"name": "idx_value_id", "version": None, "files_indexed": 3, "live_files": 4}]
    assert "hudi-index sql: note: 1 file of idx_value_id not indexed" in err
    run(capsys, "sync", t)
    code, out, err = run(capsys, "index", "build", t)
    assert code == 0 and "idx_value_id (value on id): 4 of 4 files indexed" in out and err == ""


def test_build_progress_bar(orders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "index", "create", str(orders), "--columns", "id")
    code, _, err = run(capsys, "index", "build", str(orders), "--progress")
    assert code == 0 and "building secondary index" in err
    code, _, err = run(capsys, "index", "build", str(orders), "--all", "--no-progress")
    assert code == 0 and "building secondary index" not in err


def test_index_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table kept read-only, its index elsewhere (``--index-path``), for every command."""
    root = write_table(tmp_path / "orders")
    index = str(tmp_path / "index")
    t = str(root)
    assert run(capsys, "build", t, "--index-path", index)[0] == 0
    code, _, err = run(capsys, "index", "create", t, "--columns", "id", "--index-path", index)
    assert code == 0 and f"--index-path {index}" in err
    assert run(capsys, "index", "build", t, "--index-path", index)[0] == 0
    code, out, _ = run(capsys, "sql", f"SHOW INDEXES ON '{t}'", "--index-path", index, "--json")
    assert code == 0 and json.loads(out)[0]["files_indexed"] == 3
    assert not (root / ".hoodie").exists()


# ------------------------------------------------------------------------------------------ sql


def test_sql_statements(orders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quoted = "'" + str(orders) + "'"
    code, out, err = run(capsys, "sql", f"CREATE INDEX idx_city ON {quoted} (city)")
    assert code == 0
    assert out.split("\n")[1].split() == ["idx_city", "value", "City", "2"]
    assert f"build them with REFRESH INDEX idx_city ON {quoted}" in err
    # a bare path, keywords in any case, a trailing ;
    code, out, _ = run(capsys, "sql", f"refresh index IDX_CITY on {orders};")
    assert code == 0
    assert out.splitlines() == [
        "name      version  files_indexed  live_files",
        "idx_city        3              3           3",
    ]
    code, out, _ = run(capsys, "sql", f"REFRESH INDEX idx_city ON {orders}", "--json")
    assert code == 0 and json.loads(out) == [
        {"name": "idx_city", "version": None, "files_indexed": 3, "live_files": 3}
    ]
    code, out, _ = run(capsys, "sql", f"REFRESH INDEX idx_city ON {orders} FULL", "--json")
    assert code == 0 and json.loads(out)[0]["version"] == 4
    code, out, _ = run(capsys, "sql", f"SHOW INDEXES ON {quoted}", "--json")
    assert code == 0
    assert json.loads(out) == [
        {
            "name": "idx_city",
            "index_type": "value",
            "columns": "City",
            "files_indexed": 3,
            "live_files": 3,
            "complete": True,
        }
    ]
    # a relative path, under --table-root
    code, out, _ = run(capsys, "sql", "DROP INDEX idx_city ON orders", "--table-root", str(orders.parent))
    assert code == 0 and out.split("\n")[1].split() == ["idx_city", "5"]
    code, out, _ = run(capsys, "sql", f"SHOW INDEXES ON {quoted}")
    assert code == 0 and out == "name  index_type  columns  files_indexed  live_files  complete\n(no rows)\n"


def test_sql_reads_a_statement_from_a_file(
    orders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "create.sql"
    script.write_text(f"-- the notes' words\nCREATE INDEX\n  words\nON '{orders}'\n  USING term (note);\n")
    code, out, _ = run(capsys, "sql", f"@{script}", "--json")
    assert code == 0 and json.loads(out) == [
        {"name": "words", "index_type": "term", "columns": "note", "version": 2}
    ]


def test_sql_path_with_a_quote_and_spaces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_table(tmp_path / "o'brien orders")
    assert run(capsys, "build", str(root))[0] == 0
    path = str(root).replace("'", "''")
    code, out, _ = run(capsys, "sql", f"CREATE INDEX i ON '{path}' (id)", "--json")
    assert code == 0 and json.loads(out)[0]["name"] == "i"
    assert [s.name for s in open_table(root).indexes()] == ["i"]


# --------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "command", "message"),
    [
        (
            ["index", "create", "{t}", "--columns", "nope"],
            "index create",
            "cannot index column 'nope': the table has no such column (columns: id, City, note, price)",
        ),
        (
            ["index", "create", "{t}", "--columns", "price"],
            "index create",
            "column 'price' is double: a value index does not index floating point columns",
        ),
        (
            ["index", "create", "{t}", "--columns", "id", "--type", "term"],
            "index create",
            "column 'id' is int64: a term index needs a string column",
        ),
        (
            ["index", "create", "{t}", "--columns", "City", "--name", "IDX_ID"],
            "index create",
            "an index named 'IDX_ID' exists already: drop it first, or choose another name",
        ),
        (
            ["index", "create", "{t}", "--columns", "id", "--name", "2nd"],
            "index create",
            "index name '2nd' must be a SQL identifier",
        ),
        (
            ["index", "drop", "{t}", "--name", "nope"],
            "index drop",
            "no secondary index named 'nope' (indexes: idx_id)",
        ),
        (["index", "build", "{t}", "--name", "nope"], "index build", "no secondary index named 'nope'"),
        (["index", "list", "{missing}"], "index list", "does not exist"),
        (["sql", "CREATE INDEX i ON {t} (nope)"], "sql", "cannot index column 'nope'"),
        (
            ["sql", "CREATE INDEX i ON {t} (price)"],
            "sql",
            "a value index does not index floating point columns",
        ),
        (["sql", "CREATE INDEX i ON {t} (id) USING term"], "sql", "a term index needs a string column"),
        (["sql", "CREATE INDEX idx_id ON {t} (City)"], "sql", "an index named 'idx_id' exists already"),
        (["sql", "DROP INDEX nope ON {t}"], "sql", "no secondary index named 'nope' (indexes: idx_id)"),
        (["sql", "REFRESH INDEX nope ON {t}"], "sql", "no secondary index named 'nope'"),
        (
            ["sql", "CREATE INDEX i ON {t} (id"],
            "sql",
            "CREATE INDEX: expected ',' or ')' after a column, got the end of the statement at column",
        ),
        (["sql", "CREATE INDEX i ON {t} (id) USING bloom"], "sql", "expected an index type after USING"),
        (["sql", "SHOW INDEXES {t}"], "sql", "SHOW INDEXES: expected ON or FROM, got"),
        (["sql", "SELECT * FROM orders"], "sql", "not an index statement: hudi-index sql runs CREATE INDEX"),
        (["sql", "SHOW INDEXES ON '{missing}'"], "sql", "does not exist"),
        (["sql", " "], "sql", "the statement is empty"),
    ],
)
def test_errors_are_one_line_with_exit_2(
    orders: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    command: str,
    message: str,
) -> None:
    assert run(capsys, "index", "create", str(orders), "--columns", "id", "--name", "idx_id")[0] == 0
    places = {"{t}": str(orders), "{missing}": str(tmp_path / "missing")}
    argv = [a.replace("{t}", places["{t}"]).replace("{missing}", places["{missing}"]) for a in args]
    before = open_table(orders).snapshot().version
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"hudi-index {command}: error: ")
    assert message in err
    assert open_table(orders).snapshot().version == before


def test_errors_of_a_table_without_its_base_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = str(write_table(tmp_path / "orders"))
    for argv in (
        ["index", "create", t, "--columns", "id"],
        ["index", "build", t],
        ["index", "list", t],
        ["sql", f"CREATE INDEX i ON {t} (id)"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.strip().endswith(f"{t} has no index yet: run build first (hudi-index build {t})")
        assert len(err.strip().splitlines()) == 1


def test_build_without_a_secondary_index(orders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "index", "build", str(orders))
    assert code == 2
    assert err == (
        f"hudi-index index build: error: {orders} has no secondary index to build: create one first "
        f"(hudi-index index create {orders} --columns COLUMN)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["index", "create", "T", "--columns", "a,,b"], "expected COLUMN[,COLUMN...], got 'a,,b'"),
        (["index", "create", "T", "--columns", "a,a"], "a column is named twice in 'a,a'"),
        (["index", "create", "T", "--columns", "a", "--type", "bloom"], "invalid choice: 'bloom'"),
        (["index", "drop", "T"], "the following arguments are required: --name"),
        (["index", "frobnicate", "T"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_command_lines_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_index_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "index create warehouse/orders" in out and "sql" in out
    with pytest.raises(SystemExit):
        main(["sql", "--help"])
    assert "REFRESH INDEX name ON table [FULL]" in " ".join(capsys.readouterr().out.split())
