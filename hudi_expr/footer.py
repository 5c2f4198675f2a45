"""File statistics from parquet footers (no data pages read), for ``FileStats.from_parquet``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr.stats import ColumnStats, leaf_columns
from hudi_expr.types import is_binary_like, is_string_like

if TYPE_CHECKING:
    from hudi_expr.stats import FileStats

__all__ = ["nullable_where_absent", "read_footer_stats", "stats_from_footers", "unify_schemas"]

# Parquet min/max of these physical/logical types have no reliable order or no stats at all.
_UNORDERED_PHYSICAL = {"INT96"}


def read_footer_stats(cls: type[FileStats], paths: list[str], schema: pa.Schema | None) -> FileStats:
    return stats_from_footers(cls, paths, [pq.ParquetFile(p) for p in paths], schema)


def stats_from_footers(
    cls: type[FileStats],
    paths: Sequence[str],
    files: Sequence[pq.ParquetFile],
    schema: pa.Schema | None,
    arrow_schemas: Sequence[pa.Schema] | None = None,
) -> FileStats:
    """Stats from already opened files (``paths`` names them in the result); ``schema`` defaults
    to the union of the files' schemas (``arrow_schemas``, if the caller has them already)."""
    if arrow_schemas is None:
        arrow_schemas = [f.schema_arrow for f in files]  # computed anew on each access
    if schema is None:
        schema = unify_schemas(arrow_schemas)
    targets = leaf_columns(schema)
    n = len(files)
    # Per column: values per file and the arrow type they are expressed in (the file's own type).
    mins: dict[str, list[Any]] = {c: [None] * n for c in targets}
    maxs: dict[str, list[Any]] = {c: [None] * n for c in targets}
    nulls: dict[str, list[int | None]] = {c: [None] * n for c in targets}
    source_types: dict[str, list[pa.DataType | None]] = {c: [None] * n for c in targets}
    row_counts: list[int] = []
    layouts: list[tuple[pa.Schema, list[_Chunk]]] = []
    for i, f in enumerate(files):
        md = f.metadata
        row_counts.append(md.num_rows)
        layout = _find_layout(layouts, arrow_schemas[i], md, targets)
        for chunk, (lo, hi, nc) in zip(layout, _merge_row_groups(md, layout), strict=True):
            mins[chunk.path][i], maxs[chunk.path][i], nulls[chunk.path][i] = lo, hi, nc
            source_types[chunk.path][i] = chunk.stored
        if md.num_rows == 0:
            # Columns the file lacks (written before the column existed) stay unknown, unless
            # there is no row at all.
            for path in targets.keys() - {c.path for c in layout}:
                nulls[path][i] = 0
    columns = {
        c: ColumnStats(
            min=_assemble(mins[c], source_types[c], targets[c]),
            max=_assemble(maxs[c], source_types[c], targets[c]),
            null_count=pa.array(nulls[c], pa.int64()),
            nan_count=pa.nulls(n, pa.int64()),
        )
        for c in targets
    }
    return cls([str(p) for p in paths], row_counts, columns, schema)


def _find_layout(
    layouts: list[tuple[pa.Schema, list[_Chunk]]],
    schema: pa.Schema,
    md: pq.FileMetaData,
    targets: dict[str, pa.DataType],
) -> list[_Chunk]:
    """The layout of files with ``schema``; tables usually have one or two schemas, newest last."""
    for known, layout in reversed(layouts):
        if known.equals(schema):
            return layout
    layout = _layout(md, schema, targets)
    layouts.append((schema, layout))
    return layout


@dataclass(frozen=True)
class _Chunk:
    """One leaf column of a file layout: its parquet index, path, storage type and value reader."""

    index: int
    path: str
    stored: pa.DataType
    bounds: Callable[[Any], tuple[Any, Any]]


def _layout(md: pq.FileMetaData, arrow_schema: pa.Schema, targets: dict[str, pa.DataType]) -> list[_Chunk]:
    """The wanted leaf columns of files with this schema (computed once per distinct schema)."""
    file_leaves = leaf_columns(arrow_schema)
    # Raw statistics are in the parquet storage type (seconds are stored as milliseconds).
    stored = leaf_columns(md.schema.to_arrow_schema())
    out = []
    for j in range(md.num_columns):
        path = md.schema.column(j).path
        if path in targets and path in file_leaves and path in stored:
            out.append(_Chunk(j, path, stored[path], _bounds_reader(stored[path])))
    return out


def _bounds_reader(t: pa.DataType) -> Callable[[Any], tuple[Any, Any]]:
    # Timestamps and dates as raw integers (nanoseconds do not fit a datetime); float16 as bytes.
    if pa.types.is_timestamp(t) or pa.types.is_date32(t):
        return lambda st: (st.min_raw, st.max_raw)
    if pa.types.is_float16(t):
        return lambda st: (
            np.frombuffer(st.min_raw, dtype=np.float16)[0],
            np.frombuffer(st.max_raw, dtype=np.float16)[0],
        )
    return lambda st: (st.min, st.max)


