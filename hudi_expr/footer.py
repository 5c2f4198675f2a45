"""File statistics from parquet footers (no data pages read), for ``FileStats.from_parquet``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr.stats import ColumnStats, leaf_columns

if TYPE_CHECKING:
    from hudi_expr.stats import FileStats

__all__ = ["read_footer_stats", "stats_from_footers", "unified_schema"]

# Parquet min/max of these physical/logical types have no reliable order or no stats at all.
_UNORDERED_PHYSICAL = {"INT96"}


def read_footer_stats(cls: type[FileStats], paths: list[str], schema: pa.Schema | None) -> FileStats:
    return stats_from_footers(cls, paths, [pq.ParquetFile(p) for p in paths], schema)


def stats_from_footers(
    cls: type[FileStats], paths: Sequence[str], files: Sequence[pq.ParquetFile], schema: pa.Schema | None
) -> FileStats:
    """Stats from already opened files (``paths`` names them in the result); ``schema`` defaults
    to the union of the files' schemas."""
    if schema is None:
        schema = unified_schema(files)
    targets = leaf_columns(schema)
    n = len(files)
    # Per column: values per file and the arrow type they are expressed in (the file's own type).
    mins: dict[str, list[Any]] = {c: [None] * n for c in targets}
    maxs: dict[str, list[Any]] = {c: [None] * n for c in targets}
    nulls: dict[str, list[int | None]] = {c: [None] * n for c in targets}
    source_types: dict[str, list[pa.DataType | None]] = {c: [None] * n for c in targets}
    row_counts: list[int] = []
    for i, f in enumerate(files):
        md = f.metadata
        row_counts.append(md.num_rows)
        file_leaves = leaf_columns(f.schema_arrow)
        # Raw statistics are in the parquet storage type (seconds are stored as milliseconds).
        stored = leaf_columns(md.schema.to_arrow_schema())
        # Columns the file lacks (written before the column existed) stay unknown.
        for j in range(md.num_columns):
            path = md.schema.column(j).path
            if path not in targets or path not in file_leaves or path not in stored:
                continue
            lo, hi, nc = _merge_row_groups(md, j, stored[path])
            mins[path][i], maxs[path][i], nulls[path][i] = lo, hi, nc
            source_types[path][i] = stored[path]
        for path in targets:
            if path not in file_leaves and md.num_rows == 0:
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


def unified_schema(files: Sequence[pq.ParquetFile]) -> pa.Schema:
    """The union of the files' arrow schemas, types widened where files disagree.

    A field whose types cannot be widened into one (int64 in some files, string in others) takes
    the type of the last file that has it; files of another type family get unknown bounds for it.
    """
    if not files:
        return pa.schema([])
    schemas = [f.schema_arrow for f in files]
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
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
    return pa.schema(list(fields.values()))


def _same_family(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether file bounds of type ``src`` mean the same order as type ``dst`` (a widening)."""
    families = (
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_decimal,
        pa.types.is_timestamp,
        pa.types.is_date,
        pa.types.is_boolean,
        lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t),
        lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t),
    )
    return any(f(src) and f(dst) for f in families)


def _merge_row_groups(md: pq.FileMetaData, j: int, t: pa.DataType) -> tuple[Any, Any, int | None]:
    """Min over row groups' mins, max over maxes, summed null counts; None where any is unknown."""
    lo: Any = None
    hi: Any = None
    null_count: int | None = 0
    bounds_known = True
    for r in range(md.num_row_groups):
        chunk = md.row_group(r).column(j)
        st = chunk.statistics
        if st is None:
            return None, None, None
        if null_count is not None:
            null_count = null_count + st.null_count if st.has_null_count else None
        rows_with_values = chunk.num_values - (st.null_count if st.has_null_count else 0)
        if not st.has_min_max or chunk.physical_type in _UNORDERED_PHYSICAL:
            # A row group of only nulls has no bounds and needs none; otherwise bounds are unknown.
            if not (st.has_null_count and rows_with_values == 0):
                bounds_known = False
            continue
        a, b = _value(st, "min", t), _value(st, "max", t)
        lo = a if lo is None or a < lo else lo
        hi = b if hi is None or b > hi else hi
    if not bounds_known:
        return None, None, null_count
    return lo, hi, null_count


def _value(st: Any, which: str, t: pa.DataType) -> Any:
    # Timestamps and dates as raw integers (nanoseconds do not fit a datetime); float16 as bytes.
    if pa.types.is_timestamp(t) or pa.types.is_date32(t):
        return getattr(st, f"{which}_raw")
    if pa.types.is_float16(t):
        return np.frombuffer(getattr(st, f"{which}_raw"), dtype=np.float16)[0]
    return getattr(st, which)


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
