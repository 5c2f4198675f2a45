"""What the index reads of a Hudi log file: the values its data records bring (for statistics, as
an in-memory parquet file the footer path reads like a base file) and every record key it holds.

A log file gets one index entry of its own. Its blocks are read alone (not merged with the slice's
other files) and every data block counts whatever its instant: blocks of a write that failed or is
still running only widen the bounds, which stays sound, whereas leaving out a pending write's block
would not be once it completes (the file's size and time would not move, so no sync would redo it).
A rollback block still removes the blocks it targets: their instant never becomes valid again.

Why an in-memory parquet file rather than statistics computed from Arrow: the footer path
(``hudi_expr.footer``, ``builder``) already decides for base files how each type's bounds are read,
which types have none, when long strings lose theirs, NaN counts and bloom filters; a log file
written through a parquet writer gets the same rules, with no second implementation to drift.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.errors import LogFormatError, TableFormatError
from index_store.hudi_log import (
    INSTANT,
    IS_DELETE,
    ORDERING_VALUE,
    PARTITION_PATH,
    RECORD_KEY,
    BlockFate,
    DataRows,
    DeleteKeys,
    LogBlock,
    Rollback,
    block_fates,
    decode_block,
    read_log_file,
)
from index_store.hudi_log.records import OrderingTypeError, content_records, promoted_type, stack_records
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi_files import parse_log_file_name

__all__ = [
    "ALL_INSTANTS",
    "LogFileRecords",
    "LogValues",
    "is_log_path",
    "log_file_records",
    "log_keys",
    "log_values",
]

DELETED_FIELD = "_hoodie_is_deleted"


def _every_instant(_instant: str) -> bool:
    return True


ALL_INSTANTS: Callable[[str], bool] = _every_instant


def is_log_path(path: str) -> bool:
    """The file is a Hudi log file (by its name; ``.cdc`` logs are no part of a slice)."""
    parsed = parse_log_file_name(os.path.basename(path))
    return parsed is not None and not parsed.cdc


@dataclass(frozen=True)
class LogValues:
    """A log file's data records as an opened parquet file (``footer``), or why there is none
    (``unusable``: its statistics are unknown and its slice is always kept)."""

    footer: pq.ParquetFile
    unusable: str | None = None


def log_values(path: str, target: pa.Schema | None, *, usable: bool = True) -> LogValues:
    """The values ``path``'s data records bring, cast to ``target`` (the table's types) where it has
    the column, written to an in-memory parquet file. Delete records and rows marked deleted bring
    no value. A column some data block of the file lacks (a partial update, a schema change) is left
    out, so its statistics are unknown for this file rather than those of a subset of its rows.
    ``usable=False`` (a table whose merge mixes a log record with its base row) or a block that does
    not decode give an empty file marked ``unusable``."""
    if not usable:
        return _unusable("the table's merge mode combines log records with base rows field by field")
    try:
        blocks = read_log_file(path)
        fates = block_fates(blocks, ALL_INSTANTS)
        tables = []
        for block, fate in zip(blocks, fates, strict=True):
            if fate is not BlockFate.KEPT or not isinstance(block, LogBlock):
                continue
            content = decode_block(block)
            if isinstance(content, DataRows):  # delete blocks bring no values
                tables.append(_not_deleted(content.rows))
    except FileNotFoundError:
        raise TableFormatError(f"log file {path} disappeared while indexing; run sync again") from None
    except LogFormatError as exc:
        return _unusable(str(exc))
    values = _stacked(tables, target)
    if values.num_rows and not values.num_columns:
        return _unusable("no column is in every data block of the file with a type the table has")
    return LogValues(_in_memory(values))


@dataclass(frozen=True)
class LogFileRecords:
    """A log file's records as written, for tagging without reopening it: per record of its data
    and delete blocks (``records``: ``key``, ``ordering`` (null: none), ``is_delete``, ``block``
    and ``record``, its place in the file, ``instant``, its block's) and its rollback command
    blocks (``rollbacks``: ``target`` instant, ``block``). Blocks a rollback of the same file
    removes are left out: their instant never becomes valid again."""

    records: pa.Table
    rollbacks: pa.Table

    @property
    def keys(self) -> pa.StringArray:
        keys = self.records.column("key").combine_chunks()
        return keys.cast(pa.string()) if keys.type != pa.string() else keys


def log_file_records(
    path: str, spec: RecordKeySpec, ordering_field: str | None = None
) -> LogFileRecords | None:
    """Every record of ``path``'s data and delete blocks (all instants, as ``log_values``), with
    ``ordering_field``'s values (None: commit time ordering, all null), and its rollbacks; None
    when a block does not decode. The file is read and each block decoded once."""
    try:
        blocks = read_log_file(path)
        fates = block_fates(blocks, ALL_INSTANTS)
        tables, block_idx, counts, types = [], [], [], []
        targets, target_blocks = [], []
        for i, (block, fate) in enumerate(zip(blocks, fates, strict=True)):
            if not isinstance(block, LogBlock):
                continue
            if fate is BlockFate.COMMAND:
                content = decode_block(block)
                if isinstance(content, Rollback):
                    targets.append(content.target_instant)
                    target_blocks.append(i)
                continue
            if fate is not BlockFate.KEPT or block.instant is None:
                continue
            content = decode_block(block)
            if not isinstance(content, DataRows | DeleteKeys):
                raise LogFormatError(block.path, block.offset, f"a {type(content).__name__} is no data block")
            if isinstance(content, DataRows) and ordering_field in content.rows.column_names:
                types.append(content.rows.schema.field(ordering_field).type)
            table = content_records(content, block.instant, key_spec=spec, ordering_field=ordering_field)
            tables.append(table.select([RECORD_KEY, PARTITION_PATH, ORDERING_VALUE, IS_DELETE, INSTANT]))
            block_idx.append(i)
            counts.append(table.num_rows)
        stacked = stack_records(tables, promoted_type(types))
    except FileNotFoundError:
        raise TableFormatError(f"log file {path} disappeared while indexing; run sync again") from None
    except (LogFormatError, OrderingTypeError):
        return None
    n = np.asarray(counts, dtype=np.int64)
    starts = np.repeat(np.cumsum(n) - n, n)
    records = pa.table(
        {
            "key": stacked.column(RECORD_KEY).combine_chunks().cast(pa.string()),
            "ordering": stacked.column(ORDERING_VALUE).combine_chunks(),
            "is_delete": pc.fill_null(stacked.column(IS_DELETE), False).combine_chunks(),
            "block": pa.array(np.repeat(np.asarray(block_idx, dtype=np.int32), n), pa.int32()),
            "record": pa.array(
                (np.arange(int(n.sum()), dtype=np.int64) - starts).astype(np.int32), pa.int32()
            ),
            "instant": stacked.column(INSTANT).combine_chunks().cast(pa.string()),
        }
    )
    rollbacks = pa.table(
        {"target": pa.array(targets, pa.string()), "block": pa.array(target_blocks, pa.int32())}
    )
    return LogFileRecords(records, rollbacks)


def log_keys(path: str, spec: RecordKeySpec) -> pa.StringArray | None:
    """Every record key of ``path``'s data and delete records (all instants, as ``log_values``), or
    None when a block does not decode."""
    found = log_file_records(path, spec)
    return None if found is None else found.keys


def _unusable(reason: str) -> LogValues:
    return LogValues(_in_memory(pa.table({})), reason)


def _not_deleted(rows: pa.Table) -> pa.Table:
    """The rows not marked deleted (Hudi's ``_hoodie_is_deleted`` field)."""
    field = rows.schema.field(DELETED_FIELD) if DELETED_FIELD in rows.column_names else None
    if field is None or not pa.types.is_boolean(field.type):
        return rows
    return rows.filter(pc.invert(pc.fill_null(rows.column(DELETED_FIELD), False)))


def _stacked(tables: list[pa.Table], target: pa.Schema | None) -> pa.Table:
    """The data blocks' rows in one table: only the columns every block has, in the target's types
    where they cast exactly (a column that does not is left out: unknown)."""
    if not tables:
        return pa.table({})
    common = [name for name in tables[0].column_names if all(name in t.column_names for t in tables[1:])]
    try:
        stacked = pa.concat_tables([t.select(common) for t in tables], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Blocks whose types of one column do not mix: keep the columns whose types agree.
        first = tables[0].schema
        common = [c for c in common if all(t.schema.field(c).type == first.field(c).type for t in tables)]
        stacked = pa.concat_tables([t.select(common) for t in tables])
    if target is None:
        return stacked
    columns, fields = [], []
    for name, column in zip(stacked.column_names, stacked.columns, strict=True):
        index = target.get_field_index(name)
        if index >= 0 and target.field(index).type != column.type:
            try:
                column = column.cast(target.field(index).type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue  # values that do not fit the table's type: unknown for this file
        columns.append(column)
        fields.append(pa.field(name, column.type))
    if not fields:
        return stacked.select([])
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _in_memory(table: pa.Table) -> pq.ParquetFile:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=max(table.num_rows, 1), compression="none")
    return pq.ParquetFile(pa.BufferReader(sink.getvalue()))
