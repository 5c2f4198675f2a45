"""Secondary indexes (RFC-51) on TPC-H lineitem: row selection vs DuckDB alone and vs file pruning.

What it measures, on TPC-H lineitem (``tpchgen-cli``, scale factor 1 by default: 6M rows) sorted by
``l_shipdate`` (stable), in two layouts of the same rows:

- ``small``: 2,000 files (about 3,000 rows each, one row group per file);
- ``large``: 20 files with 16,384-row row groups (RFC-51's case: big base files, where file pruning
  alone keeps nearly every file).

Each layout gets two indexes over the same files:

- ``secondary``: ``build(bloom_columns=["l_partkey", "l_suppkey"])``, then a value index on
  ``l_partkey`` and ``l_suppkey`` and a term index on ``l_comment`` (``create_index`` +
  ``build_index``): file pruning by statistics and blooms first, then row selection;
- ``bloom-only``: the same ``build(bloom_columns=...)`` and no secondary index (file pruning alone).

Queries: ``SELECT *`` for ``l_partkey = X``, ``l_partkey IN (10 values)``, ``l_suppkey = X AND
l_shipmode = 'AIR'``; ``count(*)`` and ``EXISTS`` for ``l_partkey = X``; ``count(*)`` of the
``IN`` list and of a range of 0.1% of the part keys (``l_partkey BETWEEN X AND X + n``); and a
rare-term search (``SELECT *`` and ``count(*)``),
``contains_term(l_comment, w)`` for a word ``w`` in under 0.01% of rows (TPC-H comments are cut at
random lengths, so word fragments such as ``efore`` are that rare; the most frequent word under
the limit is taken, else a made-up word is planted into a few hundred rows, and the output says
which). Each is measured

1. DuckDB alone over every file (``read_parquet('<dir>/*.parquet', can_have_nan = true)``, its own
   row-group skipping on); the term search with the ``contains_term`` macro
   (``adapters.duckdb.register_macros``), and with a cheap substring test ANDed in front
   (``contains(lower(l_comment), w) AND contains_term(...)``): the faster is the baseline;
2. file pruning alone: ``adapters.duckdb.sql`` on the bloom-only table (planning included);
3. with the secondary index: ``IndexedTable.read`` / ``count`` / ``exists`` directly, and
   ``adapters.duckdb.sql`` on the secondary table (the adapter decides whether it uses the index;
   the plan's words are printed).

Every answer is checked equal to DuckDB alone's before anything is timed (the script stops
otherwise). Times are the best and median of ``--repeat`` warm rounds after a warm-up round (fewer
when one round exceeds ``--budget / --repeat`` seconds); a round runs every method of one query
once, in turn (DuckDB alone, file pruning, the index API, the adapter), so load on the machine slows
them alike. Page cache warm (data and indexes fit in memory; no cold runs). Bytes read are
compressed column chunk sizes from parquet footers (page headers included, footers not): for DuckDB
alone every chunk of the columns the query needs, for file pruning those of the kept files; for the
index path the chunks ``pyarrow`` actually reads, recorded during one run (the row groups ``read``
touches, and the row groups of index files a lookup reads); for the adapter on the secondary table,
what it reads through ``pyarrow`` (index lookups) plus what its DuckDB query reads: the needed
chunks of the files it reads whole, and of the row groups its ``file_row_number`` filter admits in
the files it reads by row number (DuckDB may decode less inside a row group; that is not counted).

Index size is the bytes on disk of the secondary index (its index files and the manifest, which
holds per-file counts and blooms of the keys) against the data files; build time
(``build_index``, both index types, all files) against one full scan of the indexed columns by
DuckDB (``SELECT count(*), sum(hash(l_partkey)), sum(hash(l_suppkey)), sum(hash(l_comment))``),
a ``SELECT *`` scan shown too.

``--codecs``: the row-id sets of the built indexes (per index file, every entry with at least 64
rows, and a sample of the sparse ones) encoded as bitarray's ``sc_encode`` (what
``index_store.secondary.rowsets`` uses for dense entries), as pyroaring bitmaps after
``run_optimize()``, both also as stored (the blobs in a zstd parquet binary column), and as uint32
lists in a zstd parquet column (values plain, or delta-encoded); and which encodings the built
index files' row-id lists actually have.

Run from the repository root; the TPC-H output, the written layouts and the built indexes are
cached in the gitignored ``bench_data/`` (``--keep`` keeps the layouts and indexes for the next
run, which then reuses them, build times included, unless ``--rebuild``)::

    python -m benchmarks.secondary_bench [--scale 1] [--files 2000] [--large-files 20]
                                         [--repeat 5] [--quick] [--codecs] [--keep] [--rebuild]
                                         [--layouts small,large] [--workdir bench_data/secondary_bench]
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import io
import itertools
import json
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from adapters.duckdb import plan, register, register_macros
from benchmarks.common import Timing, fmt_mb, fmt_ms, machine_line, markdown_table, met
from benchmarks.tag_bench import library_version, timed
from hudi_expr import Expression, col
from index_store import IndexedTable, open_table
from index_store.datagen.tpch import generate, plain_schema
from index_store.secondary.cost import Purpose
from index_store.secondary.format import META_KEY, IndexFile
from index_store.secondary.read import row_reader
from index_store.secondary.rowsets import decode_bitmap, encode_bitmap, is_dense
from index_store.secondary.select import UseRules

BLOOM = ["l_partkey", "l_suppkey"]
VALUE = ["l_partkey", "l_suppkey"]
TERM = "l_comment"
RARE = 1e-4  # the rare term is in fewer than this share of the rows
PLANTED = "zqxhudiword"  # the made-up word, when no word of the data is rare enough
PLANT_SHARE = 5e-5  # of the rows, when planting
LARGE_ROW_GROUP = 16_384
SORT = [("l_orderkey", "ascending"), ("l_linenumber", "ascending")]


# ----------------------------------------------------------------------------------------- data


@dataclass
class Meta:
    """What the written layouts hold: row count, the rare word and the query constants."""

    rows: int
    word: str
    word_rows: int
    planted: bool
    partkey: int
    partkeys: list[int]
    suppkey: int

    @classmethod
    def load(cls, path: Path) -> Meta:
        return cls(**json.loads(path.read_text()))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__, indent=1))


def rare_word(comments: pa.Array | pa.ChunkedArray, rows: int) -> tuple[str | None, int]:
    """The most frequent term in fewer than ``RARE`` of the rows (alphabetically first of ties)."""
    from hudi_expr.terms import tokenize

    terms, _ = tokenize(comments)  # (term, row) pairs, each once: a term's count is its rows
    counts = pc.value_counts(terms)
    words = counts.field("values").to_pylist()
    n = counts.field("counts").to_numpy()
    under = [(int(c), w) for w, c in zip(words, n, strict=True) if c < RARE * rows]
    if not under:
        return None, 0
    best = max(c for c, _ in under)
    return min(w for c, w in under if c == best), best


def write_layout(table: pa.Table, folder: Path, n_files: int, row_group_rows: int | None) -> None:
    """``table`` as ``n_files`` contiguous slices (sizes within one row), ``part-NNNNN.parquet``."""
    folder.mkdir(parents=True)
    bounds = np.linspace(0, table.num_rows, max(1, min(n_files, table.num_rows)) + 1).round().astype(np.int64)
    options = {"row_group_size": row_group_rows} if row_group_rows else {}
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        pq.write_table(table.slice(int(lo), int(hi - lo)), folder / f"part-{i:05d}.parquet", **options)


def write_data(source: Path, tables: Path, layouts: Sequence[LayoutSpec], seed: int) -> tuple[Meta, bool]:
    """Sort by ``l_shipdate``, choose (or plant) the rare word and the query constants, write the
    layouts not written yet (each marked done last; the choices are deterministic, so layouts
    written by different runs hold the same rows). A rewritten layout's indexes are removed."""
    marker = tables / "meta.json"
    missing = [spec for spec in layouts if not (tables / spec.key / "_written").exists()]
    if marker.exists() and not missing:
        return Meta.load(marker), False
    tables.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(source)
    table = table.cast(plain_schema(table.schema)).sort_by("l_shipdate")
    rows = table.num_rows
    word, word_rows = rare_word(table[TERM], rows)
    planted = word is None
    if planted:
        # Deterministic: the same rows for the same seed and scale; appended as a separate word.
        word_rows = max(1, round(PLANT_SHARE * rows))
        where = np.zeros(rows, dtype=bool)
        where[np.random.default_rng(seed).choice(rows, word_rows, replace=False)] = True
        comments = table[TERM].combine_chunks()
        planted_text = pc.binary_join_element_wise(comments, pa.scalar(PLANTED), " ")
        table = table.set_column(
            table.schema.get_field_index(TERM), TERM, pc.if_else(pa.array(where), planted_text, comments)
        )
        word = PLANTED
    rng = np.random.default_rng(seed + 1)
    partkeys = table["l_partkey"].combine_chunks()
    suppkeys = table["l_suppkey"].combine_chunks()
    point = int(partkeys[int(rng.integers(rows))].as_py())
    several: list[int] = []
    while len(several) < 10:
        k = int(partkeys[int(rng.integers(rows))].as_py())
        if k not in several and k != point:
            several.append(k)
    supp = int(suppkeys[int(rng.integers(rows))].as_py())
    meta = Meta(rows, str(word), word_rows, planted, point, sorted(several), supp)
    for spec in missing:
        for stale in (
            tables / spec.key,
            *tables.glob(f"{spec.key}-index-*"),
            tables / f"{spec.key}-builds.json",
        ):
            if stale.is_dir():
                shutil.rmtree(stale)
            elif stale.exists():
                stale.unlink()
        write_layout(table, tables / spec.key, spec.files, spec.row_group_rows)
        (tables / spec.key / "_written").touch()
    meta.save(marker)
    return meta, True


