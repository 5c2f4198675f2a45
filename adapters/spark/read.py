"""Native Spark parquet DataFrames over only the files the index keeps.

``read`` prunes for a predicate and reads the kept files; ``prune`` rewrites an existing
``spark.read.parquet(root).filter(...)`` DataFrame the same way. Both read with the schema of the
whole table (the kept files alone could infer other column or partition types) and ``basePath`` at
the table root, so hive partition columns stay columns. ``read_plan`` and ``prune_plan`` say which
files those read and why.

Files are pruned by statistics first; then, when the table has secondary indexes and
``UseRules`` say they pay, files whose row selection is empty are dropped too (the index proves
they hold no matching row). Spark reads the remaining files whole and applies the filter itself.

Spark types hive partition values itself and the index types them as DuckDB does; a predicate leaf
on a column whose Spark type and index type differ in kind (a number against a string, a session-
zone TIMESTAMP against a naive one, ...) is not used for pruning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from adapters.spark.catalyst import FileScan, class_name, file_scan, translate_column, translate_plan
from adapters.spark.secondary import SecondarySkip, skip_files
from hudi_expr import AlwaysTrue, BindError, Expression, Predicate
from hudi_expr.expressions import Applied
from hudi_expr.types import is_binary_like, is_string_like
from hudi_expr.visitors import transform_leaves
from index_store import IndexedTable, PruneResult, open_table
from index_store.secondary import UseRules

__all__ = ["ReadPlan", "prune", "prune_plan", "read", "read_plan", "usable_expression"]

JavaObject = Any


@dataclass(frozen=True)
class ReadPlan:
    """The files a pruned Spark read keeps for a predicate, and why (statistics, then the
    secondary index)."""

    files: list[str]  # absolute paths, what Spark reads
    expression: Expression  # the predicate the index pruned for
    pruned: PruneResult  # file pruning by statistics
    secondary: SecondarySkip  # files the secondary index dropped after it, and whether it was used

    @property
    def secondary_used(self) -> bool:
        return self.secondary.use.used

    def notes(self) -> list[str]:
        """What, beside the statistics, decided which files are kept (one line each)."""
        return self.pruned.notes() + self.secondary.notes()

    def explain(self) -> str:
        lines = [self.pruned.explain(), *self.secondary.notes()]
        lines.append(f"Spark reads {len(self.files)} of {self.pruned.total} files")
        return "\n".join(line for line in lines if line)


def read(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    where: Column | str | None = None,
    rules: UseRules | None = None,
) -> DataFrame:
    """Rows of ``table`` where ``where`` (a Column or SQL text) is TRUE, reading only kept files.

    ``rules`` decide when the secondary index pays (default ``UseRules()``). With no kept file the
    result is an empty DataFrame with the whole table's schema.
    """
    indexed = _open(table)
    everything = spark.read.parquet(indexed.root)
    if where is None:
        return everything
    condition = F.expr(where) if isinstance(where, str) else where
    plan = _plan(
        indexed, translate_column(spark, condition, everything.schema).expr, everything.schema, rules
    )
    return _read_files(spark, indexed.root, plan.files, everything.schema, {}).filter(condition)


def read_plan(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    where: Column | str,
    rules: UseRules | None = None,
) -> ReadPlan:
    """The files ``read(spark, table, where, rules)`` reads, and why (``explain()``)."""
    indexed = _open(table)
    schema = spark.read.parquet(indexed.root).schema
    condition = F.expr(where) if isinstance(where, str) else where
    return _plan(indexed, translate_column(spark, condition, schema).expr, schema, rules)


def prune(
    df: DataFrame, table: IndexedTable | str | os.PathLike[str], rules: UseRules | None = None
) -> DataFrame:
    """``df`` (Projects and Filters over one parquet read of ``table``'s root) over kept files only.

    The filters and projections are re-applied from their SQL text and the rebuilt plan is checked
    to be the same expressions over the new scan; any other shape, a non-deterministic filter, or
    a rebuilt plan that differs returns ``df`` unchanged (sound, just not pruned). ``rules``: as in
    ``read``.
    """
    indexed = _open(table)
    scan = file_scan(df)
    if scan is None or not _rebuildable(scan, indexed.root):
        return df
    relation = scan.relation.relation()
    schema = StructType.fromJson(_json(relation.schema()))
    plan = _plan(indexed, translate_plan(df).expr, schema, rules)
    rebuilt = _read_files(df.sparkSession, indexed.root, plan.files, schema, _options(relation))
    try:
        for node in reversed(scan.chain):
            rebuilt = _apply(rebuilt, node)
    except Exception:  # text Spark prints but cannot parse back (a Python UDF, say)
        return df
    new_scan = file_scan(rebuilt)
    if new_scan is None or not _same_chain(scan, new_scan):
        return df
    return rebuilt


def prune_plan(
    df: DataFrame, table: IndexedTable | str | os.PathLike[str], rules: UseRules | None = None
) -> ReadPlan | None:
    """The files ``prune(df, table, rules)`` keeps, and why; None when ``df``'s plan is not one
    ``prune`` rewrites (``prune`` may still return ``df`` unchanged when its rebuilt plan differs)."""
    indexed = _open(table)
    scan = file_scan(df)
    if scan is None or not _rebuildable(scan, indexed.root):
        return None
    schema = StructType.fromJson(_json(scan.relation.relation().schema()))
    return _plan(indexed, translate_plan(df).expr, schema, rules)


def usable_expression(expr: Expression, spark_schema: StructType, index_schema: pa.Schema) -> Expression:
    """``expr`` with leaves on columns the index types differently from Spark replaced by TRUE.

    Sound because the translations are NOT-free: making a leaf TRUE only keeps more files.
    """

    def keep(leaf: Predicate) -> Expression:
        name = leaf.term.column.name  # a function of a column (year(d)) is typed by its column
        spark_kind = _spark_kind(_spark_field_type(spark_schema, name))
        index_kind = _arrow_kind(_arrow_field_type(index_schema, name))
        if spark_kind is None or spark_kind != index_kind:
            return AlwaysTrue()
        if isinstance(leaf.term, Applied):
            try:
                leaf.bind(index_schema)
            except BindError:
                return AlwaysTrue()  # not monotonic on the index's type of the column
        return leaf

    return transform_leaves(expr, keep)


def _plan(
    indexed: IndexedTable, translated: Expression, schema: StructType, rules: UseRules | None
) -> ReadPlan:
    """Statistics prune ``translated`` (its leaves Spark and the index type alike), then the
    secondary index drops the files it proves empty."""
    expr = usable_expression(translated, schema, _index_schema(indexed))
    pruned = indexed.prune(expr)
    files, skipped = skip_files(indexed, expr, pruned.files, rules)
    return ReadPlan(files, expr, pruned, skipped)


# ---------------------------------------------------------------------------------------- reading


def _open(table: IndexedTable | str | os.PathLike[str]) -> IndexedTable:
    return table if isinstance(table, IndexedTable) else open_table(table)


def _index_schema(table: IndexedTable) -> pa.Schema:
    return table.snapshot().schema


def _read_files(
    spark: SparkSession, root: str, files: Sequence[str], schema: StructType, options: dict[str, str]
) -> DataFrame:
    """A parquet read of ``files`` with the table's schema; empty (same schema) for no file."""
    if not files:
        return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)
    reader = spark.read.schema(schema).options(**options).option("basePath", root)
    return reader.parquet(*files)


