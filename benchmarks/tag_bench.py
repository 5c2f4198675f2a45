"""Tagging upsert keys with their data files (RFC-37): range+bloom and the record index vs a DuckDB join.

What it measures, on TPC-H lineitem (``tpchgen-cli``, scale factor 1 by default: 6M rows) written as
2,000 parquet files (``index_store.datagen.tpch.write_files``) with a unique record key, in three layouts:

- ``clustered``: rows sorted by ``l_orderkey``, the key the composite (``l_orderkey``,
  ``l_linenumber``) encoded as Hudi's ComplexKeyGenerator does (``l_orderkey:12,l_linenumber:3``).
  Hudi compares record keys as strings, and as strings these keys are NOT clustered
  (``l_orderkey:10,...`` < ``l_orderkey:9,...``): a file's [min, max] key range spans much of the
  key space. The script checks and prints whether the files' string ranges are disjoint;
- ``clustered-pad``: the same files, keyed by a zero-padded string column ``l_key``
  (``0000000012-3``), whose string order is the row order: clustered as strings too;
- ``random``: a UUID string column ``uuid`` (uuid4, seeded) as the key, rows shuffled.

Each layout is indexed with ``build(record_key=..., record_index=True)``: the ``record_keys``
partition (per-file key bounds and Hudi bloom filters) and the ``record_index`` partition (key ->
file); build time and partition sizes on disk are printed.

Batches of 1,000 and 1,000,000 distinct keys, half present and half absent, drawn ``recent`` (the
last keys of the clustered order, plus as many new keys beyond the largest: the lines of new
orders) or ``random`` (present keys uniform over all rows, absent ones uniform over the key space),
are tagged three ways:

(a) ``IndexedTable.tag(batch, using="bloom")``: key ranges, bloom filters, then reading the
    candidates' key columns;
(b) ``IndexedTable.tag(batch, using="record")``: the record index;
(c) naive: DuckDB reads the key column(s) of every file and hash-joins them with the batch
    (registered as an arrow table): ``SELECT <batch keys>, filename FROM batch LEFT JOIN
    (SELECT <keys>, filename FROM read_parquet(glob, filename = true)) USING (<keys>)``. For the
    composite key it joins on the two integer columns (the batch is an arrow table of them, which
    ``tag`` encodes itself): the stronger baseline, building the key string in SQL is slower
    (printed for one batch).

Times are the best (and median) of ``--repeat`` warm runs after a warm-up (``--repeat-large`` for
1,000,000 keys; fewer when one run exceeds ``--budget`` seconds / repeats), page cache warm, on one
open ``IndexedTable`` (it loads the record_keys partition once); "open+tag" times ``open_table`` +
``tag`` (that load included). Bytes read are ``tag_stats``'s: compressed key column chunks read to
verify (a), record batches touched (b, memory-mapped: whole batches are counted); for (c) the
compressed key columns of every file (parquet footers). A second table measures one run with the
page cache emptied (``posix_fadvise(DONTNEED)`` on every data and index file) and what it brought
into memory (``mincore``): the bytes actually read from disk, readahead included, per file group.

Every method's tags are checked equal to the naive join's (a precondition: the script stops
otherwise). Range+bloom materializes every candidate (key, file) pair; where the files' key bounds
say a batch would make more than ``--max-pairs`` of them (UUID keys: keys x files), it is not run.

``--spark``: the 1,000,000-key batches on Spark ``local[2]``: ``adapters.spark.tag`` (when it can be
imported) vs a plain Spark join of the batch with every file's keys (``_metadata.file_path``).
``--spark-scales 0.1,1,3`` runs only the Spark sweep instead: the same ``--spark-keys`` batch
against lineitem at each scale, files scaled alike (``--files`` per ``--scale``), time and bytes
read per run and their growth from the smallest size to the largest (``tag_bench_scales.py``).

Run from the repository root (the TPC-H output is cached in the gitignored ``bench_data/``)::

    python -m benchmarks.tag_bench [--scale 1] [--files 2000] [--repeat 5] [--repeat-large 2]
                                   [--quick] [--spark] [--keep] [--workdir bench_data/tag_bench]
    python -m benchmarks.tag_bench --quick --spark-scales 0.1,1,3 [--spark-keys 100000]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.common import Timing, fmt_mb, fmt_ms, machine_line, markdown_table, met
from index_store import IndexedTable, open_table
from index_store.datagen.tpch import generate, write_files
from index_store.partitions import record_index
from index_store.tagging import TagStats, tag_stats

COMPOSITE = ("l_orderkey", "l_linenumber")
PAD = 10  # digits of the zero-padded order key in l_key
NEW_LINES = 4  # lines per new order among the absent "recent" keys
LAYOUTS = ("clustered", "clustered-pad", "random")
DRAWS = ("recent", "random")
SMALL, LARGE = 1_000, 1_000_000


# ------------------------------------------------------------------------------------ keys


def uuid4_strings(rng: np.random.Generator, n: int) -> pa.StringArray:
    """``n`` random (version 4) UUIDs as canonical strings, vectorized."""
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    hexed = np.empty((n, 32), dtype=np.uint8)
    hexed[:, 0::2] = digits[raw >> 4]
    hexed[:, 1::2] = digits[raw & 0x0F]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    text[:, [i for i in range(36) if i not in (8, 13, 18, 23)]] = hexed
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int64)
    return pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text.tobytes())]
    ).cast(pa.string())


def padded_keys(orderkey: Any, linenumber: Any) -> pa.StringArray:
    """``0000000012-3``: string order = (orderkey, linenumber) order (line numbers are 1..7)."""
    ok = pc.utf8_lpad(pc.cast(pa.array(orderkey, pa.int64()), pa.string()), PAD, "0")
    return pc.binary_join_element_wise(ok, pc.cast(pa.array(linenumber, pa.int32()), pa.string()), "-")


def complex_keys(orderkey: Any, linenumber: Any) -> pa.StringArray:
    """Hudi's ComplexKeyGenerator strings, built here independently of ``RecordKeySpec``."""
    ok = pc.cast(pa.array(orderkey, pa.int64()), pa.string())
    ln = pc.cast(pa.array(linenumber, pa.int32()), pa.string())
    return pc.binary_join_element_wise("l_orderkey:", ok, ",l_linenumber:", ln, "")