# ------------------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class LayoutSpec:
    key: str  # folder name
    files: int
    row_group_rows: int | None  # None: pyarrow's default (one row group per small file)

    @property
    def label(self) -> str:
        groups = f"{self.row_group_rows:,}-row groups" if self.row_group_rows else "1 row group each"
        return f"{self.files:,} files, {groups}"


class Footers:
    """Compressed column chunk sizes of files, from their footers: per file, (row groups, leaf columns)."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.position = {os.path.realpath(p): i for i, p in enumerate(files)}
        self.sizes: list[np.ndarray] = []
        self.group_rows: list[np.ndarray] = []
        self.top: list[str] = []
        self.rows = 0
        self.groups = 0
        for path in files:
            md = pq.ParquetFile(path).metadata
            self.top = [md.schema.column(j).path.split(".")[0] for j in range(md.num_columns)]
            self.sizes.append(
                np.array(
                    [
                        [md.row_group(g).column(j).total_compressed_size for j in range(md.num_columns)]
                        for g in range(md.num_row_groups)
                    ],
                    dtype=np.int64,
                ).reshape(md.num_row_groups, md.num_columns)
            )
            self.group_rows.append(np.array([md.row_group(g).num_rows for g in range(md.num_row_groups)]))
            self.rows += md.num_rows
            self.groups += md.num_row_groups

    def _leaves(self, columns: Sequence[str] | None) -> list[int]:
        return [j for j, t in enumerate(self.top) if columns is None or t in columns]

    def bytes(self, files: Sequence[str] | None, columns: Sequence[str] | None) -> int:
        """Every chunk of ``columns`` (None: all) in ``files`` (None: all)."""
        which = (
            range(len(self.sizes)) if files is None else [self.position[os.path.realpath(f)] for f in files]
        )
        leaves = self._leaves(columns)
        return int(sum(self.sizes[i][:, leaves].sum() for i in which))

    def bytes_of_rows(
        self, file: str, positions: np.ndarray, columns: Sequence[str] | None
    ) -> tuple[int, int]:
        """The chunks of ``columns`` in the row groups of ``file`` holding ``positions``; and how
        many row groups that is."""
        i = self.position[os.path.realpath(file)]
        starts = np.concatenate([[0], np.cumsum(self.group_rows[i])[:-1]])
        groups = np.unique(np.searchsorted(starts, positions, side="right") - 1)
        return int(self.sizes[i][groups][:, self._leaves(columns)].sum()), len(groups)


@dataclass
class Layout:
    spec: LayoutSpec
    folder: Path
    files: list[Path]
    footers: Footers
    secondary: IndexedTable
    bloom: IndexedTable
    sec_root: Path
    bloom_root: Path
    build: dict[str, Any] = field(default_factory=dict)  # seconds, when, library, reused
    sizes: dict[str, int] = field(default_factory=dict)


def secondary_bytes(layout: Layout) -> int:
    """The secondary index on disk: its index files and the manifest (per-file counts and blooms)."""
    return layout.sizes["value"] + layout.sizes["term"] + layout.sizes["manifest"]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def build_indexes(spec: LayoutSpec, tables: Path, rebuild: bool) -> Layout:
    """Both indexes of a layout, built unless a previous run's are there (and not ``rebuild``)."""
    folder = tables / spec.key
    sec_root, bloom_root = tables / f"{spec.key}-index-secondary", tables / f"{spec.key}-index-bloom"
    record = tables / f"{spec.key}-builds.json"
    files = sorted(folder.glob("*.parquet"))
    sec, bloom = open_table(folder, index_path=sec_root), open_table(folder, index_path=bloom_root)
    build: dict[str, Any] = {}
    if not rebuild and record.exists():
        build = json.loads(record.read_text())
        if not all(s.complete for s in sec.indexes()) or not bloom.snapshot().version:
            build = {}
    if build:
        build["reused"] = True
    else:
        shutil.rmtree(sec_root, ignore_errors=True)
        shutil.rmtree(bloom_root, ignore_errors=True)
        sec, bloom = open_table(folder, index_path=sec_root), open_table(folder, index_path=bloom_root)
        t0 = time.perf_counter()
        bloom.build(bloom_columns=BLOOM, progress=False)
        bloom_s = time.perf_counter() - t0
        sec.build(bloom_columns=BLOOM, progress=False)
        sec.create_index(VALUE, index_type="value")
        sec.create_index(TERM, index_type="term")
        t0 = time.perf_counter()
        sec.build_index(progress=False)
        build = {
            "build_index_s": time.perf_counter() - t0,
            "bloom_build_s": bloom_s,
            "when": dt.datetime.now().isoformat(timespec="seconds"),
            "library": library_version(),
        }
        record.write_text(json.dumps(build, indent=1))
        build["reused"] = False
        sec, bloom = open_table(folder, index_path=sec_root), open_table(folder, index_path=bloom_root)
    layout = Layout(spec, folder, files, Footers(files), sec, bloom, sec_root, bloom_root, build)
    layout.sizes = {
        "data": sum(p.stat().st_size for p in files),
        "value": _du(sec_root / "value"),
        "term": _du(sec_root / "term"),
        "manifest": _du(sec_root / "secondary"),
        "secondary total": _du(sec_root),
        "bloom-only index": _du(bloom_root),
    }
    return layout


