"""File-pruning throughput: ``hudi_expr.might_match`` against PyIceberg's inclusive metrics evaluator.

What it measures: how many files per second a 5-leaf predicate can be evaluated against per-file
column statistics (min, max, null count, NaN count) of 3 columns (``id`` int64 with clustered ranges,
``price`` float64 with some nulls, NaNs and unknown counts, ``city`` string with sorted bound pairs).

- hudi_expr: ``might_match(expr, stats)`` over a ``FileStats`` of 10k, 100k and 1M files, timed with
  binding included (what a caller pays) and with a pre-bound expression. Statistics are built with
  numpy/pyarrow, no per-file Python loop.
- PyIceberg (benchmark-only dependency): the same statistics of the first 10k files as ``DataFile``
  objects (bounds encoded with ``pyiceberg.conversions.to_bytes``), the equivalent PyIceberg
  expression, and ``_InclusiveMetricsEvaluator(schema, expr).eval(file)`` for every file; building
  the ``DataFile`` objects is excluded, building the evaluator (which binds) is included once.

Both sides must keep the same files up to one documented semantic difference: PyIceberg ignores NaN
for ``price > x`` (Iceberg: NaN compares false), hudi_expr follows Spark/DuckDB (NaN is greater than
every number, and an unknown NaN count may hide one), so hudi_expr may keep *more* files. The script
checks that with NaN counts set to 0 the two masks agree exactly.

Run from the repository root (takes well under two minutes)::

    python benchmarks/prune_bench.py [--sizes 10000,100000,1000000] [--repeat 7]
    python -m benchmarks.prune_bench
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import Timing, machine_line, markdown_table
from hudi_expr import ColumnStats, Expression, FileStats, col, might_match

SCHEMA = pa.schema([("id", pa.int64()), ("price", pa.float64()), ("city", pa.string())])

# Sorted in UTF-8 byte order (plain ASCII here), so a pair of indices gives ordered string bounds.
CITIES: list[str] = sorted(
    [
        "amsterdam", "athens", "austin", "bangkok", "barcelona", "beijing", "berlin", "bogota",
        "boston", "brussels", "cairo", "calgary", "cambridge", "canberra", "cape town", "caracas",
        "cardiff", "casablanca", "chicago", "copenhagen", "dallas", "delhi", "dublin", "geneva",
        "hamburg", "helsinki", "istanbul", "jakarta", "kyiv", "lagos", "lima", "lisbon", "london",
        "madrid", "manila", "milan", "montreal", "mumbai", "munich", "nairobi", "oslo", "paris",
        "prague", "riga", "rome", "santiago", "seoul", "sydney", "tokyo", "toronto", "vienna",
        "warsaw", "zurich",
    ]
)  # fmt: skip

ROWS_PER_ID_RANGE = 100_000  # width of one file's id range when files are clustered on id

# The predicate's constants (relative ones are scaled to the number of files).
ID_LO_SHARE, ID_HI_SHARE = 0.20, 0.60
PRICE_GT = 800.0
CITY_PREFIX = "ca"
CITY_IN = ["berlin", "cairo", "lisbon", "madrid", "oslo"]


# ------------------------------------------------------------------------------------ statistics


def make_stats(n: int, seed: int = 42) -> FileStats:
    """Synthetic statistics of ``n`` files, generated column-wise with numpy (no per-file loop)."""
    rng = np.random.default_rng(seed)
    row_count = rng.integers(1_000, 200_000, n, dtype=np.int64)
    empty = rng.random(n) < 0.002
    row_count[empty] = 0

    # id: files written in id order, each covering ~one range with jitter and some overlap; 10% are
    # late-arriving files whose range spans a random wide slice of the table.
    lo = np.arange(n, dtype=np.int64) * ROWS_PER_ID_RANGE + rng.integers(0, 20_000, n)
    hi = lo + rng.integers(ROWS_PER_ID_RANGE // 2, ROWS_PER_ID_RANGE * 2, n)
    late = rng.random(n) < 0.10
    wide_lo = rng.integers(0, max(1, n * ROWS_PER_ID_RANGE), n)
    wide_hi = wide_lo + rng.integers(1, max(2, n * ROWS_PER_ID_RANGE // 10), n)
    id_min = np.where(late, wide_lo, lo)
    id_max = np.where(late, wide_hi, hi)
    id_stats = ColumnStats(
        min=_masked(id_min, empty),
        max=_masked(id_max, empty),
        null_count=pa.array(np.zeros(n, dtype=np.int64)),
        nan_count=pa.nulls(n, pa.int64()),
    )

    # price: random ranges; 28% of files hold some nulls, 1% are all null (no bounds), 1% have an
    # unknown null count; 5% hold NaN, 5% have an unknown NaN count; 1% have unknown bounds.
    p_lo = rng.uniform(0.0, 1_000.0, n)
    p_hi = p_lo + rng.exponential(25.0, n)
    u = rng.random(n)
    all_null = (u < 0.01) & ~empty
    some_null = (u >= 0.01) & (u < 0.29)
    null_count = np.where(all_null, row_count, 0)
    null_count = np.where(some_null, rng.integers(0, row_count // 10 + 1), null_count)
    unknown_nulls = rng.random(n) < 0.01
    v = rng.random(n)
    nan_count = np.where(v < 0.05, rng.integers(1, 100, n), 0)
    unknown_nan = (v >= 0.05) & (v < 0.10)
    nan_count = np.where(all_null | empty, 0, nan_count)
    no_bounds = all_null | empty | (rng.random(n) < 0.01)
    price_stats = ColumnStats(
        min=_masked(p_lo, no_bounds),
        max=_masked(p_hi, no_bounds),
        null_count=_masked(null_count, unknown_nulls & ~all_null & ~empty),
        nan_count=_masked(nan_count, unknown_nan & ~all_null & ~empty),
    )

    # city: sorted pairs of names, mostly narrow (a file holds a few neighbouring names).
    c_lo = rng.integers(0, len(CITIES), n)
    c_hi = np.minimum(c_lo + rng.geometric(0.3, n) - 1, len(CITIES) - 1)
    names = pa.array(CITIES, pa.string())
    city_null = np.where(rng.random(n) < 0.05, rng.integers(0, row_count // 20 + 1), 0)
    city_stats = ColumnStats(
        min=_masked_take(names, c_lo, empty),
        max=_masked_take(names, c_hi, empty),
        null_count=pa.array(city_null.astype(np.int64)),
        nan_count=pa.nulls(n, pa.int64()),
    )

    files = pc.binary_join_element_wise(
        "s3://bucket/table/part-", pa.array(np.arange(n)).cast(pa.string()), ".parquet", ""
    )
    return FileStats(
        files,
        pa.array(row_count),
        {"id": id_stats, "price": price_stats, "city": city_stats},
        SCHEMA,
    )


def _masked(values: np.ndarray, unknown: np.ndarray) -> pa.Array:
    return pa.array(values, mask=unknown)


def _masked_take(names: pa.Array, idx: np.ndarray, unknown: np.ndarray) -> pa.Array:
    return names.take(pa.array(idx, mask=unknown))


def id_range(n: int) -> tuple[int, int]:
    """The id interval [a, b) of the predicate for a table of ``n`` files."""
    return int(ID_LO_SHARE * n * ROWS_PER_ID_RANGE), int(ID_HI_SHARE * n * ROWS_PER_ID_RANGE)


def leaves(n: int) -> list[Expression]:
    """The 5 leaves: an id range, a price bound, a city prefix and a city list."""
    a, b = id_range(n)
    return [
        col("id") >= a,
        col("id") < b,
        col("price") > PRICE_GT,
        col("city").starts_with(CITY_PREFIX),
        col("city").isin(CITY_IN),
    ]


def predicate(n: int) -> Expression:
    """``id >= a AND id < b AND (price > x OR starts_with(city, p)) AND city IN (...)``."""
    id_ge, id_lt, price_gt, city_prefix, city_in = leaves(n)
    return id_ge & id_lt & (price_gt | city_prefix) & city_in


# ------------------------------------------------------------------------------------- pyiceberg


def pyiceberg_side(stats: FileStats, n_for_predicate: int) -> tuple[Any, Any, list[Any]]:
    """PyIceberg schema, equivalent expression, and one ``DataFile`` per file of ``stats``."""
    from pyiceberg.conversions import to_bytes
    from pyiceberg.expressions import And, GreaterThan, GreaterThanOrEqual, In, LessThan, Or, StartsWith
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.schema import Schema
    from pyiceberg.typedef import Record
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    ice_types = {"id": LongType(), "price": DoubleType(), "city": StringType()}
    field_ids = {"id": 1, "price": 2, "city": 3}
    schema = Schema(
        *(NestedField(field_ids[name], name, ice_types[name], required=False) for name in ice_types)
    )
    a, b = id_range(n_for_predicate)
    expr = And(
        GreaterThanOrEqual("id", a),
        LessThan("id", b),
        Or(GreaterThan("price", PRICE_GT), StartsWith("city", CITY_PREFIX)),
        In("city", set(CITY_IN)),
    )

    paths = stats.files.to_pylist()
    rows = stats.row_count.to_pylist()
    cols = {name: stats.columns[name] for name in ice_types}
    lists = {
        name: (cs.min.to_pylist(), cs.max.to_pylist(), cs.null_count.to_pylist(), cs.nan_count.to_pylist())
        for name, cs in cols.items()
    }
    files = []
    for i, path in enumerate(paths):
        value_counts: dict[int, int] = {}
        null_counts: dict[int, int] = {}
        nan_counts: dict[int, int] = {}
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for name, (mins, maxs, nulls, nans) in lists.items():
            fid, t = field_ids[name], ice_types[name]
            value_counts[fid] = rows[i]  # Iceberg value counts include nulls
            if nulls[i] is not None:
                null_counts[fid] = nulls[i]
            if nans[i] is not None:
                nan_counts[fid] = nans[i]
            if mins[i] is not None:
                lower[fid] = to_bytes(t, mins[i])
            if maxs[i] is not None:
                upper[fid] = to_bytes(t, maxs[i])
        files.append(
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=path,
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=rows[i],
                file_size_in_bytes=rows[i] * 16,
                value_counts=value_counts,
                null_value_counts=null_counts,
                nan_value_counts=nan_counts,
                lower_bounds=lower,
                upper_bounds=upper,
            )
        )
    return schema, expr, files


def run_pyiceberg(stats: FileStats, n: int, repeat: int) -> tuple[Timing, np.ndarray, float]:
    """Time PyIceberg's evaluator over DataFiles built from ``stats``: (timing, mask, build seconds)."""
    t0 = time.perf_counter()
    schema, expr, files = pyiceberg_side(stats, n)
    build_s = time.perf_counter() - t0
    mask = pyiceberg_mask(schema, expr, files)  # doubles as the warm-up run
    timing = Timing.of(lambda: pyiceberg_mask(schema, expr, files), repeat, warmup=0)
    return timing, mask, build_s


