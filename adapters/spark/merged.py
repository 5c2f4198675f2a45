"""Spark reads of merge-on-read tables: Spark tasks merge the kept file slices with hudi-rs
(``index_store.merged``) and hand Spark Arrow batches.

``merged_frame`` is a read of the ``hudi_index_merged`` Python data source over a list of slices,
a few per task: each task reads its slices as ``read_slices`` does (base files alone as parquet,
slices with log files through hudi-rs) and conforms the batches to the Spark schema. ``read``
prunes, then filters the merged rows with the whole condition (pruning only chooses slices);
``prune`` rebuilds a ``spark.read.parquet(root)`` plan over such a frame
(``adapters.spark.read.prune``); the ``hudi_index`` data source reads ``SlicePartition``s too.

The schema is the table's merged schema (``MergedLayout``): its newest base file's columns, Hudi's
meta columns included, then partition columns the files do not store. Executors need hudi-rs
installed (``pip install 'hudi-index[hudi]'``) when a slice has log files.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from adapters.spark.catalyst import FileScan, class_name, translate_column
from hudi_expr import Expression
from index_store import IndexedTable, IndexNotBuiltError, PruneResult, UnsupportedTableError
from index_store.merged import MergedSlices, QueryType, conform, kept_slices, query_type_of, slices_of_files
from index_store.merged.schema import MergedLayout
from index_store.tables.base import FileSlice

__all__ = [
    "MERGED_SOURCE",
    "MergedSlicesDataSource",
    "SlicePartition",
    "merged_frame",
    "merged_scan",
    "read",
    "read_slice_partition",
    "refuse_unmerged",
    "slice_partitions",
    "spark_schema",
]

MERGED_SOURCE = "hudi_index_merged"
_SLICES_OPTION = "slices"
_SLICES_PER_TASK = 4


def spark_schema(layout: MergedLayout) -> StructType:
    """The Spark schema of the table's merged rows (every column nullable, as Spark's sources)."""
    return from_arrow_schema(pa.schema([_nullable(f) for f in layout.schema]))


def _nullable(f: pa.Field) -> pa.Field:
    t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
    if pa.types.is_struct(t):
        t = pa.struct([_nullable(t.field(i)) for i in range(t.num_fields)])
    return pa.field(f.name, t, nullable=True)


def read(
    spark: SparkSession,
    table: IndexedTable,
    where: Column | str | None,
    query_type: QueryType,
    prune: Callable[[Expression, StructType], PruneResult],
) -> DataFrame:
    """``adapters.spark.read`` of a merge-on-read table: the slices ``prune`` keeps for ``where``
    (all of them without ``where``, or with no index built), merged, filtered by ``where``."""
    query_type_of(query_type)
    layout = MergedLayout.of(table.reader)
    schema = spark_schema(layout)
    if where is None:
        return merged_frame(spark, layout, table.reader.file_slices(), schema, query_type)
    condition = F.expr(where) if isinstance(where, str) else where
    try:
        result: PruneResult | None = prune(translate_column(spark, condition, schema).expr, schema)
    except IndexNotBuiltError:
        result = None  # no index: every slice is read
    return merged_frame(spark, layout, kept_slices(table, result), schema, query_type).filter(condition)


def merged_frame(
    spark: SparkSession,
    layout: MergedLayout,
    slices: Sequence[FileSlice],
    schema: StructType,
    query_type: QueryType = "snapshot",
) -> DataFrame:
    """The merged rows of ``slices`` as a DataFrame of ``schema`` (its columns are looked up by name
    in the merged rows: one the table lacks is NULL), read by Spark tasks.

    It is a read of the ``hudi_index_merged`` Python data source, whose one option holds the slices
    (pickled): a source reads Arrow batches in its tasks, where ``mapInArrow`` would need pandas.
    The slices are fixed when the DataFrame is made, so a second scan of it (which Spark 4.3 plans
    with the first scan's partitions) reads the same rows."""
    spark.dataSource.register(MergedSlicesDataSource)
    payload = base64.b64encode(pickle.dumps((layout, query_type_of(query_type), list(slices)))).decode()
    return spark.read.format(MERGED_SOURCE).schema(schema).option(_SLICES_OPTION, payload).load()


def _merged_batches(
    layout: MergedLayout, slices: Sequence[FileSlice], query_type: QueryType, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """The slices' merged rows conformed to ``target`` (Spark's Arrow types of the read schema)."""
    columns = [c for c in target.names if c in layout.schema.names]
    for batch in MergedSlices(layout, slices, columns, query_type=query_type).to_reader():
        yield conform(batch, target, {})


class MergedSlicesDataSource(sds.DataSource):
    """``merged_frame``'s source: the slices its option holds, a few per task, merged."""

    @classmethod
    def name(cls) -> str:
        return MERGED_SOURCE

    def schema(self) -> StructType:
        layout, _, _ = _unpack(self.options)
        return spark_schema(layout)

    def reader(self, schema: StructType) -> MergedSlicesReader:
        return MergedSlicesReader(dict(self.options), schema)


class MergedSlicesReader(sds.DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[sds.InputPartition]:
        layout, query_type, slices = _unpack(self.options)
        return _grouped(layout, query_type, slices)

    def read(self, partition: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SlicePartition):
            yield from read_slice_partition(partition, to_arrow_schema(self.schema, timezone="UTC"))


def _unpack(options: Mapping[str, str]) -> tuple[MergedLayout, QueryType, list[FileSlice]]:
    payload = {k.lower(): v for k, v in options.items()}.get(_SLICES_OPTION)
    if not payload:
        raise ValueError(f"the {MERGED_SOURCE} source reads what adapters.spark.merged.merged_frame gives it")
    layout, query_type, slices = pickle.loads(base64.b64decode(payload))
    return layout, query_type, slices


# ------------------------------------------------------------------------------------ prune(df)


def merged_scan(df: DataFrame) -> FileScan | None:
    """The Filter/Project chain above the data source relation of a ``merged_frame`` in ``df``'s
    analyzed plan (as ``catalyst.file_scan`` finds one above a file relation), to check that a plan
    ``prune`` rebuilt over merged slices re-applied the same expressions.

    The analyzed plan, not the optimized one: Spark's optimizer splits a filter over a data source
    into its conjuncts and joins them again in another association (``(a AND b) AND c`` for
    ``a AND (b AND c)``), which would fail the comparison with the original though it is the same
    filter. Aliases (``SubqueryAlias``) pass rows through unchanged and are skipped."""
    path = [df._jdf.queryExecution().analyzed()]
    while len(children := _seq(path[-1].children())) == 1:
        path.append(children[0])
    if children or class_name(path[-1]) != "DataSourceV2Relation":
        return None
    chain = [node for node in path[:-1] if class_name(node) != "SubqueryAlias"]
    if any(class_name(node) not in ("Filter", "Project") for node in chain):
        return None
    conditions = tuple(node.condition() for node in chain if class_name(node) == "Filter")
    return FileScan(path[-1], tuple(chain), conditions, (), frozenset(), top_is_root=True)


def refuse_unmerged(table: IndexedTable) -> None:
    """A DataFrame reading a merge-on-read table's root folder as parquet, which ``prune`` cannot
    rebuild: its rows are base files without their log files' updates and deletes (and every older
    version of each file), so it is refused rather than returned."""
    raise UnsupportedTableError(
        f"this DataFrame reads the files of merge-on-read table {table.root} as plain parquet, which "
        "returns rows its log files have updated or deleted, and prune() cannot rebuild its plan; read "
        "the table with adapters.spark.read(spark, table, where=...) to get its merged snapshot"
    )


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


# ----------------------------------------------------------------------------- the data source


@dataclass
class SlicePartition(sds.InputPartition):
    """File slices one task of the ``hudi_index`` data source merges."""

    layout: MergedLayout | None = None
    query_type: QueryType = "snapshot"
    slices: list[FileSlice] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(None)


def slice_partitions(
    table: IndexedTable, kept_files: Sequence[str] | None, query_type: QueryType
) -> list[sds.InputPartition]:
    """The ``hudi_index`` data source's partitions of a merge-on-read table: the slices holding
    ``kept_files`` (None: every slice), a few per partition."""
    slices = table.reader.file_slices()
    kept = slices if kept_files is None else slices_of_files(slices, table.root, kept_files)
    return _grouped(MergedLayout.of(table.reader, slices), query_type_of(query_type), kept)


def _grouped(
    layout: MergedLayout, query_type: QueryType, slices: Sequence[FileSlice]
) -> list[sds.InputPartition]:
    """``_SLICES_PER_TASK`` slices per partition; one empty partition when there is no slice."""
    groups = [list(slices[i : i + _SLICES_PER_TASK]) for i in range(0, len(slices), _SLICES_PER_TASK)]
    return [SlicePartition(layout, query_type, g) for g in groups] or [SlicePartition(layout, query_type)]


def read_slice_partition(partition: SlicePartition, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The merged rows of a ``SlicePartition`` as batches of ``target``."""
    if partition.layout is None or not partition.slices:
        return
    yield from _merged_batches(partition.layout, partition.slices, partition.query_type, target)