# ------------------------------------------------------------------------------ recorded reads


@dataclass
class Reads:
    """Column chunks ``pyarrow`` read (compressed bytes), data files and index files apart."""

    data_bytes: int = 0
    index_bytes: int = 0
    data_groups: int = 0
    index_groups: int = 0
    data_files: set[Any] = field(default_factory=set)
    index_files: set[Any] = field(default_factory=set)

    def text(self) -> str:
        return (
            f"data {len(self.data_files):,} files / {self.data_groups:,} row groups; "
            f"index {len(self.index_files):,} files / {self.index_groups:,} row groups"
        )


@contextmanager
def recorded_reads() -> Iterator[Reads]:
    """Record what every ``pq.ParquetFile.read`` / ``read_row_groups`` / ``read_row_group`` reads
    while the block runs (the secondary index path reads data and index files with these)."""
    reads = Reads()
    lock = threading.Lock()
    cls = pq.ParquetFile
    originals = {
        name: getattr(cls, name) for name in ("__init__", "read", "read_row_groups", "read_row_group")
    }

    def note(pf: pq.ParquetFile, groups: Sequence[int], columns: Sequence[str] | None) -> None:
        md = pf.metadata
        leaves = [
            j
            for j in range(md.num_columns)
            if columns is None or md.schema.column(j).path.split(".")[0] in columns
        ]
        size = sum(md.row_group(g).column(j).total_compressed_size for g in groups for j in leaves)
        index = META_KEY in (md.metadata or {})
        key = getattr(pf, "_bench_source", None) or id(pf)
        with lock:
            if index:
                reads.index_bytes += size
                reads.index_groups += len(groups)
                reads.index_files.add(key)
            else:
                reads.data_bytes += size
                reads.data_groups += len(groups)
                reads.data_files.add(key)

    def init(self: Any, source: Any, *args: Any, **kwargs: Any) -> None:
        originals["__init__"](self, source, *args, **kwargs)
        self._bench_source = str(source)

    def read(self: Any, columns: Any = None, *args: Any, **kwargs: Any) -> Any:
        note(self, range(self.metadata.num_row_groups), columns)
        return originals["read"](self, columns, *args, **kwargs)

    def read_row_groups(self: Any, row_groups: Any, columns: Any = None, *args: Any, **kwargs: Any) -> Any:
        note(self, list(row_groups), columns)
        return originals["read_row_groups"](self, row_groups, columns, *args, **kwargs)

    def read_row_group(self: Any, i: int, columns: Any = None, *args: Any, **kwargs: Any) -> Any:
        note(self, [i], columns)
        return originals["read_row_group"](self, i, columns, *args, **kwargs)

    replaced = {
        "__init__": init,
        "read": read,
        "read_row_groups": read_row_groups,
        "read_row_group": read_row_group,
    }
    for name, fn in replaced.items():
        setattr(cls, name, fn)
    try:
        yield reads
    finally:
        for name, fn in originals.items():
            setattr(cls, name, fn)


# ------------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Query:
    key: str  # a short name, for ``--queries``
    name: str
    sql: str  # over the table ``lineitem``
    expr: Expression
    kind: str  # "rows", "count" or "exists"
    columns: tuple[str, ...] | None  # what DuckDB must read (None: every column)
    baseline_sqls: tuple[str, ...] = ()  # other DuckDB-alone texts of the same answer (the fastest counts)


def queries(meta: Meta) -> list[Query]:
    x, xs, s, w = meta.partkey, meta.partkeys, meta.suppkey, meta.word
    in_list = ", ".join(str(k) for k in xs)
    term_where = f"contains_term(l_comment, '{w}')"
    span = max(1, round(meta.rows / 30_000))  # TPC-H has 200,000 part keys per 6M rows: 0.1% of them
    return [
        Query("point", "point: l_partkey = X", f"SELECT * FROM lineitem WHERE l_partkey = {x}",
              col("l_partkey") == x, "rows", None),
        Query("in", "l_partkey IN (10 values)", f"SELECT * FROM lineitem WHERE l_partkey IN ({in_list})",
              col("l_partkey").isin(xs), "rows", None),
        Query("supp", "l_suppkey = X AND l_shipmode = 'AIR'",
              f"SELECT * FROM lineitem WHERE l_suppkey = {s} AND l_shipmode = 'AIR'",
              (col("l_suppkey") == s) & (col("l_shipmode") == "AIR"), "rows", None),
        Query("count", "count(*) WHERE l_partkey = X", f"SELECT count(*) FROM lineitem WHERE l_partkey = {x}",
              col("l_partkey") == x, "count", ("l_partkey",)),
        Query("range", f"count(*) WHERE l_partkey BETWEEN X AND X + {span - 1} (0.1% of keys)",
              f"SELECT count(*) FROM lineitem WHERE l_partkey BETWEEN {x} AND {x + span - 1}",
              (col("l_partkey") >= x) & (col("l_partkey") <= x + span - 1), "count", ("l_partkey",)),
        Query("exists", "EXISTS (l_partkey = X)",
              f"SELECT EXISTS (SELECT 1 FROM lineitem WHERE l_partkey = {x})",
              col("l_partkey") == x, "exists", ("l_partkey",)),
        Query("count-in", "count(*) WHERE l_partkey IN (10 values)",
              f"SELECT count(*) FROM lineitem WHERE l_partkey IN ({in_list})",
              col("l_partkey").isin(xs), "count", ("l_partkey",)),
        Query("count-term", f"count(*) WHERE rare term: contains_term(l_comment, '{w}')",
              f"SELECT count(*) FROM lineitem WHERE {term_where}",
              col(TERM).contains_term(w), "count", (TERM,),
              (f"SELECT count(*) FROM lineitem WHERE contains(lower(l_comment), '{w}') AND {term_where}",)),
        Query("term", f"rare term: contains_term(l_comment, '{w}')",
              f"SELECT * FROM lineitem WHERE {term_where}",
              col(TERM).contains_term(w), "rows", None,
              (f"SELECT * FROM lineitem WHERE contains(lower(l_comment), '{w}') AND {term_where}",)),
    ]  # fmt: skip


