"""Log records as one Arrow table: for every record of a data or delete block its record key,
partition path, ordering value and delete marker, the instant of its block and its place in write
order, then the data columns (null for deletes).

Where each comes from:

- record key: ``_hoodie_record_key`` when the rows have it filled, else computed from the key
  fields with the caller's ``RecordKeySpec`` (tables written with
  ``hoodie.populate.meta.fields=false``); a delete record carries its key;
- partition path: ``_hoodie_partition_path`` when filled, else the caller's (the folder of the
  file slice); a delete record carries its own;
- ordering value: the caller's ordering (precombine) field of the rows, null when there is none;
  a delete record carries its own, except that Hudi writes Integer 0 for "no ordering value" and
  reads it back as such (the delete then applies in write order), so that value is null here;
- delete marker: true for delete records and for rows whose ``_hoodie_is_deleted`` is true
  (Hudi's delete field).

Blocks of different schemas stack into one table: a column missing from a block is null there,
and types widen as Arrow's permissive promotion does (int to long, ...)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import RecordKeyError
from index_store.hudi_log.decoders import DataRows, DeleteKeys
from index_store.record_key import RECORD_KEY_META_FIELD, RecordKeySpec

__all__ = [
    "INSTANT",
    "IS_DELETE",
    "LOG_COLUMNS",
    "ORDERING_VALUE",
    "PARTITION_PATH",
    "RECORD_KEY",
    "SEQUENCE",
    "OrderingTypeError",
    "content_records",
    "promoted_type",
    "stack_records",
]

RECORD_KEY = "_log_record_key"
PARTITION_PATH = "_log_partition_path"
ORDERING_VALUE = "_log_ordering_value"
IS_DELETE = "_log_is_delete"
INSTANT = "_log_instant"
SEQUENCE = "_log_sequence"
LOG_COLUMNS = (RECORD_KEY, PARTITION_PATH, ORDERING_VALUE, IS_DELETE, INSTANT, SEQUENCE)

PARTITION_META_FIELD = "_hoodie_partition_path"
DELETED_FIELD = "_hoodie_is_deleted"


class OrderingTypeError(ValueError):
    """Ordering values of the blocks of one scan whose types cannot be brought to one."""


def content_records(
    content: DataRows | DeleteKeys,
    instant: str,
    *,
    key_spec: RecordKeySpec | None = None,
    ordering_field: str | None = None,
    partition_path: str | None = None,
) -> pa.Table:
    """One block's records: the log columns but ``SEQUENCE`` (``stack_records`` numbers them),
    then the data columns."""
    if isinstance(content, DeleteKeys):
        deletes = content.deletes
        n = deletes.num_rows
        columns = {
            RECORD_KEY: deletes.column("record_key"),
            PARTITION_PATH: _filled(deletes.column("partition_path"), partition_path),
            ORDERING_VALUE: _delete_ordering(deletes),
            IS_DELETE: _constant(True, pa.bool_(), n),
        }
        return _with_instant(pa.table(columns), instant, None)
    rows = content.rows
    n = rows.num_rows
    deleted = (
        pc.fill_null(rows.column(DELETED_FIELD), False)
        if DELETED_FIELD in rows.column_names and pa.types.is_boolean(rows.schema.field(DELETED_FIELD).type)
        else _constant(False, pa.bool_(), n)
    )
    columns = {
        RECORD_KEY: _keys(rows, key_spec),
        PARTITION_PATH: _partitions(rows, partition_path),
        ORDERING_VALUE: rows.column(ordering_field)
        if ordering_field and ordering_field in rows.column_names
        else pa.nulls(n),
        IS_DELETE: deleted,
    }
    return _with_instant(pa.table(columns), instant, rows)


def stack_records(tables: list[pa.Table], ordering_type: pa.DataType | None = None) -> pa.Table:
    """Blocks' records in write order, numbered (``SEQUENCE``), columns unified; ordering values
    cast to ``ordering_type`` (the ordering field's, when a data block has it: a delete block's
    wrapper may be narrower, an int beside a long field)."""
    tables = _common_ordering(tables, ordering_type)
    if not tables:
        stacked = pa.table(
            {
                RECORD_KEY: pa.array([], pa.string()),
                PARTITION_PATH: pa.array([], pa.string()),
                ORDERING_VALUE: pa.nulls(0),
                IS_DELETE: pa.array([], pa.bool_()),
                INSTANT: pa.array([], pa.string()),
            }
        )
    else:
        stacked = pa.concat_tables(tables, promote_options="permissive")
    sequence = pa.array(np.arange(stacked.num_rows, dtype=np.int64))
    return stacked.add_column(len(LOG_COLUMNS) - 1, SEQUENCE, sequence)


def _common_ordering(tables: list[pa.Table], target: pa.DataType | None) -> list[pa.Table]:
    """The ordering columns cast to ``target`` (by default their common type)."""
    kinds = [t.schema.field(ORDERING_VALUE).type for t in tables]
    if target is None:
        target = promoted_type(kinds)
    if target is None:
        return tables
    out = []
    for table, kind in zip(tables, kinds, strict=True):
        if kind != target:
            try:
                column = table.column(ORDERING_VALUE).cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise OrderingTypeError(
                    f"ordering values of type {kind} do not convert to the ordering field's {target}: {exc}"
                ) from exc
            table = table.set_column(table.schema.get_field_index(ORDERING_VALUE), ORDERING_VALUE, column)
        out.append(table)
    return out


def promoted_type(kinds: list[pa.DataType]) -> pa.DataType | None:
    """The type values of all ``kinds`` widen to (Arrow's permissive promotion: int to long, ...),
    None when all are null."""
    kinds = [k for k in kinds if not pa.types.is_null(k)]
    if not kinds:
        return None
    try:
        unified = pa.unify_schemas([pa.schema([("v", k)]) for k in kinds], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise OrderingTypeError(
            f"ordering values of types {sorted(set(map(str, kinds)))} do not mix: {exc}"
        ) from exc
    return unified.field("v").type


def _delete_ordering(deletes: pa.Table) -> pa.Array:
    """A delete block's ordering values, Hudi's default (an ``IntWrapper`` holding 0, its
    DEFAULT_ORDERING_VALUE: "none") made null."""
    ordering = deletes.column("ordering_value").combine_chunks()
    if not pa.types.is_integer(ordering.type):
        return ordering
    default = pc.and_(
        pc.equal(deletes.column("ordering_wrapper"), "IntWrapper"), pc.equal(ordering.cast(pa.int64()), 0)
    )
    return pc.if_else(pc.fill_null(default, False), pa.scalar(None, ordering.type), ordering)


def _constant(value: object, kind: pa.DataType, n: int) -> pa.Array:
    return pc.fill_null(pa.nulls(n, kind), pa.scalar(value, kind))


def _with_instant(meta: pa.Table, instant: str, rows: pa.Table | None) -> pa.Table:
    table = meta.append_column(INSTANT, _constant(instant, pa.string(), meta.num_rows))
    if rows is None:
        return table
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        table = table.append_column(rows.schema.field(name), column)
    return table


def _keys(rows: pa.Table, key_spec: RecordKeySpec | None) -> pa.Array | pa.ChunkedArray:
    if RECORD_KEY_META_FIELD in rows.column_names:
        stored = rows.column(RECORD_KEY_META_FIELD)
        if stored.null_count == 0 and pa.types.is_string(stored.type):
            return stored
    if key_spec is None:
        raise RecordKeyError(
            f"log records without {RECORD_KEY_META_FIELD} (a table with hoodie.populate.meta.fields=false): "
            "pass key_spec, e.g. RecordKeySpec.from_hudi_properties(read_properties(hoodie_dir), None)"
        )
    return key_spec.encode(rows)


def _partitions(rows: pa.Table, partition_path: str | None) -> pa.Array | pa.ChunkedArray:
    if PARTITION_META_FIELD in rows.column_names:
        stored = rows.column(PARTITION_META_FIELD)
        if stored.null_count == 0 and pa.types.is_string(stored.type):
            return stored
    return _filled(pa.nulls(rows.num_rows, pa.string()), partition_path)


def _filled(values: pa.Array | pa.ChunkedArray, default: str | None) -> pa.Array | pa.ChunkedArray:
    return values if default is None else pc.fill_null(values, default)
