"""Each metadata partition's merged records as the Arrow table a caller reads.

- ``files``: ``partition`` ("" for a non-partitioned table, whose partition Hudi names "."),
  ``file_name``, ``path`` (relative to the table root), ``size``; only partitions the
  ``__all_partitions__`` record lists.
- ``column_stats``: one row per data file (``partition``, ``file_name``) and, per indexed
  column, a struct of ``min``/``max`` (the data column's exact type), ``null_count``,
  ``value_count``, ``total_size``, ``total_uncompressed_size``, ``tight`` (bounds are exact).
- ``partition_stats``: the same per partition.
- ``bloom_filters``: ``partition``, ``file_name``, ``bloom_type``, ``timestamp``,
  ``bloom_filter`` (Hudi's serialized filter, ``index_store.hudi_bloom`` reads it). A bloom
  record names its file only through its key (``base64(hash64(partition) + md5(file name))``),
  so files are found by the MD5 of the live files' names.
- ``record_index``: ``record_key``, ``partition``, ``file_id``, ``instant``, ``position``.
- ``secondary_index_<name>``: ``secondary_key`` (Hudi's string form of the value: a date is its
  epoch day, ...), ``record_key``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Collection, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from index_store.hudi_metadata.keys import file_ids, instants_of, split_secondary_keys
from index_store.hudi_metadata.merge import merge_column_stats, merge_files, merge_latest
from index_store.hudi_metadata.values import typed_bounds

__all__ = [
    "ALL_PARTITIONS",
    "FILES_SCHEMA",
    "bloom_filters_table",
    "files_table",
    "record_index_table",
    "secondary_index_table",
    "stats_table",
]

ALL_PARTITIONS = "__all_partitions__"
NON_PARTITIONED = "."
FILES_SCHEMA = pa.schema(
    [("partition", pa.string()), ("file_name", pa.string()), ("path", pa.string()), ("size", pa.int64())]
)
_STATS_FIELDS = ("null_count", "value_count", "total_size", "total_uncompressed_size")


def _partition_path(identifiers: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(identifiers, NON_PARTITIONED), "", identifiers)


def files_table(raw: pa.Table) -> pa.Table:
    """The listing: every file of every listed partition, by (partition, file name)."""
    merged = merge_files(raw)
    listed = merged.filter(pc.equal(merged["key"], ALL_PARTITIONS))["name"]
    rows = merged.filter(pc.is_in(merged["key"], value_set=listed.combine_chunks()))
    partition = _partition_path(rows["key"].combine_chunks())
    names = rows["name"].combine_chunks()
    prefix = pc.if_else(pc.equal(partition, ""), "", pc.binary_join_element_wise(partition, "", "/"))
    path = pc.binary_join_element_wise(prefix, names, "")
    return pa.table([partition, names, path, rows["size"].combine_chunks()], schema=FILES_SCHEMA)


def stats_table(
    raw: pa.Table,
    schema: pa.Schema | None,
    columns: Sequence[str] | None,
    *,
    by: str = "file_name",
    partitions: dict[str, str] | None = None,
) -> pa.Table:
    """Column statistics (``by="file_name"``) or partition statistics (``by="partition"``), one
    row per file or partition, one struct column per data column (those of ``columns`` only)."""
    merged = merge_column_stats(raw)
    if columns is not None:
        merged = merged.filter(pc.is_in(merged["column_name"], pa.array(list(columns), pa.string())))
    names = pc.unique(merged["file_name"].combine_chunks()).drop_null()
    names = names.take(pc.sort_indices(names))
    out: dict[str, pa.Array] = {}
    if by == "file_name":
        lookup = partitions or {}
        out["partition"] = pa.array([lookup.get(n) for n in names.to_pylist()], pa.string())
        out["file_name"] = names
    else:
        out["partition"] = names
    present = sorted(set(pc.unique(merged["column_name"].combine_chunks()).drop_null().to_pylist()))
    for column in present:
        rows = merged.filter(pc.equal(merged["column_name"], column))
        target = schema.field(column).type if schema is not None and column in schema.names else None
        at = pc.index_in(names, value_set=rows["file_name"].combine_chunks())
        fields = {
            "min": typed_bounds(rows, "min", target, column),
            "max": typed_bounds(rows, "max", target, column),
        }
        fields.update({f: rows[f].combine_chunks() for f in _STATS_FIELDS})
        fields["tight"] = rows["is_tight_bound"].combine_chunks()
        struct = pa.StructArray.from_arrays(list(fields.values()), names=list(fields))
        out[column] = struct.take(at)
    return pa.table(out)


def _md5_key(names: Sequence[str]) -> pa.Array:
    return pa.array(
        [base64.b64encode(hashlib.md5(n.encode("utf-8")).digest()).decode("ascii") for n in names],
        pa.string(),
    )


def bloom_filters_table(raw: pa.Table, listing: pa.Table) -> pa.Table:
    """The bloom filters of the files of ``listing`` (a filter of another file is left out)."""
    merged = merge_latest(raw)
    suffix = pc.utf8_slice_codeunits(merged["key"], -24)
    listed_keys = _md5_key(listing["file_name"].to_pylist())
    at = pc.index_in(suffix, value_set=listed_keys)
    keep = pc.is_valid(at)
    at = at.filter(keep)
    merged = merged.filter(keep)
    return pa.table(
        {
            "partition": listing["partition"].take(at),
            "file_name": listing["file_name"].take(at),
            "bloom_type": merged["bloom_type"],
            "timestamp": merged["timestamp"],
            "bloom_filter": merged["bloom_filter"],
        }
    )


def record_index_table(raw: pa.Table, known_instants: Collection[str], timezone: str = "LOCAL") -> pa.Table:
    """Record key -> (partition, file group, instant, position) of every live key."""
    merged = merge_latest(raw)
    return pa.table(
        {
            "record_key": merged["key"],
            "partition": _partition_path(merged["partition"].combine_chunks()),
            "file_id": file_ids(merged),
            "instant": instants_of(merged["instant_time"].combine_chunks(), known_instants, timezone),
            "position": merged["position"],
        }
    )


def secondary_index_table(raw: pa.Table) -> pa.Table:
    """(secondary key, record key) of every live secondary index entry."""
    merged = merge_latest(raw)
    secondary, record = split_secondary_keys(merged["key"].combine_chunks())
    return pa.table({"secondary_key": secondary, "record_key": record})
