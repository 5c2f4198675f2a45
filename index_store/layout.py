"""How well a table's files are clustered for each column, from the index's statistics alone.

Statistics skip a file only when its [min, max] misses the predicate's values, so what matters is
how many files' ranges hold a given value: the overlap depth. Its mean over values of the column,
divided by the file count, is the share of files a point predicate keeps; a range covering 1% of
the column's domain started at those values gives the share a small range keeps (for strings,
binary and decimals, whose domain has no width here, 1% of the distinct bounds). The values probed
lie inside the files: a quarter, half and three quarters into each file's [min, max] (probing at
the bounds themselves would count the files' edges).

A file without bounds (unknown min or max) holds every value (unknown means "may match"); a file
whose column is all NULL holds none. Float bounds leave NaN out (the index counts NaN apart), so a
file is an interval of its other values. Vectorized: the bounds sorted once, each count a
``searchsorted`` (a million files answer in well under a second).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import BindError, ColumnStats, FileStats

__all__ = ["RANGE_SHARE", "layout_report"]

RANGE_SHARE = 0.01  # the "small range" is 1% of the column's domain
_PROBES = (0.25, 0.5, 0.75)

_SCHEMA = pa.schema(
    [
        ("column", pa.string()),
        ("files", pa.int64()),
        ("rows", pa.int64()),
        ("exact_bounds", pa.float64()),
        ("missing_bounds", pa.float64()),
        ("all_null", pa.float64()),
        ("depth_mean", pa.float64()),
        ("depth_p50", pa.float64()),
        ("depth_p99", pa.float64()),
        ("point_kept", pa.float64()),
        ("range_kept", pa.float64()),
    ]
)


def layout_report(stats: FileStats, columns: Sequence[str] | None = None) -> pa.Table:
    """One row per column (default: every column with statistics): files, rows, the shares of
    files with exact bounds, missing bounds and only NULLs, the overlap depth (mean, p50, p99), and
    the expected shares of files a point predicate and a 1% range keep."""
    names = list(stats.columns) if columns is None else list(columns)
    for name in names:
        if name not in stats.columns:
            known = ", ".join(stats.columns) or "none"
            raise BindError(
                f"no statistics of column {name!r} in the index (columns with statistics: {known})"
            )
    known_rows = stats.row_count.drop_null()
    rows = int(pc.sum(known_rows).as_py() or 0) if len(known_rows) == len(stats.row_count) else None
    report = [
        _column_row(name, stats.columns[name], stats.row_count, stats.num_files, rows) for name in names
    ]
    return pa.Table.from_pylist(report, schema=_SCHEMA)


def _column_row(
    name: str, column: ColumnStats, row_count: pa.Array, files: int, rows: int | None
) -> dict[str, object]:
    lows, highs = column.min, column.max
    # All NULL: NULL count known and equal to the known row count.
    all_null = np.asarray(
        pc.fill_null(pc.and_(pc.equal(column.null_count, row_count), lows.is_null()), False), dtype=bool
    )
    bounded = np.asarray(pc.and_(lows.is_valid(), highs.is_valid()), dtype=bool)
    missing = ~bounded & ~all_null
    row: dict[str, object] = {
        "column": name,
        "files": files,
        "rows": rows,
        "exact_bounds": _share(int(bounded.sum()), files),
        "missing_bounds": _share(int(missing.sum()), files),
        "all_null": _share(int(all_null.sum()), files),
    }
    k, unknown = int(bounded.sum()), int(missing.sum())
    if k == 0:
        return row | dict.fromkeys(("depth_mean", "depth_p50", "depth_p99", "point_kept", "range_kept"))
    lo, hi = _positions(lows.filter(pa.array(bounded)), highs.filter(pa.array(bounded)))
    sorted_lo, sorted_hi = np.sort(lo), np.sort(hi)
    # Only the mean and percentiles are taken: sorted probes search four times faster.
    probes = np.sort(np.concatenate([lo + (hi - lo) * q for q in _PROBES]))
    depth = _intersecting(sorted_lo, sorted_hi, probes, probes) + unknown
    width = _range_width(lows.type, lo, hi)
    in_range = _intersecting(sorted_lo, sorted_hi, probes, probes + width) + unknown
    mean = float(depth.mean())
    return row | {
        "depth_mean": mean,
        "depth_p50": float(np.percentile(depth, 50)),
        "depth_p99": float(np.percentile(depth, 99)),
        "point_kept": mean / files,
        "range_kept": float(in_range.mean()) / files,
    }


def _intersecting(sorted_lo: np.ndarray, sorted_hi: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each [a, b], the files whose [min, max] meets it: min <= b and not max < a."""
    return np.searchsorted(sorted_lo, b, side="right") - np.searchsorted(sorted_hi, a, side="left")


def _positions(lows: pa.Array, highs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as comparable float64 numbers: the values of numbers, dates (days) and timestamps
    (their units), the dense rank among all bounds otherwise (strings, binary, decimals); floats
    with an infinite bound are ranked too, so that a share of the domain means something."""
    t = lows.type
    if not _ranked(t):
        unit = pa.int32() if pa.types.is_date32(t) else pa.int64()
        arrays = (
            (lows, highs)
            if pa.types.is_integer(t) or pa.types.is_floating(t)
            else (lows.view(unit), highs.view(unit))
        )
        lo, hi = (np.asarray(a, dtype=np.float64) for a in arrays)
        if np.isfinite(lo).all() and np.isfinite(hi).all():
            return lo, hi
    both = pa.concat_arrays([lows, highs])
    ranks = np.asarray(pc.rank(both, sort_keys="ascending", tiebreaker="dense"), dtype=np.float64)
    return ranks[: len(lows)], ranks[len(lows) :]


def _range_width(t: pa.DataType, lo: np.ndarray, hi: np.ndarray) -> float:
    """1% of the domain in the positions' units: of the values, or of the distinct bounds where
    positions are ranks (strings, binary, decimals, and floats with an infinite bound)."""
    if _ranked(t) or not (np.isfinite(lo.min()) and np.isfinite(hi.max())):
        distinct = len(np.unique(np.concatenate([lo, hi])))
        return RANGE_SHARE * distinct
    return RANGE_SHARE * (float(hi.max()) - float(lo.min()))


def _ranked(t: pa.DataType) -> bool:
    return not (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_date32(t)
        or pa.types.is_date64(t)
        or pa.types.is_timestamp(t)
    )


def _share(count: int, files: int) -> float:
    return count / files if files else 0.0
