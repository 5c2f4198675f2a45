"""Footer-based index build of 2,000 real parquet files against just reading their footers.

What it measures: 2,000 small parquet files (20 columns of mixed types, 100 rows in 2 row groups each,
some nulls), once with float columns and once with them turned into int64 (so the build needs
nothing beyond the footers). Timed: ``pq.ParquetFile(path).metadata`` over all files, sequentially
and on a thread pool with the builder's worker count (``min(8, 2 * cpu)``), ``pq.read_metadata``,
and the footers plus every column chunk's min/max/null count through pyarrow's ``statistics``,
against ``open_table(dir, index_path).build(bloom_columns=[], progress=False)`` (listing, stats,
writing the index, commit) and ``index_store.builder.compute_stats`` alone. The builder reads the
float columns to count NaNs, so only the float-free table is a footers-only comparison. Files are
freshly written (OS cache warm); one cold pair (caches dropped before each) is also reported when the
page cache can be dropped. Target: build within 1.5x of the fastest of the three footer reads.

Opening and pruning a large index is measured by ``benchmarks/index_open_bench.py``.

Run from the repository root (under a minute with the defaults on 2 vCPUs; as root for the
cold pair)::

    python benchmarks/index_build_bench.py [--files 2000] [--columns 20] [--rows 100]
                                           [--row-groups 2] [--repeat 5]
                                           [--workdir bench_data/index_build_bench]
    python -m benchmarks.index_build_bench

The work directory (gitignored ``bench_data/``) is emptied first and removed at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import (
    DAY0,
    ID_SPACE,
    SPAN_DAYS,
    Timing,
    columns,
    decimal_array,
    drop_page_cache,
    fmt_ms,
    machine_line,
    markdown_table,
    met,
    null_where,
)
from index_store import open_table
from index_store.builder import compute_stats

BUILD_TARGET_RATIO = 1.5


# ------------------------------------------------------------------------------- data files


def write_data_files(folder: Path, n_files: int, k: int, rows: int, groups: int, floats: bool) -> None:
    """``n_files`` parquet files of ``rows`` rows in ``groups`` row groups; float columns become
    int64 when ``floats`` is False. One big table is generated, then sliced per file."""
    rng = np.random.default_rng(3)
    total = n_files * rows
    arrays: dict[str, pa.Array] = {}
    file_of_row = np.repeat(np.arange(n_files), rows)
    for name, t in columns(k):
        valid = rng.random(total) >= 0.02
        if pa.types.is_date32(t):
            days = (DAY0 - dt.date(1970, 1, 1)).days + file_of_row * SPAN_DAYS // n_files
            arr: pa.Array = pa.array((days + rng.integers(0, 3, total)).astype(np.int32)).view(t)
        elif pa.types.is_timestamp(t):
            per_s = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
            secs = (DAY0 - dt.date(1970, 1, 1)).days * 86_400 + file_of_row * (SPAN_DAYS * 86_400 // n_files)
            arr = pa.array(((secs + rng.integers(0, 86_400, total)) * per_s).astype(np.int64)).view(t)
        elif pa.types.is_decimal(t):
            arr = decimal_array(rng.integers(0, 10 ** min(t.precision - 1, 17), total, dtype=np.int64), t)
        elif pa.types.is_floating(t):
            values = rng.uniform(0.0, 1_000.0, total)
            if floats:
                values[rng.random(total) < 0.01] = np.nan
                arr = pa.array(values).cast(t)
            else:
                arr = pa.array(np.round(values * 100).astype(np.int64))
        elif pa.types.is_boolean(t):
            arr = pa.array(rng.random(total) < 0.5)
        elif pa.types.is_uint64(t):
            arr = pa.array(rng.integers(0, 2**63, total, dtype=np.uint64))
        elif pa.types.is_integer(t):
            top = min(2 ** (t.bit_width - 1) - 1, ID_SPACE)
            arr = pa.array(rng.integers(0, top, total)).cast(t)
        else:
            vocab = pa.array([f"{name}-{i:05d}" for i in range(2_000)], pa.string())
            arr = vocab.take(pa.array(rng.integers(0, 2_000, total))).cast(t)
        arrays[name] = null_where(arr, ~valid)
    table = pa.table(arrays)
    folder.mkdir(parents=True, exist_ok=True)
    per_group = max(1, -(-rows // max(1, groups)))
    for i in range(n_files):
        pq.write_table(
            table.slice(i * rows, rows), folder / f"part-{i:05d}.parquet", row_group_size=per_group
        )


# ---------------------------------------------------------------------- footer reads and build


def footers_seq(paths: Sequence[str]) -> list[Any]:
    return [pq.ParquetFile(p).metadata for p in paths]


def footers_read_metadata(paths: Sequence[str]) -> list[Any]:
    return [pq.read_metadata(p) for p in paths]


def footers_with_stats(paths: Sequence[str]) -> list[Any]:
    """The least pyarrow code that gets min, max and null count of every column chunk out."""
    out = []
    for p in paths:
        md = pq.ParquetFile(p).metadata
        for r in range(md.num_row_groups):
            group = md.row_group(r)
            for j in range(md.num_columns):
                st = group.column(j).statistics
                out.append((st.min, st.max, st.null_count) if st is not None and st.has_min_max else None)
    return out


def footers_threaded(paths: Sequence[str], workers: int) -> list[Any]:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda p: pq.ParquetFile(p).metadata, paths))


@dataclass
class BuildResult:
    label: str
    seq: Timing
    read_metadata: Timing
    threaded: Timing
    with_stats: Timing
    stats_only: Timing
    build: Timing
    cold_threaded: float | None
    cold_build: float | None


def bench_build(
    folder: Path, index_dir: Path, label: str, repeat: int, workers: int, cold: bool
) -> BuildResult:
    table = open_table(folder)
    files = table.reader.list_files()
    paths = [os.path.join(table.root, f.path) for f in files]
    part_schema = table.reader.partition_schema()
    seq = Timing.of(lambda: footers_seq(paths), repeat)
    read_md = Timing.of(lambda: footers_read_metadata(paths), repeat)
    threaded = Timing.of(lambda: footers_threaded(paths, workers), repeat)
    with_stats = Timing.of(lambda: footers_with_stats(paths), repeat)
    stats_only = Timing.of(
        lambda: compute_stats(
            table.root, files, part_schema, bloom_columns=[], progress=False, workers=workers
        ),
        repeat,
    )
    counter = iter(range(1_000_000))

    def build() -> int:
        target = index_dir / f"{label}-{next(counter)}"
        return open_table(folder, index_path=target).build(bloom_columns=[], progress=False)

    built = Timing.of(build, repeat)
    cold_threaded = cold_build = None
    if cold and drop_page_cache():
        t0 = time.perf_counter()
        footers_threaded(paths, workers)
        cold_threaded = time.perf_counter() - t0
        drop_page_cache()
        t0 = time.perf_counter()
        build()
        cold_build = time.perf_counter() - t0
    return BuildResult(
        label, seq, read_md, threaded, with_stats, stats_only, built, cold_threaded, cold_build
    )


# ----------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    # The second spelling of --files, --rows and --row-groups is the one of the former index_bench.py.
    parser.add_argument("--files", "--build-files", type=int, default=2_000, help="parquet files")
    parser.add_argument("--columns", type=int, default=20, help="columns per file")
    parser.add_argument("--rows", "--build-rows", type=int, default=100, help="rows per file")
    parser.add_argument("--row-groups", "--build-row-groups", type=int, default=2, help="row groups per file")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--workdir", default="bench_data/index_build_bench", help="emptied, then removed")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    if args.columns < 1:
        parser.error("--columns must be at least 1")
    repeat = max(1, args.repeat)
    work = Path(args.workdir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        return run(args, repeat, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, repeat: int, work: Path) -> int:
    t_start = time.perf_counter()
    k = args.columns
    print(machine_line(pa, np, memory=True))
    can_drop = drop_page_cache()
    print(
        "cold = OS page cache dropped before each of the pair (sync; echo 3 > /proc/sys/vm/drop_caches)\n"
        if can_drop
        else "no cold pair: dropping the page cache was refused\n"
    )

    workers = min(8, (os.cpu_count() or 2) * 2)
    builds = []
    build_setup_s = 0.0
    for floats in (False, True):
        label = "floats" if floats else "no_floats"
        folder = work / f"table_{label}"
        t0 = time.perf_counter()
        write_data_files(folder, args.files, k, args.rows, args.row_groups, floats)
        build_setup_s += time.perf_counter() - t0
        builds.append(bench_build(folder, work / "build_index", label, repeat, workers, can_drop))

    rows: list[list[str]] = []
    for b in builds:
        base = min(b.seq.best, b.read_metadata.best, b.threaded.best)
        what = (
            "no float columns (footers only)" if b.label == "no_floats" else "with 3 float columns (NaN scan)"
        )
        rows += [
            [
                f"{args.files:,} files, {what}: footers, `ParquetFile(p).metadata`",
                b.seq.text(),
                "-",
                "-",
            ],
            ["  footers, `pq.read_metadata(p)`", b.read_metadata.text(), "-", "-"],
            [f"  footers, `ParquetFile(p).metadata` on {workers} threads", b.threaded.text(), "-", "-"],
            [
                "  footers and every chunk's min/max/null count (`statistics`)",
                b.with_stats.text(),
                "-",
                "-",
            ],
            [
                "  compute_stats (stats only)",
                f"{b.stats_only.text()} = {b.stats_only.best / base:.2f}x footers",
                "-",
                "-",
            ],
            [
                "  IndexedTable.build (list, stats, write, commit)",
                f"{b.build.text()} = {b.build.best / base:.2f}x footers, "
                f"{b.build.best / b.with_stats.best:.2f}x footers+statistics",
                "<= 1.5x footers",
                met(b.build.best / base <= BUILD_TARGET_RATIO),
            ],
        ]
        if b.cold_threaded is not None and b.cold_build is not None:
            rows.append(
                [
                    "  cold (page cache dropped): footers threaded vs build",
                    f"{fmt_ms(b.cold_threaded)} vs {fmt_ms(b.cold_build)} = "
                    f"{b.cold_build / b.cold_threaded:.2f}x",
                    "-",
                    "-",
                ]
            )
    print(markdown_table(["what", "time", "target", "met?"], rows))
    print()
    print(f"- data files for the build written in {build_setup_s:.1f} s")
    print(
        f"- build tables: {args.files:,} files x {k} columns x {args.rows} rows in "
        f"{args.row_groups} row groups; ratios are best build / best footer read (the fastest "
        "of the three ways); OS cache warm"
    )
    print(
        f"- runs: best (median) of {repeat} after 1 warm-up; "
        f"total bench time {time.perf_counter() - t_start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
