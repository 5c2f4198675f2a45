"""The index partitions as parquet: ``files``, ``column_stats`` and ``bloom_filters``.

Each commit adds new files (never modifies one). ``files`` rows are versioned: the newest row of a
``file_idx`` wins and may be a tombstone (``deleted``). ``column_stats`` rows are sorted by
(column, file_idx) in row groups of about one column's size, so loading 2 columns of a 200-column
index reads the few row groups whose ``column`` range holds them, found from the footer alone.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import BloomFilter, BloomFilterSet, ColumnStats, FileStats
from hudi_expr.stats import leaf_columns
from index_store.codec import SLOT_TYPES, decode, encode, slot_of
from index_store.errors import IndexCorruptError
from index_store.keys import file_key_parts, index_keys

__all__ = [
    "BLOOM_SCHEMA",
    "COLUMN_STATS_SCHEMA",
    "FILES_SCHEMA",
    "read_blooms",
    "read_column_stats",
    "read_files",
    "write_blooms",
    "write_column_stats",
    "write_files",
]

FILES_SCHEMA = pa.schema(
    [
        ("file_idx", pa.int64()),
        ("path", pa.string()),
        ("partition", pa.string()),
        ("size", pa.int64()),
        ("row_count", pa.int64()),
        ("instant", pa.string()),
        ("deleted", pa.bool_()),
        ("version", pa.int64()),
        ("mtime", pa.int64()),  # ns; null in indexes written before it was recorded
    ]
)

# Columns an older index may lack: read as nulls (unknown), never as an error.
_ADDED_LATER = {"mtime"}

# Index files end in ``.idx`` (the content is parquet): a user's glob over the table
# (``**/*.parquet``) must never read the index as data. Indexes written with ``.parquet`` names
# still open; ``compact`` rewrites them under the new name.
INDEX_FILE_SUFFIX = ".idx"

COLUMN_STATS_SCHEMA = pa.schema(
    [("key", pa.string()), ("column", pa.string()), ("file_idx", pa.int64())]
    + [(f"{end}_{slot}", t) for slot, t in SLOT_TYPES.items() for end in ("min", "max")]
    + [
        ("null_count", pa.int64()),
        ("nan_count", pa.int64()),
        ("value_count", pa.int64()),
        ("exact", pa.bool_()),
    ]
)

BLOOM_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("column", pa.string()),
        ("file_idx", pa.int64()),
        ("bloom", pa.large_binary()),
        ("type", pa.string()),
    ]
)

BLOOM_TYPE = "hudi_expr.bloom.v1"
_MAX_ROW_GROUP = 262_144


# ------------------------------------------------------------------------------------- writing


def _write(
    root: Path, partition: str, blocks: Sequence[pa.Table], schema: pa.Schema, max_rows: int = _MAX_ROW_GROUP
) -> str:
    """Write one new parquet file of ``partition`` durably; returns its path relative to ``root``.

    Each block starts its own row groups (of at most ``max_rows``), so a row group never mixes
    two blocks: one column's stats can be read without touching another's.
    """
    rel = f"{partition}/{uuid.uuid4().hex}{INDEX_FILE_SUFFIX}"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    dictionary = [c for c in ("column", "partition", "type") if c in schema.names]
    with open(path, "wb") as f:
        with pq.ParquetWriter(f, schema, compression="zstd", use_dictionary=dictionary) as writer:
            for block in blocks:
                for start in range(0, max(len(block), 1), max_rows):
                    writer.write_table(block.slice(start, max_rows), row_group_size=max_rows)
        f.flush()
        os.fsync(f.fileno())
    return rel


def write_files(root: Path, rows: pa.Table) -> str:
    """Rows of the ``files`` partition (schema ``FILES_SCHEMA``)."""
    return _write(root, "files", [rows.select(FILES_SCHEMA.names).cast(FILES_SCHEMA)], FILES_SCHEMA)


def write_column_stats(
    root: Path, file_idx: np.ndarray, partitions: pa.Array, stats: FileStats, exact: Iterable[str] = ()
) -> str:
    """One row per (column, file) for every leaf column of ``stats`` with storable bounds."""
    exact = set(exact)
    parts = file_key_parts(partitions, stats.files)
    n = stats.num_files
    idx = pa.array(file_idx, pa.int64())
    blocks: list[pa.Table] = []
    for name, t in sorted(leaf_columns(stats.schema).items()):
        slot = slot_of(t)
        cs = stats.column(name)
        if slot is None or cs is None:
            continue
        columns: dict[str, pa.Array] = {
            "key": index_keys(name, parts),
            "column": pa.repeat(pa.scalar(name, pa.string()), n),
            "file_idx": idx,
        }
        for s, st in SLOT_TYPES.items():
            for end, arr in (("min", cs.min), ("max", cs.max)):
                columns[f"{end}_{s}"] = encode(arr, t) if s == slot else pa.nulls(n, st)
        columns["null_count"] = cs.null_count
        columns["nan_count"] = cs.nan_count
        columns["value_count"] = pc.subtract(stats.row_count, cs.null_count)
        columns["exact"] = pa.array(np.full(n, name in exact))
        blocks.append(pa.table(columns, schema=COLUMN_STATS_SCHEMA))
    return _write(root, "column_stats", blocks, COLUMN_STATS_SCHEMA)


def write_blooms(
    root: Path,
    file_idx: np.ndarray,
    partitions: pa.Array,
    files: pa.Array,
    blooms: Mapping[str, Sequence[BloomFilter | None]],
) -> str:
    """One row per (column, file) that has a bloom filter."""
    parts = file_key_parts(partitions, files)
    blocks = []
    for name in sorted(blooms):
        filters = blooms[name]
        have = np.array([b is not None for b in filters], dtype=bool)
        rows = np.flatnonzero(have)
        blocks.append(
            pa.table(
                {
                    "key": index_keys(name, parts[rows]),
                    "column": pa.array([name] * len(rows), pa.string()),
                    "file_idx": pa.array(np.asarray(file_idx)[rows], pa.int64()),
                    "bloom": pa.array([filters[i].to_bytes() for i in rows], pa.large_binary()),
                    "type": pa.array([BLOOM_TYPE] * len(rows), pa.string()),
                },
                schema=BLOOM_SCHEMA,
            )
        )
    return _write(root, "bloom_filters", blocks, BLOOM_SCHEMA)


# ------------------------------------------------------------------------------------- reading


def _open(root: Path, rel: str) -> pq.ParquetFile:
    path = root / rel
    try:
        return pq.ParquetFile(path)
    except FileNotFoundError:
        raise IndexCorruptError(str(path), "the timeline lists it but it does not exist") from None
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(path), f"unreadable parquet ({exc})") from None


def _read(
    root: Path,
    rel: str,
    expected: pa.Schema,
    row_groups: list[int] | None = None,
    columns: list[str] | None = None,
    optional: Iterable[str] = (),
) -> pa.Table:
    """Read ``columns`` of an index file; ``optional`` ones it lacks are left out, not an error."""
    pf = _open(root, rel)
    path = root / rel
    present = set(pf.schema_arrow.names)
    missing = set(columns or expected.names) - present - set(optional)
    if missing:
        raise IndexCorruptError(str(path), f"missing columns {sorted(missing)}")
    if columns is not None:
        columns = [c for c in columns if c in present]
    try:
        if row_groups is None:
            return pf.read(columns=columns)
        return pf.read_row_groups(row_groups, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(path), f"unreadable parquet ({exc})") from None


LOAD_COLUMNS = ("file_idx", "path", "row_count", "deleted", "version", "size", "mtime")


def read_files(root: Path, live: Sequence[str], columns: Sequence[str] = FILES_SCHEMA.names) -> pa.Table:
    """The live data files: newest row per ``file_idx``, tombstones dropped, sorted by file_idx.

    ``columns`` narrows what is read (``LOAD_COLUMNS`` is what pruning needs).
    """
    wanted = list(dict.fromkeys([*LOAD_COLUMNS, *columns]))
    schema = pa.schema([FILES_SCHEMA.field(c) for c in wanted])
    tables = [_read(root, rel, FILES_SCHEMA, columns=wanted, optional=_ADDED_LATER) for rel in live]
    if not tables:
        return schema.empty_table()
    rows = pa.concat_tables([_with_nulls(t, schema).select(wanted).cast(schema) for t in tables])
    idx = rows["file_idx"].to_numpy()
    # A build or compaction writes each file once, in file_idx order: nothing to resolve then.
    if bool(np.all(idx[1:] > idx[:-1])) and not pc.any(rows["deleted"]).as_py():
        return rows
    # Newest version first within each file_idx, then keep the first row of each.
    order = pc.sort_indices(rows, sort_keys=[("file_idx", "ascending"), ("version", "descending")])
    rows = rows.take(order)
    idx = rows["file_idx"].to_numpy()
    first = np.ones(len(idx), dtype=bool)
    first[1:] = idx[1:] != idx[:-1]
    rows = rows.filter(pa.array(first))
    return rows.filter(pc.invert(rows["deleted"]))


def _with_nulls(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with a null column for each field of ``schema`` it lacks."""
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(len(table), f.type))
    return table


