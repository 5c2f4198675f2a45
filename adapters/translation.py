"""The result every engine adapter gives for an engine's filter (defined in the core, re-exported)."""

from hudi_expr.translation import Translation

__all__ = ["Translation"]
