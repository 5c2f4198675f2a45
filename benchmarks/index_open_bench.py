"""Opening and pruning a large index: a synthetic 1M-file x 20-column index, cold and warm.

What it measures:

1. Synthetic index. ``FileStats`` of 1,000,000 files x 20 columns of mixed types (date32,
   timestamps with and without a time zone, int8..int64, uint64, float32/float64 with NaN counts
   some of them unknown, string, binary, decimal128, bool; some nulls, all-null files and unknown
   bounds), generated column-wise with numpy/pyarrow (no per-file Python), written as a real index
   with the library's own writers: a ``files`` partition (``partitions.write_files``), the
   ``column_stats`` partition (``partitions.write_column_stats``) and a checkpoint timeline entry
   (``IndexTimeline.create``). No data files exist: the table reader lists none and pruning runs with
   ``verify_files=False``. Reported: write time and size on disk (information, no target).
2. Open + prune on 2 columns (``event_date`` range AND ``id`` range, a few percent of files kept).
   *Cold*: a fresh process that imports everything and warms the code paths on a tiny index, then
   waits while the parent runs ``sync; echo 3 > /proc/sys/vm/drop_caches`` (if that is refused the
   report says "OS cache warm"), then times ``IndexedTable(reader, root)`` + ``prune``; bytes read
   are the process's ``/proc/self/io`` ``read_bytes`` (from disk) and ``rchar`` (through read
   calls), next to what the footers say must be read (the ``files`` partition's ids, paths and
   row counts, and the ``column_stats`` row groups holding the 2 columns, needed columns only).
   *Warm*: a second prune with another predicate on the same 2 columns on the same
   ``IndexedTable`` (stats cached in Python), and a new ``IndexedTable`` in the same process (OS
   cache warm, nothing cached in Python; also its CPU time, ``time.process_time``, which other
   processes disturb less). Also: a new process from spawn to exit after dropping caches, imports
   included (what a command-line prune pays). Targets: cold < 1 s, warm < 150 ms.

The files pruned are checked against ``might_match`` over the in-memory statistics. The footer-based
build of real parquet files is measured by ``benchmarks/index_build_bench.py``.

Run from the repository root (about 25 s with the defaults on 2 vCPUs; as root for the cold
numbers)::

    python benchmarks/index_open_bench.py [--files 1000000] [--columns 20] [--repeat 5]
                                          [--cold-runs 3] [--workdir bench_data/index_open_bench]
    python -m benchmarks.index_open_bench

The work directory (gitignored ``bench_data/``) is emptied first and removed at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.common import (
    DAY0,
    ID_SPACE,
    SPAN_DAYS,
    Timing,
    columns,
    decimal_array,
    drop_page_cache,
    fmt_mb,
    fmt_ms,
    machine_line,
    markdown_table,
    met,
    null_where,
)
from hudi_expr import ColumnStats, Expression, FileStats, col, might_match
from index_store import Commit, IndexConfig, IndexedTable, IndexTimeline
from index_store.codec import slot_of
from index_store.partitions import (
    COLUMN_STATS_SCHEMA,
    FILES_SCHEMA,
    row_groups_holding,
    write_column_stats,
    write_files,
)
from index_store.tables.base import DataFile, TableReaderBase

ID_WIDTH = 20_000_000  # id ranges: uniform start in [0, ID_SPACE), exponential width of this mean
INSTANTS = ["20240301120000000", "20240302120000000", "20240303120000000", "20240304120000000"]

# Predicate A (cold and warm-new-object runs) and B (warm, same object): same 2 columns.
PRED_A = (dt.date(2022, 3, 1), dt.date(2022, 4, 1), 600_000_000)  # date in [a, b) AND id < c
PRED_B = (dt.date(2023, 6, 1), dt.date(2023, 7, 15), 500_000_000)  # date in [a, b) AND id >= c

COLD_TARGET_S = 1.0
WARM_TARGET_S = 0.150


def predicate_a() -> Expression:
    a, b, c = PRED_A
    return (col("event_date") >= a) & (col("event_date") < b) & (col("id") < c)


def predicate_b() -> Expression:
    a, b, c = PRED_B
    return (col("event_date") >= a) & (col("event_date") < b) & (col("id") >= c)


# ---------------------------------------------------------------------------- synthetic stats


def make_stats(n: int, k: int, seed: int = 7) -> FileStats:
    """Statistics of ``n`` files x ``k`` columns, column-wise with numpy (no per-file loop)."""
    rng = np.random.default_rng(seed)
    row_count = rng.integers(10_000, 1_000_000, n, dtype=np.int64)
    empty = rng.random(n) < 0.001
    row_count[empty] = 0
    # Position of each file in write (event-time) order, and its first event day.
    day = np.floor(np.arange(n) * (SPAN_DAYS / n)).astype(np.int64) + rng.integers(0, 2, n)
    late = rng.random(n) < 0.03  # late-arriving files: a wide window of days
    stats: dict[str, ColumnStats] = {}
    fields = []
    for name, t in columns(k):
        fields.append(pa.field(name, t))
        lo, hi = _bounds(rng, name, t, n, day, late)
        # Nulls: 9% of files hold some, 0.3% are all null (no bounds), 0.3% have unknown bounds,
        # 0.2% an unknown null count; empty files have neither bounds nor nulls.
        u = rng.random(n)
        all_null = (u < 0.003) & ~empty
        some = (u >= 0.003) & (u < 0.093)
        nulls = np.where(all_null, row_count, np.where(some, rng.integers(0, row_count // 10 + 1), 0))
        unknown_nulls = (rng.random(n) < 0.002) & ~all_null & ~empty
        no_bounds = all_null | empty | ((u >= 0.093) & (u < 0.096))
        if pa.types.is_floating(t):
            v = rng.random(n)
            nan = np.where(v < 0.03, rng.integers(1, 50, n), 0)
            nan_count = pa.array(np.where(all_null | empty, 0, nan), mask=(v >= 0.03) & (v < 0.04) & ~empty)
        else:
            nan_count = pa.nulls(n, pa.int64())
        stats[name] = ColumnStats(
            min=null_where(lo, no_bounds),
            max=null_where(hi, no_bounds),
            null_count=pa.array(nulls.astype(np.int64), mask=unknown_nulls),
            nan_count=nan_count,
        )
    return FileStats(_file_names(rng, n), pa.array(row_count), stats, pa.schema(fields))


def _bounds(
    rng: np.random.Generator, name: str, t: pa.DataType, n: int, day: np.ndarray, late: np.ndarray
) -> tuple[pa.Array, pa.Array]:
    """Typed (min, max) arrays of one column; never min > max."""
    if pa.types.is_date32(t):
        lo = day + (0 if name.startswith("event_date") else rng.integers(0, 3, n))
        hi = lo + rng.geometric(0.6, n) - 1
        wide_lo = rng.integers(0, SPAN_DAYS, n)
        lo = np.where(late, wide_lo, lo)
        hi = np.where(late, wide_lo + rng.integers(1, 90, n), hi)
        base = (DAY0 - dt.date(1970, 1, 1)).days
        return (
            pa.array((lo + base).astype(np.int32)).view(t),
            pa.array((hi + base).astype(np.int32)).view(t),
        )
    if pa.types.is_timestamp(t):
        per_s = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        base = (DAY0 - dt.date(1970, 1, 1)).days * 86_400
        lo = (base + day * 86_400 + rng.integers(0, 86_400, n)) * per_s
        hi = lo + (rng.exponential(6 * 3_600, n) * per_s).astype(np.int64)
        return pa.array(lo.astype(np.int64)).view(t), pa.array(hi.astype(np.int64)).view(t)
    if pa.types.is_decimal(t):
        top = 10 ** min(t.precision - 1, 17)
        lo = rng.integers(0, top // 2, n, dtype=np.int64)
        hi = lo + rng.integers(0, top // 2, n, dtype=np.int64)
        return decimal_array(lo, t), decimal_array(hi, t)
    if pa.types.is_floating(t):
        lo = rng.uniform(0.0, 1_000.0, n)
        hi = lo + rng.exponential(25.0, n)
        return pa.array(lo).cast(t), pa.array(hi).cast(t)
    if pa.types.is_boolean(t):
        u = rng.integers(0, 3, n)  # 0: all false, 1: both, 2: all true
        return pa.array(u == 2), pa.array(u >= 1)
    if pa.types.is_uint64(t):
        lo = rng.integers(0, 2**62, n, dtype=np.uint64)
        return pa.array(lo), pa.array(lo + rng.integers(0, 2**62, n, dtype=np.uint64))
    if pa.types.is_integer(t):
        if name.startswith("id"):
            lo = rng.integers(0, ID_SPACE, n)
            hi = lo + rng.exponential(ID_WIDTH, n).astype(np.int64)
        else:
            top = min(2 ** (t.bit_width - 1) - 1, ID_SPACE)
            lo = rng.integers(0, top // 2, n)
            hi = lo + rng.integers(0, top // 2, n)
        return pa.array(lo).cast(t), pa.array(hi).cast(t)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        size = {"status": 6, "region": 40}.get(name.split("_")[0], 2_000)
        vocab = pa.array(sorted(f"{name}-{i:05d}" for i in range(size)), pa.string())
        a = rng.integers(0, size, n)
        b = np.minimum(a + rng.geometric(0.2, n) - 1, size - 1)
        return vocab.take(pa.array(a)).cast(t), vocab.take(pa.array(b)).cast(t)
    raise TypeError(f"no generator for {t}")


def _file_names(rng: np.random.Generator, n: int) -> pa.Array:
    """Hudi-like base file names ``<32 hex>-0_0-7-13_<instant>.parquet``, built without a loop."""
    raw = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    text = np.empty((n, 32), dtype=np.uint8)
    text[:, 0::2] = digits[raw >> 4]
    text[:, 1::2] = digits[raw & 15]
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * 32).tobytes())
    ids = pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(text.tobytes())])
    instants = pa.array(INSTANTS).take(pa.array(rng.integers(0, len(INSTANTS), n)))
    return pc.binary_join_element_wise(ids, "-0_0-7-13_", instants, ".parquet", "")


# ---------------------------------------------------------------------------------- the index


class StatsOnlyTable(TableReaderBase):
    """A ``TableReader`` with no data files: the index alone is benchmarked."""

    kind = "parquet"

    def __init__(self, root: str) -> None:
        self.root = root

    def list_files(self) -> list[DataFile]:
        return []

    def partition_schema(self) -> pa.Schema:
        return pa.schema([])

    def latest_instant(self) -> str | None:
        return None

    def record_key_field(self) -> str | None:
        return None


@dataclass
class Written:
    seconds_files: float
    seconds_stats: float
    seconds_commit: float
    added: dict[str, list[str]]

    @property
    def seconds(self) -> float:
        return self.seconds_files + self.seconds_stats + self.seconds_commit


def write_index(root: Path, stats: FileStats) -> Written:
    """``stats`` as a version-1 checkpoint index at ``root`` (library writers only)."""
    n = stats.num_files
    rng = np.random.default_rng(1)
    partitions = pa.repeat("", n)
    rows = pa.table(
        {
            "file_idx": pa.array(np.arange(n, dtype=np.int64)),
            "path": stats.files,
            "partition": partitions,
            "size": pc.multiply(stats.row_count, pa.scalar(48, pa.int64())),
            "row_count": stats.row_count,
            "instant": pa.array(INSTANTS).take(pa.array(rng.integers(0, len(INSTANTS), n))),
            "deleted": pa.repeat(False, n),
            "version": pa.array(np.ones(n, dtype=np.int64)),
            "mtime": pa.nulls(n, pa.int64()),
            "slice_key": pa.nulls(n, pa.int64()),
        },
        schema=FILES_SCHEMA,
    )
    t0 = time.perf_counter()
    files_rel = write_files(root, rows)
    t1 = time.perf_counter()
    stats_rel = write_column_stats(root, np.arange(n, dtype=np.int64), partitions, stats)
    t2 = time.perf_counter()
    added = {"files": [files_rel], "column_stats": [stats_rel]}
    commit = Commit(
        version=1,
        operation="build",
        added=added,
        schema=stats.schema,
        checkpoint=True,
        next_file_idx=n,
        config=IndexConfig(table_kind="parquet"),
    )
    if not IndexTimeline(root).create(commit):
        raise RuntimeError(f"{root} already holds an index")
    return Written(t1 - t0, t2 - t1, time.perf_counter() - t2, added)


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def needed_bytes(root: Path, added: dict[str, list[str]], schema: pa.Schema, wanted: list[str]) -> int:
    """What open + prune on ``wanted`` must read by the footers: the footer and the ``file_idx``,
    ``path`` and ``row_count`` chunks of the ``files`` partition (what an open reads; sizes and
    times only when the table on disk is compared), and the footer plus the needed column chunks
    of the ``column_stats`` row groups holding ``wanted``."""
    total = 0
    for rel in added["files"]:
        md = pq.ParquetFile(root / rel).metadata
        opened = [i for i, name in enumerate(FILES_SCHEMA.names) if name in ("file_idx", "path", "row_count")]
        total += md.serialized_size + 8
        total += sum(
            md.row_group(g).column(i).total_compressed_size for g in range(md.num_row_groups) for i in opened
        )
    types = {f.name: f.type for f in schema}
    slots = {slot_of(types[c]) for c in wanted}
    read_cols = {"column", "file_idx", "null_count", "nan_count"}
    read_cols |= {f"{end}_{s}" for s in slots for end in ("min", "max")}
    idx = [i for i, name in enumerate(COLUMN_STATS_SCHEMA.names) if name in read_cols]
    for rel in added["column_stats"]:
        pf = pq.ParquetFile(root / rel)
        md = pf.metadata
        total += md.serialized_size + 8
        for g in row_groups_holding(pf, sorted(wanted)):
            total += sum(md.row_group(g).column(i).total_compressed_size for i in idx)
    return total


# ------------------------------------------------------------------------ child: open + prune


def _io() -> dict[str, int]:
    try:
        with open("/proc/self/io", encoding="ascii") as fh:
            return {k: int(v) for k, v in (line.split(": ") for line in fh if ": " in line)}
    except OSError:
        return {}


def child_main(index_root: str, warmup_root: str, repeat: int, wait: bool) -> int:
    """Run in a fresh process: warm the code on a tiny index, wait for the parent to drop the
    page cache, then time open + prune (printed as one JSON line)."""
    a, b = predicate_a(), predicate_b()
    reader = StatsOnlyTable("/bench/synthetic_table")
    if wait:
        warm = IndexedTable(reader, Path(warmup_root))
        warm.prune(a, verify_files=False)
        warm.prune(b, verify_files=False)
        print("ready", flush=True)
        sys.stdin.readline()
    io0 = _io()
    t0 = time.perf_counter()
    table = IndexedTable(reader, Path(index_root))
    table.stats([])  # open: timeline + files partition
    t1 = time.perf_counter()
    result = table.prune(a, verify_files=False)
    t2 = time.perf_counter()
    io1 = _io()
    out: dict[str, Any] = {
        "open_s": t1 - t0,
        "prune_s": t2 - t1,
        "total_s": t2 - t0,
        "kept_a": result.kept,
        "total": result.total,
        "read_bytes": io1.get("read_bytes", 0) - io0.get("read_bytes", 0),
        "rchar": io1.get("rchar", 0) - io0.get("rchar", 0),
    }
    if wait:
        same = []
        kept_b = -1
        for _ in range(repeat):
            s0 = time.perf_counter()
            kept_b = table.prune(b, verify_files=False).kept
            same.append(time.perf_counter() - s0)
        fresh, fresh_cpu = [], []
        for _ in range(repeat):
            s0, c0 = time.perf_counter(), time.process_time()
            IndexedTable(reader, Path(index_root)).prune(a, verify_files=False)
            fresh.append(time.perf_counter() - s0)
            fresh_cpu.append(time.process_time() - c0)
        out.update(kept_b=kept_b, warm_same_s=same, warm_new_s=fresh, warm_new_cpu_s=fresh_cpu)
    print(json.dumps(out), flush=True)
    return 0


def run_child(
    index_root: Path, warmup_root: Path, repeat: int, wait: bool
) -> tuple[dict[str, Any], float, bool]:
    """One fresh process: (its JSON result, wall seconds from spawn to exit, caches dropped)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", str(index_root), "--warmup-root"]
    cmd += [str(warmup_root), "--repeat", str(repeat)] + ([] if wait else ["--no-wait"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1])])}
    if wait:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "ready":
            proc.kill()
            raise RuntimeError(f"child did not get ready: {line!r}")
        dropped = drop_page_cache()
        t0 = time.perf_counter()
        out, _ = proc.communicate("go\n")
    else:
        dropped = drop_page_cache()
        t0 = time.perf_counter()
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, check=True).stdout
    wall = time.perf_counter() - t0
    if not out.strip():
        raise RuntimeError(f"child produced no result: {cmd}")
    return json.loads(out.strip().splitlines()[-1]), wall, dropped


