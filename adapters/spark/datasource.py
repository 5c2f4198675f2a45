"""The ``hudi_index`` Spark Python Data Source: read a table through its metadata index.

    from adapters.spark.datasource import register
    register(spark)
    spark.read.format("hudi_index").option("singleScan", "true").load("/path/to/table") \
        .filter("l_shipdate >= '1995-01-01'")
    spark.sql("CREATE TEMPORARY VIEW t USING hudi_index OPTIONS (path '/path/to/table')")  # unpruned

Spark hands the conjuncts of a query's filter to ``pushFilters``; the reader translates those it
understands to one ``hudi_expr`` conjunction, ``partitions()`` asks the index which files may hold
a matching row, and ``read()`` streams those files as arrow batches (hive partition columns added
as constants). Filters arrive only with ``spark.sql.python.filterPushdown.enabled=true`` (set by
``adapters.spark.local_session``). With it off, pyspark refuses to plan a read from a reader that
implements ``pushFilters`` (error ``DATA_SOURCE_PUSHDOWN_DISABLED``) instead of silently reading
every file, so a misconfigured session fails loudly rather than slowly.

Soundness: pruning is per file, so a kept file still holds rows that fail the filters, and Spark
does not re-apply a filter that ``pushFilters`` accepted (its contract: it returns the filters
"that still need to be evaluated by Spark post the data source scan"). So every filter is handed
back to Spark, translated or not; the translated ones are only used to choose files. Spark then
evaluates each row with its own semantics (NaN, collations, time zones), which no re-implementation
here could match as surely. The translation must keep every file Spark could take a row from:
where in doubt, a filter is simply not used for pruning.

Pruning is opt-in, per ``load()``, with ``option("singleScan", "true")``, because of a Spark 4.3.0
limit (checked in tests/adapters/test_spark_datasource.py, marked xfail so a fix shows up): Spark keeps a
Python data source's planned read (partitions and reader) on the relation that ``load()`` made,
not on each scan. A DataFrame (or temp view) scanned twice reuses the last planned read:
``df.filter(...).count()`` then ``df.count()`` would count only the files kept for the first, and
a self-union would get one scan's pruning for both. Without the option every file is read (the
answer is right, only slower); with it the caller promises one scan per loaded DataFrame (so
never on a temporary view, which every later query scans again).
``adapters.spark.read`` (native parquet reads of the kept files) has no such limit.

Another Spark 4.3.0 limit:
- ``CREATE TABLE ... USING hudi_index OPTIONS (path ...)`` is accepted, but reads of the table get
  no options at all (not even ``path``), so they fail.

Options: ``path`` (the table), ``singleScan`` (prune; see above), ``indexPath`` (default
``<table>/.hoodie/.index``),
``maxPartitionBytes`` (default 128 MiB) and ``maxFilesPerPartition`` (default 8) to group kept
files into Spark partitions, ``planLog`` (a file that receives one JSON line per planned scan:
filters, pruning expression, kept and total file counts; ``planTag`` labels the line).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import (
    DataType,
    DoubleType,
    FloatType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import hudi_expr as hx
from adapters.spark import merged
from hudi_expr import Expression
from hudi_expr.expressions import LiteralPredicate
from index_store.merged import needs_merge, query_type_of
from index_store.merged.schema import MergedLayout
from index_store.table import IndexedTable, open_table

__all__ = [
    "SOURCE_NAME",
    "FilePartition",
    "HudiIndexDataSource",
    "HudiIndexReader",
    "register",
    "table_schema",
    "translate_filter",
    "translate_filters",
]

SOURCE_NAME = "hudi_index"
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_FILES_PER_PARTITION = 8
_READ_BATCH_ROWS = 64 * 1024


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("hudi_index")`` and ``USING hudi_index`` available in ``spark``."""
    spark.dataSource.register(HudiIndexDataSource)


# ------------------------------------------------------------------------------------ the source