@dataclass
class Keys:
    """Every row's key parts in the clustered (source) order."""

    orderkey: np.ndarray
    linenumber: np.ndarray
    uuid: pa.StringArray
    code: np.ndarray  # orderkey * 8 + linenumber, ascending (the source is ordered by both)


@dataclass
class Batch:
    """Present keys (rows of the clustered order) and absent ones, shuffled together."""

    size: int
    draw: str
    orderkey: np.ndarray
    linenumber: np.ndarray
    uuid: pa.StringArray
    present: int

    def tag_input(self, layout: str) -> pa.Table | pa.Array:
        """What ``tag`` is given: the key columns (composite, encoded by ``tag``) or key strings."""
        if layout == "clustered":
            return pa.table(
                {
                    "l_orderkey": pa.array(self.orderkey, pa.int64()),
                    "l_linenumber": pa.array(self.linenumber, pa.int32()),
                }
            )
        return padded_keys(self.orderkey, self.linenumber) if layout == "clustered-pad" else self.uuid

    def columns(self, layout: str) -> pa.Table:
        """The batch as a table of the layout's key columns (DuckDB, Spark)."""
        value = self.tag_input(layout)
        if isinstance(value, pa.Table):
            return value
        return pa.table({"l_key" if layout == "clustered-pad" else "uuid": value})

    def key_strings(self, layout: str) -> pa.StringArray:
        if layout == "clustered":
            return complex_keys(self.orderkey, self.linenumber)
        value = self.tag_input(layout)
        assert isinstance(value, pa.StringArray)
        return value


def make_batch(keys: Keys, size: int, draw: str, rng: np.random.Generator) -> Batch:
    n = len(keys.orderkey)
    half = min(size // 2, n)
    absent = size - half
    if draw == "recent":
        rows = np.arange(n - half, n)
        j = np.arange(absent)
        new_ok = int(keys.orderkey[-1]) + 1 + j // NEW_LINES
        new_ln = 1 + j % NEW_LINES
    else:
        rows = np.sort(rng.choice(n, size=half, replace=False))
        # Absent keys uniform over the key space: order keys up to the largest, line numbers 1..7.
        top = int(keys.orderkey[-1])
        taken = np.zeros(0, dtype=np.int64)
        while taken.size < absent:
            ok = rng.integers(1, top + 1, size=2 * absent + 16)
            code = np.unique(ok * 8 + rng.integers(1, 8, size=ok.size))
            code = code[~np.isin(code, keys.code) & ~np.isin(code, taken)]
            taken = np.concatenate([taken, rng.permutation(code)[: absent - taken.size]])
        new_ok, new_ln = taken // 8, taken % 8
    orderkey = np.concatenate([keys.orderkey[rows], new_ok]).astype(np.int64)
    linenumber = np.concatenate([keys.linenumber[rows], new_ln]).astype(np.int32)
    uuids = pa.concat_arrays([keys.uuid.take(pa.array(rows)), uuid4_strings(rng, absent)])
    order = rng.permutation(size)
    return Batch(size, draw, orderkey[order], linenumber[order], uuids.take(pa.array(order)), half)


# ---------------------------------------------------------------------------------- tables


@dataclass
class Layout:
    name: str
    folder: Path
    index: Path
    record_key: str | list[str]
    key_columns: list[str]  # what the naive join reads
    files: list[Path] = field(default_factory=list)
    table: IndexedTable | None = None
    build_s: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)
    key_bytes: int = 0  # compressed bytes of the key columns of every file
    lows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # key bounds, sorted
    highs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    overlap: str = ""

    def index_files(self, part: str | None = None) -> list[Path]:
        root = self.index / part if part else self.index
        return sorted(p for p in root.rglob("*") if p.is_file())

    def pairs(self, keys: pa.StringArray) -> int:
        """How many (key, file) pairs the files' [min, max] key ranges admit (bytes compare as
        Java strings do for these ASCII keys): what the range stage will produce."""
        k = np.array(keys.to_pylist(), dtype=object)
        k = np.array([v.encode() for v in k], dtype=object)
        return int((np.searchsorted(self.lows, k, "right") - np.searchsorted(self.highs, k, "left")).sum())


