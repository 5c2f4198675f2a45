"""The ``hudi-index`` command: every subcommand on a real table, and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from hudi_expr import col


def test_build_prune_stats_sync_compact_clean(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "build", str(table), "--bloom", "id")
    assert code == 0 and "6 files" in out
    where = (col("id") >= 1100) & (col("region") == "us")
    code, out, _ = run(capsys, "prune", str(table), "--where", where.to_json(), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["total"] == 6
    assert sorted(os.path.relpath(f, table) for f in result["files"]) == [
        "region=us/f1.parquet",
        "region=us/f2.parquet",
    ]
    code, out, _ = run(capsys, "prune", str(table), "--where", where.to_json())
    assert code == 0 and "kept 2 of 6 files" in out and "skipped by" in out
    code, out, _ = run(capsys, "stats", str(table), "--columns", "id")
    assert code == 0 and "6 files" in out and "id int64: min 0, max 1209 (known for 6 of 6)" in out
    shutil.rmtree(table / "region=eu")
    code, out, _ = run(capsys, "sync", str(table))
    assert code == 0 and "synced" in out
    code, out, _ = run(capsys, "sync", str(table))
    assert code == 0 and "up to date" in out
    code, out, _ = run(capsys, "compact", str(table))
    assert code == 0 and "compacted" in out
    code, out, _ = run(capsys, "clean", str(table), "--retention", "0")
    assert code == 0 and "deleted" in out and not out.startswith("deleted 0 ")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["prune", "{missing}", "--where", '{"op": "gt", "column": "id", "value": 1}'], 2, "does not exist"),
        (
            ["prune", "{table}", "--where", '{"op": "gt", "column": "nope", "value": 1}'],
            2,
            "unknown column 'nope'",
        ),
        (["prune", "{table}", "--where", '{"op": "gt", "column": "id", "value": "abc"}'], 2, "'abc'"),
        (["prune", "{table}", "--where", '{"op": "frobnicate"}'], 2, "unknown predicate op"),
        (["prune", "{table}", "--where", "{not json"], 2, "not a JSON expression"),
    ],
)
def test_errors_are_one_line_with_a_non_zero_exit(
    table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    run(capsys, "build", str(table))
    places = {"{table}": str(table), "{missing}": str(tmp_path / "missing")}
    argv = [places.get(a, a) for a in args]
    got, _, err = run(capsys, *argv)
    assert got == code
    assert message in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("hudi-index prune: error:")


def test_corrupt_index_exits_1_unless_told_to_keep_everything(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    stats_dir = table / ".hoodie" / ".index" / "column_stats"
    for f in stats_dir.iterdir():
        f.write_bytes(b"garbage")
    where = '{"op": "lt", "column": "id", "value": 5}'
    code, _, err = run(capsys, "prune", str(table), "--where", where)
    assert code == 1 and "is corrupt" in err
    code, out, _ = run(capsys, "prune", str(table), "--where", where, "--keep-all-on-corrupt")
    assert code == 0 and "kept 6 of 6 files" in out


def test_console_script_is_installed(table: Path) -> None:
    exe = Path(sys.executable).parent / "hudi-index"
    done = subprocess.run([str(exe), "build", str(table)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "built index version 1" in done.stdout


def test_prune_takes_sql_and_reports_what_it_could_not_use(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    where = "id >= 1100 AND region = 'us' AND abs(x) > 0.5"
    code, out, _ = run(capsys, "prune", str(table), "--where", where)
    assert code == 0
    assert "kept 2 of 6 files" in out
    assert "not used for pruning (kept as TRUE): abs(x) > 0.5" in out
    code, _, err = run(capsys, "prune", str(table), "--where", "id >= AND (3")
    assert code == 2 and err.startswith("hudi-index prune: error:")


def test_query_reads_only_kept_files_and_says_so(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    query = "SELECT count(*) AS n, sum(id) AS s FROM t WHERE id >= 1100 AND region = 'us'"
    code, out, err = run(capsys, "query", str(table), query, "--explain", "--csv")
    assert code == 0, err
    files = [str(p) for p in table.rglob("*.parquet") if ".hoodie" not in p.parts]
    [(n, s)] = duckdb.sql(
        f"SELECT count(*), sum(id) FROM read_parquet({files}, hive_partitioning = true) "
        "WHERE id >= 1100 AND region = 'us'"
    ).fetchall()
    assert out.splitlines() == ['"n","s"', f"{n},{s}"]
    assert "t: kept 2 of 6 files" in err and "used:     id >= 1100" in err
    assert "1 rows in" in err


def test_query_joins_a_second_table_and_errors_are_one_line(
    table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"id": [0, 1001, 5000]}), other / "o.parquet")
    run(capsys, "build", str(other))
    query = "SELECT count(*) FROM facts f JOIN other o USING (id) WHERE f.id < 100"
    code, _, err = run(capsys, "query", str(table), query, "--name", "facts", "--with", f"other={other}")
    assert code == 0, err
    assert "f: kept 1 of 6 files" in err and "o: kept 1 of 1 files" in err
    code, _, err = run(capsys, "query", str(table), "SELECT nope FROM t")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "nope" in err
    code, _, err = run(capsys, "query", str(table), "SELECT 1", "--with", "bad")
    assert code == 2 and "NAME=PATH" in err