def read_column_stats(
    root: Path, live: Sequence[str], schema: pa.Schema, columns: Iterable[str], file_idx: np.ndarray
) -> dict[str, ColumnStats]:
    """Stats of ``columns`` for the files ``file_idx`` (sorted), reading only their row groups."""
    leaves = leaf_columns(schema)
    wanted = sorted(c for c in set(columns) if c in leaves and slot_of(leaves[c]) is not None)
    if not wanted:
        return {}
    slots = sorted({slot_of(leaves[c]) for c in wanted})
    read_cols = ["file_idx", "null_count", "nan_count"]
    read_cols += [f"{end}_{s}" for s in slots for end in ("min", "max")]
    per_column: dict[str, list[pa.Table]] = {c: [] for c in wanted}
    for rel in live:
        for name, table in _rows_by_column(root, rel, COLUMN_STATS_SCHEMA, wanted, read_cols):
            per_column[name].append(table)
    out = {}
    for name in wanted:
        if not per_column[name]:
            continue
        t = leaves[name]
        slot = slot_of(t)
        mine = pa.concat_tables(per_column[name])
        positions = _positions(file_idx, mine["file_idx"].to_numpy())
        out[name] = ColumnStats(
            min=decode(_scatter(mine[f"min_{slot}"], positions), t),
            max=decode(_scatter(mine[f"max_{slot}"], positions), t),
            null_count=_scatter(mine["null_count"], positions),
            nan_count=_scatter(mine["nan_count"], positions),
        )
    return out


