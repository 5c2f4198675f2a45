"""``FileStats``: the column-oriented statistics of N data files, the input of every evaluator.

Per data column (a leaf path, ``"s.x"`` for struct fields) there are four arrays over the files:
``min`` and ``max`` in the column's arrow type, ``null_count`` and ``nan_count`` (int64). A null
entry means unknown. Bounds are bounds (a truncated string min is still a lower bound), not values.
The schema is a claim about every file: a column it declares non-nullable holds no NULL, so its
unknown null counts are 0 (filled once, here, when the stats are built).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.bloom import BloomFilter, BloomFilterSet
from hudi_expr.errors import StatsError
from hudi_expr.membership import Membership
from hudi_expr.sortkeys import sort_keys

__all__ = ["ColumnStats", "FileStats", "leaf_columns"]


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column over N files; nulls mean unknown."""

    min: pa.Array
    max: pa.Array
    null_count: pa.Array
    nan_count: pa.Array
    bloom: BloomFilterSet | None = field(default=None, compare=False)
    # Other per-file knowledge of which values the column holds (a record index, a secondary index).
    membership: tuple[Membership, ...] = field(default=(), compare=False)

    @cached_property
    def sort_keys(self) -> tuple[np.ndarray, np.ndarray] | None:
        """min and max as monotone numpy keys for binary search (computed once per stats)."""
        lo, hi = sort_keys(self.min), sort_keys(self.max)
        return None if lo is None or hi is None else (lo, hi)

    def take(self, indices: pa.Array | np.ndarray) -> ColumnStats:
        idx = pa.array(indices) if isinstance(indices, np.ndarray) else indices
        return ColumnStats(
            min=self.min.take(idx),
            max=self.max.take(idx),
            null_count=self.null_count.take(idx),
            nan_count=self.nan_count.take(idx),
            bloom=self.bloom.take(np.asarray(idx)) if self.bloom is not None else None,
            membership=tuple(m.take(np.asarray(idx)) for m in self.membership),
        )

    def contained(self, values: pa.Array) -> pa.BooleanArray | None:
        """Per file: False where none of ``values`` can be in the column (bloom filters and the
        other membership structures agree on that), True where one may be, null where unknown;
        None when the column has no membership structure at all."""
        sources: list[Membership] = [*([self.bloom] if self.bloom is not None else []), *self.membership]
        if not sources:
            return None
        answer = sources[0].contained(values)
        for source in sources[1:]:
            # Each source alone proves absence: a file any of them rules out cannot hold a value.
            # The next source is asked only about the files still open (probing costs per file).
            open_ = np.flatnonzero(pc.fill_null(answer, True).to_numpy(zero_copy_only=False))
            if not len(open_):
                break
            if len(open_) == len(answer):
                answer = pc.and_kleene(answer, source.contained(values))
                continue
            sub = source.take(open_).contained(values)
            said = np.ones(len(answer), dtype=bool)  # a closed file stays False: FALSE AND x
            said[open_] = pc.fill_null(sub, True).to_numpy(zero_copy_only=False)
            unknown = np.zeros(len(answer), dtype=bool)
            unknown[open_] = pc.is_null(sub).to_numpy(zero_copy_only=False)
            answer = pc.and_kleene(answer, pa.array(said, mask=unknown if unknown.any() else None))
        return answer


def leaf_columns(schema: pa.Schema) -> dict[str, pa.DataType]:
    """Leaf paths reachable through structs (lists and maps have no usable stats) and their types."""
    return {path: t for path, t, _ in _leaves(schema)}


def _leaves(schema: pa.Schema) -> list[tuple[str, pa.DataType, bool]]:
    """(path, type, required) of every leaf column, in schema order. A leaf is required (holds no
    NULL) when every field on its path is non-nullable: a NULL struct makes its fields NULL."""
    out: list[tuple[str, pa.DataType, bool]] = []
    stack: list[tuple[str, pa.Field, bool]] = [("", f, True) for f in reversed(list(schema))]
    while stack:
        prefix, f, outer_required = stack.pop()
        path = f"{prefix}{f.name}"
        required = outer_required and not f.nullable
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        if pa.types.is_struct(t):
            stack.extend((f"{path}.", t.field(i), required) for i in reversed(range(t.num_fields)))
        elif not (pa.types.is_nested(t) or pa.types.is_null(t)):
            out.append((path, t, required))
    return out


