"""``index_store.layout.layout_report`` against a brute-force count, and on real indexed files."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import BindError, ColumnStats, FileStats
from index_store import open_table
from index_store.layout import RANGE_SHARE, layout_report


def _position(values: list[Any]) -> dict[Any, float]:
    """Each bound as a number: its value (dates as days), else its rank among the distinct bounds."""
    first = values[0]
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return {v: float(v) for v in values}
    if isinstance(first, dt.date):
        return {v: float(v.toordinal()) for v in values}
    return {v: float(rank) for rank, v in enumerate(sorted(set(values)), start=1)}


def _brute(stats: FileStats, name: str) -> dict[str, Any]:
    """The definitions, one file and one probe at a time."""
    column = stats.columns[name]
    lows, highs = column.min.to_pylist(), column.max.to_pylist()
    nulls, rows = column.null_count.to_pylist(), stats.row_count.to_pylist()
    n = len(lows)
    bounded = [lo is not None and hi is not None for lo, hi in zip(lows, highs, strict=True)]
    all_null = [c is not None and c == r and lo is None for c, r, lo in zip(nulls, rows, lows, strict=True)]
    missing = sum(not b and not a for b, a in zip(bounded, all_null, strict=True))
    out: dict[str, Any] = {
        "files": n,
        "exact_bounds": sum(bounded) / n,
        "missing_bounds": missing / n,
        "all_null": sum(all_null) / n,
    }
    pairs = [(lo, hi) for lo, hi, b in zip(lows, highs, bounded, strict=True) if b]
    if not pairs:
        return out | {"point_kept": None, "range_kept": None, "depth_mean": None}
    at = _position([v for pair in pairs for v in pair])
    intervals = [(at[lo], at[hi]) for lo, hi in pairs]
    probes = [lo + (hi - lo) * q for q in (0.25, 0.5, 0.75) for lo, hi in intervals]
    ranked = not isinstance(pairs[0][0], (int, float, dt.date)) or isinstance(pairs[0][0], bool)
    if ranked:
        width = RANGE_SHARE * len(set(at.values()))
    else:
        width = RANGE_SHARE * (max(hi for _, hi in intervals) - min(lo for lo, _ in intervals))
    depth = [sum(lo <= v <= hi for lo, hi in intervals) + missing for v in probes]
    in_range = [sum(lo <= v + width and not hi < v for lo, hi in intervals) + missing for v in probes]
    mean = sum(depth) / len(depth)
    return out | {
        "depth_mean": mean,
        "depth_p50": float(np.percentile(depth, 50)),
        "depth_p99": float(np.percentile(depth, 99)),
        "point_kept": mean / n,
        "range_kept": sum(in_range) / len(in_range) / n,
    }


def _random_stats(rng: random.Random, kind: str, files: int) -> FileStats:
    def value() -> Any:
        if kind == "int":
            return rng.randrange(-50, 50)
        if kind == "float":
            return rng.uniform(-5, 5)
        if kind == "date":
            return dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(400))
        if kind == "string":
            return "".join(rng.choice("abé") for _ in range(rng.randrange(0, 3)))
        return Decimal(rng.randrange(-999, 999)).scaleb(-2)

    types = {"int": pa.int64(), "float": pa.float64(), "date": pa.date32(), "string": pa.string(),
             "decimal": pa.decimal128(6, 2)}  # fmt: skip
    records = []
    for i in range(files):
        rows = rng.randrange(1, 20)
        pick = rng.random()
        if pick < 0.1:
            s: dict[str, Any] = {"min": None, "max": None, "null_count": rows}  # all NULL
        elif pick < 0.2:
            s = {"min": None, "max": value(), "null_count": None}  # a bound missing
        else:
            a, b = value(), value()
            s = {"min": min(a, b), "max": max(a, b), "null_count": rng.randrange(rows)}
        records.append({"file": f"f{i}", "row_count": rows, "stats": {"c": s}})
    return FileStats.from_pylist(records, pa.schema([("c", types[kind])]))


@pytest.mark.parametrize("kind", ["int", "float", "date", "string", "decimal"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_a_brute_force_count(kind: str, seed: int) -> None:
    rng = random.Random(seed * 31 + len(kind))
    stats = _random_stats(rng, kind, rng.choice([1, 2, 7, 40]))
    got = layout_report(stats).to_pylist()[0]
    want = _brute(stats, "c")
    for key, value in want.items():
        if value is None or isinstance(value, int):
            assert got[key] == value, (key, got, want)
        else:
            assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-12), (key, got[key], value)


def test_a_staircase_and_a_random_layout() -> None:
    n = 50
    stairs = FileStats(
        [f"f{i}" for i in range(n)],
        [10] * n,
        {
            "k": ColumnStats(
                pa.array([10 * i for i in range(n)]),
                pa.array([10 * i + 9 for i in range(n)]),
                pa.array([0] * n),
                pa.nulls(n, pa.int64()),
            )
        },
        pa.schema([("k", pa.int64())]),
    )
    good = layout_report(stairs).to_pylist()[0]
    assert good["depth_mean"] == 1 and good["point_kept"] == 1 / n and good["depth_p99"] == 1
    spread = FileStats(
        [f"f{i}" for i in range(n)],
        [10] * n,
        {
            "k": ColumnStats(
                pa.array([0] * n),  # every file spans the whole domain
                pa.array([1000] * n),
                pa.array([0] * n),
                pa.nulls(n, pa.int64()),
            )
        },
        pa.schema([("k", pa.int64())]),
    )
    bad = layout_report(spread).to_pylist()[0]
    assert bad["point_kept"] == 1.0 and bad["range_kept"] == 1.0 and bad["depth_p50"] == n


def test_an_unknown_column_is_a_bind_error() -> None:
    stats = _random_stats(random.Random(1), "int", 3)
    with pytest.raises(BindError, match=r"'nope'.*columns with statistics: c"):
        layout_report(stats, ["nope"])


def test_a_million_files() -> None:
    n = 1_000_000
    lo = np.arange(n, dtype=np.int64) * 10
    stats = FileStats(
        pa.array(np.arange(n).astype(str)),
        pa.array(np.full(n, 100)),
        {
            "k": ColumnStats(
                pa.array(lo), pa.array(lo + 9), pa.array(np.zeros(n, np.int64)), pa.nulls(n, pa.int64())
            )
        },
        pa.schema([("k", pa.int64())]),
    )
    row = layout_report(stats).to_pylist()[0]
    assert row["depth_mean"] == 1.0 and row["rows"] == 100 * n


def test_on_an_indexed_table(tmp_path: Path) -> None:
    rng = random.Random(9)
    for i in range(20):
        values = [rng.randrange(i * 50, i * 50 + 120) for _ in range(30)]
        names = [rng.choice(["x", "y", "é"]) + str(i) for _ in range(30)]
        pq.write_table(pa.table({"v": values, "s": names}), tmp_path / f"p{i:02d}.parquet")
    table = open_table(tmp_path)
    table.build(progress=False)
    report = table.layout()
    stats = table.stats(["v", "s"], with_blooms=False)
    assert report.column("column").to_pylist() == ["v", "s"]
    for row in report.to_pylist():
        want = _brute(stats, row["column"])
        assert math.isclose(row["point_kept"], want["point_kept"]) and row["rows"] == 600
        assert math.isclose(row["range_kept"], want["range_kept"])