class HudiIndexDataSource(sds.DataSource):
    """A plain parquet directory or Hudi copy-on-write table, pruned by its metadata index."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return table_schema(self._open())

    def reader(self, schema: StructType) -> HudiIndexReader:
        return HudiIndexReader(dict(self.options), schema)

    def _open(self) -> IndexedTable:
        return _open(dict(self.options))


def _open(options: dict[str, str]) -> IndexedTable:
    path = _option(options, "path")
    if not path:
        raise ValueError("the hudi_index data source needs a path: .load(path)")
    return open_table(_local_path(path), _option(options, "indexPath"))


def _local_path(path: str) -> str:
    """A local path from what Spark passes: ``CREATE TABLE`` turns ``/x`` into ``file:/x``."""
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # one letter is a Windows drive
        raise ValueError(f"hudi_index reads local tables only, not {path!r}")
    return path


def _option(options: dict[str, str], name: str, default: str | None = None) -> str | None:
    """An option by case-insensitive name (Spark's own option maps ignore case too)."""
    lowered = {k.lower(): v for k, v in options.items()}
    return lowered.get(name.lower(), default)


def table_schema(table: IndexedTable) -> StructType:
    """The Spark schema: data columns of the files, then hive partition columns as the reader
    types them. Every column is nullable, as with Spark's own parquet source."""
    if needs_merge(table.reader):  # merge-on-read (issue 23): the merged rows' schema
        return merged.spark_schema(MergedLayout.of(table.reader))
    snap = table.snapshot()
    # The index already unified the files' schemas (partition columns last).
    arrow = snap.schema if snap.version and len(snap.schema) else _schema_from_files(table)
    return from_arrow_schema(pa.schema([_spark_field(f) for f in arrow]))


def _schema_from_files(table: IndexedTable) -> pa.Schema:
    """Without an index: the union of the file footers, plus the partition columns."""
    partition = table.reader.partition_schema()
    footers = [pq.read_schema(os.path.join(table.root, f.path)) for f in table.reader.list_files()]
    data = pa.unify_schemas(footers, promote_options="permissive") if footers else pa.schema([])
    return pa.schema([f for f in data if f.name not in partition.names] + list(partition))


# Spark's parquet reader widens unsigned integers; from_arrow_type would reject them.
_UNSIGNED = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
}


def _spark_field(f: pa.Field) -> pa.Field:
    """``f`` made nullable (recursively) with types Spark can hold."""
    t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
    if pa.types.is_struct(t):
        t = pa.struct([_spark_field(t.field(i)) for i in range(t.num_fields)])
    return pa.field(f.name, _UNSIGNED.get(t, t), nullable=True)


# ------------------------------------------------------------------------------- filter pushdown


def translate_filters(
    filters: Sequence[sds.Filter], schema: StructType
) -> tuple[Expression, list[sds.Filter]]:
    """The conjunction of the filters that translate, and the filters that do not."""
    kept: list[Expression] = []
    skipped: list[sds.Filter] = []
    for f in filters:
        expr = translate_filter(f, schema)
        if expr is None:
            skipped.append(f)
        else:
            kept.append(expr)
    return hx.And(*kept), skipped


def translate_filter(f: sds.Filter, schema: StructType) -> Expression | None:
    """A ``hudi_expr`` predicate TRUE on every row where Spark finds ``f`` TRUE, or None.

    Callers use it to choose files only, never to decide rows: see the module docstring."""
    try:
        return _translate(f, schema)
    except (TypeError, ValueError, hx.HudiExprError):
        return None  # a literal hudi_expr cannot hold (arrays, maps, NULL): not used for pruning


def _translate(f: sds.Filter, schema: StructType) -> Expression | None:
    if isinstance(f, sds.Not):
        child = _translate(f.child, schema)
        # NOT is exact under three-valued logic in both Spark and hudi_expr.
        return None if child is None else hx.Not(child)
    attribute: tuple[str, ...] = f.attribute  # type: ignore[attr-defined]  # every filter but Not has one
    found = _resolve(schema, attribute)
    if found is None:
        return None
    name, spark_type = found
    if isinstance(f, sds.IsNull):
        return hx.IsNull(name)
    if isinstance(f, sds.IsNotNull):
        return hx.IsNotNull(name)
    if isinstance(f, sds.EqualNullSafe):
        if f.value is None:
            return hx.IsNull(name)  # a <=> NULL
        # a <=> v is FALSE, not NULL, on NULL rows: NOT (a <=> v) keeps them, NOT (a = v) would not.
        equal = _comparison(sds.EqualTo(f.attribute, f.value), name, spark_type)
        return None if equal is None else hx.And(equal, hx.IsNotNull(name))
    if isinstance(f, sds.StringStartsWith):
        return hx.StartsWith(name, f.value)
    if isinstance(f, sds.StringContains):
        return hx.Contains(name, f.value)
    if isinstance(f, sds.In):
        # A NULL in the list matches no row: without it the filter is TRUE on the same rows and
        # FALSE on more (not NULL), so even under NOT the translation keeps every file it must.
        values = [_literal(v, spark_type) for v in f.value if v is not None]
        if any(v is None for v in values):
            return None  # a value that cannot be translated
        return _keep_nan(hx.In(name, values), name, spark_type, any(_is_nan(v) for v in values))
    return _comparison(f, name, spark_type)