def prepare_keys(source: Path, seed: int) -> tuple[pa.Table, Keys]:
    table = pq.read_table(source)
    orderkey = table["l_orderkey"].to_numpy()
    linenumber = table["l_linenumber"].to_numpy()
    code = orderkey * 8 + linenumber
    if not (np.diff(code) > 0).all():
        raise SystemExit("tpchgen-cli output is not ordered by (l_orderkey, l_linenumber) as expected")
    uuids = uuid4_strings(np.random.default_rng(seed), table.num_rows)
    return table, Keys(orderkey, linenumber, uuids, code)


def write_layouts(source_table: pa.Table, keys: Keys, tables: Path, n_files: int, seed: int) -> bool:
    """The clustered files (with ``l_key``) and the shuffled ones (with ``uuid``); False if reused."""
    marker = tables / "written"
    if marker.exists():
        return False
    shutil.rmtree(tables, ignore_errors=True)
    tables.mkdir(parents=True)
    for name, extra, column, order_by in (
        ("clustered", "l_key", padded_keys(keys.orderkey, keys.linenumber), "l_orderkey"),
        ("random", "uuid", keys.uuid, None),
    ):
        staged = tables / f"{name}-source.parquet"
        pq.write_table(source_table.append_column(extra, column), staged)
        write_files(staged, tables / name, n_files, order_by=order_by, seed=seed)
        staged.unlink()
    marker.touch()
    return True


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _key_column_bytes(files: Sequence[Path], columns: Sequence[str]) -> int:
    total = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        idx = [i for i in range(meta.num_columns) if meta.schema.column(i).path in columns]
        total += sum(
            meta.row_group(g).column(c).total_compressed_size for g in range(meta.num_row_groups) for c in idx
        )
    return total


