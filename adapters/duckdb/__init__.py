"""DuckDB adapter: SQL predicate text and DuckDB expression objects in, ``hudi_expr`` out."""

from adapters.duckdb.parse import (
    DUCKDB_MAJOR,
    SqlParseError,
    Translation,
    parse_expression,
    parse_predicate,
    translate_expression,
    translate_sql,
)

__all__ = [
    "DUCKDB_MAJOR",
    "SqlParseError",
    "Translation",
    "parse_expression",
    "parse_predicate",
    "translate_expression",
    "translate_sql",
]
