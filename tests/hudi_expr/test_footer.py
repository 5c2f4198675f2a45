"""``FileStats.from_parquet``: statistics read from real parquet footers (pyarrow and DuckDB writers)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import FileStats, all_match, col, might_match

NAN = float("nan")


def _table() -> pa.Table:
    return pa.table(
        {
            "i8": pa.array([-128, 5, None, 127], pa.int8()),
            "u64": pa.array([0, 2**64 - 1, 7, None], pa.uint64()),
            "f32": pa.array([NAN, -0.0, 3.5, None], pa.float32()),
            "f64": pa.array([-math.inf, 1.0, NAN, 2.0], pa.float64()),
            "f16": pa.array([np.float16(1.5), None, np.float16(-2), np.float16(0)], pa.float16()),
            "dec": pa.array(
                [decimal.Decimal("1.50"), None, decimal.Decimal("-99.99"), decimal.Decimal("0")],
                pa.decimal128(4, 2),
            ),
            "s": pa.array(["b", "é", "", None]),
            "bin": pa.array([b"\x00", b"\xff\x01", None, b"a"]),
            "flag": pa.array([True, None, True, True]),
            "d": pa.array([dt.date(1900, 1, 1), dt.date(2024, 2, 29), None, dt.date(1970, 1, 1)]),
            "ts_ns": pa.array([1, None, -5, 1_700_000_000_123_456_789], pa.timestamp("ns")),
            "ts_tz": pa.array([0, 10**15, None, -(10**12)], pa.timestamp("us", tz="UTC")),
            "st": pa.array([{"x": 1, "y": "q"}, None, {"x": None, "y": "a"}, {"x": -4, "y": None}]),
            "lst": pa.array([[1], [], None, [2, 3]]),
        }
    )


def _expected_bounds(arr: pa.ChunkedArray) -> tuple[object, object]:
    """min/max ignoring nulls and NaN, computed from the data itself."""
    if pa.types.is_floating(arr.type):
        arr = arr.cast(pa.float64())
        arr = pc.filter(arr, pc.invert(pc.is_nan(arr)))
    mm = pc.min_max(arr)
    return mm["min"], mm["max"]


@pytest.fixture
def written(tmp_path: Path) -> tuple[pa.Table, FileStats]:
    table = _table()
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=2)  # two row groups to merge
    return table, FileStats.from_parquet([str(path)])


def test_bounds_and_null_counts_match_the_data_for_every_type(written: tuple[pa.Table, FileStats]) -> None:
    table, stats = written
    assert stats.row_count.to_pylist() == [4]
    flat = table.flatten()
    for name in ["i8", "u64", "f32", "f64", "dec", "s", "bin", "flag", "d", "ts_ns", "ts_tz"]:
        cs = stats.column(name)
        assert cs is not None, name
        lo, hi = _expected_bounds(flat[name])
        assert cs.min[0].cast(lo.type).equals(lo), (name, cs.min[0], lo)
        assert cs.max[0].cast(hi.type).equals(hi), (name, cs.max[0], hi)
        assert cs.null_count.to_pylist() == [flat[name].null_count], name
        # The footer knows nothing about NaN: unknown, never a guessed zero.
        assert cs.nan_count.to_pylist() == [None], name
    assert stats.column("f16").min.cast(pa.float64()).to_pylist() == [-2.0]
    assert stats.column("st.x").min.to_pylist() == [-4]
    assert stats.column("st.y").max.to_pylist() == ["q"]
    # A NULL struct makes its fields NULL too.
    assert stats.column("st.x").null_count.to_pylist() == [2]
    assert stats.column("lst") is None  # lists carry no usable bounds


def test_pruning_uses_footer_stats_soundly(written: tuple[pa.Table, FileStats]) -> None:
    _, stats = written
    assert might_match(col("i8") > 127, stats).to_pylist() == [False]
    assert might_match(col("i8") >= 127, stats).to_pylist() == [True]
    assert might_match(
        col("ts_ns") == pa.scalar(1_700_000_000_123_456_790, pa.timestamp("ns")), stats
    ).to_pylist() == [False]
    assert might_match(
        col("ts_ns") == pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns")), stats
    ).to_pylist() == [True]
    # NaN counts are unknown, so a NaN row may satisfy f32 > 100: keep. No NaN satisfies f32 < -1.
    assert might_match(col("f32") > 100, stats).to_pylist() == [True]
    assert might_match(col("f32") < -1, stats).to_pylist() == [False]
    # Bytewise, "z" < "é" (0x7A < 0xC3): only a prefix above the max "é" prunes.
    assert might_match(col("s").starts_with("z"), stats).to_pylist() == [True]
    assert might_match(col("s").starts_with("ê"), stats).to_pylist() == [False]
    assert might_match(col("s").starts_with("é"), stats).to_pylist() == [True]
    # Nulls in the file: "every row" claims fail.
    assert all_match(col("i8") >= -128, stats).to_pylist() == [False]
    assert all_match(col("flag").is_not_null(), stats).to_pylist() == [False]


def test_row_group_without_statistics_makes_bounds_unknown(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([1, 2, 3, 4]), "b": pa.array([1, 2, 3, 4])})
    path = tmp_path / "nostats.parquet"
    pq.write_table(table, path, write_statistics=["b"])
    stats = FileStats.from_parquet([str(path)])
    assert stats.column("a").min.to_pylist() == [None]
    assert might_match(col("a") > 100, stats).to_pylist() == [True]
    assert might_match(col("b") > 100, stats).to_pylist() == [False]


def test_all_null_row_group_does_not_hide_the_other_bounds(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([None, None, 5, 6], pa.int64())})
    path = tmp_path / "nulls_first.parquet"
    pq.write_table(table, path, row_group_size=2)
    stats = FileStats.from_parquet([str(path)])
    cs = stats.column("a")
    assert (cs.min.to_pylist(), cs.max.to_pylist(), cs.null_count.to_pylist()) == ([5], [6], [2])


def test_all_null_and_empty_files_are_pruned(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": pa.nulls(3, pa.int64())}), tmp_path / "null.parquet")
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    pq.write_table(pa.table({"a": pa.array([1], pa.int64())}), tmp_path / "one.parquet")
    paths = [str(tmp_path / n) for n in ("null.parquet", "empty.parquet", "one.parquet")]
    stats = FileStats.from_parquet(paths)
    assert might_match(col("a") != 99, stats).to_pylist() == [False, False, True]
    assert might_match(col("a").is_null(), stats).to_pylist() == [True, False, False]


def test_file_written_before_a_column_existed_is_kept(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "old.parquet")
    pq.write_table(pa.table({"a": [3, 4], "b": ["x", "y"]}), tmp_path / "new.parquet")
    stats = FileStats.from_parquet([str(tmp_path / "old.parquet"), str(tmp_path / "new.parquet")])
    assert stats.schema.names == ["a", "b"]
    assert stats.column("b").null_count.to_pylist() == [None, 0]
    # Nothing is known about b in the old file: unknown means may match.
    assert might_match(col("b") == "zzz", stats).to_pylist() == [True, False]


def test_widened_column_types_are_cast(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32())}), tmp_path / "narrow.parquet")
    pq.write_table(pa.table({"a": pa.array([2**40], pa.int64())}), tmp_path / "wide.parquet")
    stats = FileStats.from_parquet([str(tmp_path / "narrow.parquet"), str(tmp_path / "wide.parquet")])
    assert stats.column("a").max.to_pylist() == [2, 2**40]
    assert might_match(col("a") > 3, stats).to_pylist() == [False, True]


def test_duckdb_written_files_prune_like_duckdb_filters(tmp_path: Path) -> None:
    """Files written by DuckDB: every file DuckDB finds a matching row in is kept."""
    con = duckdb.connect()
    paths = []
    for i in range(12):
        path = tmp_path / f"part-{i}.parquet"
        con.execute(
            f"""COPY (SELECT (range + {i * 100})::BIGINT AS k,
                        CASE WHEN range % 7 = 0 THEN NULL ELSE 'v' || (range + {i * 100})::VARCHAR END AS s,
                        DATE '2020-01-01' + (range + {i * 100})::INT AS d,
                        (range * 0.5 + {i})::DOUBLE AS x
                 FROM range(100)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 32)"""
        )
        paths.append(str(path))
    stats = FileStats.from_parquet(paths)
    predicates = {
        "k BETWEEN 250 AND 420": col("k").between(250, 420),
        "s = 'v777'": col("s") == "v777",
        "starts_with(s, 'v11')": col("s").starts_with("v11"),
        "d < DATE '2020-02-01' OR k >= 1150": (col("d") < dt.date(2020, 2, 1)) | (col("k") >= 1150),
        # x < 5 can prune: a NaN row never satisfies "<" (x > 60 could not: NaN counts are unknown).
        "x < 5 AND s IS NULL": (col("x") < 5) & col("s").is_null(),
        "NOT (k < 1000)": ~(col("k") < 1000),
    }
    for sql, expr in predicates.items():
        mask = might_match(expr, stats).to_pylist()
        for path, kept in zip(paths, mask, strict=True):
            hits = con.execute(f"SELECT count(*) FROM '{path}' WHERE {sql}").fetchone()[0]
            assert kept or hits == 0, (sql, path, hits)
        assert not all(mask), f"{sql} should prune some of the 12 clustered files"