def _rows_by_column(
    root: Path, rel: str, expected: pa.Schema, wanted: list[str], read_cols: list[str]
) -> list[tuple[str, pa.Table]]:
    """The rows of each wanted column in one partition file, reading only their row groups.

    A row group holding a single column (its footer min = max = the name) is read without the
    ``column`` strings; one that mixes columns is read with them and filtered.
    """
    single, mixed = _row_groups_by_column(_open(root, rel), wanted)
    out = [(name, _read(root, rel, expected, groups, read_cols)) for name, groups in single.items() if groups]
    if mixed:
        rows = _read(root, rel, expected, mixed, ["column", *read_cols])
        for name in wanted:
            picked = rows.filter(pc.equal(rows["column"], name))
            if len(picked):
                out.append((name, picked.drop_columns(["column"])))
    return out


def _positions(file_idx: np.ndarray, rows_idx: np.ndarray) -> np.ndarray | None:
    """Where each file's row is among ``rows_idx`` (-1: none); None when they line up already."""
    if len(rows_idx) == len(file_idx) and np.array_equal(rows_idx, file_idx):
        return None
    n = len(file_idx)
    positions = np.full(n, -1, dtype=np.int64)
    if not n or not len(rows_idx):
        return positions
    # Rows of files no longer live fall away; the newest row of a file_idx is the last written.
    pos = np.minimum(np.searchsorted(file_idx, rows_idx), n - 1)
    ok = file_idx[pos] == rows_idx
    positions[pos[ok]] = np.flatnonzero(ok)
    return positions


def read_blooms(
    root: Path, live: Sequence[str], columns: Iterable[str], file_idx: np.ndarray
) -> dict[str, BloomFilterSet]:
    """Bloom filters of ``columns`` for the files ``file_idx`` (a file without one: None)."""
    wanted = sorted(set(columns))
    per_column: dict[str, list[pa.Table]] = {c: [] for c in wanted}
    for rel in live:
        for name, table in _rows_by_column(root, rel, BLOOM_SCHEMA, wanted, ["file_idx", "bloom", "type"]):
            per_column[name].append(table.filter(pc.equal(table["type"], BLOOM_TYPE)))
    out: dict[str, BloomFilterSet] = {}
    for name in wanted:
        if not per_column[name]:
            continue
        mine = pa.concat_tables(per_column[name])
        serialized = _scatter(mine["bloom"], _positions(file_idx, mine["file_idx"].to_numpy()))
        try:
            out[name] = BloomFilterSet.from_arrow(serialized)
        except ValueError as exc:
            raise IndexCorruptError(str(root / "bloom_filters"), f"bad bloom filter ({exc})") from None
    return out


def _row_groups_by_column(pf: pq.ParquetFile, wanted: list[str]) -> tuple[dict[str, list[int]], list[int]]:
    """Which row groups may hold rows of ``wanted`` columns, by the footer's ``column`` range:
    per column, the groups holding only it (min = max = the name), and the groups mixing names."""
    md = pf.metadata
    col_index = pf.schema_arrow.get_field_index("column")
    single: dict[str, list[int]] = {c: [] for c in wanted}
    mixed: list[int] = []
    for r in range(md.num_row_groups):
        st = md.row_group(r).column(col_index).statistics
        if st is None or not st.has_min_max:
            mixed.append(r)
        elif st.min == st.max:
            if st.min in single:
                single[st.min].append(r)
        elif any(st.min <= w <= st.max for w in wanted):
            mixed.append(r)
    return single, mixed


def _row_groups_holding(pf: pq.ParquetFile, wanted: list[str]) -> list[int]:
    """All row groups the reader reads for ``wanted`` (for tests and benchmarks)."""
    single, mixed = _row_groups_by_column(pf, wanted)
    return sorted({r for groups in single.values() for r in groups} | set(mixed))


def _scatter(values: pa.ChunkedArray | pa.Array, positions: np.ndarray | None) -> pa.Array:
    """An array with ``values[positions[i]]`` at i, null where positions[i] is -1 (None: as is)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if positions is None:
        return values
    take = np.where(positions < 0, len(values), positions)
    padded = pa.concat_arrays([values, pa.nulls(1, values.type)])
    return padded.take(pa.array(take))