def pyiceberg_mask(schema: Any, expr: Any, files: Sequence[Any]) -> np.ndarray:
    """PyIceberg's own per-file loop (the evaluator binds the expression once)."""
    from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator

    evaluator = _InclusiveMetricsEvaluator(schema, expr)
    return np.fromiter((evaluator.eval(f) for f in files), dtype=bool, count=len(files))


# ------------------------------------------------------------------------------------------- main


def _fmt_rate(r: float) -> str:
    return f"{r / 1e6:.2f} M" if r >= 1e6 else f"{r / 1e3:.1f} k"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated file counts")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per measurement (best, median)")
    parser.add_argument(
        "--pyiceberg-files",
        type=int,
        default=None,
        help="one of --sizes to run PyIceberg on (default 10000 if listed, else the smallest; 0: skip)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    repeat = max(1, args.repeat)

    if args.pyiceberg_files is None:
        args.pyiceberg_files = 10_000 if 10_000 in sizes else min(sizes)
    if args.pyiceberg_files and args.pyiceberg_files not in sizes:
        parser.error(f"--pyiceberg-files {args.pyiceberg_files} must be one of --sizes (or 0 to skip)")

    import pyiceberg

    print(machine_line(pa, np, pyiceberg))
    print(f"predicate (5 leaves): {predicate(max(sizes))}")
    print(f"runs: best and median of {repeat} after 1 warm-up; ms columns are best (median)\n")

    rows: list[list[str]] = []
    notes: list[str] = []
    ice_rate: float | None = None
    speedup_same_n: float | None = None
    rate_1m: float | None = None
    best_1m: float | None = None
    for n in sizes:
        t0 = time.perf_counter()
        stats = make_stats(n)
        build_s = time.perf_counter() - t0
        expr = predicate(n)
        mask = np.asarray(might_match(expr, stats))
        kept = int(mask.sum())
        with_bind = Timing.of(lambda e=expr, s=stats: might_match(e, s), repeat)
        bound = expr.bind(stats.schema)
        no_bind = Timing.of(lambda b=bound, s=stats: might_match(b, s), repeat)
        notes.append(
            f"- {n:>9,} files: stats built in {build_s:.2f} s; bind-excluded might_match "
            f"{no_bind.ms()} ms = {_fmt_rate(no_bind.rate(n))} files/s"
        )
        if n == 1_000_000:
            rate_1m, best_1m = with_bind.rate(n), with_bind.best
        if n == max(sizes):
            kept_by = ", ".join(
                f"{leaf}: {100 * np.asarray(might_match(leaf, stats)).mean():.0f}%" for leaf in leaves(n)
            )
            notes.append(f"- files kept by each leaf alone ({n:,} files): {kept_by}")

        ice_cells = ["-", "-", "-"]
        if args.pyiceberg_files and n == args.pyiceberg_files:
            ice_t, ice_mask, ice_build_s = run_pyiceberg(stats, n, min(repeat, 5))
            ice_rate, speedup_same_n = ice_t.rate(n), with_bind.rate(n) / ice_t.rate(n)
            ice_cells = [ice_t.ms(), _fmt_rate(ice_rate), f"{speedup_same_n:.0f}x"]
            notes.append(f"- PyIceberg: {n:,} DataFile objects built in {ice_build_s:.2f} s (not timed)")
            notes.extend(compare_masks(mask, ice_mask, stats, expr))

        rows.append(
            [
                f"{n:,}",
                with_bind.ms(),
                _fmt_rate(with_bind.rate(n)),
                *ice_cells,
                f"{kept:,} / {n:,} ({100 * kept / n:.1f}%)",
            ]
        )

    header = [
        "files",
        "hudi_expr might_match (ms)",
        "files/s",
        "PyIceberg (ms)",
        "files/s",
        "speed-up",
        "kept / total",
    ]
    print(markdown_table(header, rows))
    print()
    print("\n".join(notes))
    print()
    if best_1m is not None:
        verdict = "MET" if best_1m < 0.100 else "NOT MET"
        print(f"target 1M files < 100 ms (binding included): {verdict} ({best_1m * 1e3:.1f} ms)")
    if ice_rate is not None and speedup_same_n is not None:
        ratios = {f"{speedup_same_n:.0f}x on the same {args.pyiceberg_files:,} files": speedup_same_n}
        if rate_1m is not None:
            ratios[f"{rate_1m / ice_rate:.0f}x for the 1M-file rate"] = rate_1m / ice_rate
        verdict = "MET" if min(ratios.values()) >= 50 else "NOT MET"
        print(f"target >= 50x PyIceberg's files/s: {verdict} ({', '.join(ratios)})")
    return 0


def compare_masks(ours: np.ndarray, ice: np.ndarray, stats: FileStats, expr: Expression) -> list[str]:
    """Explain any difference between the two kept sets (expected: NaN semantics only)."""
    only_ours = int((ours & ~ice).sum())
    only_ice = int((ice & ~ours).sum())
    out = [
        f"- agreement on {len(ours):,} files: both keep {int((ours & ice).sum()):,}, "
        f"only hudi_expr keeps {only_ours:,}, only PyIceberg keeps {only_ice:,}"
    ]
    if only_ice:
        out.append("  ! PyIceberg keeps files hudi_expr prunes: hudi_expr may be unsound here, investigate")
    if only_ours:
        # Neutralise the NaN difference: with NaN counts 0, the semantics coincide exactly.
        price = stats.columns["price"]
        no_nan = ColumnStats(price.min, price.max, price.null_count, pa.array(np.zeros(len(ours), np.int64)))
        columns = {**stats.columns, "price": no_nan}
        neutral = np.asarray(
            might_match(expr, FileStats(stats.files, stats.row_count, columns, stats.schema))
        )
        same = bool((neutral == ice).all())
        out.append(
            "  expected: hudi_expr treats NaN as greater than every number (Spark/DuckDB), so files with "
            "NaN (or an unknown NaN count) may match price > x; PyIceberg ignores NaN there. "
            f"With NaN counts set to 0 the masks are {'identical' if same else 'STILL DIFFERENT'}."
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
