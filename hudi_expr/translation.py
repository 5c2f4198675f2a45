"""What an engine's filter becomes: the expression that prunes, and the parts that could not.

It lives in the core so that anything taking an expression (``IndexedTable.prune``) can take a
translation too, and report the untranslated parts beside what pruned.
"""

from __future__ import annotations

from dataclasses import dataclass

from hudi_expr.expressions import Expression

__all__ = ["Translation"]


@dataclass(frozen=True)
class Translation:
    """The pruning expression of an engine's filter and the parts of it that were not used.

    ``expr`` is TRUE on every row the filter selects (a superset, never fewer rows); ``not_used``
    holds the text of each untranslated part (it counted as TRUE), in first-seen order.
    """

    expr: Expression
    not_used: tuple[str, ...]
