"""``explain``: which part of a predicate removed which files, in words a user can read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from hudi_expr.expressions import And, Expression
from hudi_expr.inclusive import InclusiveEvaluator, prepare
from hudi_expr.stats import FileStats
from hudi_expr.statsview import StatsView
from hudi_expr.visitors import visit

__all__ = ["Explanation", "Step", "explain"]

_EMPTY = -2  # removed because the file holds no rows
_KEPT = -1


@dataclass(frozen=True)
class Step:
    """One conjunct of the (bound) predicate and what it did."""

    predicate: str
    rules_out: int  # files this conjunct alone excludes
    removed: int  # files it is the first (left to right) to exclude


@dataclass(frozen=True)
class Explanation:
    """The outcome of pruning N files, conjunct by conjunct."""

    predicate: str
    files: pa.Array
    steps: tuple[Step, ...]
    removed_by: np.ndarray = field(repr=False)  # per file: step index, _KEPT or _EMPTY
    not_used: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return len(self.files)

    @property
    def kept(self) -> int:
        return int(np.count_nonzero(self.removed_by == _KEPT))

    @property
    def kept_files(self) -> list[str]:
        return self.files.filter(pa.array(self.removed_by == _KEPT)).to_pylist()

    def reason(self, file: str) -> str:
        """Why ``file`` was kept or skipped."""
        matches = np.flatnonzero(np.asarray(self.files.to_numpy(zero_copy_only=False)) == file)
        if not len(matches):
            return f"{file}: not known to the statistics (kept: unknown files may match)"
        step = int(self.removed_by[matches[0]])
        if step == _KEPT:
            return f"{file}: kept (may hold matching rows)"
        if step == _EMPTY:
            return f"{file}: skipped (it holds no rows)"
        return f"{file}: skipped by {self.steps[step].predicate}"

    def __str__(self) -> str:
        skipped = self.total - self.kept
        lines = [f"kept {self.kept} of {self.total} files ({skipped} skipped) for: {self.predicate}"]
        for s in self.steps:
            lines.append(f"  {s.removed:>8} skipped by {s.predicate}  (alone it rules out {s.rules_out})")
        empty = int(np.count_nonzero(self.removed_by == _EMPTY))
        if empty:
            lines.append(f"  {empty:>8} skipped as empty files")
        for part in self.not_used:
            lines.append(f"  not used for pruning: {part}")
        return "\n".join(lines)


def explain(expr: Expression, stats: FileStats, not_used: Sequence[str] = ()) -> Explanation:
    """Prune ``stats`` with ``expr`` and record, per top-level conjunct, the files it removed.

    ``not_used`` lists parts of the original filter an adapter could not translate (kept as TRUE).
    """
    bound = prepare(expr, stats)
    conjuncts = bound.operands() if isinstance(bound, And) else [bound]
    view = StatsView(stats)
    evaluator = InclusiveEvaluator(view)
    removed_by = np.full(stats.num_files, _KEPT, dtype=np.int64)
    removed_by[view.empty] = _EMPTY
    steps = []
    for i, conjunct in enumerate(conjuncts):
        excluded = ~visit(conjunct, evaluator)
        first = excluded & (removed_by == _KEPT)
        removed_by[first] = i
        steps.append(Step(str(conjunct), int(np.count_nonzero(excluded)), int(np.count_nonzero(first))))
    return Explanation(str(bound), stats.files, tuple(steps), removed_by, tuple(not_used))