class FileStats:
    """Statistics of N files: paths, row counts and a ``ColumnStats`` per leaf column.

    A column of ``schema`` with no entry in ``columns`` has no statistics at all (every file may
    match). ``row_count`` may hold nulls (unknown); an empty file (0 rows) matches nothing. A
    non-nullable column's unknown null counts become 0: ``schema`` must not declare a column
    non-nullable unless every file holds it without NULLs (``footer.unify_schemas`` makes a column
    some files lack nullable).
    """

    __slots__ = ("columns", "files", "row_count", "schema")

    def __init__(
        self,
        files: pa.Array | Sequence[str],
        row_count: pa.Array | Sequence[int | None],
        columns: Mapping[str, ColumnStats],
        schema: pa.Schema,
    ) -> None:
        self.files = _as_array(files, pa.string())
        self.row_count = _as_array(row_count, pa.int64())
        n = len(self.files)
        if len(self.row_count) != n:
            raise StatsError(f"{n} files but {len(self.row_count)} row counts")
        self.schema = schema
        found = _leaves(schema)
        leaves = {path: t for path, t, _ in found}
        required = {path for path, _, is_required in found if is_required}
        self.columns: dict[str, ColumnStats] = {}
        for name, cs in columns.items():
            if name not in leaves:
                raise StatsError(f"stats for {name!r}, which is not a leaf column of the schema")
            self.columns[name] = _normalize(name, cs, leaves[name], n, name in required)

    def __len__(self) -> int:
        return len(self.files)

    @property
    def num_files(self) -> int:
        return len(self.files)

    def column(self, name: str) -> ColumnStats | None:
        """Stats of leaf column ``name``, or None when nothing is known about it."""
        return self.columns.get(name)

    def __repr__(self) -> str:
        return f"FileStats({self.num_files} files, columns={list(self.columns)})"

    def take(self, indices: pa.Array | np.ndarray | Sequence[int]) -> FileStats:
        """The stats of a subset of files, in the given order."""
        idx = pa.array(np.asarray(indices, dtype=np.int64))
        return FileStats(
            self.files.take(idx),
            self.row_count.take(idx),
            {name: cs.take(idx) for name, cs in self.columns.items()},
            self.schema,
        )

    def filter(self, mask: pa.Array | np.ndarray) -> FileStats:
        """The stats of the files where ``mask`` is True."""
        return self.take(np.flatnonzero(np.asarray(mask, dtype=bool)))

    def with_column(self, column: str, **fields: Any) -> FileStats:
        """A copy with some fields of one column's stats replaced (``nan_count=...``, ``bloom=...``)."""
        leaves = leaf_columns(self.schema)
        if column not in leaves:
            raise StatsError(f"{column!r} is not a leaf column of the schema")
        columns = dict(self.columns)
        base = columns.get(column) or _unknown_column(leaves[column], self.num_files)
        columns[column] = replace(base, **fields)
        return FileStats(self.files, self.row_count, columns, self.schema)

    def contained(self, column: str, values: pa.Array) -> pa.BooleanArray | None:
        """Per file, may some of ``values`` be in ``column``? (``ColumnStats.contained``; None when
        nothing can tell.)"""
        cs = self.column(column)
        return cs.contained(values) if cs is not None else None

    def with_membership(self, column: str, source: Membership) -> FileStats:
        """A copy where ``source`` also answers ``contained`` for ``column``."""
        if len(source) != self.num_files:
            raise StatsError(f"membership of {len(source)} files for {self.num_files} files")
        base = self.column(column)
        existing = base.membership if base is not None else ()
        return self.with_column(column, membership=(*existing, source))

    def with_bloom(self, column: str, filters: BloomFilterSet | Sequence[BloomFilter | None]) -> FileStats:
        """A copy with per-file bloom filters on ``column``, used by = and IN leaves."""
        bloom = filters if isinstance(filters, BloomFilterSet) else BloomFilterSet.from_filters(filters)
        if len(bloom) != self.num_files:
            raise StatsError(f"{len(bloom)} bloom filters for {self.num_files} files")
        return self.with_column(column, bloom=bloom)

    # ---------------------------------------------------------------------------- constructors

    @classmethod
    def concat(cls, parts: Sequence[FileStats], schema: pa.Schema | None = None) -> FileStats:
        """The stats of all files of ``parts``, in order; a column unknown in one part stays
        unknown for its files. ``schema`` defaults to the first part's."""
        schema = schema if schema is not None else (parts[0].schema if parts else pa.schema([]))
        leaves = leaf_columns(schema)
        names = [n for n in leaves if any(p.column(n) is not None for p in parts)]
        columns: dict[str, ColumnStats] = {}
        for name in names:
            t = leaves[name]
            pieces = [p.column(name) or _unknown_column(t, p.num_files) for p in parts]
            blooms = [c.bloom for c in pieces]
            columns[name] = ColumnStats(
                min=pa.concat_arrays([c.min.cast(t) for c in pieces]),
                max=pa.concat_arrays([c.max.cast(t) for c in pieces]),
                null_count=pa.concat_arrays([c.null_count for c in pieces]),
                nan_count=pa.concat_arrays([c.nan_count for c in pieces]),
                bloom=None
                if all(b is None for b in blooms)
                else BloomFilterSet.from_filters(
                    [
                        b[i] if b is not None else None
                        for b, c in zip(blooms, pieces, strict=True)
                        for i in range(len(c.min))
                    ]
                ),
            )
        files = pa.concat_arrays([p.files for p in parts]) if parts else pa.array([], pa.string())
        rows = pa.concat_arrays([p.row_count for p in parts]) if parts else pa.array([], pa.int64())
        return cls(files, rows, columns, schema)

    @classmethod
    def from_pylist(cls, records: Iterable[Mapping[str, Any]], schema: pa.Schema) -> FileStats:
        """From ``[{"file": "f1", "row_count": 10, "stats": {"a": {"min": 1, "max": 9, ...}}}]``.

        Per column the keys are ``min``, ``max``, ``null_count``, ``nan_count`` (missing = unknown)
        and optionally ``bloom`` (a ``BloomFilter``).
        """
        records = list(records)
        leaves = leaf_columns(schema)
        used = {name for r in records for name in (r.get("stats") or {})}
        unknown = used - leaves.keys()
        if unknown:
            raise StatsError(f"stats for columns not in the schema: {sorted(unknown)}")
        columns: dict[str, ColumnStats] = {}
        for name in (n for n in leaves if n in used):
            per_file = [(r.get("stats") or {}).get(name) or {} for r in records]
            t = leaves[name]
            blooms = [s.get("bloom") for s in per_file]
            columns[name] = ColumnStats(
                min=_typed([s.get("min") for s in per_file], t, name),
                max=_typed([s.get("max") for s in per_file], t, name),
                null_count=pa.array([s.get("null_count") for s in per_file], pa.int64()),
                nan_count=pa.array([s.get("nan_count") for s in per_file], pa.int64()),
                bloom=BloomFilterSet.from_filters(blooms) if any(b is not None for b in blooms) else None,
            )
        return cls([r["file"] for r in records], [r.get("row_count") for r in records], columns, schema)

    @classmethod
    def from_parquet(cls, paths: Sequence[str], schema: pa.Schema | None = None) -> FileStats:
        """From parquet footers only (no data read), merging row-group statistics per file.

        What a footer does not know stays unknown: NaN counts (parquet min/max skip NaN), min/max of
        a row group without statistics, columns a file lacks. ``schema`` defaults to the union of
        the files' schemas.
        """
        from hudi_expr.footer import read_footer_stats

        return read_footer_stats(cls, list(paths), schema)


