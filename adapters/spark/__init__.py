"""Spark adapter: Catalyst and data-source filters as ``hudi_expr``, pruned reads, index builds
(statistics and secondary indexes), record key tagging for upserts."""

from adapters.spark.build import build_index
from adapters.spark.catalyst import (
    FileScan,
    Translation,
    file_scan,
    translate_column,
    translate_expression,
    translate_plan,
)
from adapters.spark.datasource import SOURCE_NAME, HudiIndexDataSource
from adapters.spark.datasource import register as register_datasource
from adapters.spark.jobs import SparkBuildError
from adapters.spark.read import ReadPlan, prune, prune_plan, read, read_plan, usable_expression
from adapters.spark.secondary import (
    SecondarySkip,
    build_secondary_index,
    compute_index_files_on_spark,
    skip_files,
)
from adapters.spark.session import local_session
from adapters.spark.tag import SparkTagError, SparkTagStats, benchmark_tag, tag, tag_with_stats

__all__ = [
    "SOURCE_NAME",
    "FileScan",
    "HudiIndexDataSource",
    "ReadPlan",
    "SecondarySkip",
    "SparkBuildError",
    "SparkTagError",
    "SparkTagStats",
    "Translation",
    "benchmark_tag",
    "build_index",
    "build_secondary_index",
    "compute_index_files_on_spark",
    "file_scan",
    "local_session",
    "prune",
    "prune_plan",
    "read",
    "read_plan",
    "register_datasource",
    "skip_files",
    "tag",
    "tag_with_stats",
    "translate_column",
    "translate_expression",
    "translate_plan",
    "usable_expression",
]
