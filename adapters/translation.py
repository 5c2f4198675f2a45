"""The result every engine adapter gives for an engine's filter: what prunes, and what could not."""

from __future__ import annotations

from dataclasses import dataclass

from hudi_expr import Expression

__all__ = ["Translation"]


@dataclass(frozen=True)
class Translation:
    """The pruning expression of an engine's filter and the parts of it that were not used.

    ``expr`` is TRUE on every row the filter selects (a superset, never fewer rows); ``not_used``
    holds the text of each untranslated part (it counted as TRUE), in first-seen order.
    """

    expr: Expression
    not_used: tuple[str, ...]