QUERY_KEYS = ("point", "in", "supp", "count", "range", "exists", "count-in", "count-term", "term")
"""The keys of ``queries``, in order (``--queries``)."""


def answer(rel: duckdb.DuckDBPyRelation, kind: str) -> Any:
    return rel.to_arrow_table() if kind == "rows" else rel.fetchall()[0][0]


def canonical(result: Any, schema: pa.Schema) -> Any:
    """Rows as one table of ``schema``'s columns and types, sorted by the table's key."""
    if not isinstance(result, pa.Table):
        return result
    plain = pa.schema([pa.field(f.name, f.type) for f in schema])
    return result.select(plain.names).cast(plain).sort_by(SORT).combine_chunks()


def same(got: Any, expected: Any) -> str | None:
    if isinstance(expected, pa.Table):
        if got.num_rows != expected.num_rows:
            return f"{got.num_rows:,} rows, DuckDB alone {expected.num_rows:,}"
        return None if got.equals(expected) else "same row count, other rows"
    return None if got == expected else f"{got!r}, DuckDB alone {expected!r}"


def shown(result: Any) -> str:
    return f"{result.num_rows:,} rows" if isinstance(result, pa.Table) else str(result)


@dataclass
class Row:
    layout: str
    query: str
    method: str
    timing: Timing
    cpu: float  # least process CPU seconds of one run (every thread)
    bytes_read: int
    bytes_note: str
    detail: str
    result: str


@dataclass
class Settings:
    repeat: int
    budget: float
    queries: tuple[str, ...] = ()  # the keys of the queries measured (empty: every one)


def interleaved(
    ways: dict[str, Callable[[], Any]], repeat: int, budget: float
) -> tuple[dict[str, Timing], dict[str, float]]:
    """Best and median wall time of each way over ``repeat`` rounds, a round running every way
    once in turn (after one warm-up round), fewer rounds when one round takes over ``budget /
    repeat`` seconds; and each way's least process CPU time (every thread's, DuckDB's included).
    On a shared machine a burst of one way's runs can meet a quiet or a busy spell; rounds spread
    the load over all ways alike, so their ratios hold, and CPU time says what waiting hid."""
    first = 0.0
    for fn in ways.values():
        t0 = time.perf_counter()
        fn()
        first += time.perf_counter() - t0
    rounds = max(1, min(repeat, int(budget / max(first, 1e-9))))
    times: dict[str, list[float]] = {k: [] for k in ways}
    cpu: dict[str, float] = dict.fromkeys(ways, float("inf"))
    for _ in range(rounds):
        for k, fn in ways.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
            cpu[k] = min(cpu[k], time.process_time() - c0)
    return {k: Timing.from_list(v) for k, v in times.items()}, cpu


def _read_files_of(sql_text: str) -> list[str] | None:
    """The parquet files a planned query names (None: it reads none by name)."""
    found = re.findall(r"'([^']+\.parquet)'", sql_text)
    return list(dict.fromkeys(found)) or None


