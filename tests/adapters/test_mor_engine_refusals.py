"""Every engine path that would read a merge-on-read table's rows file by file refuses it with a
one-line ``MergedReadError``, never a wrong answer: DuckDB (the index statements, ``advise``), the
command line, and Spark (builds). The index commands work on it, the read paths read its slices
merged (tests/adapters/test_hudi_mor_read_paths.py), and tagging finds each key's slice
(tests/index_store/test_tag_mor.py, tests/adapters/test_spark_tag.py)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from cli_run import run

from adapters.duckdb import execute, register, sql
from adapters.duckdb.advise import advise
from index_store import MergedReadError, open_table

TABLE = "mor_parquet_v6_simplekeygen_nonhivestyle"  # a slice with a log file
MESSAGE = r"merge-on-read table .* would read its files one by one"


@pytest.fixture
def root(copy_table: Callable[[str], Path]) -> Path:
    path = copy_table(TABLE)
    open_table(path).build(progress=False)
    return path


def test_duckdb_index_statements_refuse(root: Path) -> None:
    """An index statement on a registered merge-on-read table (its view reads merged slices) is
    refused, and one on its unregistered folder is refused as unregistered."""
    con = duckdb.connect()
    for run_sql in (sql, execute):
        with pytest.raises(ValueError, match="no table is registered"):
            run_sql(con, f"CREATE INDEX by_name ON '{root}' (name)")
    register(con, "t", str(root))
    for run_sql in (sql, execute):
        with pytest.raises(MergedReadError, match=MESSAGE):
            run_sql(con, "CREATE INDEX by_name ON t (name)")
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(4,)]  # the merged snapshot


def test_duckdb_advise_refuses(root: Path) -> None:
    with pytest.raises(MergedReadError, match=MESSAGE):
        advise(str(root), ["SELECT count(*) FROM t WHERE id = 1"], "t")


@pytest.mark.parametrize(
    "args",
    [
        ["sql", "CREATE INDEX by_name ON '{root}' (name)"],
        ["index", "create", "{root}", "--columns", "name"],
        ["index", "build", "{root}"],
        ["check", "{root}"],
        ["advise", "{root}", "--workload", "-", "--name", "t"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_cli_commands_that_read_rows_refuse(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    stdin = "SELECT count(*) FROM t WHERE id = 1" if args[0] == "advise" else "1\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code, out, err = run(capsys, *(a.format(root=root) for a in args))
    assert code != 0 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"hudi-index {args[0]}") and "would read its files one by one" in line


def test_cli_cluster_refuses_a_hudi_table(
    root: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "cluster", str(root), "--by", "id", "--out", str(tmp_path / "out"))
    assert code != 0 and "is a Hudi table: use Hudi's clustering" in err


def test_cli_index_commands_work(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "files", str(root), "--where", "intField = 15000")
    files = out.split()
    assert code == 0 and len(files) == 2 and any(".log." in f for f in files)  # the slice, whole
    code, out, _ = run(capsys, "prune", str(root), "--where", "intField = 15000")
    assert code == 0 and "kept 1 of 3 file slices (2 of 4 files)" in out
    code, out, _ = run(capsys, "files", str(root), "--where", "intField = 15000", "--json")
    (kept,) = json.loads(out)["file_slices"]
    assert code == 0 and sorted([kept["base_file"], *kept["log_files"]]) == sorted(files)
    for args in (["sync"], ["stats"], ["compact"], ["layout", "--columns", "id"]):
        code, _, err = run(capsys, args[0], str(root), *args[1:])
        assert code == 0, (args, err)


# --- Spark -----------------------------------------------------------------------------------------


SPARK_CALLS = [
    "build_index",
    "build_secondary_index",
]


def _spark_call(spark: Any, root: str, name: str) -> Callable[[], Any]:
    from adapters.spark import build_index, build_secondary_index

    calls: dict[str, Callable[[], Any]] = {
        "build_index": lambda: build_index(spark, root),
        "build_secondary_index": lambda: build_secondary_index(spark, root),
    }
    return calls[name]


@pytest.mark.parametrize("name", SPARK_CALLS)
def test_spark_paths_refuse(spark: Any, root: Path, name: str) -> None:
    with pytest.raises(MergedReadError, match=MESSAGE):
        _spark_call(spark, str(root), name)()
