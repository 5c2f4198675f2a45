"""Engine-neutral translation of an engine's filter into ``hudi_expr``, shared by every adapter.

``walker`` decides the SQL rules once (untranslatable parts become "may match", NOT pushed down
exactly under three-valued logic, NULL comparisons, LIKE, truth tests); an engine adapter only
reads its own nodes through ``walker.NodeAccessors``. ``widening`` holds how a float compares
with a double constant. ``Translation`` (defined in the core) is what every adapter returns.
``docs/architecture.md`` ("How to add an engine adapter") walks through writing one.
"""

from hudi_expr.translation import Translation

__all__ = ["Translation"]
