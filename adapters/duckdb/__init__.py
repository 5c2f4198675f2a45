"""DuckDB adapter: SQL predicates and DuckDB expressions as ``hudi_expr``, and pruned SQL queries."""

from adapters.duckdb.parse import (
    DUCKDB_MAJOR,
    SqlParseError,
    Translation,
    parse_expression,
    parse_predicate,
    translate_expression,
    translate_sql,
)
from adapters.duckdb.query import (
    IndexUnusedWarning,
    QueryPlan,
    TablePlan,
    plan,
    register,
    registered,
    sql,
    unregister,
)

__all__ = [
    "DUCKDB_MAJOR",
    "IndexUnusedWarning",
    "QueryPlan",
    "SqlParseError",
    "TablePlan",
    "Translation",
    "parse_expression",
    "parse_predicate",
    "plan",
    "register",
    "registered",
    "sql",
    "translate_expression",
    "translate_sql",
    "unregister",
]
