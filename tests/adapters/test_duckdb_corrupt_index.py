"""A corrupt secondary index file, and predicates DuckDB refuses, through ``adapters.duckdb`` and
``hudi-index``: the right answer or DuckDB's error, and the user told what happened."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from adapters.duckdb import IndexUnusedWarning, execute, plan, register, sql
from hudi_expr import col
from index_store import IndexCorruptError, open_table
from index_store.secondary.cost import costs_for, use_costs
from index_store.secondary.format import IndexFile

CITIES = ("paris", "oslo", "lima")
FILES = 3
ROWS = 12


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Three files of 12 rows, every city in each (so only the index knows which rows hold one),
    with a value index on ``city``."""
    root = tmp_path / "t"
    root.mkdir()
    for i in range(FILES):
        data = pa.table(
            {
                "id": pa.array(range(i * ROWS, (i + 1) * ROWS), pa.int64()),
                "city": [CITIES[n % len(CITIES)] for n in range(ROWS)],
                "d": pa.array(np.datetime64("2024-01-01") + np.arange(ROWS), pa.date32()),
            }
        )
        pq.write_table(data, root / f"f{i}.parquet")
    t = open_table(root)
    t.build()
    t.create_index("city")
    t.build_index(progress=False)
    return root


def _index_file(root: Path) -> Path:
    [path] = (root / ".hoodie" / ".index" / "value").glob("*/f0/*.idx")
    return path


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def _overwrite(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[4:40] = b"\xff" * 36  # the first page, after the magic bytes
    path.write_bytes(bytes(data))


def _plain(root: Path) -> duckdb.DuckDBPyConnection:
    base = duckdb.connect()
    base.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{root}/*.parquet')")
    return base


@pytest.mark.parametrize("corrupt", [_truncate, _overwrite])
def test_a_corrupt_index_file_is_reported_and_its_rows_read(table: Path, corrupt) -> None:
    con = duckdb.connect()
    register(con, "t", table, rules=None)  # the index is used whenever a leaf is indexed
    count = "SELECT count(*) FROM t WHERE city = 'paris'"
    assert "answered by the secondary index alone" in str(plan(con, count))
    corrupt(_index_file(table))
    base = _plain(table)
    rows = "SELECT id FROM t WHERE city = 'paris' ORDER BY id"
    for query in (count, rows):
        want = base.execute(query).fetchall()
        with pytest.warns(IndexUnusedWarning, match=r"secondary index file .* is corrupt") as caught:
            planned = plan(con, query)
        text = str(planned)
        assert "is corrupt" in text and "read instead" in text and "index build" in text
        assert "answered by the secondary index alone" not in text
        assert str(_index_file(table)) in str(caught[0].message)
        with pytest.warns(IndexUnusedWarning, match="is corrupt"):
            assert sql(con, query).fetchall() == want
        with pytest.warns(IndexUnusedWarning, match="is corrupt"):
            assert execute(con, query).fetchall() == want


def test_a_corrupt_index_file_is_reported_by_the_cli(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _truncate(_index_file(table))
    # Lookups priced at nothing, so that the count asks the index (the table is small enough for
    # reading it to be cheaper otherwise, and then no index file is opened).
    before = costs_for("duckdb")
    use_costs(dataclasses.replace(before, lookup_file=0.0, lookup_row=0.0))
    try:
        code, out, err = run(
            capsys,
            "query",
            str(table),
            "SELECT count(*) FROM t WHERE city = 'paris' AND city <> 'oslo'",
            "--csv",
        )
    finally:
        use_costs(before)
    assert code == 0
    assert out.splitlines()[-1] == "12"
    assert re.search(r"hudi-index query: warning: t: secondary index file .* is corrupt", err)
    assert "read instead" in err


def test_overwritten_bytes_never_change_a_lookup(table: Path) -> None:
    # Index files carry a CRC per page: bytes overwritten anywhere in a page are an error when read
    # (and the lookup scans instead), never other row ids. Without them, 16 bytes of 0xff here
    # turned 4 rows of a file into 0, silently.
    path = _index_file(table)
    good = path.read_bytes()
    keys = (col("city") == "paris").bind(pa.schema([("city", pa.string())]))
    want = IndexFile(path).rows("city", keys)
    for start in range(4, len(good) - 16):
        data = bytearray(good)
        data[start : start + 16] = b"\xff" * 16
        path.write_bytes(bytes(data))
        try:
            got = IndexFile(path).rows("city", keys)
        except IndexCorruptError:
            continue
        assert np.array_equal(got, want), start


# ------------------------------------------------------------------------ predicates DuckDB refuses


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("d = DATE '2024-13-45'", "invalid constant DATE '2024-13-45'"),
        ("id > 5 AND d >= CAST('soon' AS DATE)", "invalid constant CAST('soon' AS DATE)"),
        ("abs(d) = 3", "invalid predicate abs(d) = 3: Binder Error"),
        ("id = 'abc'", "'abc'"),
    ],
)
def test_prune_where_duckdb_refuses_exits_2(
    table: Path, capsys: pytest.CaptureFixture[str], where: str, message: str
) -> None:
    code, out, err = run(capsys, "prune", str(table), "--where", where)
    assert code == 2 and not out
    assert err.startswith("hudi-index prune: error: ") and message in err and len(err.splitlines()) == 1
    code, out, err = run(capsys, "query", str(table), f"SELECT count(*) FROM t WHERE {where}")
    assert code == 2 and not out
    assert err.startswith("hudi-index query: error: ") and len(err.splitlines()) == 1


def test_prune_where_the_index_cannot_use_is_not_used(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "prune", str(table), "--where", "month(d) = 1 AND id < 12")
    assert code == 0 and "not used for pruning (kept as TRUE): month(d) = 1" in out
    code, _, err = run(capsys, "prune", str(table), "--where", "month(d) = 1 AND d > 5")
    assert code == 2 and "Binder Error" in err
