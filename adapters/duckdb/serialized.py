"""DuckDB's serialized syntax tree (``json_serialize_sql``): the key names and enum strings the
adapter reads, in one place, and small typed accessors over its dict nodes.

The adapter walks the JSON DuckDB's serializer writes (plain dicts and lists, kept as they are:
wrapping every node would cost planning time). When DuckDB renames a key or an enum value, this
module is the one to change; the readers (``parse``, ``scope``, ``dynamic``, ``answers``,
``clock``, ``query``) name keys as ``Key.X`` and values as ``Class.X``/``Type.X``/... from here.
DuckDB's SQL type names (``INTEGER``, ``TIMESTAMP``...) are SQL, not the serializer's, and stay
with the code that maps them (``parse._arrow_type``).
"""

from __future__ import annotations

from typing import Any, Final

Node = dict[str, Any]  # one object of the serialized tree


class Key:
    """Keys of the serializer's objects."""

    # the parse result
    ERROR: Final = "error"
    ERROR_MESSAGE: Final = "error_message"
    POSITION: Final = "position"
    STATEMENTS: Final = "statements"
    NODE: Final = "node"
    # every node
    CLASS: Final = "class"
    TYPE: Final = "type"
    ALIAS: Final = "alias"
    QUERY_LOCATION: Final = "query_location"
    QUERY_LOCATION_LENGTH: Final = "query_location_length"
    # query nodes
    SELECT_LIST: Final = "select_list"
    FROM_TABLE: Final = "from_table"
    WHERE_CLAUSE: Final = "where_clause"
    GROUP_EXPRESSIONS: Final = "group_expressions"
    GROUP_SETS: Final = "group_sets"
    AGGREGATE_HANDLING: Final = "aggregate_handling"
    HAVING: Final = "having"
    QUALIFY: Final = "qualify"
    SAMPLE: Final = "sample"
    MODIFIERS: Final = "modifiers"
    CTE_MAP: Final = "cte_map"
    MAP: Final = "map"
    KEY: Final = "key"
    LIMIT: Final = "limit"
    OFFSET: Final = "offset"
    LIMIT_TYPE: Final = "limit_type"
    DISTINCT_ON_TARGETS: Final = "distinct_on_targets"
    ORDERS: Final = "orders"
    # table references
    TABLE_NAME: Final = "table_name"
    SCHEMA_NAME: Final = "schema_name"
    CATALOG_NAME: Final = "catalog_name"
    COLUMN_NAME_ALIAS: Final = "column_name_alias"
    AT_CLAUSE: Final = "at_clause"
    FUNCTION: Final = "function"
    JOIN_TYPE: Final = "join_type"
    REF_TYPE: Final = "ref_type"
    CONDITION: Final = "condition"
    USING_COLUMNS: Final = "using_columns"
    RELATION_NAME: Final = "relation_name"  # of a qualified star: t.*
    SUBQUERY: Final = "subquery"
    # expressions
    CHILDREN: Final = "children"
    CHILD: Final = "child"
    LEFT: Final = "left"
    RIGHT: Final = "right"
    INPUT: Final = "input"
    LOWER: Final = "lower"
    UPPER: Final = "upper"
    COLUMN_NAMES: Final = "column_names"
    FUNCTION_NAME: Final = "function_name"
    SCHEMA: Final = "schema"
    CATALOG: Final = "catalog"
    ARGUMENTS: Final = "arguments"
    NAME: Final = "name"
    EXPRESSION: Final = "expression"
    FILTER: Final = "filter"
    DISTINCT: Final = "distinct"
    EXPORT_STATE: Final = "export_state"
    ORDER_BYS: Final = "order_bys"
    IS_OPERATOR: Final = "is_operator"
    LITERAL: Final = "literal"
    KIND: Final = "kind"
    TEXT: Final = "text"
    TYPE_EXPR: Final = "type_expr"
    TYPE_NAME: Final = "type_name"
    TRY_CAST: Final = "try_cast"
    SUBQUERY_TYPE: Final = "subquery_type"
    COMPARISON_TYPE: Final = "comparison_type"
    QUALIFIED_NAME: Final = "qualified_name"
    PATH: Final = "path"


class Class:
    """Values of ``Key.CLASS``: what kind of expression a node is."""

    COLUMN_REF: Final = "COLUMN_REF"
    CONSTANT: Final = "CONSTANT"
    FUNCTION: Final = "FUNCTION"
    CAST: Final = "CAST"
    CASE: Final = "CASE"
    COMPARISON: Final = "COMPARISON"
    CONJUNCTION: Final = "CONJUNCTION"
    OPERATOR: Final = "OPERATOR"
    BETWEEN: Final = "BETWEEN"
    SUBQUERY: Final = "SUBQUERY"
    PARAMETER: Final = "PARAMETER"
    LAMBDA: Final = "LAMBDA"
    WINDOW: Final = "WINDOW"
    STAR: Final = "STAR"
    POSITIONAL_REFERENCE: Final = "POSITIONAL_REFERENCE"  # #1: a column by its position
    TYPE: Final = "TYPE"


