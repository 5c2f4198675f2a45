"""Spark adapter: Catalyst and data-source filters as ``hudi_expr``, pruned reads, index builds."""

from adapters.spark.session import local_session

__all__ = ["local_session"]
