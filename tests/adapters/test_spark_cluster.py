"""``hudi-index cluster --engine spark``: the same files as DuckDB's, on a real local Spark."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

from adapters.duckdb.cluster import cluster as duckdb_cluster
from adapters.spark.cluster import cluster as spark_cluster
from hudi_expr import col
from index_store import open_table
from index_store.clustering import ClusterError

ROWS = 3_000
FILES = 12


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows in random order: ints with NULLs, non-ASCII strings, dates, doubles with NaN and -0.0."""
    root = tmp_path_factory.mktemp("spark_cluster") / "src"
    root.mkdir()
    rng = random.Random(17)
    data = {
        "a": [None if rng.random() < 0.03 else rng.randrange(400) for _ in range(ROWS)],
        "s": [rng.choice(["é", "z", "ab", "Ä", "b"]) + str(rng.randrange(30)) for _ in range(ROWS)],
        "d": [dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(900)) for _ in range(ROWS)],
        "x": [rng.choice([math.nan, -0.0, 0.0, rng.uniform(-5, 5)]) for _ in range(ROWS)],
    }
    table = pa.table(data)
    per = ROWS // FILES
    for i in range(FILES):
        pq.write_table(table.slice(i * per, per), root / f"f{i:02d}.parquet")
    return root


def _bounds(folder: str, by: list[str]) -> list[tuple[object, ...]]:
    """Each file's row count and min/max of the columns, as DuckDB reads the rows (not the footers:
    Spark's writer leaves out the bounds of a float column in a file that holds NaN)."""
    aggregates = ", ".join(f'min("{c}"), max("{c}")' for c in by)
    rows = duckdb.sql(
        f"SELECT parse_filename(filename), count(*), {aggregates} "
        f"FROM read_parquet('{folder}/*.parquet', filename = true) GROUP BY ALL ORDER BY 1"
    ).fetchall()
    return [tuple("NaN" if v != v else v for v in row) for row in rows]  # NaN != NaN in Python


@pytest.mark.parametrize(
    ("strategy", "by"), [("linear", ["a", "s"]), ("zorder", ["a", "d"]), ("hilbert", ["s", "x"])]
)
def test_spark_writes_the_files_duckdb_writes(
    spark,
    source: Path,
    tmp_path: Path,
    strategy: str,
    by: list[str],  # type: ignore[no-untyped-def]
) -> None:
    size_mb = sum(p.stat().st_size for p in source.glob("*.parquet")) / 1024 / 1024
    mine = duckdb_cluster(source, tmp_path / "duckdb", by, strategy, target_file_mb=size_mb / 10)
    theirs = spark_cluster(source, tmp_path / "spark", by, strategy, target_file_mb=size_mb / 10, spark=spark)
    assert mine.files == theirs.files >= 9 and mine.rows == theirs.rows == ROWS
    assert _bounds(mine.out, by) == _bounds(theirs.out, by)
    # The same layout report, but for a float column with NaN (whose bounds Spark does not write).
    same = [c for c in by if c != "x"]
    assert mine.after.filter(pa.compute.is_in(mine.after["column"], pa.array(same))).equals(
        theirs.after.filter(pa.compute.is_in(theirs.after["column"], pa.array(same)))
    )
    con = duckdb.connect()
    rows = "(SELECT a, s, d, x FROM read_parquet('{}/*.parquet'))"
    for left, right in ((source, theirs.out), (theirs.out, source)):
        extra = con.sql(
            f"SELECT count(*) FROM ({rows.format(left)} EXCEPT ALL {rows.format(right)})"
        ).fetchall()
        assert extra == [(0,)], (left, right)


def test_zorder_on_spark_narrows_a_two_column_query(spark, source: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    size_mb = sum(p.stat().st_size for p in source.glob("*.parquet")) / 1024 / 1024
    result = spark_cluster(
        source, tmp_path / "z", ["a", "d"], "zorder", target_file_mb=size_mb / 10, spark=spark
    )
    query = (col("a") < 40) & (col("d") < dt.date(2020, 4, 1))
    unclustered = open_table(source, index_path=tmp_path / "idx")
    unclustered.build(progress=False)
    assert open_table(result.out).prune(query).kept < unclustered.prune(query).kept == FILES


def test_bad_input_on_spark_leaves_the_source_alone(
    spark,
    source: Path,
    tmp_path: Path,
    hudi_tables: dict[str, Path],  # type: ignore[no-untyped-def]
) -> None:
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in source.iterdir()}
    with pytest.raises(ClusterError, match="no column 'nope'"):
        spark_cluster(source, tmp_path / "o", ["nope"], spark=spark)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "f").write_text("x")
    with pytest.raises(ClusterError, match="not an empty folder"):
        spark_cluster(source, tmp_path / "taken", ["a"], spark=spark)
    with pytest.raises(ClusterError, match="is a Hudi table"):
        spark_cluster(hudi_tables["v6_nonpartitioned"], tmp_path / "o", ["id"], spark=spark)
    assert before == {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in source.iterdir()}
    assert not (tmp_path / "o").exists()


def test_the_cli_runs_on_spark(
    spark, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    from tests.adapters.cli_run import run

    args = ["cluster", str(source), "--by", "d", "--strategy", "linear", "--engine", "spark"]
    code, out, err = run(capsys, *args, "--target-file-mb", "0.01", "--out", str(tmp_path / "c"), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["rows"] == ROWS and result["files"] >= 2
    assert result["after"][0]["point_kept"] < result["before"][0]["point_kept"]


def test_spark_clusters_by_columns_named_as_sql_must_quote(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``a.b`` is one top-level column (not field ``b`` of ``a``); spaces, quotes, backticks,
    non-ASCII letters and keywords are names like any other."""
    root = tmp_path / "odd"
    root.mkdir()
    names = ["a.b", "my col", 'q"uote', "b`tick", "é", "select"]
    rng = random.Random(5)
    for i in range(4):
        pq.write_table(
            pa.table({n: [rng.randrange(1000) for _ in range(200)] for n in names}), root / f"f{i}.parquet"
        )
    by = ["a.b", "b`tick"]
    mine = duckdb_cluster(root, tmp_path / "duckdb", by, "zorder", target_file_mb=0.001)
    theirs = spark_cluster(root, tmp_path / "spark", by, "zorder", target_file_mb=0.001, spark=spark)
    assert mine.files == theirs.files >= 2 and theirs.rows == 800
    assert _bounds(mine.out, by) == _bounds(theirs.out, by)
    assert sorted(open_table(theirs.out).stats(names).columns) == sorted(names)
    linear = spark_cluster(root, tmp_path / "linear", names, "linear", target_file_mb=0.001, spark=spark)
    assert linear.rows == 800