@dataclass
class Connections:
    """DuckDB alone (a view over every file), and the adapter on each of the layout's two tables."""

    full: duckdb.DuckDBPyConnection
    bloom: duckdb.DuckDBPyConnection
    secondary: duckdb.DuckDBPyConnection

    @classmethod
    def open(cls, layout: Layout) -> Connections:
        out = cls(duckdb.connect(), duckdb.connect(), duckdb.connect())
        for con in (out.full, out.bloom, out.secondary):
            register_macros(con)
        glob = f"{layout.folder}/*.parquet"
        out.full.execute(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{glob}', can_have_nan = true)")
        register(out.bloom, "lineitem", layout.bloom)
        register(out.secondary, "lineitem", layout.secondary)
        return out

    def close(self) -> None:
        for con in (self.full, self.bloom, self.secondary):
            con.close()


def run_duckdb(con: duckdb.DuckDBPyConnection, text: str, kind: str) -> Any:
    """DuckDB alone: the query as written."""
    return answer(con.sql(text), kind)


def run_adapter(con: duckdb.DuckDBPyConnection, text: str, kind: str) -> Any:
    """``adapters.duckdb.sql``: plan (prune, and whatever else the adapter does), then run."""
    return answer(plan(con, text).relation(), kind)


def run_direct(table: IndexedTable, expr: Expression, kind: str) -> Any:
    """The secondary index API: ``read``, ``count`` or ``exists``."""
    if kind == "rows":
        return table.read(expr)
    return table.count(expr) if kind == "count" else table.exists(expr)


def measure_query(layout: Layout, q: Query, cons: Connections, opt: Settings) -> tuple[list[Row], list[str]]:
    """One query four ways; every answer checked against DuckDB alone's before anything is timed."""
    name, n_files = layout.spec.key, len(layout.files)
    schema = layout.secondary.snapshot().schema
    expected = canonical(run_duckdb(cons.full, q.sql, q.kind), schema)
    ways: dict[str, Callable[[], Any]] = {
        **{f"DuckDB alone: {t}": partial(run_duckdb, cons.full, t, q.kind) for t in q.baseline_sqls},
        "file pruning alone": partial(run_adapter, cons.bloom, q.sql, q.kind),
        "secondary index": partial(run_direct, layout.secondary, q.expr, q.kind),
        "secondary table through the adapter": partial(run_adapter, cons.secondary, q.sql, q.kind),
    }
    for label, fn in ways.items():
        problem = same(canonical(fn(), schema), expected)
        if problem:
            raise SystemExit(
                f"{name} / {q.name} / {label}: the answer differs from DuckDB alone's: {problem}"
            )
    all_bytes = layout.footers.bytes(None, q.columns)
    cols = "every column" if q.columns is None else ", ".join(q.columns)
    answer_text = shown(expected)
    rows: list[Row] = []
    notes: list[str] = []
    # Every way timed round-robin (one run of each in turn), so load on the machine hits them alike.
    alone = {
        f"DuckDB alone: {t}": partial(run_duckdb, cons.full, t, q.kind) for t in (q.sql, *q.baseline_sqls)
    }
    timings, cpu = interleaved(
        {**alone, **{k: v for k, v in ways.items() if k not in alone}}, opt.repeat, opt.budget
    )

    # 1. DuckDB alone: the fastest of the equivalent texts.
    texts = [(timings[f"DuckDB alone: {t}"], t) for t in (q.sql, *q.baseline_sqls)]
    base, base_sql = min(texts, key=lambda p: p[0].best)
    if q.baseline_sqls:
        each = "; ".join(f"`{t.split(' WHERE ', 1)[1]}` {fmt_ms(tm.best)}" for tm, t in texts)
        notes.append(f"- {name}, {q.name}: DuckDB alone, {each} (the faster is the baseline)")
    groups = f"{n_files:,} files / {layout.footers.groups:,} row groups"
    rows.append(
        Row(name, q.name, "DuckDB alone", base, cpu[f"DuckDB alone: {base_sql}"], all_bytes, cols, groups,
            answer_text)
    )  # fmt: skip

    # 2. File pruning alone: the bloom-only table through the adapter (planning included).
    p = plan(cons.bloom, q.sql)
    kept = [f for t in p.tables if t.result is not None for f in t.result.files]
    pruned = timings["file pruning alone"]
    kept_bytes = layout.footers.bytes(kept, q.columns) if p.tables else all_bytes
    rows.append(Row(name, q.name, "file pruning alone (bloom-only, adapters.duckdb.sql)", pruned,
                    cpu["file pruning alone"], kept_bytes, cols, f"kept {len(kept):,} of {n_files:,} files",
                    answer_text))  # fmt: skip

    # 3a. The secondary index directly.
    direct = timings["secondary index"]
    with recorded_reads() as reads:
        ways["secondary index"]()
    what = {"rows": "read", "count": "count", "exists": "exists"}[q.kind]
    split = f"data {fmt_mb(reads.data_bytes)} + index {fmt_mb(reads.index_bytes)}"
    total = reads.data_bytes + reads.index_bytes
    rows.append(
        Row(name, q.name, f"secondary index: t.{what}()", direct, cpu["secondary index"], total, split,
            reads.text(), answer_text)
    )  # fmt: skip
    purpose: Purpose = "count" if q.kind == "count" else "exists" if q.kind == "exists" else "rows"
    width = None if q.columns is None else len(q.columns)
    rules = UseRules(purpose=purpose, columns=width, reader=row_reader().name)  # as t.read/count/exists
    looked = layout.secondary.secondary.dictionary_rows(q.expr) if q.kind != "rows" else None
    if looked is not None:  # what t.count/t.exists do first; select() is their fallback
        notes.append(
            f"- {name}, {q.name}: t.{what}(): answered by the dictionary (one lookup): {looked.rows:,} "
            f"rows in {len(looked.files):,} files, no index or data file read"
        )
    else:
        selection = layout.secondary.select(q.expr, rules)
        notes.append(f"- {name}, {q.name}: t.{what}(): " + selection.explain().replace("\n", "; "))

    # 3b. The secondary table through the adapter, which uses the index where it can.
    p = plan(cons.secondary, q.sql)
    said = [ln.strip() for ln in str(p).splitlines() if "secondary" in ln.lower() or "row" in ln.lower()]
    uses = any("secondary index used" in ln.lower() for ln in said) or _uses_index(p)
    through = timings["secondary table through the adapter"]
    with recorded_reads() as reads:
        ways["secondary table through the adapter"]()
    duck_bytes, duck_text = adapter_reads(layout, p, q)
    pyarrow_bytes = reads.data_bytes + reads.index_bytes
    rows.append(Row(
        name, q.name, "secondary table, adapters.duckdb.sql" + ("" if uses else " (index not used)"), through,
        cpu["secondary table through the adapter"], pyarrow_bytes + duck_bytes,
        f"pyarrow {fmt_mb(pyarrow_bytes)} + DuckDB {fmt_mb(duck_bytes)}",
        f"DuckDB: {duck_text}; pyarrow: {reads.text()}", answer_text,
    ))  # fmt: skip
    notes.append(
        f"- {name}, {q.name}: adapters.duckdb.sql on the secondary table: "
        + ("; ".join(said) if said else "the plan does not mention the secondary index")
    )
    return rows, notes


def measure_layout(layout: Layout, meta: Meta, opt: Settings) -> tuple[list[Row], list[str]]:
    cons = Connections.open(layout)
    rows: list[Row] = []
    notes: list[str] = []
    try:
        for q in queries(meta):
            if opt.queries and q.key not in opt.queries:
                continue
            r, n = measure_query(layout, q, cons, opt)
            rows += r
            notes += n
            times = ", ".join(fmt_ms(x.timing.best) for x in r)
            print(f"  [{layout.spec.key} {q.name}: {times}]", file=sys.stderr, flush=True)
    finally:
        cons.close()
    return rows, notes


def adapter_reads(layout: Layout, p: Any, q: Query) -> tuple[int, str]:
    """What DuckDB reads for an adapter plan: the needed chunks of the files it reads whole, and of
    the row groups its ``file_row_number`` filter admits in the files it reads by row number
    (DuckDB skips the other row groups; within one it may decode less, which is not counted)."""
    footers = layout.footers
    if not p.tables:
        return (footers.bytes(None, q.columns), "every file (no plan)") if p.sql == q.sql else (0, "no read")
    total, whole, filtered, groups = 0, 0, 0, 0
    for t in p.tables:
        planned = getattr(t, "reads", None)
        if planned is None:
            files = t.result.files if t.result is not None else [str(f) for f in layout.files]
            total += footers.bytes(files, q.columns)
            whole += len(files)
            continue
        for read in planned.reads:
            for f in read.files:
                admitted = None if read.condition is None else row_filter(read.condition)
                if admitted is None:
                    total += footers.bytes([f], q.columns)
                    whole += 1
                else:
                    size, n = footers.bytes_of_rows(f, admitted, q.columns)
                    total += size
                    groups += n
                    filtered += 1
    text = f"{whole:,} files whole, {filtered:,} by row number ({groups:,} row groups)"
    return total, text if whole or filtered else "no data file read"


def row_filter(condition: str) -> np.ndarray | None:
    """Row positions (or ranges' ends) that a ``file_row_number`` condition admits, enough to find
    the row groups it reads: ``= n``, ``IN (...)``, ``BETWEEN a AND b [OR ...]``; None if other."""
    ranges = re.findall(r"BETWEEN (\d+) AND (\d+)", condition)
    if ranges:
        return np.concatenate([np.arange(int(a), int(b) + 1) for a, b in ranges])
    listed = re.search(r"IN \(([\d, ]+)\)", condition) or re.search(r"= (\d+)$", condition.strip())
    if listed:
        return np.array([int(x) for x in listed.group(1).split(",")], dtype=np.int64)
    return None


def _uses_index(p: Any) -> bool:
    """Whether the adapter's plan says it selected rows with the secondary index (any attribute
    the adapter may expose for it)."""
    for t in getattr(p, "tables", ()):
        if getattr(t, "index_used", False) is True or "secondary index" in getattr(t, "answer", ""):
            return True  # rows selected, or a count / EXISTS answered (its dictionary: no selection)
        for attr in ("selection", "row_selection", "secondary", "index_use"):
            value = getattr(t, attr, None)
            used = getattr(getattr(value, "use", value), "used", None)
            if used:
                return True
    return False


def _fetch(con: duckdb.DuckDBPyConnection, text: str) -> Any:
    return con.sql(text).fetchall()


def full_scans(layout: Layout, opt: Settings) -> dict[str, Timing]:
    glob = f"{layout.folder}/*.parquet"
    con = duckdb.connect()
    con.execute(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{glob}', can_have_nan = true)")
    scans = {
        "indexed columns": "SELECT count(*), sum(hash(l_partkey)), sum(hash(l_suppkey)), "
        "sum(hash(l_comment)) FROM lineitem",
        "SELECT *": "SELECT count(*), sum(hash(COLUMNS(*))) FROM lineitem",
    }
    out = {k: timed(partial(_fetch, con, s), opt.repeat, opt.budget) for k, s in scans.items()}
    con.close()
    return out


# ------------------------------------------------------------------------------------- output


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "-"


def query_table(rows: Sequence[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        base = next(
            x for x in rows if (x.layout, x.query) == (r.layout, r.query) and x.method == "DuckDB alone"
        )
        bloom = next(
            x
            for x in rows
            if (x.layout, x.query) == (r.layout, r.query) and x.method.startswith("file pruning")
        )
        out.append([
            r.layout, r.query, r.method, f"{r.timing.text()}; CPU {fmt_ms(r.cpu)}",
            f"{fmt_mb(r.bytes_read)} ({r.bytes_note})",
            ratio(base.timing.best, r.timing.best), ratio(bloom.timing.best, r.timing.best),
            f"{ratio(min(base.timing.best, bloom.timing.best), r.timing.best)} "
            f"({ratio(min(base.timing.median, bloom.timing.median), r.timing.median)})",
            ratio(base.bytes_read, r.bytes_read) if r.bytes_read else "no data read",
            r.detail, r.result,
        ])  # fmt: skip
    return out


def targets(
    rows: Sequence[Row], layouts: Sequence[Layout], scans: dict[str, dict[str, Timing]]
) -> list[list[str]]:
    """Issue 25's targets per layout: the index API (``t.read``/``count``/``exists``) and the adapter
    on the secondary table, each against DuckDB alone (and file pruning alone where the issue says)."""

    def find(layout: str, query: str, method: str) -> Row | None:
        return next(
            (
                r
                for r in rows
                if r.layout == layout and r.query.startswith(query) and r.method.startswith(method)
            ),
            None,
        )

    apis = (("secondary index", "in-process"), ("secondary table, adapters.duckdb.sql", "through SQL"))
    out = []
    for lay in layouts:
        k = lay.spec.key
        # Never slower: every shape, both APIs, against the faster of DuckDB alone and pruning alone.
        worst: list[tuple[float, str]] = []
        for r in rows:
            if r.layout != k or not r.method.startswith(tuple(m for m, _ in apis)):
                continue
            b, f = find(k, r.query, "DuckDB alone"), find(k, r.query, "file pruning")
            if b and f:
                api = next(label for m, label in apis if r.method.startswith(m))
                worst.append((min(b.timing.best, f.timing.best) / r.timing.best, f"{r.query} ({api})"))
        below = sorted(x for x in worst if x[0] < 1.0)
        shown = "; ".join(f"{name} {x:.2f}x" for x, name in below) or f"lowest {min(worst)[0]:.2f}x"
        out.append([f"{k}: every shape, both APIs, ≥ 1.0x the faster of DuckDB alone and pruning", shown,
                    met(not below)])  # fmt: skip

        def versus(query: str, method: str, base: str = "DuckDB alone", k: str = k) -> float | None:
            b, i = find(k, query, base), find(k, query, method)
            return None if not (b and i) else b.timing.best / i.timing.best

        goals = [
            ("count(*) WHERE l_partkey = X", "count of one key", 20, 5),
            ("EXISTS", "EXISTS of one key", 20, 5),
            ("l_partkey IN", "IN of 10 keys, SELECT *", 3, 3),
            ("count(*) WHERE l_partkey IN", "IN of 10 keys, count(*)", 3, 3),
            ("count(*) WHERE l_partkey BETWEEN", "count of a range of 0.1% of keys", 5, 5),
            ("rare term", "a rare term, SELECT *", 10, 10),
            ("count(*) WHERE rare term", "a rare term, count(*)", 10, 10),
        ]
        for query, label, in_process, through_sql in goals:
            for (method, api), goal in zip(apis, (in_process, through_sql), strict=True):
                x = versus(query, method)
                if x is not None:
                    out.append([f"{k}: {label} ≥ {goal}x DuckDB alone ({api})", f"{x:.1f}x", met(x >= goal)])
        for method, api in apis:
            if k == "large":
                x = versus("point", method)
                if x is not None:
                    out.append([f"{k}: point SELECT * ≥ 2x DuckDB alone ({api})", f"{x:.2f}x", met(x >= 2)])
            else:
                x = versus("point", method, "file pruning")
                if x is not None:
                    out.append([f"{k}: point SELECT * ≥ 1x bloom pruning ({api})", f"{x:.2f}x", met(x >= 1)])
        share = secondary_bytes(lay) / lay.sizes["data"]
        out.append([f"{k}: all secondary indexes (2 value + 1 term, manifest) / data",
                    f"{share:.1%}", "per index: postings_bench"])  # fmt: skip
        built = lay.build["build_index_s"] / scans[k]["indexed columns"].best
        out.append([f"{k}: build_index of all three / one scan of the indexed columns",
                    f"{built:.1f}x", "per index: postings_bench"])  # fmt: skip
    return out


# -------------------------------------------------------------------------------------- codecs


@dataclass
class CodecGroup:
    layout: str
    index: str
    entries: str
    sets: list[np.ndarray] = field(default_factory=list)
    row_counts: list[int] = field(default_factory=list)


def _entries(path: Path, column: str) -> tuple[int, np.ndarray, Callable[[int], np.ndarray]]:
    """(row count of the base file, entry counts, rows of entry i) of one column of an index file."""
    f = IndexFile(path)
    start, stop = f.layout[column]
    t = pq.ParquetFile(path).read_row_groups(range(start, stop), columns=["count", "rows", "bitmap"])
    counts = t["count"].to_numpy()
    lists = t["rows"].combine_chunks()
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False)
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    blobs = t["bitmap"].combine_chunks()

    def rows(i: int) -> np.ndarray:
        if valid[i]:
            return values[offsets[i] : offsets[i + 1]].astype(np.uint32)
        return decode_bitmap(blobs[i].as_py())

    return f.info.row_count, counts, rows


def codec_groups(layout: Layout, sparse_sample: int, seed: int) -> list[CodecGroup]:
    rng = np.random.default_rng(seed)
    out = []
    for kind, columns in (("value", VALUE), ("term", [TERM])):
        paths = sorted((layout.sec_root / kind).rglob("*.idx"))
        for column in columns:
            buckets = {
                b: CodecGroup(layout.spec.key, f"{kind} {column}", b)
                for b in ("≥ 64 rows, < 1/16 of the file (lists)", "≥ 64 rows, ≥ 1/16 (bitmaps)")
            }
            sparse: list[tuple[int, Callable[[int], np.ndarray], np.ndarray]] = []
            for path in paths:
                row_count, counts, rows = _entries(path, column)
                dense = is_dense(counts.astype(np.int64), row_count)
                for i in np.flatnonzero(counts >= 64):
                    g = buckets[
                        "≥ 64 rows, ≥ 1/16 (bitmaps)" if dense[i] else "≥ 64 rows, < 1/16 of the file (lists)"
                    ]
                    g.sets.append(rows(int(i)))
                    g.row_counts.append(row_count)
                sparse.append((row_count, rows, np.flatnonzero(counts < 64)))
            total = sum(len(s[2]) for s in sparse)
            g = CodecGroup(
                layout.spec.key,
                f"{kind} {column}",
                f"< 64 rows (sample of {min(sparse_sample, total):,} of {total:,})",
            )
            if total:
                picks = np.sort(rng.choice(total, min(sparse_sample, total), replace=False))
                starts = np.cumsum([0] + [len(s[2]) for s in sparse])
                for p in picks:
                    k = int(np.searchsorted(starts, p, side="right") - 1)
                    row_count, rows, which = sparse[k]
                    g.sets.append(rows(int(which[p - starts[k]])))
                    g.row_counts.append(row_count)
            out += [b for b in buckets.values() if b.sets] + ([g] if g.sets else [])
    return out  # fmt: skip


def _parquet_list_bytes(sets: Sequence[np.ndarray], encoding: str) -> int:
    """The compressed size of ``sets`` as one list<uint32> parquet column, zstd, values ``encoding``."""
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int32)
    values = pa.array(np.concatenate(sets).astype(np.uint32), pa.uint32())
    table = pa.table({"rows": pa.ListArray.from_arrays(pa.array(offsets), values)})
    sink = io.BytesIO()
    # pyarrow names the values of a list column ``<name>.list.element`` (compliant nested types).
    pq.write_table(
        table, sink, compression="zstd", use_dictionary=False, column_encoding={"rows.list.element": encoding}
    )
    md = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    chunks = [md.row_group(g).column(0) for g in range(md.num_row_groups)]
    if any(encoding not in c.encodings for c in chunks):
        raise RuntimeError(f"pyarrow did not write {encoding} ({chunks[0].encodings})")
    return sum(c.total_compressed_size for c in chunks)


def _parquet_binary_bytes(blobs: Sequence[bytes]) -> int:
    """The compressed size of ``blobs`` as one zstd parquet binary column (how the index stores bitmaps)."""
    sink = io.BytesIO()
    pq.write_table(
        pa.table({"b": pa.array(blobs, pa.binary())}), sink, compression="zstd", use_dictionary=False
    )
    md = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    return sum(md.row_group(g).column(0).total_compressed_size for g in range(md.num_row_groups))


def codec_table(groups: Sequence[CodecGroup]) -> list[list[str]]:
    from pyroaring import BitMap

    out = []
    for g in groups:
        ids = sum(len(s) for s in g.sets)
        sc = [encode_bitmap(s, n) for s, n in zip(g.sets, g.row_counts, strict=True)]
        roaring = []
        for s in g.sets:
            bm = BitMap(array.array("I", s.astype(np.uint32).tobytes()))
            bm.run_optimize()
            roaring.append(bm.serialize())
        stored = {
            "sc_encode": _parquet_binary_bytes(sc),
            "roaring": _parquet_binary_bytes(roaring),
            "list plain": _parquet_list_bytes(g.sets, "PLAIN"),
            "list delta": _parquet_list_bytes(g.sets, "DELTA_BINARY_PACKED"),
        }
        raw = {"sc_encode": sum(map(len, sc)), "roaring": sum(map(len, roaring))}
        cells = [
            f"{fmt_kb(raw[k])} / {fmt_kb(stored[k])} ({stored[k] / ids:.2f} B/id)"
            for k in ("sc_encode", "roaring")
        ] + [f"{fmt_kb(stored[k])} ({stored[k] / ids:.2f} B/id)" for k in ("list plain", "list delta")]
        win = min(stored, key=lambda k: stored[k])
        out.append([g.layout, g.index, g.entries, f"{len(g.sets):,}", f"{ids:,}", *cells, win])
    return out


def stored_encodings(layout: Layout) -> str:
    """The encodings of the row-id lists in the layout's built index files (from one footer per type)."""
    parts = []
    for kind in ("value", "term"):
        path = next(iter(sorted((layout.sec_root / kind).rglob("*.idx"))), None)
        if path is None:
            continue
        md = pq.ParquetFile(path).metadata
        chunks = [md.row_group(0).column(j) for j in range(md.num_columns)]
        found = {
            c.path_in_schema: "+".join(c.encodings) for c in chunks if c.path_in_schema.startswith("rows")
        }
        parts.append(f"{kind}: " + ", ".join(f"`{k}` {v}" for k, v in found.items()))
    return f"{layout.spec.key} index files store their row-id lists as " + "; ".join(parts)


def fmt_kb(b: float) -> str:
    return f"{b / 1e3:,.0f} kB" if b >= 1e4 else f"{b / 1e3:,.1f} kB"


# ---------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=None, help="TPC-H scale factor (default 1)")
    parser.add_argument("--files", type=int, default=None, help="files of the small layout (default 2000)")
    parser.add_argument(
        "--large-files", type=int, default=None, help="files of the large layout (default 20)"
    )
    parser.add_argument(
        "--repeat", type=int, default=None, help="timed warm runs per measurement (default 5)"
    )
    parser.add_argument(
        "--budget", type=float, default=30.0, help="seconds of timed runs per measurement, about"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: SF0.1, 200 and 4 files, 3 repeats")
    parser.add_argument("--codecs", action="store_true", help="also compare row-id set encodings")
    parser.add_argument(
        "--sparse-sample", type=int, default=20_000, help="sparse entries per column (--codecs)"
    )
    parser.add_argument("--layouts", default="small,large", help="which layouts: small, large or both")
    parser.add_argument(
        "--queries",
        default="",
        help=f"only these query shapes, comma-separated keys ({', '.join(QUERY_KEYS)}; default every one)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("bench_data/secondary_bench"))
    parser.add_argument(
        "--keep", action="store_true", help="keep layouts and indexes (the next run reuses them)"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="build the indexes even if kept ones are there"
    )
    args = parser.parse_args(argv)
    scale = args.scale if args.scale is not None else (0.1 if args.quick else 1.0)
    small = args.files if args.files is not None else (200 if args.quick else 2000)
    large = args.large_files if args.large_files is not None else (4 if args.quick else 20)
    wanted = [k.strip() for k in args.layouts.split(",") if k.strip()]
    specs = [s for s in (LayoutSpec("small", small, None), LayoutSpec("large", large, LARGE_ROW_GROUP))
             if s.key in wanted]  # fmt: skip
    if not specs:
        parser.error("--layouts names neither small nor large")
    unknown = {k.strip() for k in args.queries.split(",") if k.strip()} - set(QUERY_KEYS)
    if unknown:
        parser.error(
            f"--queries: no query shape {', '.join(sorted(unknown))} (one of {', '.join(QUERY_KEYS)})"
        )
    work = args.workdir.resolve()
    tables = work / f"sf{scale:g}-{small}-{large}-seed{args.seed}"
    try:
        return run(args, work, tables, scale, specs)
    finally:
        if not args.keep:
            shutil.rmtree(tables, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, tables: Path, scale: float, specs: Sequence[LayoutSpec]) -> int:
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 5)
    opt = Settings(
        repeat=repeat,
        budget=args.budget,
        queries=tuple(k.strip() for k in args.queries.split(",") if k.strip()),
    )
    print(machine_line(duckdb, pa, np, memory=True))
    print(f"library: {library_version()}")
    t0 = time.perf_counter()
    source = generate(scale, work / "tpch")["lineitem"]
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    meta, written = write_data(source, tables, specs, args.seed)
    write_s = time.perf_counter() - t0
    print(
        f"TPC-H SF{scale:g}: {meta.rows:,} lineitem rows sorted by l_shipdate (tpchgen-cli {gen_s:.1f} s, "
        f"cached), layouts {'written' if written else 'reused'} in {write_s:.1f} s"
    )
    if meta.planted:
        print(
            f"rare term: no word of l_comment is in fewer than {RARE:.2%} of the rows, so the made-up word "
            f"'{meta.word}' was planted (appended) into {meta.word_rows:,} rows chosen with seed {args.seed}"
        )
    else:
        print(
            f"rare term: '{meta.word}', in {meta.word_rows:,} rows ({meta.word_rows / meta.rows:.4%}): the "
            f"most frequent word of l_comment in under {RARE:.2%} of the rows (TPC-H cuts comments at random "
            "lengths, leaving word fragments); nothing planted"
        )
    print(f"constants: X = l_partkey {meta.partkey}, IN list {meta.partkeys}, l_suppkey {meta.suppkey}")

    layouts = []
    for spec in specs:
        t0 = time.perf_counter()
        layouts.append(build_indexes(spec, tables, args.rebuild))
        print(
            f"  [{spec.key}: indexes ready in {time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True
        )
    scans = {lay.spec.key: full_scans(lay, opt) for lay in layouts}

    print(
        "\nLayouts and indexes, sizes on disk. Secondary: a value index on l_partkey, l_suppkey and a term "
        "index on l_comment, one index file per type and base file; both tables' indexes also hold footer "
        "statistics and blooms on l_partkey, l_suppkey. Build: build_index (both types, all files) against "
        "DuckDB scanning every file once (best of warm runs)\n"
    )
    lines = []
    for lay in layouts:
        s, b, sc = lay.sizes, lay.build, scans[lay.spec.key]
        built = b["build_index_s"]
        when = f" (built {b['when']}, reused)" if b.get("reused") else ""
        lines.append([
            f"{lay.spec.key}: {lay.spec.label}", f"{lay.footers.rows:,} / {lay.footers.groups:,}",
            fmt_mb(s["data"]), fmt_mb(s["value"]), fmt_mb(s["term"]),
            fmt_mb(s["manifest"]), f"{secondary_bytes(lay) / s['data']:.1%}", fmt_mb(s["bloom-only index"]),
            f"{built:.1f} s{when}",
            f"{sc['indexed columns'].text()} / {sc['SELECT *'].text()}",
            f"{built / sc['indexed columns'].best:.1f}x / {built / sc['SELECT *'].best:.1f}x",
        ])  # fmt: skip
    print(markdown_table(
        ["layout", "rows / row groups", "data files", "value index", "term index", "manifest",
         "secondary / data", "bloom-only index", "build_index", "scan: indexed columns / SELECT *",
         "build / scan"],
        lines,
    ))  # fmt: skip
    for lay in layouts:
        s = lay.sizes
        rest = s["secondary total"] - secondary_bytes(lay)
        print(
            f"- {lay.spec.key}: the rest of the secondary table's index (statistics, blooms, timeline) "
            f"{fmt_mb(rest)}; bloom-only build (footers, blooms) {lay.build['bloom_build_s']:.1f} s"
        )

    rows: list[Row] = []
    notes: list[str] = []
    for lay in layouts:
        r, n = measure_layout(lay, meta, opt)
        rows += r
        notes += n
    print(
        f"\nBest (median) of up to {opt.repeat} warm rounds after a warm-up round (fewer when one round "
        f"exceeds {opt.budget:.0f} s / {opt.repeat}), a round running every method of a query once in turn; "
        "page cache warm; every answer equal to DuckDB alone's (checked before timing). Bytes: compressed "
        "column chunks read (see the script's docstring). CPU: the least process CPU time of one run (all "
        "threads). Ratios: DuckDB alone / this, file pruning / this, "
        "the faster of the two / this, best (median) (higher is better)\n"
    )
    print(markdown_table(
        ["layout", "query", "method", "time", "bytes read", "vs DuckDB alone", "vs file pruning",
         "vs the faster", "bytes: DuckDB alone / this", "touched", "answer"],
        query_table(rows),
    ))  # fmt: skip
    print("\nTargets:\n")
    print(markdown_table(["target", "measured", "met?"], targets(rows, layouts, scans)))
    print("\nWhat each path did:\n")
    print("\n".join(notes))
    if args.codecs:
        print(
            "\nRow-id set encodings of the built indexes: every entry with at least 64 rows (per index file) "
            "and a seeded sample of the sparse ones, grouped as the index stores them (lists below 1/16 of "
            "the file's rows, bitmaps above). Bytes summed over a group: sc_encode and roaring as one blob "
            "per entry, then those blobs in one zstd parquet binary column (how the index stores bitmaps); "
            "lists as one zstd parquet list<uint32> column, values PLAIN or DELTA_BINARY_PACKED\n"
        )
        groups = [g for lay in layouts for g in codec_groups(lay, args.sparse_sample, args.seed)]
        print(markdown_table(
            ["layout", "index", "entries", "sets", "row ids", "bitarray sc_encode: blobs / in zstd parquet",
             "roaring (run_optimize): blobs / in zstd parquet", "uint32 list, plain, zstd parquet",
             "uint32 list, delta, zstd parquet", "smallest stored"],
            codec_table(groups),
        ))  # fmt: skip
        print("\n" + "\n".join(f"- {stored_encodings(lay)}" for lay in layouts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
