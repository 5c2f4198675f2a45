"""One secondary index file: every indexed column of one base file, for one index type.

The file is parquet. Each indexed column is a block of entries sorted by key (nulls last), one
entry per distinct key: the key (in a parquet column named like the indexed column; the other
columns' key fields are null in this block), ``count`` (rows holding the key), and the rows,
either as a sorted ``rows`` list or as a compressed ``bitmap`` (``rowsets``). A block starts its
own row groups, so looking up one column reads only its row groups, and of those only the ones
whose key range (parquet statistics) admits the lookup. The footer's key-value metadata says which
row groups hold which column, and which base file (path, size, modification time, rows) the
entries describe.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import BloomFilter, Expression, FileStats, In, Reference, might_match
from hudi_expr.bloom import hash_keys, serialized_filters
from index_store.errors import IndexCorruptError
from index_store.partitions.secondary_dict import sorted_key_encoding
from index_store.secondary.rowsets import encode_bitmap, is_dense, mask_of

__all__ = [
    "FORMAT",
    "READABLE_FORMATS",
    "ROW_GROUP_ENTRIES",
    "FileInfo",
    "IndexFile",
    "bloom_filters",
    "entries_batch",
    "entries_by_file",
    "entries_of",
    "index_file_bytes",
    "open_cached",
]

# Format 2 writes the key columns delta-encoded (``_key_encoding``); the entries are those of
# format 1, which is still read. Any other number is refused: the index must be rebuilt.
FORMAT = 2
READABLE_FORMATS = (1, 2)
META_KEY = b"hudi_index.secondary"
# A row group of an index file holds at most this many entries and (unless one entry has more)
# row ids: a lookup reads whole row groups of one column, so they are kept small.
ROW_GROUP_ENTRIES = 8_192
ROW_GROUP_IDS = 65_536
BLOOM_FPP = 0.01
_FIXED = [
    pa.field("count", pa.uint32(), nullable=False),
    pa.field("rows", pa.list_(pa.field("item", pa.uint32(), nullable=False))),
    pa.field("bitmap", pa.binary()),
]


@dataclass(frozen=True)
class FileInfo:
    """The base file an index file describes, as it was when the index file was built."""

    path: str  # relative to the table root
    size: int
    mtime_ns: int | None
    row_count: int


def entries_of(keys: pa.Array, rows: np.ndarray, row_count: int) -> pa.Table:
    """The sorted entries (``key``, ``count``, ``rows``, ``bitmap``) of (key, row) pairs; a pair
    given twice is stored once. ``keys`` may be dictionary-encoded (its values are the keys)."""
    return entries_by_file(keys, np.zeros(len(rows), dtype=np.int64), rows, [row_count])[0]


def entries_by_file(
    keys: pa.Array | pa.ChunkedArray, files: np.ndarray, rows: np.ndarray, row_counts: Sequence[int]
) -> list[pa.Table]:
    """``entries_of`` of several files at once: pair i belongs to file ``files[i]`` (an index
    into ``row_counts``). One dictionary, one sort of the distinct keys and one integer sort for
    all the files' pairs: a file's entries are the same as ``entries_of`` its pairs alone."""
    table, bounds, _ = entries_batch(keys, files, rows, row_counts)
    return [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]


def entries_batch(
    keys: pa.Array | pa.ChunkedArray, files: np.ndarray, rows: np.ndarray, row_counts: Sequence[int]
) -> tuple[pa.Table, list[int], np.ndarray]:
    """``entries_by_file`` as one table (one chunk) holding every file's entries in file order,
    the bounds of each file's: file f's are rows ``[bounds[f], bounds[f + 1])``, and the order of
    the entries by key (nulls last), then file: the batch's part of the table-level dictionary in
    the dictionary's order (its sort of a few such sorted runs measured several times faster than
    of a run per file: near-unique strings)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], keys.type)
    rows = np.asarray(rows, dtype=np.int64)
    # One int64 per pair, (file, key rank, row): a numeric sort orders each file's pairs by key,
    # then row, without comparing the keys themselves (strings compare slowly); nulls rank last.
    span = max(max(row_counts, default=1), int(rows.max()) + 1 if len(rows) else 0, 1)
    offset = _integer_offsets(keys, len(row_counts) * span)
    if offset is not None:  # small integers rank by their value: no dictionary, no sort of keys
        codes, low, ranks = offset
        distinct = None
    else:
        codes, distinct = _ranked_codes(keys)
        ranks = len(distinct) + 1
    if len(row_counts) * ranks * span >= 2**63:
        raise ValueError("too many files, keys and rows for one batch: index fewer files at once")
    pairs = np.sort((np.asarray(files, dtype=np.int64) * ranks + codes) * span + rows)
    if len(pairs) > 1:
        pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    file_code = pairs // span
    rows_sorted = (pairs - file_code * span).astype(np.uint32)
    starts = np.flatnonzero(np.diff(file_code, prepend=-1)).astype(np.int64)
    entry_file = file_code[starts] // ranks
    entry_codes = file_code[starts] - entry_file * ranks
    if distinct is None:
        entry_keys = pa.array(entry_codes + low, mask=entry_codes == ranks - 1).cast(keys.type)
    else:
        entry_keys = _keys_at(distinct, entry_codes)
    counts = np.diff(np.append(starts, len(pairs))).astype(np.uint32)
    table = _entries(
        entry_keys, counts, starts, rows_sorted, np.asarray(row_counts, dtype=np.int64)[entry_file]
    )
    if len(row_counts) == 1:
        by_key = np.arange(len(starts), dtype=np.int64)  # one file: its entries are in key order
    else:
        by_key = np.argsort(entry_codes * len(row_counts) + entry_file)  # unique: any sort will do
    return table, np.searchsorted(entry_file, np.arange(len(row_counts) + 1)).tolist(), by_key


