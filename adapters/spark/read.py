"""Native Spark parquet DataFrames over only the files the index keeps.

``read`` prunes for a predicate and reads the kept files; ``prune`` rewrites an existing
``spark.read.parquet(root).filter(...)`` DataFrame the same way. Both read with the schema of the
whole table (the kept files alone could infer other column or partition types) and ``basePath`` at
the table root, so hive partition columns stay columns. ``read_plan`` and ``prune_plan`` say which
files those read and why.

Only live files are ever read: a Hudi table's folders also hold the older versions of every file
slice and files of failed writes, which ``spark.read.parquet(root)`` would read too. A Hudi table
takes its schema from its newest base file (non-hive nested folders such as ``yyyy/MM/dd`` leave
Spark nothing to infer from the root), and files that store a column in an older type are read in
it and cast, as Hudi's reader does for an evolved column.

Files are pruned by statistics first; then, when the table has secondary indexes and
``UseRules`` say they pay, files whose row selection is empty are dropped too (the index proves
they hold no matching row). Spark reads the remaining files whole and applies the filter itself.

Spark types hive partition values itself and the index types them as DuckDB does; a predicate leaf
on a column whose Spark type and index type differ in kind (a number against a string, a session-
zone TIMESTAMP against a naive one, ...) is not used for pruning.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
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

from adapters.spark import merged
from adapters.spark.catalyst import FileScan, class_name, file_scan, translate_column, translate_plan
from adapters.spark.secondary import SecondarySkip, skip_files
from hudi_expr import AlwaysTrue, BindError, Expression, Predicate
from hudi_expr.expressions import Applied
from hudi_expr.types import is_binary_like, is_string_like
from hudi_expr.visitors import transform_leaves
from index_store import IndexedTable, PruneResult, open_table
from index_store.merged import QueryType, kept_slices, needs_merge, query_type_of
from index_store.merged.schema import MergedLayout
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
    query_type: QueryType = "snapshot",
) -> DataFrame:
    """Rows of ``table`` where ``where`` (a Column or SQL text) is TRUE, reading only kept files.

    With no ``where`` every live file is read: for a Hudi table that is the latest file slice of
    each file group, never the older versions its folders also hold. ``rules`` decide when the
    secondary index pays (default ``UseRules()``). With no kept file the result is an empty
    DataFrame with the whole table's schema. A merge-on-read table's kept file slices are merged by
    hudi-rs in Spark tasks (``adapters.spark.merged``); ``query_type="read_optimized"`` reads its
    base files only (other tables: the same rows either way).
    """
    indexed = _open(table)
    if needs_merge(indexed.reader):  # merge-on-read (issue 23): kept slices merged in tasks
        return merged.read(
            spark, indexed, where, query_type, lambda expr, schema: _plan(indexed, expr, schema, rules).pruned
        )
    query_type_of(query_type)
    source = _source(spark, indexed)
    if where is None:
        live = [os.path.join(indexed.root, f.path) for f in indexed.reader.list_files()]
        return _read_files(spark, live, source)
    condition = F.expr(where) if isinstance(where, str) else where
    plan = _plan(indexed, translate_column(spark, condition, source.schema).expr, source.schema, rules)
    return _read_files(spark, plan.files, source).filter(condition)


def read_plan(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    where: Column | str,
    rules: UseRules | None = None,
) -> ReadPlan:
    """The files ``read(spark, table, where, rules)`` reads, and why (``explain()``)."""
    indexed = _open(table)
    schema = _source(spark, indexed).schema
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
        _warn_every_version(scan, indexed)
        return df
    relation = scan.relation.relation()
    schema = StructType.fromJson(_json(relation.schema()))
    plan = _plan(indexed, translate_plan(df).expr, schema, rules)
    options = {**_options(relation), "basePath": indexed.root}
    mor = needs_merge(indexed.reader)  # merge-on-read (issue 23): the kept slices merged in tasks
    if mor:
        layout = MergedLayout.of(indexed.reader)
        rebuilt = merged.merged_frame(df.sparkSession, layout, kept_slices(indexed, plan.pruned), schema)
    else:
        rebuilt = _read_files(df.sparkSession, plan.files, _Source(schema, options))
    qualifier = _qualifier(scan)
    if qualifier is not None:  # a view's columns print as `v`.`id`: name the new scan alike
        rebuilt = rebuilt.alias(qualifier)
    try:
        with _quiet_analysis_errors():
            for node in reversed(scan.chain):
                rebuilt = _apply(rebuilt, node)
    except Exception:  # text Spark prints but cannot parse back (a Python UDF, say)
        _warn_every_version(scan, indexed)
        return df
    new_scan = merged.merged_scan(rebuilt) if mor else file_scan(rebuilt)
    if new_scan is None or not _same_chain(scan, new_scan):
        if mor:
            merged.refuse_unmerged(indexed)
        return df
    return rebuilt


def _warn_every_version(scan: FileScan | None, table: IndexedTable) -> None:
    """A read of a Hudi table's root folder that ``prune`` cannot rewrite reads every file version
    (Spark knows nothing of the timeline): say so rather than return it silently."""
    if scan is None or table.reader.read_as == "glob":
        return
    paths = scan.relation.relation().location().rootPaths()
    roots = {_local(str(paths.apply(i).toString())) for i in range(paths.size())}
    if os.path.normpath(table.root) in roots:
        if needs_merge(table.reader):  # merge-on-read (issue 23): its parquet rows are stale
            merged.refuse_unmerged(table)
        warnings.warn(
            f"this DataFrame reads every file under the Hudi table {table.root}, older file versions "
            "included, and prune() cannot rewrite its plan; read the table with "
            "adapters.spark.read(spark, table, where=...) to get its snapshot",
            UserWarning,
            stacklevel=3,
        )


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


@dataclass(frozen=True)
class _Source:
    """How Spark reads some of a table's files: with the whole table's schema (the files alone
    could infer other column or partition types) and these reader options. ``older`` holds the
    files whose stored types differ from the table's (a Hudi column whose type evolved), by path,
    with the schema to read them in before their columns are cast to the table's types."""

    schema: StructType
    options: dict[str, str]
    older: dict[str, StructType] = field(default_factory=dict)


