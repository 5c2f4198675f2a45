"""The expression core: predicates, binding, and sound vectorized pruning over file statistics.

``might_match(expr, stats)`` says which files may hold a row where ``expr`` is TRUE;
``all_match(expr, stats)`` which files have every row TRUE. Both follow SQL three-valued logic with
Spark/DuckDB NaN ordering, and never need more than the statistics in ``FileStats``.
"""

from hudi_expr.binding import bind, resolve
from hudi_expr.bloom import BloomFilter, BloomFilterFormatError, BloomFilterSet, hash_keys
from hudi_expr.errors import (
    AmbiguousColumnError,
    BindError,
    ExpressionFormatError,
    ExpressionTooDeepError,
    HudiExprError,
    StatsError,
    TruthTestError,
)
from hudi_expr.explain import Explanation, explain
from hudi_expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundReference,
    Column,
    Contains,
    ContainsTerm,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotContains,
    NotContainsTerm,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    StartsWith,
    col,
    contains_term,
)
from hudi_expr.guarantees import LiteralGuarantee, literal_guarantees
from hudi_expr.inclusive import might_match
from hudi_expr.membership import Membership
from hudi_expr.printer import to_sql
from hudi_expr.rows import to_pyarrow
from hudi_expr.serde import from_json, to_json
from hudi_expr.stats import ColumnStats, FileStats
from hudi_expr.strict import all_match
from hudi_expr.translation import Translation
from hudi_expr.truth import is_false, is_not_false, is_not_true, is_not_unknown, is_true, is_unknown
from hudi_expr.visitors import ExpressionVisitor, PredicateVisitor, rewrite_not, visit

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "AmbiguousColumnError",
    "And",
    "BindError",
    "BloomFilter",
    "BloomFilterFormatError",
    "BloomFilterSet",
    "BoundReference",
    "Column",
    "ColumnStats",
    "Contains",
    "ContainsTerm",
    "EqualTo",
    "Explanation",
    "Expression",
    "ExpressionFormatError",
    "ExpressionTooDeepError",
    "ExpressionVisitor",
    "FileStats",
    "GreaterThan",
    "GreaterThanOrEqual",
    "HudiExprError",
    "In",
    "IsNaN",
    "IsNotNaN",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralGuarantee",
    "Membership",
    "Not",
    "NotContains",
    "NotContainsTerm",
    "NotEqualTo",
    "NotIn",
    "NotStartsWith",
    "Or",
    "Predicate",
    "PredicateVisitor",
    "Reference",
    "StartsWith",
    "StatsError",
    "Translation",
    "TruthTestError",
    "all_match",
    "bind",
    "col",
    "contains_term",
    "explain",
    "from_json",
    "hash_keys",
    "is_false",
    "is_not_false",
    "is_not_true",
    "is_not_unknown",
    "is_true",
    "is_unknown",
    "literal_guarantees",
    "might_match",
    "resolve",
    "rewrite_not",
    "to_json",
    "to_pyarrow",
    "to_sql",
    "visit",
]