# ----------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=1_000_000, help="files in the synthetic index")
    parser.add_argument("--columns", type=int, default=20, help="columns in the synthetic index (>= 2)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per warm measurement")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes for the cold open + prune")
    parser.add_argument("--workdir", default="bench_data/index_open_bench", help="emptied, then removed")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-root", help=argparse.SUPPRESS)
    parser.add_argument("--no-wait", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.warmup_root, max(1, args.repeat), not args.no_wait)
    if args.columns < 2:
        parser.error("--columns must be at least 2 (the predicate uses event_date and id)")
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
    n, k = args.files, args.columns
    print(machine_line(pa, np, memory=True))
    can_drop = drop_page_cache()
    print(
        "cold = "
        + (
            "new process, OS page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"
            if can_drop
            else "new process, OS cache WARM (dropping the page cache was refused)"
        )
    )
    print(f"predicate A: {predicate_a()}\npredicate B: {predicate_b()}\n")

    # 1. The synthetic index.
    t0 = time.perf_counter()
    stats = make_stats(n, k)
    gen_s = time.perf_counter() - t0
    expected_a = int(np.asarray(might_match(predicate_a(), stats)).sum())
    expected_b = int(np.asarray(might_match(predicate_b(), stats)).sum())
    index_root = work / "index"
    written = write_index(index_root, stats)
    del stats
    warmup_root = work / "warmup_index"
    write_index(warmup_root, make_stats(2_000, k, seed=11))
    index_size = size_of(index_root)
    part_sizes = {p: size_of(index_root / p) for p in ("files", "column_stats", "timeline")}
    need = needed_bytes(
        index_root, written.added, IndexTimeline(index_root).snapshot().schema, ["event_date", "id"]
    )

    # 2. Open + prune: cold runs in fresh processes, warm runs inside the first of them.
    colds = []
    for _ in range(max(1, args.cold_runs)):
        result, _, _ = run_child(index_root, warmup_root, repeat, wait=True)
        colds.append(result)
    first = colds[0]
    if first["kept_a"] != expected_a or first["kept_b"] != expected_b:
        raise AssertionError(
            f"index prune kept {first['kept_a']}/{first['kept_b']} files, "
            f"in-memory stats keep {expected_a}/{expected_b}"
        )
    e2e_result, e2e_wall, _ = run_child(index_root, warmup_root, 1, wait=False)
    cold = Timing.from_list([c["total_s"] for c in colds])
    cold_open = Timing.from_list([c["open_s"] for c in colds])
    cold_prune = Timing.from_list([c["prune_s"] for c in colds])
    warm_same = Timing.from_list([t for c in colds for t in c["warm_same_s"]])
    warm_new = Timing.from_list([t for c in colds for t in c["warm_new_s"]])
    warm_new_cpu = Timing.from_list([t for c in colds for t in c["warm_new_cpu_s"]])
    read_bytes = statistics.median(c["read_bytes"] for c in colds)
    rchar = statistics.median(c["rchar"] for c in colds)

    # The report.
    cold_word = "cold" if can_drop else "new process, OS cache warm"
    kept = f"kept {expected_a:,} / {n:,} files ({100 * expected_a / n:.1f}%) for A, {expected_b:,} for B"
    rows: list[list[str]] = [
        [
            f"write synthetic index ({n:,} files x {k} columns = {n * k:,} stats rows)",
            f"{written.seconds:.1f} s (files {written.seconds_files:.1f} s, column_stats "
            f"{written.seconds_stats:.1f} s, commit {written.seconds_commit * 1e3:.0f} ms)",
            "-",
            "-",
        ],
        [
            "index size on disk",
            f"{fmt_mb(index_size)} (files {fmt_mb(part_sizes['files'])}, column_stats "
            f"{fmt_mb(part_sizes['column_stats'])})",
            "-",
            "-",
        ],
        [
            f"open + prune on 2 columns, {cold_word} ({len(colds)} fresh processes)",
            f"{cold.text()}: open {fmt_ms(cold_open.best)}, prune {fmt_ms(cold_prune.best)}",
            "< 1 s",
            met(cold.median < COLD_TARGET_S),
        ],
        [
            "bytes read by that open + prune",
            f"read_bytes {fmt_mb(read_bytes)}, rchar {fmt_mb(rchar)}; footers say {fmt_mb(need)} needed, "
            f"of {fmt_mb(index_size)} ({100 * need / index_size:.0f}%)",
            "-",
            "-",
        ],
        [
            "warm: 2nd prune, same IndexedTable, predicate B (stats cached)",
            warm_same.text(),
            "< 150 ms",
            met(warm_same.median < WARM_TARGET_S),
        ],
        [
            "warm: new IndexedTable + prune A, same process (OS cache warm)",
            f"{warm_new.text()}; CPU {warm_new_cpu.text()} (all threads: less noisy on a shared machine)",
            "< 150 ms",
            met(warm_new.median < WARM_TARGET_S),
        ],
        [
            f"new process spawn to exit, {cold_word}, imports included",
            f"{fmt_ms(e2e_wall)} (open + prune inside: {fmt_ms(e2e_result['total_s'])})",
            "-",
            "-",
        ],
    ]
    print(markdown_table(["what", "time", "target", "met?"], rows))
    print()
    print(f"- {kept}; checked equal to might_match over the in-memory stats")
    print(f"- synthetic stats generated in {gen_s:.1f} s")
    print(
        f"- runs: warm = best (median) of {repeat} per process; "
        f"total bench time {time.perf_counter() - t_start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
