"""``tag_bench --spark-scales``: one batch of keys tagged on Spark against lineitem at several sizes.

Whether tagging's cost follows the batch or the table (issue 26): the same batch (``--spark-keys``,
100,000 by default; half present, half absent) is tagged against TPC-H lineitem at each scale of
``--spark-scales``, the files scaled alike (``--files`` per ``--scale``: 2,000 per SF1 by default,
so SF0.1 has 200 files and SF3 6,000), on Spark ``local[2]``, three ways: a plain Spark join of
the batch with every file's key column (``_metadata.file_path``), and ``adapters.spark.tag`` with
range+bloom and with the record index. Two layouts: ``clustered-pad`` (keys clustered as strings)
and ``random`` (UUID keys, rows shuffled).

The batch is drawn from the smallest table: present keys are rows of it (every larger table holds
them too: tpchgen-cli writes the same first orders at every scale, and the UUIDs are drawn in row
order from one seed), absent ones are order keys TPC-H never uses (the 24 of every 32 it skips) or
fresh UUIDs. Each run is checked against the plain join (same file for every key), which must
find exactly the present keys at every size.

Bytes read per run: for the plain join, the compressed key column chunks of every file (parquet
footers), which a join must read; for ``tag``, the library's own accounting (``tag_stats`` of
``IndexedTable.tag`` on the same batch: key column chunks read to verify candidates for
range+bloom, record index pages touched for the record index), as Spark's metrics do not see the
files a Python task reads. The growth columns divide the largest size's time (and bytes) by the
smallest's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import Timing, fmt_mb, fmt_ms, markdown_table
from benchmarks.tag_bench import (
    Batch,
    Keys,
    Layout,
    Method,
    _key_column_bytes,
    _noop,
    as_tags,
    build_layout,
    key_bounds,
    plain_spark_join,
    prepare_keys,
    same_tags,
    uuid4_strings,
    write_layouts,
)
from index_store import open_table
from index_store.datagen.tpch import generate
from index_store.partitions.record_index import RECORD_INDEX_FORMAT
from index_store.tagging import tag_stats

METHODS: tuple[Method, ...] = ("bloom", "record")


def same_batch(keys: Keys, size: int, rng: np.random.Generator) -> Batch:
    """``size`` keys, half rows of the (smallest) table, half absent from every TPC-H table: order
    keys of the 24 in every 32 TPC-H skips, over the smallest table's key space; fresh UUIDs."""
    n = len(keys.orderkey)
    half = min(size // 2, n)
    absent = size - half
    rows = np.sort(rng.choice(n, size=half, replace=False))
    top = int(keys.orderkey[-1])
    block = rng.integers(0, max(1, top // 32), size=absent)
    new_ok = block * 32 + rng.integers(8, 32, size=absent)  # k % 32 >= 8: never an order key
    new_ln = rng.integers(1, 8, size=absent)
    orderkey = np.concatenate([keys.orderkey[rows], new_ok]).astype(np.int64)
    linenumber = np.concatenate([keys.linenumber[rows], new_ln]).astype(np.int32)
    uuids = pa.concat_arrays([keys.uuid.take(pa.array(rows)), uuid4_strings(rng, absent)])
    order = rng.permutation(size)
    # Distinct keys: absent draws may repeat one another (a negligible share); keep the first.
    code = orderkey[order] * 8 + linenumber[order]
    _, first = np.unique(code, return_index=True)
    keep = order[np.sort(first)]
    present = int((keep < half).sum())
    return Batch(len(keep), "random", orderkey[keep], linenumber[keep], uuids.take(pa.array(keep)), present)


@dataclass
class Cell:
    """One method at one size: its time, bytes read, and keys found."""

    timing: Timing | None
    bytes_read: int = 0
    found: int = 0
    note: str = ""


def _found(tags: pa.Table) -> int:
    return int(pc.sum(tags["file"].is_valid().cast(pa.int64())).as_py() or 0)


def _measure_layout(
    spark: Any,
    spark_tag: Callable[..., Any],
    layout: Layout,
    batch: Batch,
    repeat: int,
    budget: float,
    max_pairs: float,
) -> dict[str, Cell]:
    """The plain join and ``tag`` (each method) on one batch: each warmed up once, then timed in
    rounds (plain, record, bloom, plain, ...) while the budget lasts, best of the rounds."""
    table = layout.table
    assert table is not None
    keys_df, plain = plain_spark_join(spark, layout, batch)
    runs: dict[str, Callable[[], None]] = {"plain": partial(_noop, plain)}
    cells = {"plain": Cell(None, layout.key_bytes)}
    for using in METHODS:
        pairs = layout.pairs(batch.key_strings(layout.name)) if using == "bloom" else 0
        if pairs > max_pairs:
            cells[using] = Cell(None, note=f"not run: {pairs:,} (key, file) pairs > --max-pairs")
            continue
        runs[using] = partial(lambda u: _noop(spark_tag(spark, table, keys_df, using=u)), using)
        cells[using] = Cell(None)
    times = _rounds(runs, repeat, budget)
    expected = as_tags(plain.toArrow(), layout, "_file")
    cells["plain"].found = _found(expected)
    cells["plain"].timing = Timing.from_list(times["plain"])
    if cells["plain"].found != batch.present:  # the batch is not what it says: no fair comparison
        raise SystemExit(
            f"{layout.name}: the plain join found {cells['plain'].found:,} of the batch's keys, "
            f"expected its {batch.present:,} present ones"
        )
    inp = batch.tag_input(layout.name)
    for using in METHODS:
        if using not in runs:
            continue
        got = as_tags(spark_tag(spark, table, keys_df, using=using).toArrow(), layout, "_file")
        problem = same_tags(got, expected)
        if problem is not None:
            raise SystemExit(f"{layout.name} {using}: spark.tag differs from the plain join: {problem}")
        local = tag_stats(table.tag(inp, using=using))
        cells[using] = Cell(Timing.from_list(times[using]), local.bytes_read, _found(got))
    keys_df.unpersist()
    return cells


def _rounds(runs: dict[str, Callable[[], None]], repeat: int, budget: float) -> dict[str, list[float]]:
    """Each run once untimed, then up to ``repeat`` timed rounds of all of them in turn (the
    machine's load falls alike on each), fewer when a round would exceed ``budget`` seconds."""
    for fn in runs.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    start = time.perf_counter()
    for _ in range(max(1, repeat)):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        spent = time.perf_counter() - start
        if spent * (1 + 1 / len(times["plain"])) > budget:
            break
    return times


def _build_or_reuse(layout: Layout, keep: bool) -> str:
    """Build the layout's index, or (``--keep``) reuse one built before by this format."""
    marker = layout.index / f"built-{RECORD_INDEX_FORMAT}"
    if keep and marker.exists():
        layout.table = open_table(layout.folder, index_path=layout.index)
        return "reused"
    build_layout(layout)
    marker.touch()
    return f"built in {layout.build_s:.0f} s"


def run_scales(args: argparse.Namespace, work: Path, scale: float, n_files: int) -> int:
    """The sweep (see the module's docstring); prints its tables."""
    try:
        import pyspark

        from adapters.spark import local_session
        from adapters.spark.tag import tag as spark_tag
    except ImportError as exc:
        print(f"--spark-scales: skipped, pyspark or the Spark adapter cannot be imported ({exc})")
        return 1
    scales = sorted({float(s) for s in args.spark_scales.split(",") if s.strip()})
    sizes = sorted({int(k) for k in str(args.spark_keys).replace("_", "").split(",") if k.strip()})
    files_per_sf = n_files / scale
    repeat = args.repeat_large if args.repeat_large is not None else 1
    spark = local_session(app_name="tag-bench-scales", memory=args.memory)
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"\nSpark {pyspark.__version__} local[2], driver memory {args.memory}: the same batches against "
        f"lineitem at SF {', '.join(f'{s:g}' for s in scales)} ({files_per_sf:,.0f} files per SF1); each "
        f"method warmed up once, then up to {repeat} timed rounds interleaving the methods (best); "
        "action: write.format('noop'); tags checked against the plain join\n"
    )
    batches: dict[int, Batch] = {}
    results: list[Result] = []
    try:
        for s in scales:
            files = max(1, round(files_per_sf * s))
            source = generate(s, work / "tpch")["lineitem"]
            source_table, keys = prepare_keys(source, args.seed)
            tables = work / f"sf{s:g}-{files}-seed{args.seed}"
            write_layouts(source_table, keys, tables, files, args.seed)
            n_rows = source_table.num_rows
            del source_table
            if not batches:  # drawn from the smallest table, the same for every size
                batches = {
                    k: same_batch(keys, k, np.random.default_rng(args.seed + 2 + i))
                    for i, k in enumerate(sizes)
                }
            layouts = [
                Layout("clustered-pad", tables / "clustered", tables / "index-padded", "l_key", ["l_key"]),
                Layout("random", tables / "random", tables / "index-uuid", "uuid", ["uuid"]),
            ]
            layouts = [lay for lay in layouts if lay.name in args.spark_layouts.split(",")]
            try:
                for layout in layouts:
                    layout.files = sorted(layout.folder.glob("*.parquet"))
                    layout.key_bytes = _key_column_bytes(layout.files, layout.key_columns)
                    key_bounds(layout)
                    built = _build_or_reuse(layout, args.keep)
                    print(f"  [SF{s:g} {layout.name}: index {built}]", file=sys.stderr, flush=True)
                    for k in sizes:
                        t0 = time.perf_counter()
                        cells = _measure_layout(
                            spark, spark_tag, layout, batches[k], repeat, args.budget, args.max_pairs
                        )
                        results.append(Result(s, files, n_rows, layout, batches[k], cells))
                        done = ", ".join(
                            f"{m} {fmt_ms(c.timing.best) if c.timing else '-'} {fmt_mb(c.bytes_read)}"
                            for m, c in cells.items()
                        )
                        print(
                            f"  [SF{s:g} {layout.name} {k:,} keys: {done}; {time.perf_counter() - t0:.0f} s]",
                            file=sys.stderr,
                            flush=True,
                        )
            finally:
                if not args.keep:
                    shutil.rmtree(tables, ignore_errors=True)
    finally:
        spark.stop()
        if results:
            for k in sizes:
                b = batches[k]
                print(
                    f"Batch of {k:,}: {b.size:,} distinct keys, {b.present:,} of them rows of the smallest "
                    "table"
                )
            print()
            print(markdown_table(*_size_table(results)))
            print("\nGrowth from the smallest to the largest size (largest / smallest):\n")
            print(markdown_table(*_growth_table(results, scales)))
    return 0


@dataclass
class Result:
    """The cells of one batch against one layout at one size."""

    scale: float
    files: int
    rows: int
    layout: Layout
    batch: Batch
    cells: dict[str, Cell]


def _cell(c: Cell, plain: Cell) -> tuple[str, str]:
    if c.timing is None:
        return c.note, ""
    assert plain.timing is not None
    return f"{c.timing.text()} ({plain.timing.best / c.timing.best:.2f}x)", fmt_mb(c.bytes_read)


def _size_table(results: Sequence[Result]) -> tuple[list[str], list[list[str]]]:
    header = [
        "SF", "files", "rows", "layout", "keys", "keys found", "plain join", "plain bytes",
        "tag bloom (vs plain)", "bloom bytes", "tag record (vs plain)", "record bytes",
        "plain / record bytes",
    ]  # fmt: skip
    rows = []
    for r in results:
        plain, record = r.cells["plain"], r.cells["record"]
        assert plain.timing is not None
        ratio = f"{plain.bytes_read / record.bytes_read:.1f}x" if record.bytes_read else ""
        rows.append(
            [f"{r.scale:g}", f"{r.files:,}", f"{r.rows:,}", r.layout.name, f"{r.batch.size:,}",
             f"{plain.found:,}", plain.timing.text(), fmt_mb(plain.bytes_read),
             *_cell(r.cells["bloom"], plain), *_cell(record, plain), ratio]
        )  # fmt: skip
    return header, rows


def _growth_table(results: Sequence[Result], scales: Sequence[float]) -> tuple[list[str], list[list[str]]]:
    header = [
        "layout",
        "keys",
        "method",
        f"time SF{scales[0]:g} → SF{scales[-1]:g}",
        "growth",
        "bytes growth",
    ]
    rows = []
    for name in ("clustered-pad", "random"):
        for size in sorted({r.batch.size for r in results}):
            mine = [r for r in results if r.layout.name == name and r.batch.size == size]
            if len(mine) < 2:
                continue
            small, large = mine[0].cells, mine[-1].cells
            for method in ("plain", *METHODS):
                a, b = small[method], large[method]
                if a.timing is None or b.timing is None:
                    rows.append([name, f"{size:,}", method, "not run at every size", "", ""])
                    continue
                growth = b.timing.best / a.timing.best
                bytes_growth = f"{b.bytes_read / a.bytes_read:.2f}x" if a.bytes_read else ""
                rows.append(
                    [name, f"{size:,}", method, f"{fmt_ms(a.timing.best)} → {fmt_ms(b.timing.best)}",
                     f"{growth:.2f}x", bytes_growth]
                )  # fmt: skip
    return header, rows
