"""Spark adapter: Catalyst and data-source filters as ``hudi_expr``, pruned reads, index builds."""

from adapters.spark.build import SparkBuildError, build_index
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
from adapters.spark.read import prune, read, usable_expression
from adapters.spark.session import local_session

__all__ = [
    "SOURCE_NAME",
    "FileScan",
    "HudiIndexDataSource",
    "SparkBuildError",
    "Translation",
    "build_index",
    "file_scan",
    "local_session",
    "prune",
    "read",
    "register_datasource",
    "translate_column",
    "translate_expression",
    "translate_plan",
    "usable_expression",
]