_COMPARISONS: dict[type, type[LiteralPredicate]] = {
    sds.EqualTo: hx.EqualTo,
    sds.GreaterThan: hx.GreaterThan,
    sds.GreaterThanOrEqual: hx.GreaterThanOrEqual,
    sds.LessThan: hx.LessThan,
    sds.LessThanOrEqual: hx.LessThanOrEqual,
}


def _comparison(f: sds.Filter, name: str, spark_type: DataType) -> Expression | None:
    kind = _COMPARISONS.get(type(f))
    value = _literal(getattr(f, "value", None), spark_type)
    if kind is None or value is None:
        return None  # StringEndsWith, unknown filters: no pruning rule
    # Spark orders NaN above every number and finds NaN = NaN: a NaN row satisfies a > v and
    # a >= v for every v, and a = NaN is isnan(a).
    upward = kind in (hx.GreaterThan, hx.GreaterThanOrEqual)
    return _keep_nan(kind(name, value), name, spark_type, upward or _is_nan(value))


def _keep_nan(expr: Expression, name: str, spark_type: DataType, nan_matches: bool) -> Expression:
    """``expr`` OR isnan(name) when NaN rows satisfy the filter in Spark (float columns only).

    The index's rules already order NaN last; saying it here keeps Spark's semantics in the
    adapter that owns them."""
    if nan_matches and isinstance(spark_type, (FloatType, DoubleType)):
        return hx.Or(expr, hx.IsNaN(name))
    return expr


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _literal(value: Any, spark_type: DataType) -> Any:
    """A filter value as ``hudi_expr`` reads it against a column of ``spark_type``, or None.

    pyspark gives TIMESTAMP values as aware datetimes (UTC) and TIMESTAMP_NTZ values as naive
    wall-clock datetimes whatever the session time zone: ``hudi_expr`` reads an aware literal as an
    instant (right for TIMESTAMP) and a naive one as wall-clock time (right for TIMESTAMP_NTZ). Any
    other pairing is not something Spark sends; it is refused rather than guessed."""
    if isinstance(value, dt.datetime):
        aware = value.tzinfo is not None
        if isinstance(spark_type, TimestampType) and aware:
            return value
        if isinstance(spark_type, TimestampNTZType) and not aware:
            return value
        return None
    return value


def _resolve(schema: StructType, path: tuple[str, ...]) -> tuple[str, DataType] | None:
    """The dotted column name (schema spelling) and Spark type of a filter's attribute path."""
    names: list[str] = []
    current: DataType = schema
    for part in path:
        if not isinstance(current, StructType):
            return None
        matches = [f for f in current.fields if f.name == part] or [
            f for f in current.fields if f.name.lower() == part.lower()
        ]
        if len(matches) != 1:
            return None
        names.append(matches[0].name)
        current = matches[0].dataType
    if len(names) > 1 and any("." in n for n in names):
        return None  # a dotted path would be ambiguous: no pruning on it
    return ".".join(names), current


# ------------------------------------------------------------------------------------ the reader


@dataclass
class FilePartition(sds.InputPartition):
    """Files one Spark task reads: absolute paths with their typed partition values."""

    files: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(None)


@dataclass
class _PlanRecord:
    """What one planned scan did, for ``planLog``."""

    tag: str | None
    path: str
    filters: list[str]
    expression: str
    kept: int
    total: int
    partitions: int
    note: str = ""