def _as_array(values: Any, t: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if values.type == t else values.cast(t)
    return pa.array(list(values), type=t)


def _typed(values: list[Any], t: pa.DataType, name: str) -> pa.Array:
    try:
        return pa.array(values, type=t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise StatsError(f"min/max of column {name!r} do not fit its type {t}: {exc}") from None


def _unknown_column(t: pa.DataType, n: int) -> ColumnStats:
    return ColumnStats(pa.nulls(n, t), pa.nulls(n, t), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()))


def _normalize(name: str, cs: ColumnStats, t: pa.DataType, n: int, required: bool) -> ColumnStats:
    """Check lengths, cast to the column type, drop bounds that cannot be used (NaN), and fill the
    unknown null counts of a non-nullable (``required``) column with 0."""
    arrays = {}
    for key, target in (("min", t), ("max", t), ("null_count", pa.int64()), ("nan_count", pa.int64())):
        arr = getattr(cs, key)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if len(arr) != n:
            raise StatsError(f"column {name!r}: {len(arr)} {key} values for {n} files")
        if arr.type != target:
            try:
                arr = arr.cast(target)
            except pa.ArrowException as exc:
                raise StatsError(
                    f"column {name!r}: {key} of type {arr.type} is not {target}: {exc}"
                ) from None
        arrays[key] = arr
    if required and arrays["null_count"].null_count:
        # The schema says no file holds a NULL here (a parquet REQUIRED column): none is 0.
        arrays["null_count"] = arrays["null_count"].fill_null(0)
    if pa.types.is_floating(t):
        # A NaN bound says nothing about the other values: treat it as unknown.
        for key in ("min", "max"):
            arr = arrays[key]
            if pc.any(pc.is_nan(arr)).as_py():
                arrays[key] = pc.if_else(pc.is_nan(arr), pa.scalar(None, t), arr)
    if cs.bloom is not None and len(cs.bloom) != n:
        raise StatsError(f"column {name!r}: {len(cs.bloom)} bloom filters for {n} files")
    for source in cs.membership:
        if len(source) != n:
            raise StatsError(f"column {name!r}: membership of {len(source)} files for {n} files")
    return ColumnStats(bloom=cs.bloom, membership=cs.membership, **arrays)