def _keys_at(distinct: pa.Array, codes: np.ndarray) -> pa.Array:
    """``distinct[codes]``, null where a code is ``len(distinct)``; without a copy when the codes
    are every key once in order (one file whose keys are all distinct, the usual batch of one)."""
    n = len(distinct)
    # Every code checked: [0, 0] (one key in two files) also starts with every key once in order.
    if len(codes) in (n, n + 1) and np.array_equal(codes, np.arange(len(codes))):
        return distinct if len(codes) == n else pa.concat_arrays([distinct, pa.nulls(1, distinct.type)])
    return distinct.take(pa.array(codes, mask=codes == n))


def _entries(
    keys: pa.Array, counts: np.ndarray, starts: np.ndarray, rows: np.ndarray, row_counts: np.ndarray
) -> pa.Table:
    """The entries table of sorted entries and their rows (entry i's at ``rows[starts[i]:]``), entry
    i of a file of ``row_counts[i]`` rows."""
    dense = is_dense(counts.astype(np.int64), row_counts)
    offsets = np.append(starts, len(rows)).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), pa.array(rows, pa.uint32()))
    if dense.any():
        # Dense entries are few per file (each covers a quarter of its rows or more).
        bitmaps: list[bytes | None] = [None] * len(starts)
        for i in np.flatnonzero(dense):
            bitmaps[i] = encode_bitmap(rows[starts[i] : starts[i] + counts[i]], int(row_counts[i]))
        lists = pc.if_else(pa.array(~dense), lists, pa.nulls(len(starts), lists.type))
        bitmap = pa.array(bitmaps, pa.binary())
    else:
        bitmap = pa.nulls(len(starts), pa.binary())
    return pa.table({"key": keys, "count": pa.array(counts, pa.uint32()), "rows": lists, "bitmap": bitmap})


def _integer_offsets(keys: pa.Array, positions: int) -> tuple[np.ndarray, int, int] | None:
    """For integer keys whose range times ``positions`` fits an int64: per key its offset from
    the least key (a null: one past the greatest), the least key, and the number of offsets; None
    for other keys (``_ranked_codes`` ranks those)."""
    t = keys.type
    if not pa.types.is_integer(t) or pa.types.is_uint64(t) or keys.null_count == len(keys):
        return None
    bounds = pc.min_max(keys)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    ranks = high - low + 2  # every value in [low, high], and null
    if positions * ranks >= 2**63:
        return None
    codes = np.asarray(keys.fill_null(low).to_numpy(), dtype=np.int64) - low
    if keys.null_count:
        codes[keys.is_null().to_numpy(zero_copy_only=False)] = ranks - 1
    return codes, low, ranks