def _options(relation: JavaObject) -> dict[str, str]:
    """The reader options of the original relation, minus the paths (``basePath`` is set anew)."""
    it = relation.options().iterator()
    options = {}
    while it.hasNext():
        pair = it.next()
        key, value = str(pair._1()), str(pair._2())
        if key.lower() not in ("path", "paths", "basepath"):
            options[key] = value
    return options


def _json(data_type: JavaObject) -> dict[str, Any]:
    import json

    return json.loads(str(data_type.json()))


# ------------------------------------------------------------------------------------- rebuilding


def _rebuildable(scan: FileScan, root: str) -> bool:
    """A plan that is only Projects and Filters over a parquet read of exactly ``root``."""
    relation = scan.relation.relation()
    if any(class_name(node) not in ("Filter", "Project") for node in scan.chain):
        return False
    if not scan.top_is_root or "Parquet" not in str(relation.fileFormat().getClass().getSimpleName()):
        return False
    if any(not node.condition().deterministic() for node in scan.chain if class_name(node) == "Filter"):
        return False
    paths = relation.location().rootPaths()
    roots = [_local(str(paths.apply(i).toString())) for i in range(paths.size())]
    return roots == [os.path.normpath(root)]


def _local(uri: str) -> str:
    """A ``file:`` URI as a normalized local path (other schemes stay as they are)."""
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            return os.path.normpath(uri[len(prefix) :])
    return uri


