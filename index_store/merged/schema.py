"""The one schema of a merge-on-read table's merged rows, and batches conformed to it.

hudi-rs's file group reader returns a slice's merged rows in the schema of the slice's base file
(Hudi's meta columns included when the table stores them), and pyarrow reads a base file alone in
that same schema. Base files of older commits may lack columns added since, or store a column in an
older type, so every batch is conformed to the schema of the newest base file, as Hudi reads with
the latest writer's schema: a missing column as NULL, an older type cast. Partition columns the base
files do not store (``drop.partition.columns``) come last, from each slice's partition values. A
table that does not populate Hudi's meta fields has none, as hudi-rs reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from index_store.errors import TableFormatError
from index_store.merged.hudi_rs import table_schema
from index_store.tables.base import FileSlice, TableReader
from index_store.tables.hudi_timeline import read_properties

__all__ = ["META_FIELDS", "MergedLayout", "conform", "merged_schema"]

# Hudi's meta fields (hudi-rs's ``MetaField``), first in a base file when the table populates them.
META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
    "_hoodie_operation",
)


@dataclass(frozen=True)
class MergedLayout:
    """What a merged read of a table needs besides its slices, worked out once (and small enough to
    send to Spark tasks): where the table is, its merged schema, and which of its columns are
    partition columns only the folders hold."""

    root: str
    schema: pa.Schema
    folder_columns: tuple[str, ...] = ()

    @classmethod
    def of(cls, reader: TableReader, slices: Sequence[FileSlice] | None = None) -> MergedLayout:
        """The layout of ``reader``'s table, its schema from ``slices`` (default: the live ones)."""
        folder = tuple(reader.partition_schema().names)
        return cls(reader.root, merged_schema(reader, slices), folder)

    @property
    def stored_schema(self) -> pa.Schema:
        """The columns the table's files store (an empty base file of a log-only slice has them)."""
        return pa.schema([f for f in self.schema if f.name not in self.folder_columns])


def merged_schema(reader: TableReader, slices: Sequence[FileSlice] | None = None) -> pa.Schema:
    """The schema merged reads of ``reader``'s table return: the newest live base file's columns (of
    ``slices``, default the live ones), then the partition columns the files do not store. A table
    whose file groups have no base file yet has the schema hudi-rs gives the table."""
    live = reader.file_slices() if slices is None else slices
    bases = [s.base for s in live if s.base is not None]
    if bases:
        newest = max(bases, key=lambda f: (f.instant or "", f.path))
        path = os.path.join(reader.root, newest.path)
        try:
            data = pq.read_schema(path)
        except (OSError, pa.ArrowException) as exc:
            raise TableFormatError(
                f"cannot read the parquet footer of Hudi base file {path}: {exc}"
            ) from None
    else:
        data = table_schema(reader.root)
    partition = reader.partition_schema()
    # A table that does not populate Hudi's meta fields may still store them (empty) in its base
    # files; hudi-rs leaves them out of what it reads, and so does this schema.
    left_out = set(partition.names) | (set() if _populates_meta_fields(reader.root) else set(META_FIELDS))
    fields = [f for f in data if f.name not in left_out] + list(partition)
    return pa.schema(fields)  # without the footer's metadata (Spark's and Avro's schema texts)


def _populates_meta_fields(root: str) -> bool:
    properties = read_properties(os.path.join(root, ".hoodie"))
    return properties.get("hoodie.populate.meta.fields", "true").strip().lower() != "false"


def conform(batch: pa.RecordBatch, schema: pa.Schema, partition_values: Mapping[str, Any]) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s columns, in order and type: a column it has is cast, a
    partition column it lacks is its slice's value, any other column it lacks (written before the
    column existed) is NULL."""
    n = batch.num_rows
    if not len(schema):
        # A read of no column still has rows (count(*)): a batch of n empty structs.
        return pa.RecordBatch.from_struct_array(pa.nulls(n, pa.struct([])))
    arrays = []
    for f in schema:
        index = batch.schema.get_field_index(f.name)
        if index >= 0:
            column = batch.column(index)
            arrays.append(column if column.type.equals(f.type) else column.cast(f.type))
        elif partition_values.get(f.name) is not None:
            arrays.append(pa.repeat(pa.scalar(partition_values[f.name], f.type), n))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
