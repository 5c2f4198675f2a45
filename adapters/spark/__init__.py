"""Spark adapter: Catalyst and data-source filters as ``hudi_expr``, pruned reads, index builds."""

from adapters.spark.build import SparkBuildError, build_index
from adapters.spark.session import local_session

__all__ = ["SparkBuildError", "build_index", "local_session"]