def _apply(df: DataFrame, node: JavaObject) -> DataFrame:
    """Re-apply one Filter or Project of the original plan from its SQL text."""
    if class_name(node) == "Filter":
        return df.filter(F.expr(str(node.condition().sql())))
    items = node.projectList()
    return df.select(*[F.expr(str(items.apply(i).sql())) for i in range(items.size())])


def _same_chain(old: FileScan, new: FileScan) -> bool:
    """Whether the rebuilt Project/Filter chain computes the same expressions as the original."""
    if len(old.chain) != len(new.chain) or not new.top_is_root:
        return False
    for a, b in zip(old.chain, new.chain, strict=True):
        if class_name(a) != class_name(b):
            return False
        if class_name(a) == "Filter":
            if not _same_expression(a.condition(), b.condition()):
                return False
        else:
            left, right = a.projectList(), b.projectList()
            if left.size() != right.size():
                return False
            if not all(_same_expression(left.apply(i), right.apply(i)) for i in range(left.size())):
                return False
    return True


def _same_expression(a: JavaObject, b: JavaObject) -> bool:
    """Structural equality up to attribute ids: kinds, types, SQL text and literal values."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        kind = class_name(x)
        if kind != class_name(y) or str(x.sql()) != str(y.sql()):
            return False
        if kind == "Literal" and not x.equals(y):
            return False  # e.g. a TIMESTAMP text that names another instant when parsed back
        if x.resolved() and not x.dataType().equals(y.dataType()):
            return False
        xs, ys = x.children(), y.children()
        if xs.size() != ys.size():
            return False
        stack.extend((xs.apply(i), ys.apply(i)) for i in range(xs.size()))
    return True


# ------------------------------------------------------------------------------------ type kinds


def _spark_field_type(schema: StructType, name: str) -> DataType | None:
    """The Spark type of a top-level column or a dotted struct path."""
    if name in schema.fieldNames():
        return schema[name].dataType
    current: DataType = schema
    for part in name.split("."):
        if not isinstance(current, StructType) or part not in current.fieldNames():
            return None
        current = current[part].dataType
    return current


def _arrow_field_type(schema: pa.Schema, name: str) -> pa.DataType | None:
    """The arrow type of a top-level column or a dotted struct path."""
    if name in schema.names:
        return schema.field(name).type
    fields: Any = schema
    current: pa.DataType | None = None
    for part in name.split("."):
        names = [f.name for f in fields]
        if part not in names:
            return None
        current = fields[names.index(part)].type
        fields = list(current) if pa.types.is_struct(current) else []
    return current


def _spark_kind(t: DataType | None) -> str | None:
    """The kind of value a Spark type holds, as far as literal comparison is concerned."""
    kinds: list[tuple[type[DataType] | tuple[type[DataType], ...], str]] = [
        ((IntegralType, FloatType, DoubleType, DecimalType), "number"),
        (StringType, "string"),
        (BinaryType, "binary"),
        (BooleanType, "boolean"),
        (DateType, "date"),
        (TimestampType, "timestamp_tz"),
        (TimestampNTZType, "timestamp_ntz"),
    ]
    return next((kind for cls, kind in kinds if isinstance(t, cls)), None)


def _arrow_kind(t: pa.DataType | None) -> str | None:
    """The kind of value an arrow type holds (see ``_spark_kind``)."""
    if t is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if is_string_like(t):
        return "string"
    if is_binary_like(t):
        return "binary"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp_tz" if t.tz is not None else "timestamp_ntz"
    return None