class HudiIndexReader(sds.DataSourceReader):
    """Prunes with the filters Spark pushes, then reads the kept files."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.filters: list[str] = []
        self.expression: Expression = hx.AlwaysTrue()
        # Prune only when the caller promises one scan per load (see the module docstring).
        self.single_scan = (_option(options, "singleScan", "false") or "").lower() == "true"

    def pushFilters(self, filters: list[sds.Filter]) -> list[sds.Filter]:
        """Keep the translatable filters for pruning, and hand EVERY filter back to Spark.

        Spark skips the filters this does not return, but the index only chooses files: rows of a
        kept file must still be filtered by Spark (see the module docstring)."""
        self.filters = [repr(f) for f in filters]
        if self.single_scan:
            self.expression, _ = translate_filters(filters, self.schema)
        return list(filters)

    def partitions(self) -> list[sds.InputPartition]:
        """One partition per group of kept files; one empty partition when nothing is kept."""
        table = _open(self.options)
        files, total, note = self._prune(table)
        groups = group_files(
            files,
            self._int_option("maxPartitionBytes", DEFAULT_PARTITION_BYTES),
            self._int_option("maxFilesPerPartition", DEFAULT_FILES_PER_PARTITION),
        )
        partitions: list[sds.InputPartition] = [FilePartition(g) for g in groups] or [FilePartition()]
        if needs_merge(table.reader):  # merge-on-read (issue 23): the kept slices, merged in tasks
            query_type = query_type_of(_option(self.options, "queryType", "snapshot") or "snapshot")
            partitions = merged.slice_partitions(table, [path for path, _, _ in files], query_type)
        self._log(
            _PlanRecord(
                _option(self.options, "planTag"),
                table.root,
                self.filters,
                str(self.expression),
                len(files),
                total,
                len(groups),
                note,
            )
        )
        return partitions

    def read(self, partition: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(self.schema, timezone="UTC")
        if isinstance(partition, merged.SlicePartition):  # merge-on-read (issue 23)
            yield from merged.read_slice_partition(partition, target)
            return
        for path, values in getattr(partition, "files", None) or []:
            yield from read_file(path, values, target)

    def _prune(self, table: IndexedTable) -> tuple[list[tuple[str, int, dict[str, Any]]], int, str]:
        """Kept files as (absolute path, size, partition values), the file count, and a note."""
        listing = {os.path.join(table.root, f.path): f for f in table.reader.list_files()}
        if not table.snapshot().version:
            kept, total, note = list(listing), len(listing), "no index: every file read"
        elif not self.single_scan:
            kept, total, note = list(listing), len(listing), "pruning off: option singleScan is not true"
        else:
            result = table.prune(self.expression)
            kept, total, note = result.files, result.total, result.note
        files = [(p, listing[p].size, listing[p].partition_values) for p in kept if p in listing]
        return files, total, note

    def _int_option(self, name: str, default: int) -> int:
        return int(_option(self.options, name, str(default)) or default)

    def _log(self, record: _PlanRecord) -> None:
        target = _option(self.options, "planLog")
        if target:
            with open(target, "a", encoding="utf-8") as out:
                out.write(json.dumps(record.__dict__) + "\n")


def group_files(
    files: Sequence[tuple[str, int, dict[str, Any]]], max_bytes: int, max_files: int
) -> list[list[tuple[str, dict[str, Any]]]]:
    """Consecutive files packed into groups of at most ``max_bytes`` and ``max_files`` (a file
    larger than ``max_bytes`` gets a group of its own)."""
    groups: list[list[tuple[str, dict[str, Any]]]] = []
    size = 0
    for path, nbytes, values in files:
        if not groups or size + nbytes > max_bytes or len(groups[-1]) >= max_files:
            groups.append([])
            size = 0
        groups[-1].append((path, values))
        size += nbytes
    return groups


# --------------------------------------------------------------------------------------- reading


def read_file(path: str, values: dict[str, Any], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one parquet file as batches of ``target``: partition columns from ``values``,
    columns the file lacks as NULL, the rest cast to the declared types."""
    pf = pq.ParquetFile(path)
    present = [f.name for f in target if f.name not in values and f.name in pf.schema_arrow.names]
    for batch in pf.iter_batches(batch_size=_READ_BATCH_ROWS, columns=present):
        n = batch.num_rows
        arrays = [_column(batch, f, values, n) for f in target]
        yield pa.RecordBatch.from_arrays(arrays, schema=target)


def _column(batch: pa.RecordBatch, f: pa.Field, values: dict[str, Any], n: int) -> pa.Array:
    if f.name in values:
        # The folder's value wins over a same-named column in the file (as in Spark and DuckDB).
        value = values[f.name]
        return pa.nulls(n, f.type) if value is None else pa.repeat(pa.scalar(value, f.type), n)
    index = batch.schema.get_field_index(f.name)
    if index < 0:
        return pa.nulls(n, f.type)
    return batch.column(index).cast(f.type)