def key_bounds(layout: Layout) -> None:
    """Each file's smallest and largest key string (read from the data, not the index), whether the
    ranges are disjoint, and in how many files' ranges a typical key (each file's median) lies."""
    lows, highs, mids = [], [], []
    for path in layout.files:
        if layout.name == "clustered":
            t = pq.read_table(path, columns=list(COMPOSITE))
            s = complex_keys(t["l_orderkey"].combine_chunks(), t["l_linenumber"].combine_chunks())
        else:
            s = pq.read_table(path, columns=layout.key_columns).column(0).combine_chunks()
        s = s.take(pc.sort_indices(s))
        lows.append(s[0].as_py().encode())
        highs.append(s[len(s) - 1].as_py().encode())
        mids.append(s[len(s) // 2].as_py().encode())
    lo, hi = np.array(lows, dtype=object), np.array(highs, dtype=object)
    order = np.argsort(lo, kind="stable")
    disjoint = bool(all(hi[order[i]] < lo[order[i + 1]] for i in range(len(order) - 1)))
    layout.lows, layout.highs = np.sort(lo), np.sort(hi)
    admit = np.searchsorted(layout.lows, np.array(mids, dtype=object), "right") - np.searchsorted(
        layout.highs, np.array(mids, dtype=object), "left"
    )
    layout.overlap = (
        f"{'disjoint' if disjoint else '**overlapping**'}: a file's median key is in "
        f"{float(np.mean(admit)):,.1f} files' [min, max]"
    )


def build_layout(layout: Layout) -> None:
    shutil.rmtree(layout.index, ignore_errors=True)
    table = open_table(layout.folder, index_path=layout.index)
    t0 = time.perf_counter()
    table.build(record_key=layout.record_key, record_index=True, progress=False)
    layout.build_s = time.perf_counter() - t0
    layout.table = open_table(layout.folder, index_path=layout.index)
    layout.sizes = {p: _du(layout.index / p) for p in ("record_keys", "record_index")}
    layout.sizes["total"] = _du(layout.index)


# ------------------------------------------------------------------------- page cache probes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PROT_READ, _MAP_SHARED = 1, 1


def evict(paths: Iterable[Path]) -> None:
    """Drop the files' pages from the page cache (written back first: ``posix_fadvise(DONTNEED)``
    leaves dirty pages, such as those of an index just built)."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident(paths: Iterable[Path]) -> int:
    """Bytes of the files in the page cache (``mincore`` over a private mapping of each)."""
    total = 0
    for path in paths:
        size = os.path.getsize(path)
        if not size:
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = _libc.mmap(None, size, _PROT_READ, _MAP_SHARED, fd, 0)
            if addr is None or addr == ctypes.c_void_p(-1).value:
                raise OSError(ctypes.get_errno(), f"mmap {path}")
            try:
                vec = np.zeros((size + _PAGE - 1) // _PAGE, dtype=np.uint8)
                if _libc.mincore(addr, size, vec.ctypes.data) != 0:
                    raise OSError(ctypes.get_errno(), f"mincore {path}")
            finally:
                _libc.munmap(addr, size)
        finally:
            os.close(fd)
        total += int((vec & 1).sum()) * _PAGE
    return total


@dataclass
class ColdRun:
    seconds: float
    disk: dict[str, int]  # file group -> bytes brought into the page cache


def forget_opened_files() -> None:
    """Close what the library keeps open between calls (memory-mapped record index files), as in a
    new process: mapped pages cannot be dropped from the page cache, and a cold run opens anew."""
    opened = getattr(record_index, "_OPENED", None)
    if isinstance(opened, dict):
        opened.clear()
    gc.collect()


def cold_run(fn: Callable[[], Any], groups: dict[str, list[Path]]) -> ColdRun:
    everything = [p for files in groups.values() for p in files]
    forget_opened_files()
    evict(everything)
    left = {name: resident(files) for name, files in groups.items()}
    if sum(left.values()) > 0.01 * sum(os.path.getsize(p) for p in everything):
        raise SystemExit(f"posix_fadvise(DONTNEED) left these bytes in the page cache (mapped?): {left}")
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    return ColdRun(seconds, {name: resident(files) for name, files in groups.items()})


# -------------------------------------------------------------------------------- methods


def timed(fn: Callable[[], Any], repeat: int, budget: float, warmup: bool = True) -> Timing:
    """Best and median of ``repeat`` runs after a warm-up, fewer when a run takes over
    ``budget / repeat`` seconds (at least one)."""
    times = []
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if not warmup:
        times.append(first)
    n = max(1, min(repeat, int(budget / max(first, 1e-9)))) - len(times)
    for _ in range(max(n, 0)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return Timing.from_list(times)


def naive_sql(layout: Layout, glob: str, string_key: bool = False) -> str:
    if layout.name == "clustered" and string_key:
        key = "'l_orderkey:' || l_orderkey || ',l_linenumber:' || l_linenumber"
        return (
            f"SELECT b.key, f.filename FROM batch b LEFT JOIN (SELECT {key} AS key, filename "
            f"FROM read_parquet('{glob}', filename = true)) f USING (key)"
        )
    cols = ", ".join(layout.key_columns)
    return (
        f"SELECT {', '.join('b.' + c for c in layout.key_columns)}, f.filename FROM batch b "
        f"LEFT JOIN (SELECT {cols}, filename FROM read_parquet('{glob}', filename = true)) f USING ({cols})"
    )


def as_tags(result: pa.Table, layout: Layout, file_column: str = "filename") -> pa.Table:
    """An answer of the naive join (or of Spark) as (key, file), sorted by key."""
    if "key" in result.column_names:
        key = result["key"].combine_chunks()
    elif layout.name == "clustered":
        key = complex_keys(result["l_orderkey"].combine_chunks(), result["l_linenumber"].combine_chunks())
    else:
        key = result[layout.key_columns[0]].combine_chunks()
    files = result[file_column].combine_chunks().cast(pa.string())
    files = pc.replace_substring_regex(files, "^file:(//)?", "")
    return pa.table({"key": key.cast(pa.string()), "file": files}).sort_by("key")


def same_tags(got: pa.Table, expected: pa.Table) -> str | None:
    """None if ``got`` (key, file) names the same file (or none) for each key as ``expected``
    (sorted by key); else what differs."""
    mine = pa.table(
        {
            "key": got["key"].combine_chunks().cast(pa.string()),
            "file": got["file"].combine_chunks().cast(pa.string()),
        }
    ).sort_by("key")
    if mine.num_rows != expected.num_rows:
        return f"{mine.num_rows:,} rows, expected {expected.num_rows:,}"
    if not mine["key"].equals(expected["key"]):
        return "other keys than the batch's"
    a, b = mine["file"], expected["file"]
    bad = pc.or_(pc.fill_null(pc.not_equal(a, b), False), pc.xor(a.is_null(), b.is_null()))
    n = pc.sum(bad.cast(pa.int64())).as_py() or 0
    if n:
        i = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
        example = f"{mine['key'][i].as_py()!r}: {a[i].as_py()} vs {b[i].as_py()}"
        return f"{n:,} keys tagged differently, e.g. {example}"
    return None


@dataclass
class Row:
    layout: str
    size: int
    draw: str
    method: str
    timing: Timing | None  # None: not run
    opened: Timing | None = None
    stats: TagStats | None = None
    files_opened: int = 0
    bytes_read: int = 0
    absent: int = 0
    present: int = 0
    n_files: int = 0
    cold: ColdRun | None = None
    note: str = ""


@dataclass
class Settings:
    repeat: int
    repeat_large: int
    budget: float
    max_pairs: float
    cold: bool


Method = Literal["bloom", "record"]


def _open_and_tag(layout: Layout, keys: pa.Table | pa.Array, using: Method) -> pa.Table:
    return open_table(layout.folder, index_path=layout.index).tag(keys, using=using)


def measure(
    layout: Layout, batch: Batch, con: duckdb.DuckDBPyConnection, opt: Settings
) -> tuple[list[Row], str]:
    """The three methods on one batch; every answer checked against the naive join's."""
    assert layout.table is not None
    repeat = opt.repeat if batch.size <= SMALL else opt.repeat_large
    glob = f"{layout.folder}/*.parquet"
    groups = {
        "data": layout.files,
        "record_keys": layout.index_files("record_keys"),
        "record_index": layout.index_files("record_index"),
    }
    groups["index (rest)"] = [
        p for p in layout.index_files() if p not in set(groups["record_keys"] + groups["record_index"])
    ]
    con.register("batch", batch.columns(layout.name))
    query = naive_sql(layout, glob)
    naive_t = timed(lambda: con.sql(query).to_arrow_table(), repeat, opt.budget)
    expected = as_tags(con.sql(query).to_arrow_table(), layout)
    found = int(pc.sum(expected["file"].is_valid().cast(pa.int64())).as_py() or 0)
    if found != batch.present:
        raise SystemExit(
            f"{layout.name} {batch.draw} {batch.size}: {found} keys present, expected {batch.present}"
        )
    note = ""
    if layout.name == "clustered" and batch.draw == "random" and batch.size > SMALL:
        con.register("batch", pa.table({"key": batch.key_strings(layout.name)}))
        sq = naive_sql(layout, glob, string_key=True)
        string_t = timed(lambda: con.sql(sq).to_arrow_table(), repeat, opt.budget)
        problem = same_tags(as_tags(con.sql(sq).to_arrow_table(), layout), expected)
        if problem:
            raise SystemExit(f"the naive string join differs from the two-column join: {problem}")
        note = (
            f"- (c) building the key string in SQL instead ({batch.size:,} random keys, clustered): "
            f"{fmt_ms(string_t.best)} vs {fmt_ms(naive_t.best)} joining on the two integer columns"
        )
        con.register("batch", batch.columns(layout.name))
    n_files = len(layout.files)
    absent = batch.size - batch.present
    naive = Row(layout.name, batch.size, batch.draw, "(c) naive DuckDB join", naive_t, None, None, n_files,
                layout.key_bytes, absent, batch.present, n_files)  # fmt: skip
    if opt.cold:

        def fresh() -> Any:
            c = duckdb.connect()
            c.register("batch", batch.columns(layout.name))
            return c.sql(query).to_arrow_table()

        naive.cold = cold_run(fresh, {"data": groups["data"]})
    con.unregister("batch")
    rows = [naive]
    inp = batch.tag_input(layout.name)
    methods: tuple[tuple[str, Method], ...] = (("(a) range+bloom", "bloom"), ("(b) record index", "record"))
    for label, using in methods:
        row = Row(layout.name, batch.size, batch.draw, label, None, absent=absent, present=batch.present,
                  n_files=n_files)  # fmt: skip
        rows.append(row)
        if using == "bloom":
            pairs = layout.pairs(batch.key_strings(layout.name))
            if pairs > opt.max_pairs:
                row.note = (
                    f"not run: the key ranges admit {pairs:,} (key, file) pairs "
                    f"(> --max-pairs {opt.max_pairs:,.0f})"
                )
                continue
        row.timing = timed(partial(layout.table.tag, inp, using=using), repeat, opt.budget)
        result = layout.table.tag(inp, using=using)
        problem = same_tags(result, expected)
        if problem:
            case = f"{layout.name} {batch.draw} {batch.size:,} {label}"
            raise SystemExit(f"{case}: tags differ from the naive join: {problem}")
        row.stats = tag_stats(result)
        row.files_opened, row.bytes_read = row.stats.files_opened, row.stats.bytes_read
        if using == "bloom" and row.stats.after_range != pairs:
            row.note = (
                f"range stage kept {row.stats.after_range:,} pairs where the files' string key bounds admit "
                f"{pairs:,} (it also holds keys to their leading integer field's min/max)"
            )
        opened = partial(_open_and_tag, layout, inp, using)
        row.opened = timed(opened, repeat, opt.budget, warmup=False)
        if opt.cold:
            row.cold = cold_run(opened, groups)
    return rows, note


# --------------------------------------------------------------------------------- output


def _speedup(rows: Sequence[Row], r: Row) -> float | None:
    naive = next(
        x
        for x in rows
        if (x.layout, x.size, x.draw) == (r.layout, r.size, r.draw) and x.stats is None and x.timing
    )
    return naive.timing.best / r.timing.best if r.timing and naive.timing else None


def main_table(rows: Sequence[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        if r.timing is None:
            out.append([r.layout, f"{r.size:,}", r.draw, r.method, r.note, "", "", "", "", "", ""])
            continue
        s = r.stats
        pairs = fp = ""
        if s is None:
            files = f"{r.n_files:,} / {r.n_files:,}"
            read = f"{fmt_mb(r.bytes_read)} key columns"
        elif s.method == "record":
            files = "0 / 0"
            read = f"{fmt_mb(r.bytes_read)} record_index batches"
        else:
            files = f"{s.files_opened:,} / {s.files_read:,}"
            read = f"{fmt_mb(r.bytes_read)} verify"
            pairs = f"{s.after_range:,} → {s.after_bloom:,}"
            per_kept = s.false_positives / s.after_bloom if s.after_bloom else 0.0
            per_all = s.false_positives / (r.absent * r.n_files) if r.absent else 0.0
            fp = f"{s.false_positives:,}: {per_kept:.2%} of kept, {per_all:.1e} of absent x files"
        speed = _speedup(rows, r)
        out.append(
            [
                r.layout, f"{r.size:,}", r.draw, r.method, r.timing.text(),
                fmt_ms(r.opened.best) if r.opened else "", files, read, pairs, fp,
                f"**{speed:.1f}x**" if s is not None and speed is not None else "1x",
            ]
        )  # fmt: skip
    return out


def detail_table(rows: Sequence[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        if r.timing is None:
            continue
        s = r.stats
        stages = "" if s is None else " / ".join(f"{k} {v * 1e3:,.1f}" for k, v in s.seconds.items())
        cold_t = disk = ""
        if r.cold is not None:
            cold_t = fmt_ms(r.cold.seconds)
            disk = ", ".join(f"{k} {fmt_mb(v)}" for k, v in r.cold.disk.items() if v)
        out.append([r.layout, f"{r.size:,}", r.draw, r.method, stages, cold_t, disk, r.note])
    return out


def targets(rows: Sequence[Row], large: int) -> list[list[str]]:
    def find(layout: str, size: int, draw: str, prefix: str) -> Row | None:
        return next(
            (
                r
                for r in rows
                if (r.layout, r.size, r.draw) == (layout, size, draw) and r.method.startswith(prefix)
            ),
            None,
        )

    out = []
    for layout in ("clustered", "clustered-pad"):
        a, c = find(layout, SMALL, "recent", "(a)"), find(layout, SMALL, "recent", "(c)")
        if a and c and a.timing and c.timing:
            ratio = c.timing.best / a.timing.best
            what = f"{SMALL:,} recent keys, {layout}: range+bloom ≥ 20x faster than (c)"
            out.append([what, f"{ratio:.1f}x", met(ratio >= 20)])
    for layout in LAYOUTS:
        b, c = find(layout, SMALL, "random", "(b)"), find(layout, SMALL, "random", "(c)")
        if b and c and b.timing and c.timing:
            ratio = c.timing.best / b.timing.best
            what = f"{SMALL:,} random keys, {layout}: record index ≥ 20x faster than (c)"
            out.append([what, f"{ratio:.1f}x", met(ratio >= 20)])
    for layout in LAYOUTS:
        for draw in DRAWS:
            b, c = find(layout, large, draw, "(b)"), find(layout, large, draw, "(c)")
            if b and c and b.timing and c.timing:
                ratio = c.timing.best / b.timing.best
                fewer = b.bytes_read / c.bytes_read
                disk = ""
                if b.cold and c.cold:
                    disk = f"; cold disk reads {sum(b.cold.disk.values()) / sum(c.cold.disk.values()):.2f}x"
                out.append(
                    [f"{large:,} {draw} keys, {layout}: record index no slower than (c), fewer bytes",
                     f"{ratio:.2f}x as fast, {fewer:.2f}x the bytes{disk}", met(ratio >= 1 and fewer < 1)]
                )  # fmt: skip
    return out


# ---------------------------------------------------------------------------------- spark


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _spark_tag_run(spark_tag: Callable[..., Any], spark: Any, table: Any, df: Any, using: str) -> None:
    """One distributed tagging run, its result materialized (``tag`` itself runs the probing)."""
    _noop(spark_tag(spark, table, df, using=using))


def plain_spark_join(spark: Any, layout: Layout, batch: Batch) -> tuple[Any, Any]:
    """The batch's keys as a cached DataFrame, and the plain way to tag them on Spark: a left join
    with every file's key columns, each row with its file (``_file``)."""
    from pyspark.sql import functions as F

    keys_df = spark.createDataFrame(batch.columns(layout.name)).cache()
    keys_df.count()
    data = spark.read.parquet(str(layout.folder)).select(
        *layout.key_columns, F.col("_metadata.file_path").alias("_file")
    )
    return keys_df, keys_df.join(data, on=layout.key_columns, how="left")


def spark_part(layouts: Sequence[Layout], batches: dict[tuple[int, str], Batch], large: int, memory: str,
               repeat: int, budget: float, max_pairs: float) -> list[str]:  # fmt: skip
    """The large batches on Spark local[2]: ``adapters.spark.tag`` vs a plain join with every key."""
    try:
        import pyspark

        from adapters.spark import local_session
    except ImportError as exc:
        return [f"\n--spark: skipped, pyspark or the Spark adapter cannot be imported ({exc})"]
    try:
        from adapters.spark.tag import tag as spark_tag
    except Exception as exc:
        return [f"\n--spark: skipped, adapters.spark.tag cannot be imported ({type(exc).__name__}: {exc})"]

    spark = local_session(app_name="tag-bench", memory=memory)
    spark.sparkContext.setLogLevel("ERROR")
    lines = [f"\nSpark {pyspark.__version__} local[2], driver memory {memory}: {large:,} keys, best of up to "
             f"{repeat} runs after a warm-up; action: write.format('noop'); tags checked against the "
             "plain join\n"]  # fmt: skip
    rows = []
    try:
        for layout in layouts:
            for draw in DRAWS:
                batch = batches[(large, draw)]
                table = layout.table
                assert table is not None
                keys_df, plain = plain_spark_join(spark, layout, batch)

                plain_t = timed(partial(_noop, plain), repeat, budget)
                expected = as_tags(plain.toArrow(), layout, "_file")
                cells = [layout.name, draw, plain_t.text()]
                for using in ("bloom", "record"):
                    if using == "bloom" and layout.pairs(batch.key_strings(layout.name)) > max_pairs:
                        cells.append("not run (pairs)")
                        continue
                    try:
                        t = timed(
                            partial(_spark_tag_run, spark_tag, spark, table, keys_df, using),
                            repeat,
                            budget,
                        )
                        got = as_tags(
                            spark_tag(spark, table, keys_df, using=using).toArrow(), layout, "_file"
                        )
                    except Exception as exc:
                        cells.append(f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
                        continue
                    problem = same_tags(got, expected)
                    check = "" if problem is None else f" **WRONG: {problem}**"
                    cells.append(f"{t.text()} ({plain_t.best / t.best:.2f}x){check}")
                rows.append(cells)
                keys_df.unpersist()
    finally:
        spark.stop()
    header = [
        "layout",
        "draw",
        "plain Spark join",
        "spark.tag bloom (vs plain)",
        "spark.tag record (vs plain)",
    ]
    return [*lines, markdown_table(header, rows)]


# ----------------------------------------------------------------------------------- main


def library_version() -> str:
    """The git commit of the library measured, and whether its code had uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        code = ["--", "index_store", "hudi_expr", "adapters"]
        dirty = subprocess.run(
            [*git, "status", "--porcelain", *code], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    changed = [line[3:] for line in dirty.stdout.splitlines() if line.strip()]
    return f"commit {head.stdout.strip()}" + (
        f", uncommitted changes in {', '.join(changed)}" if changed else ""
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=None, help="TPC-H scale factor (default 1)")
    parser.add_argument("--files", type=int, default=None, help="data files per layout (default 2000)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per 1,000-key case (default 5)")
    parser.add_argument(
        "--repeat-large", type=int, default=None, help="timed runs per large case (default 2)"
    )
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds of timed runs per measurement, about"
    )
    parser.add_argument(
        "--max-pairs", type=float, default=5e7, help="range+bloom only below this many candidate pairs"
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the emptied-page-cache runs")
    parser.add_argument(
        "--quick", action="store_true", help="SF0.1, 200 files, 3/1 repeats, 100,000 keys for the large batch"
    )
    parser.add_argument("--spark", action="store_true", help="also the large batches on Spark local[2]")
    parser.add_argument(
        "--spark-scales",
        default=None,
        help="only the Spark sweep: the same batch against lineitem at these scale factors, files "
        "scaled alike (e.g. 0.1,1,3; benchmarks/tag_bench_scales.py)",
    )
    parser.add_argument(
        "--spark-keys",
        default="100000",
        help="keys of the --spark-scales batch, or several batch sizes comma-separated (default 100000)",
    )
    parser.add_argument(
        "--spark-layouts", default="clustered-pad,random", help="layouts of the --spark-scales sweep"
    )
    parser.add_argument("--memory", default="4g", help="Spark driver memory (--spark, --spark-scales)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("bench_data/tag_bench"))
    parser.add_argument(
        "--keep", action="store_true", help="keep the written tables (the next run reuses them)"
    )
    args = parser.parse_args(argv)
    scale = args.scale if args.scale is not None else (0.1 if args.quick else 1.0)
    n_files = args.files if args.files is not None else (200 if args.quick else 2000)
    work = args.workdir.resolve()
    if args.spark_scales:
        from benchmarks.tag_bench_scales import run_scales  # imports this module: not at the top

        print(machine_line(duckdb, pa, np, memory=True))
        print(f"library: {library_version()}")
        return run_scales(args, work, scale, n_files)
    tables = work / f"sf{scale:g}-{n_files}-seed{args.seed}"
    try:
        return run(args, work, tables, scale, n_files)
    finally:
        if not args.keep:
            shutil.rmtree(tables, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, tables: Path, scale: float, n_files: int) -> int:
    opt = Settings(
        repeat=args.repeat if args.repeat is not None else (3 if args.quick else 5),
        repeat_large=args.repeat_large if args.repeat_large is not None else (1 if args.quick else 2),
        budget=args.budget,
        max_pairs=args.max_pairs,
        cold=not args.no_cold,
    )
    large = 100_000 if args.quick else LARGE
    print(machine_line(duckdb, pa, np, memory=True))
    print(f"library: {library_version()}")
    t0 = time.perf_counter()
    source = generate(scale, work / "tpch")["lineitem"]
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    source_table, keys = prepare_keys(source, args.seed)
    written = write_layouts(source_table, keys, tables, n_files, args.seed)
    write_s = time.perf_counter() - t0
    del source_table
    print(
        f"TPC-H SF{scale:g}: {len(keys.orderkey):,} lineitem rows (tpchgen-cli {gen_s:.1f} s, cached), "
        f"{n_files:,} files per layout {'written' if written else 'reused'} in {write_s:.1f} s"
    )

    layouts = [
        Layout(
            "clustered", tables / "clustered", tables / "index-composite", list(COMPOSITE), list(COMPOSITE)
        ),
        Layout("clustered-pad", tables / "clustered", tables / "index-padded", "l_key", ["l_key"]),
        Layout("random", tables / "random", tables / "index-uuid", "uuid", ["uuid"]),
    ]
    for layout in layouts:
        layout.files = sorted(layout.folder.glob("*.parquet"))
        layout.key_bytes = _key_column_bytes(layout.files, layout.key_columns)
        key_bounds(layout)
        build_layout(layout)

    print("\nLayouts; index built with build(record_key=..., record_index=True), sizes on disk:\n")
    print(markdown_table(
        ["layout", "record key", "key columns, all files", "build", "record_keys", "record_index",
         "index total", "file key ranges as strings"],
        [[lay.name, f"`{lay.record_key}`", fmt_mb(lay.key_bytes), f"{lay.build_s:.1f} s",
          fmt_mb(lay.sizes["record_keys"]), fmt_mb(lay.sizes["record_index"]), fmt_mb(lay.sizes["total"]),
          lay.overlap] for lay in layouts],
    ))  # fmt: skip

    rng = np.random.default_rng(args.seed + 1)
    batches = {(size, draw): make_batch(keys, size, draw, rng) for size in (SMALL, large) for draw in DRAWS}
    con = duckdb.connect()
    rows: list[Row] = []
    notes: list[str] = []
    for layout in layouts:
        for size in (SMALL, large):
            for draw in DRAWS:
                got, note = measure(layout, batches[(size, draw)], con, opt)
                rows += got
                notes += [note] if note else []
                done = ", ".join(f"{r.method[:3]} {fmt_ms(r.timing.best) if r.timing else '-'}" for r in got)
                print(f"  [{layout.name} {size:,} {draw}: {done}]", file=sys.stderr, flush=True)

    print(f"\nBest (median) of {opt.repeat} warm runs for {SMALL:,} keys, {opt.repeat_large} for {large:,} "
          f"(fewer when a run exceeds {opt.budget:.0f} s / repeats), after a warm-up; open+tag: open_table "
          "then tag (best of as many, no warm-up); half of each batch present, half absent; files: "
          "data files opened / read; bytes: tag_stats (naive: every file's key columns)\n")  # fmt: skip
    print(markdown_table(
        ["layout", "keys", "draw", "method", "time", "open+tag", "files", "bytes read", "pairs range → bloom",
         "bloom false positives", "vs (c)"],
        main_table(rows),
    ))  # fmt: skip
    if opt.cold:
        print("\nWhere the time goes (tag_stats seconds per stage, ms, warm) and one run with the page cache "
              "emptied first (open_table + tag; naive: a new DuckDB connection): its time, and the bytes it "
              "brought into the page cache per file group (readahead included)\n")  # fmt: skip
        print(markdown_table(
            ["layout", "keys", "draw", "method", "stages (ms)", "cold-cache time", "read from disk", "note"],
            detail_table(rows),
        ))  # fmt: skip
    print("\nTargets:\n")
    print(markdown_table(["target", "measured", "met?"], targets(rows, large)))
    print("\n- every method's tags equal the naive join's (checked in each case)")
    print("- (c) joins on " + "; ".join(f"{lay.name}: {' + '.join(lay.key_columns)}" for lay in layouts))
    print("\n".join(notes))
    if args.spark:
        print(
            "\n".join(
                spark_part(layouts, batches, large, args.memory, opt.repeat_large, opt.budget, opt.max_pairs)
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
