"""DuckDB adapter: SQL predicates and DuckDB expressions as ``hudi_expr``; pruned SQL queries
(``sql`` for a relation, ``execute`` as ``con.execute``) that read only the rows a secondary index
selects, answer counts and EXISTS from it, and run index statements; and macros for the
``hudi_expr`` functions DuckDB lacks (``register_macros``). Importing it makes DuckDB the reader of
``IndexedTable.read``'s selected rows (``adapters.duckdb.rowreader``)."""

from adapters.duckdb.macros import register_macros
from adapters.duckdb.parse import (
    DUCKDB_MAJOR,
    InvalidPredicateError,
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
    execute,
    plan,
    register,
    registered,
    sql,
    unregister,
)
from adapters.duckdb.rowreader import DuckDBRows
from index_store.secondary.read import register_row_reader

register_row_reader(DuckDBRows())

__all__ = [
    "DUCKDB_MAJOR",
    "DuckDBRows",
    "IndexUnusedWarning",
    "InvalidPredicateError",
    "QueryPlan",
    "SqlParseError",
    "TablePlan",
    "Translation",
    "execute",
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
