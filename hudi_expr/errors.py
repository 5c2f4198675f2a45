"""Typed errors of the expression core, each with a message a user can act on."""

from __future__ import annotations


class HudiExprError(Exception):
    """Base class of every error raised by `hudi_expr`."""


class BindError(HudiExprError, ValueError):
    """A predicate does not fit the schema: unknown column, or a literal the column's type cannot hold."""


class AmbiguousColumnError(BindError):
    """A name that, ignoring case, matches more than one column (the message names them all)."""


class ExpressionFormatError(HudiExprError, ValueError):
    """A serialized expression (JSON) is malformed."""


class StatsError(HudiExprError, ValueError):
    """File statistics are inconsistent (lengths or types that do not match)."""


class TruthTestError(HudiExprError, ValueError):
    """An IS TRUE/FALSE/NULL test of a predicate cannot be rewritten exactly (``hudi_expr.truth``)."""


class ExpressionTooDeepError(HudiExprError, ValueError):
    """A row filter nests AND/OR deeper than ``hudi_expr.rows.MAX_ROW_FILTER_DEPTH`` even after
    flattening and balancing: pyarrow's evaluator would overflow its stack (a crash), so it is refused."""