def _source(spark: SparkSession, table: IndexedTable) -> _Source:
    """The schema and options of a read of ``table``'s live files.

    A plain directory is read as Spark reads its root (hive folders become columns). A Hudi table
    is not: its root holds every file version, and Spark cannot infer a schema over non-hive
    nested partition folders (``yyyy/MM/dd``). Its schema is that of its newest live base file,
    as Hudi reads with the latest writer's schema; ``basePath`` is set only for hive-style folders.
    Files of one commit share a schema, so one footer per commit tells whether older files store
    a column in another type (Spark's parquet reader would refuse them)."""
    root = table.root
    if table.reader.read_as == "glob":
        return _Source(spark.read.parquet(root).schema, {"basePath": root})
    options = {"basePath": root} if table.reader.partitioning().hive_style else {}
    live = table.reader.list_files()
    if not live:
        from adapters.spark.datasource import table_schema

        return _Source(table_schema(table), options)
    by_commit: dict[str | None, list[str]] = {}
    for f in sorted(live, key=lambda f: (f.instant or "", f.path), reverse=True):
        by_commit.setdefault(f.instant, []).append(os.path.join(root, f.path))
    footers = {instant: pq.read_schema(paths[0]) for instant, paths in by_commit.items()}
    newest = next(iter(by_commit))
    schema = spark.read.options(**options).parquet(by_commit[newest][0]).schema
    older: dict[str, StructType] = {}
    spark_schemas: dict[str, StructType] = {}
    for instant, paths in by_commit.items():
        if not _types_differ(footers[instant], footers[newest]):
            continue
        key = footers[instant].remove_metadata().to_string()
        if key not in spark_schemas:
            spark_schemas[key] = spark.read.options(**options).parquet(paths[0]).schema
        older.update(dict.fromkeys(paths, spark_schemas[key]))
    return _Source(schema, options, older)


def _types_differ(a: pa.Schema, b: pa.Schema) -> bool:
    """Whether a column both schemas have is stored in different types."""
    return any(f.name in b.names and not f.type.equals(b.field(f.name).type) for f in a)


def _read_files(spark: SparkSession, files: Sequence[str], source: _Source) -> DataFrame:
    """A parquet read of ``files`` as ``source`` says; empty (same schema) for no file. Files
    stored in other types are read in theirs, then cast to the table's, as Hudi's reader
    promotes an evolved column (one native read per distinct stored schema)."""
    if not files:
        return spark.createDataFrame(spark.sparkContext.emptyRDD(), source.schema)
    groups: dict[int, tuple[StructType, list[str]]] = {}
    for path in files:
        schema = source.older.get(os.path.normpath(path), source.schema)
        groups.setdefault(id(schema), (schema, []))[1].append(path)
    frames = []
    for schema, paths in groups.values():
        frame = spark.read.schema(schema).options(**source.options).parquet(*paths)
        if schema is not source.schema:
            frame = frame.select(
                *[F.col(_quoted(f.name)).cast(f.dataType).alias(f.name) for f in source.schema]
            )
        frames.append(frame)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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


def _qualifier(scan: FileScan) -> str | None:
    """The one-part name the chain's columns are qualified with (a temporary view's), if any."""
    names = set()
    for node in scan.chain:
        for attribute in _seq_of(node.references().toSeq()):
            parts = [str(p) for p in _seq_of(attribute.qualifier())]
            names.add(parts[0] if len(parts) == 1 else None)
    return names.pop() if len(names) == 1 else None


def _seq_of(seq: JavaObject) -> list[JavaObject]:
    return [seq.apply(i) for i in range(seq.size())]


@contextlib.contextmanager
def _quiet_analysis_errors() -> Iterator[None]:
    """Silence PySpark's logger of analysis errors while a rebuilt plan is tried: a text Spark
    cannot parse back is expected (``prune`` then keeps the DataFrame), not an error to print
    with a Java stack trace."""
    from pyspark.logger import PySparkLogger

    logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled


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
