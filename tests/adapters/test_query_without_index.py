"""``register`` and ``hudi-index query`` on a table with no index built: every file is read, and the
user is told (a warning, a note on stderr, the plan); unsupported tables are still refused (issue 21)."""

from __future__ import annotations

import warnings
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import IndexUnusedWarning, plan, register, sql
from index_store import UnsupportedTableError, open_table
from tests.adapters.cli_run import run

QUERY = "SELECT count(*) AS n, sum(a) AS total FROM t WHERE a > 15 AND s <> 'y'"


def _write(root: Path) -> Path:
    root.mkdir()
    for i in range(4):
        pq.write_table(
            pa.table({"a": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "s": ["x", "y"] * 5}),
            root / f"f{i}.parquet",
        )
    return root


def _direct(root: Path, query: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{root}/*.parquet')")
    return con.sql(query).fetchall()


def test_register_and_query_read_every_file_with_a_warning(tmp_path: Path) -> None:
    root = _write(tmp_path / "t")
    con = duckdb.connect()
    with pytest.warns(
        IndexUnusedWarning, match=r"t: no index: every file read \(hudi-index build .* makes one\)"
    ):
        register(con, "t", root)
    with pytest.warns(IndexUnusedWarning, match="no index: every file read"):
        planned = plan(con, QUERY)
    text = str(planned)
    assert "t: kept 4 of 4 files" in text
    assert "note: no index: every file read" in text
    assert "a > 15  (no index)" in text
    (table,) = planned.tables
    assert table.kept == table.total == 4
    assert planned.relation().fetchall() == _direct(root, QUERY) == [(12, 324)]
    with pytest.warns(IndexUnusedWarning):
        assert sql(con, "SELECT a FROM t WHERE a = 25").fetchall() == [(25,)]
    # Once built, the same registration prunes, and says nothing.
    open_table(root).build(progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        planned = plan(con, QUERY)
    assert planned.tables[0].kept == 3 and "no index" not in str(planned)
    assert planned.relation().fetchall() == _direct(root, QUERY)


def test_cli_query_without_an_index_runs_unpruned_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _write(tmp_path / "t")
    other = _write(tmp_path / "u")
    code, out, err = run(capsys, "query", str(root), QUERY, "--csv")
    assert code == 0, err
    assert out.splitlines() == ['"n","total"', "12,324"]
    assert (
        f"hudi-index query: warning: t: no index: every file read (hudi-index build {root} makes one)" in err
    )
    assert "t: kept 4 of 4 files" in err
    joined = "SELECT count(*) FROM t JOIN u USING (a) WHERE u.a < 5"
    code, out, err = run(capsys, "query", str(root), joined, "--with", f"u={other}", "--csv")
    assert code == 0, err
    assert out.splitlines()[-1] == "5"
    assert "u: no index: every file read" in err and "t: no index: every file read" in err
    assert not (root / ".hoodie").exists()  # nothing written: the query only reads


def test_unsupported_tables_are_still_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(tmp_path / "delta")
    (root / "_delta_log").mkdir()
    con = duckdb.connect()
    with pytest.raises(UnsupportedTableError, match="Delta Lake"):
        register(con, "t", root)
    code, out, err = run(capsys, "query", str(root), "SELECT 1")
    assert code != 0 and out == "" and "Delta Lake table" in err
