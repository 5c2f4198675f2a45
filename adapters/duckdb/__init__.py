"""DuckDB adapter: SQL predicates and DuckDB expressions as ``hudi_expr``, pruned SQL queries (reading
only the rows a secondary index selects, answering counts and EXISTS from it, and running index
statements: ``sql``), and macros for the ``hudi_expr`` functions DuckDB lacks (``register_macros``)."""

from adapters.duckdb.macros import register_macros
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
    "register_macros",
    "registered",
    "sql",
    "translate_expression",
    "translate_sql",
    "unregister",
]