def _ranked_codes(keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Per key its rank among the distinct keys (int64; a null ranks after every key), and the
    distinct keys in ascending order."""
    if pa.types.is_dictionary(keys.type):
        # The dictionary may repeat a value or hold unused ones: encode its values again.
        again = pc.dictionary_encode(keys.dictionary)
        values = again.dictionary
        index = again.indices.take(keys.indices)
    elif _mostly_distinct(keys):
        return _ranked_by_sort(keys)
    else:
        encoded = pc.dictionary_encode(keys)
        values, index = encoded.dictionary, encoded.indices
    order = pc.sort_indices(values).to_numpy()
    rank = np.empty(len(order) + 1, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    rank[len(order)] = len(order)  # null
    codes = rank[np.asarray(index.fill_null(len(order)).to_numpy(zero_copy_only=False), dtype=np.int64)]
    return codes, values.take(pa.array(order))


_SAMPLE = 4_096  # keys looked at to tell nearly unique keys from repeated ones


def _mostly_distinct(keys: pa.Array) -> bool:
    """Are the keys nearly all distinct (judged on a sample of the first ones)? Then sorting them
    all costs less than hashing them into a dictionary first and sorting that (the dictionary is
    about as long as the keys)."""
    if len(keys) < 2 * _SAMPLE or pa.types.is_dictionary(keys.type):
        return False
    sample = keys.slice(0, _SAMPLE)
    return len(pc.unique(sample)) * 2 > len(sample)


def _ranked_by_sort(keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """``_ranked_codes`` by one sort of every key: a key's rank counts the distinct keys before it
    in the sorted order (equal neighbours share it); nulls sort last and rank after every key."""
    order = pc.array_sort_indices(keys, null_placement="at_end")
    valid = len(keys) - keys.null_count
    ordered = keys.take(order).slice(0, valid)
    new_key = np.ones(valid, dtype=bool)
    if valid > 1:
        differs = pc.not_equal(ordered.slice(1), ordered.slice(0, valid - 1))
        new_key[1:] = differs.to_numpy(zero_copy_only=False)
    ranks = np.cumsum(new_key, dtype=np.int64) - 1
    distinct = ordered.filter(pa.array(new_key))
    codes = np.empty(len(keys), dtype=np.int64)
    positions = order.to_numpy()
    codes[positions[:valid]] = ranks
    codes[positions[valid:]] = len(distinct)  # null
    return codes, distinct


def index_file_bytes(
    kind: str,
    info: FileInfo,
    blocks: Mapping[str, pa.Table],
    blooms: Mapping[str, bytes] | None = None,
) -> tuple[bytes, dict[str, dict[str, Any]]]:
    """The content of one index file (``blocks`` maps each indexed column to its entries), and per
    column its entry counts (distinct keys, rows with a null, (key, row) pairs, most rows of a
    key) and a bloom filter of its distinct keys (``bloom``, serialized), for the manifest.
    ``blooms`` may give a column's bloom filter, computed already (``bloom_filters``)."""
    key_fields = [pa.field(c, block.schema.field("key").type) for c, block in blocks.items()]
    schema = pa.schema(key_fields + _FIXED)
    layout: dict[str, list[int]] = {}
    counts: dict[str, dict[str, Any]] = {}
    sink = io.BytesIO()
    next_group = 0
    with pq.ParquetWriter(
        sink,
        schema,
        compression="zstd",
        use_dictionary=False,
        column_encoding={
            **{f.name: enc for f in key_fields if (enc := _key_encoding(f.type)) is not None},
            "count": "DELTA_BINARY_PACKED",
            "rows.list.element": "DELTA_BINARY_PACKED",
        },
        write_statistics=[f.name for f in key_fields],
        # A CRC per page: overwritten bytes in a page are an error when read, not other row ids
        # (without it, 16 bytes of 0xff in a page changed a count from the index, silently).
        write_page_checksum=True,
    ) as writer:
        for column, block in blocks.items():
            columns = {
                f.name: block["key"] if f.name == column else pa.nulls(len(block), f.type) for f in key_fields
            }
            table = pa.table(
                {**columns, "count": block["count"], "rows": block["rows"], "bitmap": block["bitmap"]},
                schema=schema,
            )
            cuts = _row_group_cuts(block["count"].to_numpy())
            for start, stop in itertools.pairwise(cuts):
                writer.write_table(table.slice(start, stop - start), row_group_size=ROW_GROUP_ENTRIES)
            groups = len(cuts) - 1
            layout[column] = [next_group, next_group + groups]
            next_group += groups
            count = block["count"].to_numpy()
            if block["key"].null_count:
                nulls = block["key"].is_null().to_numpy(zero_copy_only=False)
                null_rows, count = int(count[nulls].sum()), count[~nulls]
            else:
                null_rows = 0
            counts[column] = {
                "distinct": len(count),
                "null_rows": null_rows,
                "pairs": int(count.sum()),
                "max_rows": int(count.max()) if len(count) else 0,
                "bloom": (blooms or {}).get(column) or _bloom_of(block["key"].drop_null()),
            }
        writer.add_key_value_metadata(
            {
                META_KEY: json.dumps(
                    {
                        "format": FORMAT,
                        "type": kind,
                        "base_file": info.path,
                        "size": info.size,
                        "mtime_ns": info.mtime_ns,
                        "row_count": info.row_count,
                        "columns": layout,
                        "counts": {
                            c: {k: v for k, v in d.items() if k != "bloom"} for c, d in counts.items()
                        },
                    },
                    sort_keys=True,
                ).encode()
            }
        )
    return sink.getvalue(), counts


def _key_encoding(key_type: pa.DataType) -> str | None:
    """The parquet encoding of an index file's sorted key column (format 2; format 1 stored keys
    PLAIN)."""
    return sorted_key_encoding(key_type)


def _row_group_cuts(counts: np.ndarray) -> list[int]:
    """Entry positions where row groups start (and the end): a new group after ``ROW_GROUP_ENTRIES``
    entries or once ``ROW_GROUP_IDS`` row ids are in the current one. At least one group."""
    if len(counts) <= ROW_GROUP_ENTRIES and int(counts.sum(dtype=np.int64)) <= ROW_GROUP_IDS:
        return [0, len(counts)]  # one group (the usual small file)
    cuts, start, ids = [0], 0, np.cumsum(counts.astype(np.int64))
    while start < len(counts):
        base = ids[start - 1] if start else 0
        # The first entry that would take the group past the row-id budget (at least one entry).
        over = int(np.searchsorted(ids, base + ROW_GROUP_IDS, side="right"))
        stop = min(start + ROW_GROUP_ENTRIES, max(over, start + 1), len(counts))
        cuts.append(stop)
        start = stop
    return cuts if len(cuts) > 1 else [0, 0]


def _bloom_of(keys: pa.Array) -> bytes:
    """A bloom filter of a file's distinct keys: lets a lookup skip index files without the key."""
    bloom = BloomFilter.for_entries(max(len(keys), 1), BLOOM_FPP)
    if len(keys):
        bloom.add_all(keys, type=keys.type)
    return bloom.to_bytes()


def bloom_filters(keys: pa.Array | pa.ChunkedArray, bounds: Sequence[int]) -> list[bytes]:
    """``_bloom_of`` the keys of each file of a batch (``entries_batch``: file f's keys are
    ``keys[bounds[f]:bounds[f + 1]]``): the keys hashed in one call (a call per small file cost
    more than the hashing) and the filters filled together."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    h1, h2 = hash_keys(keys)
    if keys.null_count:
        valid = keys.is_valid().to_numpy(zero_copy_only=False)
        h1, h2 = h1[valid], h2[valid]
        ends = np.concatenate([[0], np.cumsum(valid)])[np.asarray(bounds)]
    else:
        ends = np.asarray(bounds)
    return serialized_filters(h1, h2, np.diff(ends).tolist(), BLOOM_FPP)


class IndexFile:
    """An opened index file: its metadata, and lookups of one column's keys."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._pf = pq.ParquetFile(path, page_checksum_verification=True)  # files written before: none
            raw = (self._pf.metadata.metadata or {}).get(META_KEY)
            if raw is None:
                raise ValueError("no secondary index metadata in the footer")
            meta: dict[str, Any] = json.loads(raw)
            if meta.get("format") not in READABLE_FORMATS:
                raise ValueError(
                    f"index file format {meta.get('format')!r}, this version reads formats "
                    f"{', '.join(map(str, READABLE_FORMATS))}: rebuild the index with "
                    "build_index(strategy='all')"
                )
            self.kind = str(meta["type"])
            self.info = FileInfo(
                str(meta["base_file"]), int(meta["size"]), meta["mtime_ns"], int(meta["row_count"])
            )
            self.layout = {c: (int(a), int(b)) for c, (a, b) in meta["columns"].items()}
            self.counts: dict[str, dict[str, Any]] = meta.get("counts", {})
        except FileNotFoundError:
            raise IndexCorruptError(str(path), "the index lists it but it does not exist") from None
        except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexCorruptError(str(path), f"not a readable secondary index file ({exc})") from None

    def rows(self, column: str, keys: Expression) -> np.ndarray:
        """A mask of the base file's rows holding a key where ``keys`` (bound, over the column's
        key type) is TRUE."""
        start, stop = self.layout[column]
        groups = self._groups(column, range(start, stop), keys)
        if not groups:
            return np.zeros(self.info.row_count, dtype=bool)
        try:
            table = self._pf.read_row_groups(groups, columns=[column, "rows", "bitmap"])
            selected = table.filter(keys.to_pyarrow())
            return mask_of(selected["rows"], selected["bitmap"], self.info.row_count)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise IndexCorruptError(str(self.path), f"unreadable entries of {column!r} ({exc})") from None

    def contains(self, column: str, values: pa.Array) -> np.ndarray:
        """Per value (of the column's key type, no nulls): is it a key of the column's block?"""
        start, stop = self.layout[column]
        key_type = self._pf.schema_arrow.field(column).type
        wanted = In(Reference(column), values).bind(pa.schema([pa.field(column, key_type)]))
        groups = self._groups(column, range(start, stop), wanted)
        if not groups:
            return np.zeros(len(values), dtype=bool)
        try:
            keys = self._pf.read_row_groups(groups, columns=[column])[column].combine_chunks()
        except (pa.ArrowException, OSError) as exc:
            raise IndexCorruptError(str(self.path), f"unreadable entries of {column!r} ({exc})") from None
        return pc.is_in(values, value_set=keys.drop_null()).to_numpy(zero_copy_only=False)

    def _groups(self, column: str, groups: Sequence[int], keys: Expression) -> list[int]:
        """The row groups whose key range may hold a key ``keys`` selects (statistics)."""
        if len(groups) <= 1:
            return list(groups)
        md = self._pf.metadata
        j = md.schema.to_arrow_schema().get_field_index(column)
        records = []
        for g in groups:
            st = md.row_group(g).column(j).statistics
            bounds: dict[str, Any] = {}
            if st is not None and st.has_min_max:
                bounds = {"min": st.min, "max": st.max}
            records.append({"file": str(g), "row_count": md.row_group(g).num_rows, "stats": {column: bounds}})
        schema = pa.schema([self._pf.schema_arrow.field(column)])
        try:
            stats = FileStats.from_pylist(records, schema)
            keep = might_match(keys, stats).to_numpy(zero_copy_only=False)
        except (ValueError, TypeError, pa.ArrowException):
            return list(groups)  # statistics it cannot read: read every group of the column
        return [g for g, k in zip(groups, keep, strict=True) if k]


def open_cached(opened: dict[str, IndexFile], index_root: Path, rel: str) -> IndexFile:
    """The index file ``rel``, opened once per ``opened`` cache (index files are immutable)."""
    handle = opened.get(rel)
    if handle is None:
        handle = opened.setdefault(rel, IndexFile(index_root / rel))
    return handle