def unify_schemas(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The union of arrow schemas, types widened where they disagree.

    A field whose types cannot be widened into one (int64 in some files, string in others) takes
    the type of the last schema that has it; files of another type family get unknown bounds for it.
    A field is non-nullable only if every schema has it non-nullable (``nullable_where_absent``).
    """
    if not schemas:
        return pa.schema([])
    distinct: list[pa.Schema] = []
    for schema in schemas:  # most tables have one schema: unify the distinct ones only
        if not any(schema.equals(d) for d in distinct[-4:]):
            distinct.append(schema)
    schemas = distinct
    try:
        return nullable_where_absent(pa.unify_schemas(schemas, promote_options="permissive"), schemas)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        pass
    fields: dict[str, pa.Field] = {}
    for schema in schemas:
        for field in schema:
            known = fields.get(field.name)
            if known is None:
                fields[field.name] = field
                continue
            try:
                merged = pa.unify_schemas(
                    [pa.schema([known]), pa.schema([field])], promote_options="permissive"
                )
                fields[field.name] = merged.field(0)
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                fields[field.name] = field.with_nullable(True)
    return nullable_where_absent(pa.schema(list(fields.values())), schemas)


def nullable_where_absent(unified: pa.Schema, schemas: Sequence[pa.Schema]) -> pa.Schema:
    """``unified`` with every field (struct fields too) that some of ``schemas`` lack made nullable.

    Arrow's union keeps a field non-nullable when the schemas that have it say so, but a file
    without the column reads it as NULL (DuckDB's union_by_name, Spark's schema merging); binding
    and ``FileStats`` take a non-nullable column to hold no NULL.
    """
    fields = [_nullable_where_absent(f, [_field(s, f.name) for s in schemas]) for f in unified]
    return pa.schema(fields, metadata=unified.metadata)


def _nullable_where_absent(field: pa.Field, versions: list[pa.Field | None]) -> pa.Field:
    structs = [v.type for v in versions if v is not None and pa.types.is_struct(v.type)]
    if any(v is None for v in versions):
        field = field.with_nullable(True)
    if not pa.types.is_struct(field.type):
        return field
    if len(structs) < len(versions):
        field = field.with_nullable(True)  # not a struct in some schema: its fields are not there
    t = field.type
    children = [
        _nullable_where_absent(t.field(i), [_field(s, t.field(i).name) for s in structs])
        for i in range(t.num_fields)
    ]
    return field.with_type(pa.struct(children))


def _field(container: pa.Schema | pa.StructType, name: str) -> pa.Field | None:
    """The field called ``name``, or None (also when the name is ambiguous)."""
    i = container.get_field_index(name)
    return container.field(i) if i >= 0 else None


def _same_family(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether file bounds of type ``src`` mean the same order as type ``dst`` (a widening)."""
    families = (
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_decimal,
        pa.types.is_timestamp,
        pa.types.is_date,
        pa.types.is_boolean,
        is_string_like,
        is_binary_like,
    )
    return any(f(src) and f(dst) for f in families)


def _merge_row_groups(md: pq.FileMetaData, layout: list[_Chunk]) -> list[tuple[Any, Any, int | None]]:
    """Per column: min over row groups' mins, max over maxes, summed null counts (None: unknown)."""
    k = len(layout)
    lo: list[Any] = [None] * k
    hi: list[Any] = [None] * k
    nulls: list[int | None] = [0] * k
    known = [True] * k  # bounds known
    stats_missing = [False] * k
    for r in range(md.num_row_groups):
        group = md.row_group(r)
        for c, chunk_layout in enumerate(layout):
            chunk = group.column(chunk_layout.index)
            st = chunk.statistics
            if st is None:
                stats_missing[c] = True
                continue
            has_nulls = st.has_null_count
            count = nulls[c]
            if count is not None:
                nulls[c] = count + st.null_count if has_nulls else None
            if not st.has_min_max or chunk.physical_type in _UNORDERED_PHYSICAL:
                # A row group of only nulls has no bounds and needs none; otherwise they're unknown.
                if not (has_nulls and chunk.num_values == st.null_count):
                    known[c] = False
                continue
            a, b = chunk_layout.bounds(st)
            if lo[c] is None or a < lo[c]:
                lo[c] = a
            if hi[c] is None or b > hi[c]:
                hi[c] = b
    return [
        (None, None, None)
        if stats_missing[c]
        else ((lo[c], hi[c], nulls[c]) if known[c] else (None, None, nulls[c]))
        for c in range(k)
    ]


def _assemble(values: list[Any], types: list[pa.DataType | None], target: pa.DataType) -> pa.Array:
    """One array of ``target`` type from per-file values expressed in each file's own type."""
    groups: dict[pa.DataType, list[int]] = defaultdict(list)
    for i, t in enumerate(types):
        if t is not None and values[i] is not None:
            groups[t].append(i)
    if not groups:
        return pa.nulls(len(values), target)
    if list(groups) == [target]:
        return pa.array(values, type=_storage_type(target)).cast(target)
    pieces: list[pa.Array] = []
    positions = np.full(len(values), -1, dtype=np.int64)
    offset = 0
    for t, idx in groups.items():
        if not _same_family(t, target):
            continue  # int64 bounds say nothing about string order: those files stay unknown
        arr = pa.array([values[i] for i in idx], type=_storage_type(t))
        try:
            # A safe cast only: a bound rounded the wrong way (ns to us, toward zero) could prune.
            pieces.append(arr.cast(t).cast(target))
        except pa.ArrowException:
            continue  # a change the target cannot hold exactly: those files stay unknown
        positions[idx] = np.arange(offset, offset + len(idx))
        offset += len(idx)
    positions[positions < 0] = offset  # the trailing null
    return pa.concat_arrays([*pieces, pa.nulls(1, target)]).take(pa.array(positions))


def _storage_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    return t