class Type:
    """Values of ``Key.TYPE`` the adapter tests: query nodes, table references, modifiers and
    expression types."""

    SELECT_NODE: Final = "SELECT_NODE"
    SET_OPERATION_NODE: Final = "SET_OPERATION_NODE"
    BASE_TABLE: Final = "BASE_TABLE"
    TABLE_FUNCTION: Final = "TABLE_FUNCTION"
    JOIN: Final = "JOIN"
    EMPTY: Final = "EMPTY"
    LIMIT_MODIFIER: Final = "LIMIT_MODIFIER"
    LIMIT_PERCENT_MODIFIER: Final = "LIMIT_PERCENT_MODIFIER"
    DISTINCT_MODIFIER: Final = "DISTINCT_MODIFIER"
    COMPARE_EQUAL: Final = "COMPARE_EQUAL"
    CONJUNCTION_AND: Final = "CONJUNCTION_AND"


class Subquery:
    """Values of ``Key.SUBQUERY_TYPE``."""

    ANY: Final = "ANY"
    EXISTS: Final = "EXISTS"


class LiteralKind:
    """Values of a constant's ``Key.LITERAL`` ``Key.KIND`` the adapter tests."""

    NULL: Final = "NULL_LITERAL"
    STRING: Final = "STRING"
    INTEGER: Final = "INTEGER"
    BIGINT: Final = "BIGINT"
    BOOLEAN: Final = "BOOLEAN"


STANDARD_HANDLING: Final = "STANDARD_HANDLING"  # Key.AGGREGATE_HANDLING when nothing special
ROW_COUNT: Final = "ROW_COUNT"  # Key.LIMIT_TYPE of a plain LIMIT n
NAMED_PARAM_MAP: Final = "named_param_map"  # written with a statement, never read


# -------------------------------------------------------------------------------- accessors


def node_class(node: Node) -> str | None:
    """The node's ``class`` (expressions), None for nodes without one."""
    return node.get(Key.CLASS)


def node_type(node: Node) -> str | None:
    """The node's ``type`` (query nodes, table references, expression types)."""
    return node.get(Key.TYPE)


def is_base_table(node: Node) -> bool:
    """Whether ``node`` is a reference to a table or view by name."""
    return node.get(Key.TYPE) == Type.BASE_TABLE


def table_key(node: Node) -> tuple[str, str, str]:
    """A BASE_TABLE node's (catalog, schema, name) as written ("" for a part not written)."""
    return (
        str(node.get(Key.CATALOG_NAME) or ""),
        str(node.get(Key.SCHEMA_NAME) or ""),
        str(node.get(Key.TABLE_NAME) or ""),
    )


def alias_or_name(node: Node) -> str:
    """The name a BASE_TABLE node is known by in its query: its alias, else its table name."""
    return str(node.get(Key.ALIAS) or node.get(Key.TABLE_NAME))


def column_names(node: Node) -> list[str]:
    """A COLUMN_REF node's dotted name, part by part."""
    return [str(p) for p in node.get(Key.COLUMN_NAMES) or []]


def column_aliases(node: Node) -> list[str]:
    """A table reference's column aliases (``AS t(a, b)``), none when not written."""
    return [str(c) for c in node.get(Key.COLUMN_NAME_ALIAS) or []]


def single_statement(tree: Any) -> Node | None:
    """The one statement of a parse result; None on a parse error or another number of them."""
    tree = tree or {}
    statements = tree.get(Key.STATEMENTS) or []
    if tree.get(Key.ERROR) or len(statements) != 1:
        return None
    node: Node = statements[0][Key.NODE]
    return node


def parse_error(tree: Any) -> str | None:
    """DuckDB's message when the text did not parse, None when it did."""
    return str(tree.get(Key.ERROR_MESSAGE, "")) if tree.get(Key.ERROR) else None


# --------------------------------------------------------------------------------- builders


def select_node(select_list: list[Node], from_table: Node, where: Node | None) -> Node:
    """A plain ``SELECT <select_list> FROM <from_table> [WHERE <where>]`` query node."""
    return {
        Key.TYPE: Type.SELECT_NODE,
        Key.MODIFIERS: [],
        Key.CTE_MAP: {Key.MAP: []},
        Key.SELECT_LIST: select_list,
        Key.FROM_TABLE: from_table,
        Key.WHERE_CLAUSE: where,
        Key.GROUP_EXPRESSIONS: [],
        Key.GROUP_SETS: [],
        Key.AGGREGATE_HANDLING: STANDARD_HANDLING,
        Key.HAVING: None,
        Key.SAMPLE: None,
        Key.QUALIFY: None,
    }


def no_table() -> Node:
    """The FROM of a query that reads no table (``SELECT 1``)."""
    return {Key.TYPE: Type.EMPTY, Key.ALIAS: "", Key.SAMPLE: None}


def parse_result(node: Node) -> Node:
    """A parse result of one statement, as ``json_deserialize_sql`` takes it."""
    return {Key.ERROR: False, Key.STATEMENTS: [{Key.NODE: node, NAMED_PARAM_MAP: []}]}


def conjunction_and(children: list[Node]) -> Node:
    """``c1 AND c2 AND ...``."""
    return {
        Key.CLASS: Class.CONJUNCTION,
        Key.TYPE: Type.CONJUNCTION_AND,
        Key.ALIAS: "",
        Key.CHILDREN: children,
    }
